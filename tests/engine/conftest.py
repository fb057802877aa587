"""The engine tier: marker, skip reasons, and a summary printed at the end of the run."""

from __future__ import annotations

import json

import pytest

from .harness import engine_cache

# What the tier measured (rewritten sites, latency ratios), printed after the
# test results and written to $CACHELINT_TEST_CACHE/engine/reports/.
REPORT: dict[str, list[str]] = {}


def note(section: str, line: str) -> None:
    REPORT.setdefault(section, []).append(line)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/engine/" in item.nodeid.replace("\\", "/"):
            item.add_marker(pytest.mark.engine)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
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
