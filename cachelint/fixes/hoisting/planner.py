"""Fixes for expensive calls that no attribute caches yet (CL002).

For each expensive call on a hot path, three rewrites are considered, each
with a safety class computed from the program:

``hoist to __init__``
    In a method, a call whose every input is bound once at construction
    (``self`` attributes the constructor binds once and nothing else assigns,
    constructor parameters, module constants) is evaluated once at the end of
    the class's own ``__init__`` into ``self._<name>``, and the use reads it.
    Safe only when the callee is pure, no subclass or other method can
    reassign an input or change it in place, ``__init__`` has no early
    ``return``, every subclass constructor calls ``super().__init__``,
    ``__init__`` does not itself reach the method (which would read the
    attribute before it exists), the call runs unconditionally in its method
    (or the catalog declares it ``total``), every implementation of a method
    or property of the object called finds what it reads assigned by the end
    of the base ``__init__``, and the callee's body reads no module state
    that code of the tree changes (:mod:`cachelint.facts.state`).

``hoist to a local``
    The same call (same callee, same argument values) evaluated more than
    once in one function: compute it once into a local before the statement
    holding the first use, in the innermost block that holds every use. Safe
    when the callee is pure, a use runs on every path from there (the
    function's statements, parsed again: :mod:`cachelint.facts.bodies`), and
    nothing between the uses (or in a loop repeating one) changes what the
    call reads (:meth:`~cachelint.facts.state.ProcessState.effects`).

``memoize``
    A module-level function whose result depends only on hashable,
    process-invariant parameters gets ``@functools.cache`` (and ``import
    functools``). Not inside code compiled by ``torch.compile`` (Dynamo
    warns on ``lru_cache``-wrapped calls and graph-breaks on them): there the
    value goes to a module constant, or to an ``__init__`` attribute. Not when
    the value depends on mutable context (the environment, the filesystem,
    the current device, a forward context): the message says which. Unsafe
    when it returns a mutable value, or reads module state that code of the
    tree changes (a registry filled later, a "current config" global).

The preferred fix is the first *safe* one in the order hoist to
``__init__``, memoize, hoist to a local, module constant; if none is safe,
the first unsafe one, with the reasons.
"""

from __future__ import annotations

from ...model import Applicability
from .local import LocalHoists
from .memoize import Memoizer
from .site import (
    Site,
    _on_one_path,
)


class HoistPlanner(Memoizer, LocalHoists):
    """Computes the fix (and its safety) of every CL002 site: each fix kind is a
    base class (:mod:`.init`, :mod:`.local`, :mod:`.memoize`), on top of the
    input analysis (:mod:`.inputs`)."""

    # ----- which sites are repeated work --------------------------------------------
    def select(self, sites: list[Site]) -> list[Site]:
        """The sites that redo work: inputs that do not change between runs,
        or the same call made more than once in one run of a function."""
        groups: dict[tuple, list[Site]] = {}
        for s in sites:
            if s.key is not None:
                groups.setdefault((s.function.qualname, s.key), []).append(s)
        out = []
        for s in sites:
            if not s.cost.pure and not s.call.is_import and self._value_discarded(s.function, s.call):
                # `torch.cuda.synchronize()`, `traceback.print_exc()`: done for
                # the effect, which no hoist or cache can keep
                s.varies = "the call is made for its side effect; its value is discarded"
                continue
            why: str | None
            if s.cost.kind == "per-call-context":
                why = "its value is tied to the context of each call"
            elif s.cost.varies:  # not even two calls in one run share a value
                s.varies = f"its value depends on where and when it is called ({s.cost.reason})"
                continue
            elif s.cost.kind == "copy" and ("name", s.function.self_name) in s.call.args:
                # `copy.deepcopy(self)` in `clone()`: the same object on each call
                # of the method, not the same state (a copy reads all of it), and
                # a fresh copy is what the caller asked for
                s.varies = "it copies `self`, whose whole current state it reads, not only which object it is"
                continue
            else:
                fn = self.p.callee_function(s.callee) if s.callee is not None else None
                drawn = self.a.receives.draws(fn) if fn is not None else None
                if drawn is not None:  # each call receives anew, whatever its inputs
                    s.varies = drawn
                    continue
                why = self.inputs_vary(s.function, s.call)
            if why is None:
                s.repeated = "its inputs are the same on every run"
                s.invariant = True
                out.append(s)
                continue
            same = groups.get((s.function.qualname, s.key), []) if s.key is not None else []
            if len(same) > 1 and _on_one_path([x.call for x in same]):
                s.repeated = f"evaluated {len(same)} times with the same inputs in one run of `{s.function.name}`"
                out.append(s)
                continue
            s.varies = why
        return out

    # ----- planning ------------------------------------------------------------------
    def plan(self, sites: list[Site]) -> None:
        by_function: dict[str, list[Site]] = {}
        for s in sites:
            by_function.setdefault(s.function.qualname, []).append(s)
        init_names: dict[str, dict[str, str]] = {}  # class -> call text -> attribute
        for qn in sorted(by_function):
            group = by_function[qn]
            repeats: dict[tuple, list[Site]] = {}
            for s in group:
                if s.key is not None:
                    repeats.setdefault(s.key, []).append(s)
            for s in group:
                cands = []
                if s.call.is_import:
                    # an import statement is no expression to replace: only its function can be memoized
                    memo = self._memoize(s) if s.invariant else None
                    s.fix = memo
                    continue
                # a value that may change between runs can only be shared within one run
                init = self._hoist_init(s, init_names) if s.invariant else None
                if init is not None:
                    cands.append(init)
                memo = self._memoize(s) if s.invariant else None
                if memo is not None:
                    cands.append(memo)
                same = repeats.get(s.key, []) if s.key is not None else []
                if len(same) > 1:
                    local = self._hoist_local(s, same)
                    if local is not None:
                        cands.append(local)
                const = self._module_constant(s) if s.invariant else None
                if const is not None:
                    cands.append(const)
                safe = [x for x in cands if x.applicability is Applicability.SAFE]
                s.fix = safe[0] if safe else (cands[0] if cands else None)
