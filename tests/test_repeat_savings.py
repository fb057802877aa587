"""How many calls per run repeat (CL006's estimate): loops counted from their
source where it says, uses under branches counted as taken on half the runs,
the repeats being the runs expected less the one a fix keeps, and no finding
for a loop of one iteration. The
callee is a method cachelint cannot see (cost unknown), which CL006 alone
reports."""

from __future__ import annotations

import ast
import json
import textwrap

import pytest

from cachelint.facts import repeats

from .helpers import run_cli

PYPROJECT = """
[tool.cachelint]
preset = "none"
select = ["CL006"]
hot-roots = [{ pattern = "*.Runner.step", kind = "per-step" }]
"""

ENGINE = """
class Runner:
    def step(self, batch, ctx):
        n = 0
        for side in range(2):
            n += ctx.lookup("a") + side
        for item in batch:
            if item.flag:
                n += ctx.lookup("b")
        n += ctx.lookup("j")
        if batch.extra:
            n += ctx.lookup("j")
        if batch.left:
            n += ctx.lookup("m")
        if batch.right:
            n += ctx.lookup("m")
        for _ in range(1):
            n += ctx.lookup("n")
        n += ctx.lookup("p")
        n += ctx.lookup("p")
        for item in batch:
            n += ctx.lookup("q")
        return n
"""


@pytest.fixture(scope="module")
def found(tmp_path_factory) -> dict:
    work = tmp_path_factory.mktemp("savings")
    (work / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT))
    (work / "engine.py").write_text(textwrap.dedent(ENGINE).lstrip())
    proc = run_cli("check", ".", "--output-format", "json", "--no-cache", cwd=work)
    assert proc.returncode in (0, 1), proc.stderr
    lines = ENGINE.lstrip().splitlines()
    key = {}
    for f in json.loads(proc.stdout):
        text = lines[f["line"] - 1]
        key[text[text.index('lookup("') + 8]] = f["data"]["estimate"]
    return key


def test_a_literal_range_gives_the_loop_count(found):
    assert found["a"]["calls_per_run"] == 1  # two iterations, one call kept
    assert "2 iterations, from the source" in found["a"]["text"]


def test_a_use_under_a_branch_in_a_loop_counts_half_the_iterations(found):
    # 8 iterations assumed, each running it with a chance of 1/2: 4 runs expected,
    # less the one kept whenever any runs (1 - 1/2**8)
    assert found["b"]["calls_per_run"] == pytest.approx(4 - (1 - 0.5**8), abs=1e-3)
    assert "under branches" in found["b"]["text"] and "4 runs expected" in found["b"]["text"]
    assert found["q"]["calls_per_run"] == 7  # no branch: the assumed count less one


def test_a_second_use_under_a_branch_saves_half_a_call(found):
    assert found["j"]["calls_per_run"] == 0.5
    assert "1.5 runs expected, 0.5 of them repeats" in found["j"]["text"]
    assert found["p"]["calls_per_run"] == 1  # both on every path: one saved


def test_uses_each_under_a_branch_of_its_own_repeat_a_quarter_of_a_call(found):
    # 1/2 + 1/2 runs expected, less the chance that either runs (3/4)
    assert found["m"]["calls_per_run"] == pytest.approx(0.25)


def test_no_finding_for_a_loop_of_one_iteration(found):
    assert "n" not in found


@pytest.mark.parametrize(
    ("shares", "repeated"),
    [([1, 1], 1), ([1, 1, 1], 2), ([1, 0.5], 0.5), ([0.5, 0.5], 0.25), ([0.5], 0), ([1] * 8, 7)],
)
def test_repeated_runs(shares, repeated):
    assert repeats.repeated_runs(shares) == pytest.approx(repeated)
    if len(set(shares)) == 1:  # a loop's iterations: the same in closed form
        assert repeats.repeated_runs_each(shares[0], len(shares)) == pytest.approx(repeated)


def test_a_loop_of_a_billion_iterations_is_counted_not_listed():
    assert repeats.repeated_runs_each(1.0, 10**9) == pytest.approx(10**9 - 1)
    assert repeats.repeated_runs_each(0.5, 10**9) == pytest.approx(0.5 * 10**9 - 1)


@pytest.mark.parametrize(
    ("source", "count"),
    [
        ("for i in range(3): pass", 3),
        ("for i in range(2, 10, 4): pass", 2),
        ("for x in (a, b, c): pass", 3),
        ("for x in [a, *rest]: pass", None),
        ("for i in range(n): pass", None),
        ("for i in range(1, 5, 0): pass", None),
        ("[x for x in (1, 2) for y in range(3)]", 6),
        ("[x for x in (1, 2) if x]", None),
        ("while x: pass", None),
    ],
)
def test_trip_count(source, count):
    node = ast.parse(source).body[0]
    loop = node.value if isinstance(node, ast.Expr) else node
    assert repeats.trip_count(loop) == count
