"""Ranking: each finding says how often its site runs and what that costs per step; text output and --statistics use it."""

from __future__ import annotations

import textwrap

from .helpers import run_cli

PYPROJECT = """
[tool.cachelint]
preset = "python"
hot-roots = [
    { pattern = "*.Handler.handle", kind = "per-request" },
    { pattern = "*.Layer.forward", kind = "per-layer" },
    { pattern = "*.Runner.step", kind = "per-step" },
]
"""

A = """
import inspect
from b import shared


class Runner:
    def __init__(self, model):
        self.model = model

    def step(self):
        return inspect.signature(self.model.forward)


class Handler:
    def handle(self):
        return shared()
"""

B = """
import os


class Layer:
    def forward(self, x):
        return shared()


def shared() -> bool:
    return os.getenv("FAST", "0") == "1"
"""


def _project(tmp_path):
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT))
    (tmp_path / "a.py").write_text(textwrap.dedent(A).lstrip())
    (tmp_path / "b.py").write_text(textwrap.dedent(B).lstrip())
    return tmp_path


def test_a_helper_reached_per_request_and_per_layer_runs_per_layer(tmp_path):
    import json

    proc = run_cli("check", ".", "--output-format", "json", cwd=_project(tmp_path))
    got = {f["path"]: f for f in json.loads(proc.stdout)}
    assert got["b.py"]["data"]["hot_kind"] == "per-layer"
    assert got["b.py"]["hot_path"] == ["b.Layer.forward", "b.shared"]
    assert got["a.py"]["data"]["hot_kind"] == "per-step"


def test_text_lists_the_costliest_per_step_first_and_statistics_group_by_kind(tmp_path):
    import json

    work = _project(tmp_path)
    text = run_cli("check", ".", cwd=work).stdout
    found = json.loads(run_cli("check", ".", "--output-format", "json", cwd=work).stdout)
    ranked = sorted(found, key=lambda f: -f["data"]["estimate"]["rank_seconds"])
    first, second = (f["path"] + ":" for f in ranked)
    assert text.index(first) < text.index(second)  # by estimated time per step, whatever the path order
    stats = run_cli("check", ".", "--statistics", cwd=work).stdout.splitlines()
    assert stats[0].split("\t")[:2] == ["2", "CL002"]
    kinds = [line.split()[-1] for line in stats[1:]]
    assert kinds == ["per-layer", "per-step"]
