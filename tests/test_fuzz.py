"""Fuzzing and corpora: cachelint never crashes, every file it fixes still
compiles, and fixing is idempotent.

* property tests on ``hypothesmith``-generated programs (bounded and
  derandomized, so CI is fast and reproducible), appended to a module that
  holds a fixable CL001 pattern so the fixer runs on them too;
* the CPython standard library of the running interpreter and the vLLM trees
  (0.10.2 and the newest, 0.33.0) as corpora: ``--fix --unsafe-fixes`` on a
  copy exits 0 or 1, never 2, and every file it rewrote compiles.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sysconfig
import tempfile
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cachelint import api
from cachelint.config import load_config_file

from .helpers import FIXTURES, run_cli
from .vllm_source import vllm_source

# programs from Python's grammar; built on first draw (building the parser takes
# seconds, which collecting the tests should not pay in every worker)
_GRAMMAR = st.deferred(hypothesmith.from_grammar)

FUZZ = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)

USE = """
def use_it(config: Config) -> int:
    if config.is_encoder_decoder and config.pooling is None:
        return probe_encoder(config)
    return 0
"""


def _compiles(text: str, name: str) -> None:
    compile(text, name, "exec", dont_inherit=True)


def _fix_twice(program: str, *, before_use: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="cachelint-fuzz-") as d:
        root = Path(d) / "proj"
        shutil.copytree(FIXTURES / "guards" / "before", root)
        users = root / "pkg" / "users.py"
        head = "from pkg.config import Config, probe_encoder\n"
        body = program + "\n" + USE if before_use else USE + "\n" + program
        users.write_text(head + body, encoding="utf-8")
        cfg = load_config_file(root / "pyproject.toml")
        cwd = os.getcwd()
        os.chdir(root)
        original = users.read_text(encoding="utf-8")
        try:
            compile(original, "users.py", "exec", dont_inherit=True)
            compiled_before = True
        except (SyntaxError, ValueError):  # e.g. a __future__ import after USE
            compiled_before = False
        try:
            first = api.check(["."], cfg, fix=True, unsafe_fixes=True)  # must not raise
            after_first = users.read_text(encoding="utf-8")
            if compiled_before:
                _compiles(after_first, "users.py")  # still compiles after the fix
            else:
                assert after_first == original  # never "fixed" into something else
            if compiled_before and not any(n in program for n in ("Config", "probe_encoder", "use_it", "config")):
                # nothing in the generated code interferes: the known use is fixed
                assert any(f.function and f.function.endswith("use_it") for f in first.fixed), first.findings
            second = api.check(["."], cfg, fix=True, unsafe_fixes=True)
            assert second.fixed == [], "a second --fix found more to fix"
            assert users.read_text(encoding="utf-8") == after_first  # idempotent
            assert not first.errors or all("fix not written" in e or "skipped" in e for e in first.errors)
        finally:
            os.chdir(cwd)


@pytest.mark.slow
@FUZZ
@given(program=_GRAMMAR, before_use=st.booleans())
def test_generated_programs_from_the_grammar(program, before_use):
    _fix_twice(program, before_use=before_use)


@pytest.mark.slow
@settings(FUZZ, max_examples=20)
@given(program=hypothesmith.from_node(), before_use=st.booleans())
def test_generated_programs_from_libcst_nodes(program, before_use):
    _fix_twice(program, before_use=before_use)


def _digests(root: Path) -> dict[str, str]:
    out = {}
    for p in root.rglob("*.py"):
        if p.is_file() and not p.is_symlink():
            out[str(p.relative_to(root))] = hashlib.blake2b(p.read_bytes(), digest_size=16).hexdigest()
    return out


def _copy_py_tree(src: Path, dest: Path) -> None:
    def ignore(directory: str, names: list[str]) -> set[str]:
        return {
            n
            for n in names
            if n in ("site-packages", "__pycache__")
            or (not n.endswith(".py") and not os.path.isdir(os.path.join(directory, n)))
        }

    shutil.copytree(src, dest, ignore=ignore, symlinks=True)


def _fix_corpus(tree: Path, original: dict[str, str]) -> tuple[int, int]:
    proc = run_cli("check", ".", "--fix", "--unsafe-fixes", "-q", cwd=tree, timeout=1800, in_process=False)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr[-2000:]
    after = _digests(tree)
    assert set(after) == set(original)
    changed = [rel for rel in after if after[rel] != original[rel]]
    for rel in changed:
        _compiles((tree / rel).read_bytes().decode("utf-8", "surrogateescape"), rel)
    return proc.returncode, len(changed)


@pytest.mark.slow
def test_cpython_standard_library(tmp_path):
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    tree = tmp_path / "stdlib"
    _copy_py_tree(stdlib, tree)
    original = _digests(tree)
    assert len(original) > 1000
    rc, _ = _fix_corpus(tree, original)
    assert rc in (0, 1)


@pytest.mark.vllm
@pytest.mark.parametrize("version", ["0.10.2", "0.33.0"])
def test_vllm_tree(version, tmp_path):
    src = vllm_source(version)
    tree = tmp_path / f"vllm-{version}"
    _copy_py_tree(src, tree)
    original = _digests(tree)
    rc, changed = _fix_corpus(tree, original)
    assert rc in (0, 1)
    if version == "0.10.2":  # the seed sites (tests/test_vllm.py) at least were rewritten
        assert changed >= 3


@settings(FUZZ, max_examples=60)
@given(
    data=st.one_of(
        st.binary(max_size=400),
        st.text(max_size=400).map(lambda t: t.encode("utf-8", "surrogatepass")),
        _GRAMMAR.map(lambda t: t.encode("utf-8")).flatmap(
            # a valid program with a few bytes flipped, cut or inserted
            lambda b: st.tuples(st.just(b), st.integers(0, max(len(b), 1)), st.binary(max_size=3)).map(
                lambda x: x[0][: x[1]] + x[2] + x[0][x[1] + 1 :]
            )
        ),
    )
)
def test_arbitrary_bytes_never_crash(data):
    """Any file content: a CL000 finding or none, never an exception, and the
    file next to it is still checked."""
    with tempfile.TemporaryDirectory(prefix="cachelint-bytes-") as d:
        root = Path(d) / "proj"
        shutil.copytree(FIXTURES / "guards" / "before", root)
        (root / "pkg" / "noise.py").write_bytes(data)
        cfg = load_config_file(root / "pyproject.toml")
        cwd = os.getcwd()
        os.chdir(root)
        try:
            res = api.check(["."], cfg)
        finally:
            os.chdir(cwd)
        assert all(f.code == "CL000" for f in res.findings if f.path == "pkg/noise.py")
        assert sum(f.path == "pkg/users.py" for f in res.findings) == 7
