"""The hoist planner (fixes/hoisting/): which rewrite each CL002 finding gets,
and when it is unsafe, the reason that names the hazard.

Every case is a small program on a per-step root; the assertions read the fix's
edit kinds, its safety class and its message, so they hold whichever module
builds them.
"""

from __future__ import annotations

import textwrap

import pytest

from cachelint.api import lint_sources
from cachelint.config import Config, HotRoot

CONFIG = Config(
    preset="python",
    select=("CL002",),
    hot_roots=(HotRoot("*.Runner.step", "per-step"), HotRoot("*.step_fn", "per-step")),
)
HOIST_INIT = ["replace", "append_to_function"]
HOIST_LOCAL = ["replace", "replace", "insert_before"]


def _findings(src: str):
    res = lint_sources({"eng/__init__.py": "", "eng/m.py": textwrap.dedent(src).lstrip("\n")}, CONFIG)
    return res


def _one(src: str):
    res = _findings(src)
    assert len(res.findings) == 1, [f.message for f in res.findings]
    return res.findings[0]


def _kinds(f) -> list[str]:
    return [e.kind.value for e in f.fix.edits]


def _only_may_raise(f) -> bool:
    """The hoist into ``__init__`` is unsafe for one reason only: the callee
    (``inspect.signature``, not declared ``total``) may raise there."""
    unsafe = f.fix.message.partition("(unsafe: ")[2]
    return (
        f.fix.applicability.value == "unsafe"
        and unsafe.startswith("`inspect.signature(...)` may raise")
        and "; " not in unsafe
    )


RUNNER = """
import inspect

class Runner:
    def __init__(self, model):
        self.model = model
{init_extra}
{methods}
    def step(self, batch):
        return batch, inspect.signature(self.model.forward)
"""


def _runner(init_extra: str = "", methods: str = "") -> str:
    return RUNNER.format(init_extra=init_extra, methods=methods)


def test_hoist_to_init_is_safe_when_every_input_is_bound_once_at_construction():
    f = _one(_runner())
    assert _kinds(f) == HOIST_INIT
    # every input is proven; what remains is that the signature query may raise
    assert _only_may_raise(f)
    assert "once at the end of `Runner.__init__`" in f.fix.message


@pytest.mark.parametrize(
    "init_extra",
    [
        "        if model is None:\n            return\n        self.ready = True\n",
        "        self.ready = True\n        return\n",
    ],
    ids=["early-return", "trailing-return"],
)
def test_hoist_to_init_is_unsafe_when_the_constructor_returns_before_the_appended_statement(init_extra):
    f = _one(_runner(init_extra=init_extra))
    assert _kinds(f) == HOIST_INIT
    assert f.fix.applicability.value == "unsafe"
    assert "`eng.m.Runner.__init__` can return early" in f.fix.message


def test_hoist_to_init_is_unsafe_when_the_constructor_reaches_the_method():
    f = _one(_runner(init_extra="        self.step(None)\n"))
    assert f.fix.applicability.value == "unsafe"
    assert "reaches `step`, which would read the attribute before it is set" in f.fix.message


def test_hoist_to_init_is_unsafe_when_another_method_reassigns_an_input():
    f = _one(_runner(methods="    def swap(self, model):\n        self.model = model\n"))
    assert f.fix.applicability.value == "unsafe"
    assert "`self.model` is also assigned in `eng.m.Runner.swap`" in f.fix.message


def test_a_call_in_a_loop_over_per_call_data_with_invariant_inputs_goes_to_init():
    src = """
import inspect

class Runner:
    def __init__(self, model):
        self.model = model

    def step(self, batch):
        out = []
        for item in batch:
            out.append(inspect.signature(self.model.forward))
        return out
"""
    f = _one(src)
    assert _kinds(f) == HOIST_INIT and _only_may_raise(f)


@pytest.mark.parametrize(
    "body",
    [
        # (the values are only measured: two uses that both returned the one dict would share it)
        "    a = json.loads(payload)\n    b = json.loads(payload)\n    return len(a), len(b)\n",
        # the first use is conditional, but a later one runs on every path: no new path runs the call
        "    if verbose:\n        print(json.loads(payload))\n    return json.loads(payload)\n",
    ],
    ids=["both-unconditional", "first-conditional-second-not"],
)
def test_hoist_to_a_local_is_safe_when_the_call_runs_on_every_path_it_is_moved_to(body):
    res = _findings("import json\n\ndef step_fn(payload, verbose=False):\n" + body)
    assert len(res.findings) == 1 and len(res.findings[0].data["sites"]) == 2  # one finding for both uses
    for f in res.findings:
        assert _kinds(f) == HOIST_LOCAL and f.fix.applicability.value == "safe"
        assert "compute `loads` once before line" in f.fix.message


