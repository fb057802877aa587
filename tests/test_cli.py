"""The command line: ruff's conventions for flags, outputs and exit codes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cachelint.rules import ALL_RULES

from .helpers import FIXTURES, run_cli


@pytest.fixture
def project(tmp_path) -> Path:
    dest = tmp_path / "proj"
    shutil.copytree(FIXTURES / "guards" / "before", dest)
    return dest


def _codes(stdout: str) -> list[str]:
    return [f["code"] for f in json.loads(stdout)]


def test_exit_codes(project, tmp_path):
    assert run_cli("check", ".", cwd=project).returncode == 1
    assert run_cli("check", ".", "--exit-zero", cwd=project).returncode == 0
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "m.py").write_text("x = 1\n")
    proc = run_cli("check", ".", cwd=clean)
    # nothing hot (no hot roots): a warning, no "All checks passed!", exit 0 (the
    # findings decide) unless --require-hot-paths
    assert proc.returncode == 0 and "All checks passed!" not in proc.stdout
    assert "No function was analysed as hot" in proc.stdout
    # the python preset's only roots are web request handlers (found by decorator): none here
    assert "warning: no function was analysed as hot: none of the " in proc.stderr
    assert "hot-root patterns matched a function (presets: python)" in proc.stderr
    assert "see `cachelint hot-paths`" in proc.stderr
    assert "no function was analysed as hot" not in run_cli("check", ".", "-q", cwd=clean).stderr
    strict = run_cli("check", ".", "--require-hot-paths", cwd=clean)
    assert strict.returncode == 2 and "error: no function was analysed as hot" in strict.stderr
    # CL002 not selected: nothing to warn about
    only = run_cli("check", ".", "--select", "CL001", "--require-hot-paths", cwd=clean)
    assert only.returncode == 0 and "All checks passed!" in only.stdout and not only.stderr
    # hot roots that match nothing: the same; `hot-roots = []` says so on purpose
    (clean / "pyproject.toml").write_text('[tool.cachelint]\nhot-roots = ["*.Engine.step"]\n')
    proc = run_cli("check", ".", "--require-hot-paths", cwd=clean)
    assert proc.returncode == 2 and "none of the 1 hot-root pattern matched a function" in proc.stderr
    (clean / "pyproject.toml").write_text("[tool.cachelint]\nhot-roots = []\n")
    proc = run_cli("check", ".", "--require-hot-paths", cwd=clean)
    assert proc.returncode == 0 and "All checks passed!" in proc.stdout and not proc.stderr
    (clean / "pyproject.toml").unlink()
    assert run_cli("check", "does-not-exist", cwd=clean).returncode == 2
    assert run_cli("check", "--no-such-flag", cwd=clean).returncode == 2


def test_default_command_is_check(project):
    a = run_cli(".", "--output-format", "json", cwd=project)
    b = run_cli("check", ".", "--output-format", "json", cwd=project)
    assert a.returncode == b.returncode == 1
    assert a.stdout == b.stdout


def test_json_fields(project):
    proc = run_cli("check", ".", "--output-format", "json", cwd=project)
    findings = json.loads(proc.stdout)
    assert len(findings) == 7
    for f in findings:
        for key in (
            "code",
            "path",
            "line",
            "column",
            "end_line",
            "end_column",
            "message",
            "function",
            "hot_path",
            "fix",
        ):
            assert key in f
        assert f["column"] >= 1 and f["end_line"] >= f["line"]
        assert f["fix"]["applicability"] in ("safe", "unsafe")
        assert f["fix"]["replacement"] == "config.cache.encoder_len"
    first = findings[0]
    assert first["path"] == "pkg/users.py" and first["line"] == 6 and first["column"] == 16
    assert first["end_column"] == 16 + len("probe_encoder(config)")
    assert first["function"] == "pkg.users.full_guard"


def test_text_output_marks_fixable_and_summarises(project):
    proc = run_cli("check", ".", cwd=project)
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("pkg/users.py:6:16: CL001 [*] `probe_encoder(config)` recomputes `Cache.encoder_len`")
    assert "Found 7 findings." in proc.stdout  # warnings: not "errors"
    assert "[*] 4 fixable with the `--fix` option." in proc.stdout
    assert "3 hidden fixes can be enabled with the `--unsafe-fixes` option." in proc.stdout
    unsafe = run_cli("check", ".", "--unsafe-fixes", cwd=project)
    assert "[*] 7 fixable" in unsafe.stdout


def test_fix_applies_safe_only_unless_unsafe(project):
    proc = run_cli("check", ".", "--fix", cwd=project)
    assert proc.returncode == 1  # the unsafe ones remain
    assert "4 fixed, 3 remaining" in proc.stdout
    text = (project / "pkg/users.py").read_text()
    assert text.count("config.cache.encoder_len") == 4
    proc = run_cli("check", ".", "--fix", "--unsafe-fixes", cwd=project)
    assert proc.returncode == 0
    assert "probe_encoder(" not in (project / "pkg/users.py").read_text()


def test_diff_writes_nothing(project):
    before = (project / "pkg/users.py").read_text()
    proc = run_cli("check", ".", "--diff", cwd=project)
    assert proc.returncode == 1
    assert proc.stdout.startswith("--- a/pkg/users.py\n+++ b/pkg/users.py\n")
    assert "-        return probe_encoder(config)\n+        return config.cache.encoder_len\n" in proc.stdout
    assert (project / "pkg/users.py").read_text() == before
    # nothing to fix: empty diff, exit 0
    (project / "pkg/users.py").write_text("x = 1\n")
    assert run_cli("check", ".", "--diff", cwd=project).returncode == 0


def test_select_and_ignore(project):
    assert _codes(run_cli("check", ".", "--output-format", "json", "--select", "CL002", cwd=project).stdout) == []
    assert _codes(run_cli("check", ".", "--output-format", "json", "--ignore", "CL001", cwd=project).stdout) == []
    assert len(_codes(run_cli("check", ".", "--output-format", "json", "--select", "CL", cwd=project).stdout)) == 7
    proc = run_cli("check", ".", "--select", "CL999", cwd=project)
    assert proc.returncode == 2 and "unknown rule selector `CL999`" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_statistics(project):
    proc = run_cli("check", ".", "--statistics", cwd=project)
    assert proc.stdout.split("\t")[:2] == ["7", "CL001"]
    # 4 of the 7 have a safe fix: no [*] for the rule, the count instead
    assert proc.stdout.splitlines()[0] == "7\tCL001\t[ ] cached-value-recomputed (4 fixable)"
    unsafe = run_cli("check", ".", "--statistics", "--unsafe-fixes", cwd=project)
    assert unsafe.stdout.splitlines()[0] == "7\tCL001\t[*] cached-value-recomputed"


def test_summary_counts_findings_and_calls_only_errors_errors():
    from cachelint.model import Finding, Span
    from cachelint.output.report import found_line

    def f(code):
        return Finding(code, "m.py", Span(1, 0, 1, 1), "msg")

    assert found_line([f("CL002")] * 23) == "Found 23 findings."
    assert found_line([f("CL002")]) == "Found 1 finding."
    assert found_line([f("CL000")] * 2) == "Found 2 errors."
    assert found_line([f("CL003"), f("CL001"), f("CL002")]) == "Found 3 findings (1 error, 2 warnings)."
    assert found_line([f("CL001")], fixed=2) == "Found 3 findings (2 fixed, 1 remaining)."
    assert (
        found_line([f("CL000"), f("CL001")], fixed=1) == "Found 3 findings (1 fixed, 2 remaining; 1 error, 1 warning)."
    )


def test_config_file_option_and_errors(project, tmp_path):
    cfg = tmp_path / "other.toml"
    cfg.write_text('[tool.cachelint]\nignore = ["CL001"]\n')
    assert run_cli("check", ".", "--config", str(cfg), cwd=project).returncode == 0
    bad = tmp_path / "bad.toml"
    bad.write_text("[tool.cachelint\n")
    proc = run_cli("check", ".", "--config", str(bad), cwd=project)
    assert proc.returncode == 2 and "invalid TOML" in proc.stderr and "Traceback" not in proc.stderr
    unknown = tmp_path / "unknown.toml"
    unknown.write_text('[tool.cachelint]\nselct = ["CL001"]\n')
    proc = run_cli("check", ".", "--config", str(unknown), cwd=project)
    assert proc.returncode == 2 and "unknown key(s) in [tool.cachelint]: selct" in proc.stderr
    # a broken pyproject.toml found by discovery is an error too, not a crash
    (project / "pyproject.toml").write_text("[tool.cachelint]\npreset = 3\n")
    proc = run_cli("check", ".", cwd=project)
    assert proc.returncode == 2 and "`preset` must be a string" in proc.stderr


def test_unknown_preset_is_a_usage_error(project):
    proc = run_cli("check", ".", "--preset", "nope", cwd=project)
    assert proc.returncode == 2 and "unknown preset 'nope'" in proc.stderr


def test_explain_every_rule():
    for rule in ALL_RULES:
        proc = run_cli("explain", rule.code)
        assert proc.returncode == 0
        assert proc.stdout.startswith(f"# {rule.name} ({rule.code})")
        assert "## Fix safety" in proc.stdout
    assert run_cli("explain", "CL999").returncode == 2


def test_rules_lists_all():
    proc = run_cli("rules")
    assert proc.returncode == 0
    assert [line.split()[0] for line in proc.stdout.splitlines()] == [r.code for r in ALL_RULES]


def test_gitignore_and_exclude_respected(project):
    (project / ".git").mkdir()
    (project / ".gitignore").write_text("ignored/\n")
    (project / "ignored").mkdir()
    shutil.copy(project / "pkg/users.py", project / "ignored/users.py")
    (project / "ignored/__init__.py").write_text("")
    n = len(json.loads(run_cli("check", ".", "--output-format", "json", cwd=project).stdout))
    assert n == 7
    # an explicitly named file is checked even if ignored
    proc = run_cli("check", "ignored/users.py", "pkg", "--output-format", "json", cwd=project)
    assert {f["path"] for f in json.loads(proc.stdout)} == {"ignored/users.py", "pkg/users.py"}
    (project / "pyproject.toml").write_text((project / "pyproject.toml").read_text() + 'exclude = ["pkg/users.py"]\n')
    assert json.loads(run_cli("check", ".", "--output-format", "json", cwd=project).stdout) == []


def test_same_module_name_in_two_places_is_analysed_twice(tmp_path):
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "conftest.py").write_text("def f(:\n")
    proc = run_cli("check", ".", "--output-format", "json", cwd=tmp_path)
    assert sorted(f["path"] for f in json.loads(proc.stdout)) == ["a/conftest.py", "b/conftest.py"]


def test_internal_error_exits_2_with_one_line(project, monkeypatch, capsys):
    from cachelint import cli
    from cachelint.rules import cl001_cached_value_recomputed as mod

    def boom(self, analysis):
        raise RuntimeError("planted failure")

    monkeypatch.setattr(mod.CachedValueRecomputed, "check", boom)
    monkeypatch.chdir(project)
    monkeypatch.delenv("CACHELINT_DEBUG", raising=False)
    assert cli.main(["check", "."]) == 2
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: planted failure" in err
    assert "Traceback" not in err


def test_min_cost_option_overrides_the_configuration(tmp_path):
    proj = tmp_path / "proj"
    shutil.copytree(FIXTURES / "attention_builder" / "before", proj)
    cfg = proj / "pyproject.toml"
    cfg.write_text(cfg.read_text().replace('min-cost = "low"\n', ""))

    def lines(*extra: str) -> set:
        proc = run_cli("check", ".", "--output-format", "json", "--no-cache", *extra, cwd=proj)
        return {(f["path"], f["line"]) for f in json.loads(proc.stdout) if f["code"] == "CL002"}

    high, low = lines(), lines("--min-cost", "low")
    assert high < low  # the low-cost process-group lookup only with --min-cost low
    cfg.write_text(cfg.read_text().replace('preset = "python"\n', 'preset = "python"\nmin-cost = "low"\n'))
    assert lines() == low and lines("--min-cost", "high") == high
    assert run_cli("check", ".", "--min-cost", "medium", cwd=proj).returncode == 2


def test_vendored_directories_are_skipped_and_reported_once(tmp_path):
    proj = tmp_path / "proj"
    for d in ("pkg", "pkg/third_party/lib", "pkg/pkg_flash_attn", "pkg/sub/pkg_helpers"):
        (proj / d).mkdir(parents=True)
        (proj / d / "__init__.py").write_text("")
    bad = "def f(:\n"  # CL000 wherever it is analysed
    for d in ("pkg/third_party/lib", "pkg/pkg_flash_attn", "pkg/sub/pkg_helpers"):
        (proj / d / "m.py").write_text(bad)

    def paths(*extra: str) -> tuple[set, str]:
        proc = run_cli("check", ".", "--output-format", "json", "--no-cache", *extra, cwd=proj)
        return {Path(f["path"]).parent.as_posix() for f in json.loads(proc.stdout)}, proc.stderr

    found, err = paths()
    # a bundled copy is named after the top-level package; a deeper namesake is the project's own code
    assert found == {"pkg/sub/pkg_helpers"}
    assert err.count("skipped 2 vendored directories") == 1
    assert "pkg/third_party" in err and "pkg/pkg_flash_attn" in err
    found, err = paths("--include-vendored")
    assert found == {"pkg/third_party/lib", "pkg/pkg_flash_attn", "pkg/sub/pkg_helpers"} and "vendored" not in err
    (proj / "pyproject.toml").write_text('[tool.cachelint]\nvendored = ["sub"]\n')
    found, err = paths()
    assert found == {"pkg/third_party/lib", "pkg/pkg_flash_attn"} and "skipped 1 vendored directory (pkg/sub)" in err
    (proj / "pyproject.toml").write_text("[tool.cachelint]\ninclude-vendored = true\n")
    assert paths()[0] == {"pkg/third_party/lib", "pkg/pkg_flash_attn", "pkg/sub/pkg_helpers"}
    (proj / "pyproject.toml").write_text('[tool.cachelint]\ninclude-vendored = "yes"\n')
    assert run_cli("check", ".", cwd=proj).returncode == 2
