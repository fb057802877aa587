"""Test tiers: every ``vllm`` or ``engine`` test is also ``slow``.

So one marker expression picks each tier (pyproject.toml, ``markers``):

    pytest -m "not slow"               # fast tier: no download, no vLLM
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
