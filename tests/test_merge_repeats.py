"""The same repeated work is one finding that lists every site."""

from __future__ import annotations

import json
import textwrap

from .helpers import run_cli

PYPROJECT = """
[tool.cachelint]
preset = "python"
hot-roots = [{ pattern = "*.Runner.execute_model", kind = "per-step" }]
"""

RUNNER = """
import inspect


class Runner:
    def execute_model(self, batch):
        a = inspect.signature(batch.callback)
        b = inspect.signature(batch.callback){noqa}
        return a, b
"""


def _project(tmp_path, noqa: str = ""):
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT))
    (tmp_path / "runner.py").write_text(textwrap.dedent(RUNNER).lstrip().replace("{noqa}", noqa))
    return tmp_path


def _json(work, *args):
    proc = run_cli("check", ".", "--output-format", "json", "--no-cache", *args, cwd=work)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def test_the_same_call_twice_in_one_run_is_one_finding_with_both_sites(tmp_path):
    work = _project(tmp_path)
    (f,) = _json(work)
    assert f["line"] == 6 and f["data"]["sites"] == [[6, 13], [7, 13]]
    assert "also at line 7" in f["message"]
    assert f["data"]["estimate"]["sites"] == 2
    # the merged fix still rewrites both uses: one local, two reads
    assert run_cli("check", ".", "--fix", "--unsafe-fixes", "--no-cache", cwd=work).returncode in (0, 1)
    fixed = (work / "runner.py").read_text()
    assert fixed.count("inspect.signature(batch.callback)") == 1, fixed


def test_a_suppressed_site_is_not_merged_into_a_reported_one(tmp_path):
    work = _project(tmp_path, "  # noqa: CL002")
    (f,) = _json(work)
    assert f["line"] == 6 and "sites" not in f["data"]