def test_memoize_needs_hashable_annotated_parameters():
    f = _one(
        """
import inspect

def arity(fn) -> int:
    return len(inspect.signature(fn).parameters)

def step_fn(x):
    return arity(len)
"""
    )
    assert f.fix is None
    assert "not memoized: parameter `fn` of `arity` is not annotated as a hashable, immutable value" in f.message


def test_memoize_is_refused_where_the_value_follows_the_environment():
    f = _one(
        """
import os

def flag(name: str) -> str:
    return os.environ.get(name, "")

def step_fn(x):
    return flag("DEBUG")
"""
    )
    assert f.fix is None
    assert "depends on the environment" in f.message and "`os.environ.get`" in f.message


@pytest.mark.parametrize(
    ("call", "applicability"),
    [
        # raises without a device: hoisted out of the CUDA branch, it would run on CPU too
        ("torch.cuda.get_device_capability()", "unsafe"),
        # declared `total` in the preset (False without a device, never raises)
        ("torch.cuda.is_available()", "safe"),
    ],
)
def test_hoist_to_init_drops_the_condition_the_call_ran_under_only_for_a_total_call(call, applicability):
    f = _one(
        f"""
import torch

class Runner:
    def __init__(self, use_cuda):
        self.use_cuda = use_cuda

    def step(self, batch):
        if self.use_cuda:
            return batch, {call}
        return batch, None
"""
    )
    assert _kinds(f) == HOIST_INIT and f.fix.applicability.value == applicability
    if applicability == "unsafe":
        assert "runs only when `self.use_cuda` (`if` at line 8)" in f.fix.message


def test_an_assert_before_the_call_is_not_a_condition_it_runs_under():
    f = _one(
        """
import inspect

class Runner:
    def __init__(self, model):
        self.model = model

    def step(self, batch):
        assert batch is not None
        return batch, inspect.signature(self.model.forward)
"""
    )
    assert _only_may_raise(f)  # not the assert: the signature query may raise


def test_hoist_to_a_local_names_the_statement_that_changes_an_argument_between_the_uses():
    res = _findings(
        """
import inspect

def step_fn(fn):
    a = inspect.signature(fn)
    fn.__signature__ = None
    return a, inspect.signature(fn)
"""
    )
    assert len(res.findings) == 1 and len(res.findings[0].data["sites"]) == 2  # one finding for both uses
    for f in res.findings:
        assert _kinds(f) == HOIST_LOCAL and f.fix.applicability.value == "unsafe"
        assert "`fn.__signature__ = None` (line 5) changes `fn.__signature__`, and the call reads `fn`" in f.fix.message


def test_memoize_is_unsafe_when_the_function_reads_a_table_another_function_fills():
    f = _one(
        """
import inspect

_ARITY = {}

def register(name: str, n: int) -> None:
    _ARITY[name] = n

def arity(name: str) -> int:
    return _ARITY.get(name, 0) + len(inspect.signature(print).parameters)

def step_fn(x):
    return arity("print")
"""
    )
    assert f.fix.edits[-1].kind.value == "add_import"
    assert f.fix.applicability.value == "unsafe"
    assert "reads `_ARITY`, which `eng.m.register` changes in place (line 6: `_ARITY[name] = n`)" in f.fix.message


def test_memoize_is_not_offered_for_a_function_a_caching_decorator_of_the_tree_already_memoizes():
    f = _one(
        """
import functools
import inspect

def cache_once(fn):
    results = {}

    @functools.wraps(fn)
    def wrapper(*args):
        if args not in results:
            results[args] = fn(*args)
        return results[args]

    return wrapper

@cache_once
def arity(name: str) -> int:
    return len(inspect.signature(print).parameters)

def step_fn(x):
    return arity("print")
"""
    )
    assert f.fix is None
    assert "already memoized by `@cache_once`" in f.message


def test_hoist_to_a_local_counts_an_assignment_on_the_first_uses_own_line():
    # `fn.__signature__ = <use>` assigns after the use runs: between the two uses
    res = _findings(
        """
import inspect

def step_fn(fn):
    fn.__signature__ = inspect.signature(fn)
    return inspect.signature(fn)
"""
    )
    assert len(res.findings) == 1 and len(res.findings[0].data["sites"]) == 2  # one finding for both uses
    for f in res.findings:
        assert f.fix.applicability.value == "unsafe"
        assert "`fn.__signature__ = inspect.signature(fn)` (line 4) changes `fn.__signature__`" in f.fix.message
