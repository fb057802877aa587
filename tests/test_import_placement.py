"""Imports a fix adds go where isort / ruff's import sorting put them: a file
that passed ``ruff check --select I`` before ``--fix`` passes it after."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest

from codemods.imports import add_import

from .helpers import FIXTURES, run_cli

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _ruff() -> str | None:
    found = shutil.which("ruff")
    if found:
        return found
    local = Path(sys.executable).parent / "ruff"
    return str(local) if local.is_file() else None


RUFF = _ruff()
needs_ruff = pytest.mark.skipif(RUFF is None, reason="ruff is not installed next to this Python nor on PATH")


def _sorted_ok(path: Path, cwd: Path) -> bool:
    assert RUFF is not None
    proc = subprocess.run(
        [RUFF, "check", "--isolated", "--select", "I", "--no-cache", "--quiet", str(path)],
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode == 0


CASES = {
    # (source, expected after adding `import functools`)
    "stdlib section, sorted among plain imports": (
        "import importlib\nimport os\nfrom types import ModuleType\n\nimport jinja2\n",
        "import functools\nimport importlib\nimport os\nfrom types import ModuleType\n\nimport jinja2\n",
    ),
    "after the last plain import, before the from imports": (
        "import abc\nfrom types import ModuleType\n\nimport jinja2\n",
        "import abc\nimport functools\nfrom types import ModuleType\n\nimport jinja2\n",
    ),
    "a new stdlib section before third-party imports": (
        "import jinja2\nfrom packaging import version\n\n\ndef f():\n    pass\n",
        "import functools\n\nimport jinja2\nfrom packaging import version\n\n\ndef f():\n    pass\n",
    ),
    "after __future__ and the docstring": (
        '"""Doc."""\n\nfrom __future__ import annotations\n\nimport jinja2\n',
        '"""Doc."""\n\nfrom __future__ import annotations\n\nimport functools\n\nimport jinja2\n',
    ),
    "no imports at all": ("def f():\n    pass\n", "import functools\n\n\ndef f():\n    pass\n"),
    "already imported": ("import functools\n\nX = 1\n", "import functools\n\nX = 1\n"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_add_import_places_it_as_isort_would(name, tmp_path):
    before, expected = CASES[name]
    after = add_import(cst.parse_module(before), "functools").code
    assert after == expected
    if RUFF is not None:
        (tmp_path / "m.py").write_text(before)
        assert _sorted_ok(tmp_path / "m.py", tmp_path)
        (tmp_path / "m.py").write_text(after)
        assert _sorted_ok(tmp_path / "m.py", tmp_path)


FIX_CASES = sorted(p.parent for p in FIXTURES.glob("*/case.toml") if (p.parent / "after").is_dir())


@needs_ruff
@pytest.mark.parametrize("case_dir", FIX_CASES, ids=[c.name for c in FIX_CASES])
def test_fixed_fixture_files_stay_import_sorted(case_dir, tmp_path):
    work = tmp_path / case_dir.name
    shutil.copytree(case_dir / "before", work)
    sorted_before = {p: _sorted_ok(p, work) for p in work.rglob("*.py")}
    args = tomllib.loads((case_dir / "case.toml").read_text()).get("args", [])
    proc = run_cli("check", ".", "--fix", *args, cwd=work)
    assert proc.returncode in (0, 1), proc.stderr
    checked = [p for p, ok in sorted_before.items() if ok]
    assert checked
    assert [p.relative_to(work).as_posix() for p in checked if not _sorted_ok(p, work)] == []
