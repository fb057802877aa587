"""Fill-once idioms seen in SGLang: a memo test written inline
(``D.get(k) is None``) and lazy init read through ``getattr(self, "_x", None)``.
What runs under them runs once per key or object, not per step."""

from __future__ import annotations

import pytest

from cachelint.api import lint_sources
from cachelint.config import Config, HotRoot

CFG = Config(preset="python", hot_roots=(HotRoot("*.Runner.step", "per-step"),))

INLINE_MEMO = """
import inspect

_DONE = {}


def kernel(x):
    return x


def prepare(key):
    if key is not None and _DONE.get(key) is None:
        _DONE[key] = True
        return inspect.signature(kernel)
    return None


class Runner:
    def step(self, key):
        return prepare(key)
"""

GETATTR_LAZY = """
import inspect


class Runner:
    def __init__(self, fn):
        self.fn = fn

    def step(self):
        sig = getattr(self, "_sig", None)
        if sig is None:
            sig = self._sig = inspect.signature(self.fn)
        return sig
"""


# a memo kept on the argument, with the key it was built for (SGLang's
# `model_config_of`): the build runs when the slot is empty or the key changed
KEYED_MEMO_ON_ARGUMENT = """
import inspect


def kernel(x):
    return x


def signature_of(args):
    memo = getattr(args, "_sig", None)
    if memo is not None:
        built_for = getattr(args, "_sig_for", None)
        if built_for is None or built_for == args.name:
            return memo
    sig = inspect.signature(kernel)
    args._sig = sig
    args._sig_for = args.name
    return sig


class Runner:
    def step(self, args):
        return signature_of(args)
"""


# a local read of the slot (`sig = self._sig`), and slots set by name: a
# module's buffer (`register_buffer("freqs", ...)`, read back as `self.freqs`)
# under `if not hasattr(self, "freqs")`, and `setattr`
LOCAL_READ = """
import inspect


class Runner:
    def __init__(self, fn):
        self.fn = fn
        self._sig = None

    def step(self):
        sig = self._sig
        if sig is not None:
            return sig
        sig = inspect.signature(self.fn)
        self._sig = sig
        return sig
"""

BUFFER = """
import inspect


class Runner:
    def __init__(self, fn):
        self.fn = fn

    def step(self):
        if not hasattr(self, "params"):
            self.register_buffer("params", inspect.signature(self.fn), persistent=False)
        return self.params
"""

SETATTR = BUFFER.replace(
    'self.register_buffer("params", inspect.signature(self.fn), persistent=False)',
    'setattr(self, "params", inspect.signature(self.fn))',
)


@pytest.mark.parametrize(
    "src",
    [INLINE_MEMO, GETATTR_LAZY, KEYED_MEMO_ON_ARGUMENT, LOCAL_READ, BUFFER, SETATTR],
    ids=["inline-memo", "getattr-lazy", "keyed-memo", "local-read", "buffer", "setattr"],
)
def test_fill_once_guards_are_not_per_step_work(src):
    assert lint_sources({"m.py": src}, CFG).findings == []


@pytest.mark.parametrize(
    "src",
    [
        # the slot is never filled: the guard holds on every call
        INLINE_MEMO.replace("        _DONE[key] = True\n", ""),
        GETATTR_LAZY.replace("sig = self._sig = inspect", "sig = inspect"),
        # another slot is tested than the one filled
        GETATTR_LAZY.replace('getattr(self, "_sig", None)', 'getattr(self, "_other", None)'),
        # the key is compared but never stored: a stale key rebuilds on every call
        KEYED_MEMO_ON_ARGUMENT.replace("    args._sig_for = args.name\n", "").replace(
            'getattr(args, "_sig_for", None)', "args.other"
        ),
        # the memo is never stored: only the key is
        KEYED_MEMO_ON_ARGUMENT.replace("    args._sig = sig\n", ""),
        # a flag that forces the build, beside the empty memo
        KEYED_MEMO_ON_ARGUMENT.replace("if memo is not None:", "if memo is not None and not args.force:"),
        # the local read is never stored back
        LOCAL_READ.replace("        self._sig = sig\n", ""),
        # another buffer is registered than the one tested
        BUFFER.replace('register_buffer("params"', 'register_buffer("other"'),
    ],
    ids=[
        "memo-never-filled",
        "lazy-never-filled",
        "other-slot",
        "key-not-stored",
        "memo-not-stored",
        "forced",
        "local-never-stored",
        "other-buffer",
    ],
)
def test_without_the_fill_the_call_is_per_step(src):
    found = lint_sources({"m.py": src}, CFG).findings
    assert [f.code for f in found] == ["CL002"]


RESCALE = """
import inspect


def kernel(x):
    return x


class Runner:
    def step(self, x):
        self.maybe_rescale()
        return kernel(x)

    def maybe_rescale(self):
        if not self.scaling:
            return None
        return inspect.signature(kernel)
"""


def test_cold_functions_are_never_entered_by_the_hot_path_walk():
    # the rescale path runs when the cluster changes, behind a guard the call graph does not evaluate
    assert [f.function for f in lint_sources({"m.py": RESCALE}, CFG).findings] == ["m.Runner.maybe_rescale"]
    cold = CFG.with_overrides(extend_cold_functions=("*.Runner.maybe_rescale",))
    res = lint_sources({"m.py": RESCALE}, cold)
    assert res.findings == [] and res.config.cold == ("*.Runner.maybe_rescale",)
    assert res.hot.functions == 2  # step and kernel; not maybe_rescale
    # a root stays a root even when a cold pattern matches it
    both = cold.with_overrides(hot_roots=(*CFG.hot_roots, HotRoot("*.Runner.maybe_rescale", "per-step")))
    assert [f.function for f in lint_sources({"m.py": RESCALE}, both).findings] == ["m.Runner.maybe_rescale"]


def test_what_the_idioms_learn_of_a_function_goes_with_its_program():
    # a table of the idioms module once kept every analysed function alive: a
    # workload that cachelint profile runs after its analysis paid for them in
    # every garbage collection
    import gc
    import weakref

    from cachelint.index.walk import index_source
    from cachelint.semantic.idioms import fills_once
    from cachelint.semantic.program import Program

    program = Program([index_source(INLINE_MEMO, "m.py", "m", False)])
    prepare = program.functions["m.prepare"]
    assert any(fills_once(prepare, c) for c in prepare.calls)  # the memo dict `_DONE` is a slot it fills
    alive = weakref.ref(prepare)
    del program, prepare
    gc.collect()
    assert alive() is None
