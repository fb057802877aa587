"""Executable differential fixtures: a safe fix never changes what a program computes.

Each case in ``fixtures/soundness/<case>/`` is a small project of our own,
shaped like engine code, in ``project/`` (a ``pyproject.toml`` with its
cachelint configuration, a package, and a ``main.py`` that exercises the
package and prints what it computes), plus ``case.toml``::

    description = "what the case shows"
    hazard = "control" | "<hazard kind>"      # control: the fix is rightly safe
    [[expect]]                                # one per finding the case is about
    code = "CL001"
    path = "pkg/users.py"
    line = 5                                  # optional
    applicability = "safe" | "unsafe" | "none" | "absent"
                        # none: reported without a fix; absent: not reported
                        # (the work is not repeated: its input changes between runs)
    reason_contains = ["setattr"]             # optional, for unsafe fixes

The test runs ``main.py``; checks the findings; applies ``cachelint check
--fix`` (safe fixes only) and requires ``main.py`` to print the same and exit
the same; and, when the case expects an unsafe fix, applies ``--fix
--unsafe-fixes`` to a fresh copy and requires the output (or the exit status)
to change: the hazard the unsafe reason names is real, so the fixture tests
something. A control must have at least one safe fix that ``--fix`` applies.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import FIXTURES, run_cli

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SOUNDNESS = FIXTURES / "soundness"
CASES = sorted(p.parent for p in SOUNDNESS.glob("*/case.toml"))


def _spec(case_dir: Path) -> dict:
    return tomllib.loads((case_dir / "case.toml").read_text(encoding="utf-8"))


def _run_program(root: Path) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONHASHSEED"] = "0"
    proc = subprocess.run([sys.executable, "main.py"], cwd=root, env=env, capture_output=True, text=True, timeout=120)
    # the last line of a traceback says what was raised, without paths
    err = proc.stderr.strip().splitlines()[-1] if proc.returncode else ""
    return proc.returncode, proc.stdout, err


def _copy(case_dir: Path, dest: Path) -> Path:
    shutil.copytree(case_dir / "project", dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _sources(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.py"))}


def _matches(finding: dict, want: dict) -> bool:
    return (
        finding["code"] == want["code"]
        and finding["path"] == want["path"]
        and ("line" not in want or finding["line"] == want["line"])
    )


@pytest.mark.parametrize("case_dir", CASES, ids=[c.name for c in CASES])
def test_soundness_case(case_dir: Path, tmp_path: Path) -> None:
    spec = _spec(case_dir)
    if spec.get("xfail"):
        pytest.xfail(spec["xfail"])
    assert spec.get("description") and spec.get("hazard"), "case.toml needs a description and a hazard"
    expects = spec.get("expect", [])
    assert expects, "a soundness case names the findings it is about"

    original = _copy(case_dir, tmp_path / "original")
    before = _run_program(original)
    assert before[0] == 0, f"main.py fails before any fix: {before[2]}"

    proc = run_cli("check", ".", "--output-format", "json", "--unsafe-fixes", "--no-cache", cwd=original)
    assert "Traceback" not in proc.stderr, proc.stderr
    findings = json.loads(proc.stdout)
    for want in expects:
        hits = [f for f in findings if _matches(f, want)]
        if want["applicability"] == "absent":
            assert hits == [], f"{want['code']} reported in {want['path']}: {hits}"
            continue
        assert hits, f"no {want['code']} finding in {want['path']}: {findings}"
        for f in hits:
            fix = f.get("fix")
            got = fix["applicability"] if fix else "none"
            assert got == want["applicability"], (
                f"{f['path']}:{f['line']}: {got} fix, expected {want['applicability']}: {f['message']}"
            )
            # the message names the first hazards; the notes hold them all
            text = " ".join(
                [f["message"], (fix or {}).get("message", ""), *(fix or {}).get("relies_on", []), *f.get("notes", [])]
            )
            for fragment in want.get("reason_contains", []):
                assert fragment in text, f"reason does not name {fragment!r}: {text}"

    # safe fixes only: the program must compute exactly the same
    safe = _copy(case_dir, tmp_path / "safe")
    run_cli("check", ".", "--fix", "--no-cache", cwd=safe)
    assert _run_program(safe) == before, "a safe fix changed what the program computes"
    changed = _sources(safe) != _sources(original)
    if spec["hazard"] == "control":
        assert changed, "a control case must have a safe fix that --fix applies"

    # the unsafe fix, applied, must really change the output: the hazard is real
    if any(w["applicability"] == "unsafe" for w in expects):
        unsafe = _copy(case_dir, tmp_path / "unsafe")
        run_cli("check", ".", "--fix", "--unsafe-fixes", "--no-cache", cwd=unsafe)
        assert _sources(unsafe) != _sources(original), "--unsafe-fixes applied nothing"
        assert _run_program(unsafe) != before, "the unsafe fix does not change the output: the case proves nothing"
