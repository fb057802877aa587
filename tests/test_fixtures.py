"""Fixture projects in fixtures/: before/ trees, expected findings, after/ trees.

Each case has ``case.toml`` listing the exact findings ``cachelint check``
must report on ``before/`` (code, path, line, and optionally applicability,
replacement, message fragments, hot path), and, when ``after/`` exists, the
files ``cachelint check --fix`` (with the case's args) must rewrite, exactly;
every file not in ``after/`` must come out byte-identical. A second ``--fix``
must change nothing.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from .helpers import FIXTURES, run_cli

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CASES = sorted(p.parent for p in FIXTURES.glob("*/case.toml"))


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _case(case_dir: Path) -> dict:
    return tomllib.loads((case_dir / "case.toml").read_text(encoding="utf-8"))


@pytest.fixture(params=CASES, ids=[c.name for c in CASES])
def case(request, tmp_path):
    case_dir: Path = request.param
    work = tmp_path / case_dir.name
    shutil.copytree(case_dir / "before", work)
    return case_dir, work, _case(case_dir)


def test_fixture_findings(case):
    _case_dir, work, spec = case
    proc = run_cli("check", ".", "--output-format", "json", *spec.get("args", []), cwd=work)
    expected = spec.get("expect", [])
    assert proc.returncode == (1 if expected else 0), proc.stderr
    assert "Traceback" not in proc.stderr
    got = json.loads(proc.stdout)
    assert sorted((f["code"], f["path"], f["line"]) for f in got) == sorted(
        (e["code"], e["path"], e["line"]) for e in expected
    )
    for e in expected:
        f = next(f for f in got if (f["code"], f["path"], f["line"]) == (e["code"], e["path"], e["line"]))
        if "applicability" in e:
            assert f["fix"] is not None and f["fix"]["applicability"] == e["applicability"], f
        if e.get("no_fix"):
            assert f["fix"] is None, f
        if "replacement" in e:
            assert f["fix"]["replacement"] == e["replacement"]
        for text in e.get("message_contains", []):
            assert text in f["message"], f["message"]
        if "hot_path" in e:
            assert f["hot_path"] == e["hot_path"]


def test_fixture_fix(case):
    case_dir, work, spec = case
    if not (case_dir / "after").is_dir():
        pytest.skip("case has no after/ tree (nothing to fix)")
    # after/ holds only the files the fix changes; all others stay byte-identical
    expected = {**_tree(case_dir / "before"), **_tree(case_dir / "after")}
    proc = run_cli("check", ".", "--fix", *spec.get("args", []), cwd=work)
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr
    assert _tree(work) == expected
    again = run_cli("check", ".", "--fix", *spec.get("args", []), cwd=work)
    assert again.returncode in (0, 1), again.stderr
    assert _tree(work) == expected
