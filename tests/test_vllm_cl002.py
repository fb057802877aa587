"""CL002 on the newest vLLM release (0.33.0, source from the PyPI wheel).

- docs/findings/vllm-0.33.0.md (written by scripts/findings_report.py) lists
  exactly what cachelint reports with the defaults, each with a verdict, and
  its counts are the report's;
- applying every safe fix (with ``min-cost = "low"``, the widest setting) to
  a copy rewrites every file with a safe fix, leaves every changed file
  compiling, and a second ``--fix`` changes nothing.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from . import helpers
from .helpers import REPO
from .vllm_source import vllm_source

# whole vLLM trees: each run in a process of its own, not in the test worker
run_cli = functools.partial(helpers.run_cli, in_process=False)

pytestmark = pytest.mark.vllm

VERSION = "0.33.0"
DOC = REPO / "docs" / "findings" / f"vllm-{VERSION}.md"


@pytest.fixture(scope="module")
def src() -> Path:
    return vllm_source(VERSION)


@pytest.fixture(scope="module")
def report(src) -> list[dict]:
    proc = run_cli("check", "vllm", "--output-format", "json", cwd=src)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def test_no_parse_errors_and_findings_carry_frequency_and_fix_kind(report):
    assert [f for f in report if f["code"] == "CL000"] == []
    cl2 = [f for f in report if f["code"] == "CL002"]
    assert cl2
    for f in cl2:
        assert f["hot_path"], f
        assert f["data"]["hot_kind"] in ("per-token", "per-layer", "per-step", "per-request", "per-batch")
        assert f["data"]["repeated"]
        if f["fix"] is not None:
            assert f["data"]["fix_kind"] in ("hoist-init", "hoist-local", "memoize", "module-constant")


def test_findings_document_matches_the_report(report):
    doc = DOC.read_text(encoding="utf-8")
    section = doc.split("## Every CL002 finding with the defaults, with a verdict", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^- `(vllm/[\w/.]+\.py):(\d+)`", section, re.MULTILINE)
    reported = [(f["path"], str(f["line"])) for f in report if f["code"] == "CL002"]
    assert Counter(listed) == Counter(reported)
    verdicts = re.findall(r"\*\*Verdict: (real|false alarm)", section)
    assert len(verdicts) == len(reported)
    m = re.search(r"\*\*Result: (\d+) findings with the defaults \((\d+) CL002, (\d+) CL001", doc)
    assert m and int(m.group(2)) == len(reported)
    assert int(m.group(1)) == sum(1 for f in report if f["code"] in ("CL001", "CL002"))
    assert int(m.group(3)) == sum(1 for f in report if f["code"] == "CL001")
    by_code = Counter(f["code"] for f in report)
    defaults = doc.split("### Defaults", 1)[1].split("###", 1)[0]
    for code, n in by_code.items():
        assert f"| {code} | {n} |" in defaults


def test_sample_of_twenty_verdicts_at_least_nine_in_ten_real(report):
    doc = DOC.read_text(encoding="utf-8")
    sample = doc.split("## Random sample of", 1)[1].split("\n## ", 1)[0]
    verdicts = re.findall(r"\*\*Verdict: (real|false alarm)", sample)
    # twenty of the default CL001 and CL002 findings, or all of them when there are fewer
    n = min(20, sum(1 for f in report if f["code"] in ("CL001", "CL002")))
    assert len(verdicts) == n
    assert verdicts.count("real") >= 0.9 * n
    # the sample is drawn from what cachelint reports today, not from an older run
    sampled = re.findall(r"^- `(vllm/[\w/.]+\.py):(\d+)`", sample, re.MULTILINE)
    assert len(sampled) == n
    reported = {(f["path"], str(f["line"])) for f in report}
    assert set(sampled) <= reported


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*.py"))}


def test_safe_fixes_compile_and_a_second_run_changes_nothing(src, tmp_path):
    work = tmp_path / "tree"
    shutil.copytree(src / "vllm", work / "vllm")
    (work / "cachelint.toml").write_text('[tool.cachelint]\nmin-cost = "low"\n')
    before = _digest(work)
    proc = run_cli("check", "vllm", "--output-format", "json", cwd=work)
    safe = {f["path"] for f in json.loads(proc.stdout) if f["fix"] and f["fix"]["applicability"] == "safe"}
    assert safe, "expected at least one safe fix on this release"
    fixed = run_cli("check", "vllm", "--fix", cwd=work)
    assert fixed.returncode in (0, 1), fixed.stderr
    assert "warning" not in fixed.stderr.lower(), fixed.stderr
    after = _digest(work)
    changed = {k for k in before if before[k] != after.get(k)}
    assert changed, "no file was rewritten"
    assert safe <= changed
    for rel in changed:
        compile((work / rel).read_text(encoding="utf-8"), rel, "exec")
    again = run_cli("check", "vllm", "--fix", cwd=work)
    assert again.returncode in (0, 1), again.stderr
    assert _digest(work) == after
