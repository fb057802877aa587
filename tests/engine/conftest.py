"""The engine tier: marker, required runs, and a summary printed at the end of the run.

In the default test run the engine tests skip (no vLLM installed) with the
reason and the nox command that runs them. The nox sessions set
``CACHELINT_ENGINE_REQUIRE=<device>`` (``cpu`` unless told otherwise): then a
skipped engine test is a failure, unless it is a test for another device (a
``device`` parameter or an ``engine_device`` mark naming a device other than
the required one), and a run in which no engine test passed fails. So CI
cannot go green on an engine tier that did not run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .harness import HERE, engine_cache, installed_vllm, report

REQUIRE = "CACHELINT_ENGINE_REQUIRE"

# What the tier measured (rewritten sites, latency ratios), printed after the
# test results and written to $CACHELINT_TEST_CACHE/engine/reports/.
REPORT: dict[str, list[str]] = {}


def note(section: str, line: str) -> None:
    REPORT.setdefault(section, []).append(line)


# Shared by both eras' tests (each nox session runs one era's file).
@pytest.fixture(scope="session")
def vllm_pkg():
    return installed_vllm()


@pytest.fixture(scope="session")
def findings(vllm_pkg):
    return report(vllm_pkg.parent)


@pytest.fixture(scope="session")
def tiny_models():
    proc = subprocess.run([sys.executable, str(HERE / "models.py")], capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-4000:]
    llama, whisper = proc.stdout.split()
    return {"llama": llama, "whisper": whisper}


def required_device() -> str | None:
    return os.environ.get(REQUIRE) or None


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/engine/" in item.nodeid.replace("\\", "/"):
            item.add_marker(pytest.mark.engine)


def _device(item) -> str | None:
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "device" in callspec.params:
        return callspec.params["device"]
    mark = item.get_closest_marker("engine_device")
    return mark.args[0] if mark else None


_passed: list[str] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if "tests/engine/" not in item.nodeid.replace("\\", "/"):
        return
    if rep.passed and rep.when == "call":
        _passed.append(item.nodeid)
    required = required_device()
    if not required or not rep.skipped or hasattr(rep, "wasxfail"):
        return
    device = _device(item)
    if device is not None and device != required:
        return  # a test for another device: skipping it here is expected
    reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
    rep.outcome = "failed"
    rep.longrepr = f"skipped in a required engine run ({REQUIRE}={required}), which counts as a failure: {reason}"


def pytest_sessionfinish(session, exitstatus):
    required = required_device()
    if required and not _passed and exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    required = required_device()
    if required and not _passed:
        terminalreporter.section("engine tier")
        terminalreporter.write_line(
            f"no engine test passed in a required run ({REQUIRE}={required}): failing", red=True
        )
    if not REPORT:
        return
    terminalreporter.section("engine tier")
    out = engine_cache() / "reports"
    out.mkdir(parents=True, exist_ok=True)
    for section, lines in REPORT.items():
        terminalreporter.write_line(f"[{section}]")
        for line in lines:
            terminalreporter.write_line(f"  {line}")
        (out / f"{section}.json").write_text(json.dumps(lines, indent=1), encoding="utf-8")
