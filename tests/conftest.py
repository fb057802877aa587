"""Test tiers: every ``vllm`` or ``engine`` test is also ``slow``.

So one marker expression picks each tier (pyproject.toml, ``markers``):

    pytest                             # fast tier (no -m given means -m "not slow")
    pytest -m "not slow"               # the same, explicitly: no download, no vLLM
    pytest -m "slow and not engine"    # slow tier: the slow local tests and the vLLM source tests
    nox -s engine_current engine_seed  # engine tier (tests/engine), in its own venvs

A plain hook (not ``trylast``): pytest's ``-m`` selection is itself a
``pytest_collection_modifyitems`` hook, registered before any conftest, so it
runs after this one; tests/engine/conftest.py, registered after this file, runs
before it and has marked its tests ``engine`` by the time this hook reads them.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("vllm") or item.get_closest_marker("engine"):
            item.add_marker(pytest.mark.slow)


FAST = "not slow"


def pytest_configure(config):
    # a bare `pytest` is the fast tier: nothing downloads unless a tier is asked for
    if not config.option.markexpr:
        config.option.markexpr = FAST


def pytest_report_header(config):
    if config.option.markexpr == FAST:
        return [f'tier: fast (-m "{FAST}"); the others: -m "slow and not engine", nox -s engine_current engine_seed']
    return [f"tier: -m {config.option.markexpr!r}"]
