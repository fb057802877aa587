"""Namespace packages (PEP 420: directories without ``__init__.py``) get the
same module names, so the same qualified names, call graph and findings, as
their ``__init__.py`` twins: from a configured ``src`` root, an auto-detected
``src/`` directory, or the directory holding the top package."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cachelint.api import check
from cachelint.config import find_config, load_config_file
from cachelint.discover.walk import discover, module_name_for
from cachelint.output.report import finding_to_dict

from .helpers import FIXTURES

CASES = sorted(p.parent for p in FIXTURES.glob("*/case.toml") if (p.parent / "before" / "pyproject.toml").is_file())


def _touch(p: Path, text: str = "") -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def _findings(root: Path, strip: str = "") -> list[dict]:
    cfg_path = find_config(root)
    cfg = load_config_file(cfg_path) if cfg_path else None
    res = check([str(root)], cfg)
    out = []
    for f in res.findings:
        d = finding_to_dict(f)
        d["path"] = Path(d["path"]).resolve().relative_to(root.resolve()).as_posix().removeprefix(strip)
        d.pop("data", None)  # holds nothing path-independent we compare beyond the rest
        out.append(d)
    return sorted(out, key=lambda d: (d["path"], d["line"], d["column"], d["code"]))


def _drop_empty_inits(root: Path) -> int:
    n = 0
    for p in list(root.rglob("__init__.py")):
        if not p.read_text().strip():
            p.unlink()
            n += 1
    return n


def _add_key(pyproject: Path, line: str) -> None:
    text = pyproject.read_text()
    assert "[tool.cachelint]\n" in text
    pyproject.write_text(text.replace("[tool.cachelint]\n", f"[tool.cachelint]\n{line}\n", 1))


@pytest.mark.parametrize("case_dir", CASES, ids=[c.name for c in CASES])
def test_fixture_without_inits_and_a_configured_src_root_has_the_same_findings(case_dir, tmp_path):
    twin, ns = tmp_path / "twin", tmp_path / "ns"
    shutil.copytree(case_dir / "before", twin)
    shutil.copytree(case_dir / "before", ns)
    if not _drop_empty_inits(ns):
        pytest.skip("no package in this case")
    _add_key(ns / "pyproject.toml", 'src = ["."]')
    expected = _findings(twin)
    assert _findings(ns) == expected


@pytest.mark.parametrize("case_dir", CASES, ids=[c.name for c in CASES])
def test_fixture_in_a_src_layout_without_inits_has_the_same_findings(case_dir, tmp_path):
    twin, ns = tmp_path / "twin", tmp_path / "ns"
    shutil.copytree(case_dir / "before", twin)
    shutil.copytree(case_dir / "before", ns)
    if not _drop_empty_inits(ns):
        pytest.skip("no package in this case")
    (ns / "src").mkdir()
    for p in list(ns.iterdir()):
        if p.name not in ("pyproject.toml", "cachelint.lock", "src"):
            p.rename(ns / "src" / p.name)
    assert _findings(ns, strip="src/") == _findings(twin)


# an engine laid out like SGLang: a top package with __init__.py, namespace
# directories below it, absolute imports across them
ENGINE = {
    "pyproject.toml": (
        '[tool.cachelint]\npreset = "python"\nhot-roots = [{ pattern = "*.Scheduler.event_loop", kind = "per-step" }]\n'
    ),
    "eng/__init__.py": "",
    "eng/srt/configs/model_config.py": (
        "class ModelConfig:\n    def __init__(self, hf_config):\n        self.hf_config = hf_config\n"
    ),
    "eng/srt/utils/common.py": (
        "import inspect\n\n\ndef accepts(fn, name):\n    return name in inspect.signature(fn).parameters\n"
    ),
    "eng/srt/managers/scheduler.py": (
        "from eng.srt.configs.model_config import ModelConfig\n"
        "from eng.srt.utils.common import accepts\n\n\n"
        "class Scheduler:\n"
        "    def __init__(self, hf_config, forward):\n"
        "        self.model_config = ModelConfig(hf_config)\n"
        "        self.forward = forward\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            self.run_batch()\n\n"
        "    def run_batch(self):\n"
        '        if accepts(self.forward, "positions"):\n'
        "            return 1\n"
        "        return 0\n"
    ),
}


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        _touch(root / rel, text)


def test_engine_with_namespace_directories_matches_its_init_twin(tmp_path):
    ns, twin = tmp_path / "ns", tmp_path / "twin"
    _write(ns, ENGINE)
    _write(twin, ENGINE)
    for d in ("eng/srt", "eng/srt/configs", "eng/srt/utils", "eng/srt/managers"):
        _touch(twin / d / "__init__.py")
    modules = {Path(f.path).name: f.module for f in discover([str(ns)])}
    assert modules["scheduler.py"] == "eng.srt.managers.scheduler"
    assert modules["common.py"] == "eng.srt.utils.common"
    got, expected = _findings(ns), _findings(twin)
    assert got == expected
    # the cross-module call resolved: the helper in another namespace directory is hot
    assert [(f["code"], f["function"]) for f in got] == [("CL002", "eng.srt.utils.common.accepts")]
    assert got[0]["hot_path"] == [
        "eng.srt.managers.scheduler.Scheduler.event_loop",
        "eng.srt.managers.scheduler.Scheduler.run_batch",
        "eng.srt.utils.common.accepts",
    ]


def test_module_names_of_namespace_layouts(tmp_path):
    # the climb crosses directories without __init__.py up to the top package
    _touch(tmp_path / "p" / "top" / "__init__.py")
    _touch(tmp_path / "p" / "top" / "a" / "b" / "m.py")
    assert module_name_for(tmp_path / "p" / "top" / "a" / "b" / "m.py") == ("top.a.b.m", False)
    # a directory whose name is no identifier cannot be a package level
    _touch(tmp_path / "p" / "top" / "my-scripts" / "s.py")
    assert module_name_for(tmp_path / "p" / "top" / "my-scripts" / "s.py") == ("s", False)
    # nor does it climb out of a project (a marker and no __init__.py)
    _touch(tmp_path / "p" / "top" / "vendored" / "setup.py")
    _touch(tmp_path / "p" / "top" / "vendored" / "lib" / "__init__.py")
    _touch(tmp_path / "p" / "top" / "vendored" / "lib" / "x.py")
    assert module_name_for(tmp_path / "p" / "top" / "vendored" / "lib" / "x.py") == ("lib.x", False)
    # but a package's own module called setup.py does not end the package
    _touch(tmp_path / "p" / "top" / "stage" / "__init__.py")
    _touch(tmp_path / "p" / "top" / "stage" / "setup.py")
    assert module_name_for(tmp_path / "p" / "top" / "stage" / "setup.py") == ("top.stage.setup", False)
    # a script with no package anywhere keeps its bare name
    _touch(tmp_path / "q" / "tools" / "run.py")
    assert module_name_for(tmp_path / "q" / "tools" / "run.py") == ("run", False)


def test_src_roots_name_pure_namespace_packages(tmp_path):
    # no __init__.py anywhere: a src/ directory of the given one is a source root
    _touch(tmp_path / "proj" / "pyproject.toml")
    _touch(tmp_path / "proj" / "src" / "ns" / "pkg" / "mod.py")
    _touch(tmp_path / "proj" / "tools" / "run.py")
    names = {Path(f.path).name: f.module for f in discover([str(tmp_path / "proj")])}
    assert names == {"mod.py": "ns.pkg.mod", "run.py": "run"}
    # a configured root names what is below it
    names = {
        Path(f.path).name: f.module for f in discover([str(tmp_path / "proj")], src=(tmp_path / "proj" / "tools",))
    }
    assert names == {"mod.py": "ns.pkg.mod", "run.py": "run"}
    names = {Path(f.path).name: f.module for f in discover([str(tmp_path / "proj")], src=(tmp_path / "proj",))}
    # (the deepest root holding a file names it: src/ still names mod.py)
    assert names == {"mod.py": "ns.pkg.mod", "run.py": "tools.run"}


def test_a_namespace_directory_put_on_sys_path_is_imported_by_bare_names(tmp_path):
    # as vLLM's third_party/fmha_sm100/cute/ (under a directory that is not
    # vendored here): no __init__.py, its modules imported as top-level names
    # once the directory is on sys.path
    _write(
        tmp_path,
        {
            "pyproject.toml": '[tool.cachelint]\npreset = "python"\nhot-roots = ["*.Impl.forward"]\n',
            "eng/__init__.py": "",
            "eng/kernels/__init__.py": "",
            "eng/kernels/kern/cute/interface.py": (
                "import inspect\n\n\ndef kernel(x):\n    return x\n\n\n"
                "def attn(x):\n    return inspect.signature(kernel), x\n"
            ),
            "eng/kernels/kern/__init__.py": "import sys\nsys.path.insert(0, 'cute')\nfrom interface import attn\n",
            "eng/impl.py": "from eng.kernels.kern import attn\n\n\nclass Impl:\n    def forward(self, x):\n        return attn(x)\n",
        },
    )
    got = _findings(tmp_path)
    assert [(f["code"], f["function"]) for f in got] == [("CL002", "eng.kernels.kern.cute.interface.attn")]
