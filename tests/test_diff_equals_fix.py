"""``--diff`` shows exactly what ``--fix`` writes, every fix pass included.

For each fixture project (and, in the slow tier, a real vLLM tree) the diff
printed by ``check --diff`` must equal the unified diff between the tree
before and after ``check --fix``, with and without ``--unsafe-fixes``.
"""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest

from .helpers import FIXTURES, run_cli

PROJECTS = sorted(
    [p.parent / "before" for p in FIXTURES.glob("*/case.toml") if (p.parent / "before").is_dir()]
    + [p.parent / "project" for p in FIXTURES.glob("soundness/*/case.toml")]
)


def _expected_diff(before: Path, after: Path) -> str:
    out = []
    for p in sorted(before.rglob("*.py"), key=lambda p: str(p.relative_to(before))):
        rel = str(p.relative_to(before))
        if p.read_bytes() == (after / rel).read_bytes():
            continue
        old, new = p.read_text(encoding="utf-8"), (after / rel).read_text(encoding="utf-8")
        if old != new:
            out.extend(
                difflib.unified_diff(
                    old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=f"a/{rel}", tofile=f"b/{rel}"
                )
            )
    return "".join(out)


def assert_diff_equals_fix(src: Path, tmp_path: Path, *args: str, in_process: bool = True) -> str:
    diff_tree, fix_tree = tmp_path / "diff", tmp_path / "fix"
    shutil.copytree(src, diff_tree, ignore=shutil.ignore_patterns("__pycache__", "cachelint.lock"))
    shutil.copytree(src, fix_tree, ignore=shutil.ignore_patterns("__pycache__", "cachelint.lock"))
    shown = run_cli("check", ".", "--diff", "--no-cache", *args, cwd=diff_tree, in_process=in_process)
    assert "Traceback" not in shown.stderr, shown.stderr
    written = run_cli("check", ".", "--fix", "--no-cache", *args, cwd=fix_tree, in_process=in_process)
    assert "Traceback" not in written.stderr, written.stderr
    # --diff wrote nothing
    assert _expected_diff(src, diff_tree) == ""
    assert shown.stdout == _expected_diff(diff_tree, fix_tree)
    return shown.stdout


@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
@pytest.mark.parametrize("project", PROJECTS, ids=[str(p.parent.relative_to(FIXTURES)) for p in PROJECTS])
def test_diff_equals_fix_on_fixtures(project: Path, unsafe: bool, tmp_path: Path) -> None:
    assert_diff_equals_fix(project, tmp_path, *(["--unsafe-fixes"] if unsafe else []))


def test_diff_includes_later_passes(tmp_path: Path) -> None:
    """A hoist into ``__init__`` creates a cached attribute that a second pass
    has another reader use: the diff shows both passes' edits."""
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pyproject.toml").write_text(
        "[tool.cachelint]\n"
        'preset = "none"\n'
        'hot-roots = [{ pattern = "pkg.runner.Runner.step", kind = "per-step" }]\n'
        'extend-expensive-calls = [{ pattern = "*.build_table", kind = "processor", pure = true, total = true }]\n'
    )
    (src / "pkg" / "__init__.py").write_text("")
    (src / "pkg" / "runner.py").write_text(
        "from dataclasses import dataclass\n\n\n"
        "def build_table(n: int) -> tuple:\n"
        "    return tuple(range(n))\n\n\n"
        "@dataclass(frozen=True)\n"
        "class Config:\n"
        "    size: int\n\n\n"
        "class Runner:\n"
        "    def __init__(self, config: Config):\n"
        "        self.config = config\n\n"
        "    def step(self, i: int) -> int:\n"
        "        return build_table(self.config.size)[i]\n\n"
        "    def describe(self) -> int:\n"
        "        return len(build_table(self.config.size))\n"
    )
    diff = assert_diff_equals_fix(src, tmp_path / "out")
    assert diff, "the fixture has fixes"


@pytest.mark.vllm
@pytest.mark.parametrize("version", ["0.10.2", "0.33.0"])
def test_diff_equals_fix_on_vllm(version: str, tmp_path: Path) -> None:
    from .vllm_source import vllm_source

    src = tmp_path / "src"
    shutil.copytree(vllm_source(version) / "vllm", src / "vllm")
    diff = assert_diff_equals_fix(src, tmp_path / "out", "--unsafe-fixes", in_process=False)
    assert diff.count("\n+++ b/") + diff.startswith("+++ b/") >= 1


def test_parallel_rewrite_equals_serial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Files rewritten by forked workers come out as when rewritten one by one,
    with the same findings applied (the same objects, not copies)."""
    from cachelint import api
    from cachelint.apply import fixer
    from cachelint.config import load_config_file

    src = FIXTURES / "guards" / "before"
    work = tmp_path / "w"
    shutil.copytree(src, work)
    pkg = work / "pkg"
    for i in range(3):  # several files to fix
        (pkg / f"users_{i}.py").write_text((pkg / "users.py").read_text())
    cfg = load_config_file(work / "pyproject.toml")
    res = api.check([str(work)], cfg, fix=False)
    findings = [f for f in res.findings if f.fix is not None]
    assert len({f.path for f in findings}) >= 3
    serial = fixer.compute_fixes(findings, True, jobs=1)
    pooled: list = []
    real = fixer._rewrite_parallel
    monkeypatch.setattr(fixer, "_rewrite_parallel", lambda *a: pooled.append(real(*a)) or pooled[-1])
    parallel = fixer.compute_fixes(findings, True, jobs=2)
    assert pooled and pooled[0] is not None, "the workers did not run"
    assert [(ff.path, ff.new, ff.error) for ff in serial] == [(ff.path, ff.new, ff.error) for ff in parallel]
    assert [[id(f) for f in ff.findings] for ff in serial] == [[id(f) for f in ff.findings] for ff in parallel]
    assert all(ff.new != ff.old for ff in parallel)
    # beside another thread the rewrite stays serial (a fork would copy its locks)
    import threading

    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        pooled.clear()
        beside = fixer.compute_fixes(findings, True, jobs=2)
    finally:
        stop.set()
        other.join()
    assert pooled == [None]
    assert [(ff.path, ff.new, ff.error) for ff in beside] == [(ff.path, ff.new, ff.error) for ff in serial]


def test_a_later_pass_frees_the_first_analysis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``run_fix_passes`` holds the only reference to the analysis it is
    handed, and takes it apart before a later pass builds its own (a fix run
    needs the memory of one analysis, not two)."""
    from cachelint import api
    from cachelint.apply import passes
    from cachelint.config import load_config_file

    src = FIXTURES / "soundness" / "hoist_control_local_unchanged_arg" / "project"
    work = tmp_path / "project"
    shutil.copytree(src, work)
    monkeypatch.chdir(work)
    states: list[tuple[bool, bool]] = []
    original = passes._reanalyse

    def spy(analysis, *args, **kwargs):
        new = original(analysis, *args, **kwargs)
        # the old analysis is emptied by the time the new one exists
        states.append((bool(vars(analysis)), bool(vars(new))))
        return new

    monkeypatch.setattr(passes, "_reanalyse", spy)
    result = api.check(["."], load_config_file(work / "pyproject.toml"), fix=True)
    assert result.fixed, "the fixture has a safe fix, so a second pass runs"
    assert states == [(False, True)]


def test_an_analysis_handed_over_directly_is_left_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only an analysis ``run_fix_passes`` owns (handed over in a list) is
    taken apart; a caller that passes its own keeps a whole one."""
    from cachelint import api
    from cachelint.apply.passes import run_fix_passes
    from cachelint.config import load_config_file
    from cachelint.rules import select_rules
    from cachelint.rules.runner import run_rules

    src = FIXTURES / "soundness" / "hoist_control_local_unchanged_arg" / "project"
    work = tmp_path / "project"
    shutil.copytree(src, work)
    monkeypatch.chdir(work)
    analysis, _files = api.analyse(["."], load_config_file(work / "pyproject.toml"), jobs=1)
    rules = select_rules(analysis.config.select, analysis.config.ignore)
    raw, flags = run_rules(analysis, rules)
    findings = [f for f, s in zip(raw, flags) if not s]
    done = run_fix_passes(
        analysis, findings, rules, unsafe_fixes=False, write=False, roots=["."], reported=lambda raw: raw
    )
    assert done.fixed, "the fixture has a safe fix, so a second pass runs"
    assert vars(analysis) and analysis.program.indexes
