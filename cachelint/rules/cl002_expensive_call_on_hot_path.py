"""CL002: a catalogued expensive call made on a hot path."""

from __future__ import annotations

from ..cost import CostModel
from ..idioms import fills_once
from ..hoisting import HoistPlanner, Site
from ..index import dotted, render
from ..model import Finding, Span
from .base import Example, Rule

_ROOTS = ({"pattern": "*.Runner.execute_model", "kind": "per-step"},)


class ExpensiveCallOnHotPath(Rule):
    """## What it does
    Finds a call from the expensive-call catalog (registry lookups, processor
    construction, ``AutoConfig.from_pretrained``, ``inspect.signature``,
    ``importlib.import_module``, ...) inside a function reached from a hot
    root (per step, per token, per request), and reports the chain of calls
    from the root.
    Catalog entries marked ``cost = "low"`` (process-group and forward-context
    lookups: cheap, but everywhere in model code) are reported only with
    ``min-cost = "low"``.

    ## Why is this bad?
    Work whose result does not change between steps is paid again on every
    step. In vLLM a 10 ms registry lookup on the decode path cost more than
    the decoder's forward pass (PR #24866: 1300 ms to 305 ms).

    ## Example
    ```python
    class Runner:
        def execute_model(self, batch):
            sig = inspect.signature(self.model.forward)
    ```
    Use instead: compute it once in ``__init__`` and read ``self._forward_sig``.

    ## Fix safety
    No fix yet: where an attribute already caches the value, CL001 reports
    the call with a fix instead (and CL002 stays quiet on that call).

    ## Fix availability
    Never (for now).
    """

    code = "CL002"
    name = "expensive-call-on-hot-path"
    summary = "Expensive call on a hot path"
    fix_availability = "never"

    VALID = [
        # the same call outside any hot path
        Example(
            """
import inspect

class Runner:
    def __init__(self, model):
        self.sig = inspect.signature(model.forward)

    def execute_model(self, batch):
        return self.sig
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # calls under `if TYPE_CHECKING` never run
        Example(
            """
import inspect
from typing import TYPE_CHECKING

class Runner:
    def execute_model(self, batch):
        return 1

if TYPE_CHECKING:
    def helper():
        return inspect.signature(helper)
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
    ]

    VALID += [
        # the body of a memoized function runs once per arguments, not per step
        Example(
            """
import functools
import inspect

class Runner:
    def execute_model(self, batch):
        return signature_of(type(self))

@functools.cache
def signature_of(cls):
    return inspect.signature(cls)
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
    ]

    INVALID = [
        Example(
            """
import inspect

class Runner:
    def execute_model(self, batch):
        return self._prepare(batch)

    def _prepare(self, batch):
        return inspect.signature(self.forward)
""",
            expect=(("example.py", 8),),
            message_contains=("inspect.signature", "Runner.execute_model"),
            preset="python",
            hot_roots=_ROOTS,
        ),
    ]

    def check(self, analysis):
        hot = analysis.hot
        p = analysis.program
        covered = analysis.cl001_spans()
        costs = CostModel(p, analysis.catalog, analysis.cache_analysis)
        low_ok = analysis.config.min_cost == "low"
        sites: list[Site] = []
        for qn in sorted(hot.chains):
            f = p.functions[qn]
            if f.under_type_checking:
                continue
            ctx = p.context(f)
            for c in f.calls:
                if (f.path, c.line, c.column) in covered:
                    continue
                callee = p.canon(c.func, ctx)
                names = p.callee_names(callee, dotted(c.func))
                fn = p.callee_function(callee) if callee is not None else None
                cost = costs.call_cost(names, fn)
                if cost is None or (cost.cost == "low" and not low_ok):
                    continue
                if fills_once(f, c):
                    continue  # `if self._x is None: self._x = call()` runs once
                key = None
                if callee is not None:
                    args = tuple(p.canon(a, ctx) for a in c.args) + tuple(
                        ("kw", n, p.canon(v, ctx)) for n, v in c.kwargs
                    )
                    if all(a is not None and (a[0] != "kw" or a[2] is not None) for a in args):
                        key = (callee, args)
                sites.append(Site(f, c, cost, callee, key))
        planner = HoistPlanner(analysis, hot)
        sites = planner.select(sites)
        planner.plan(sites)
        for s in sites:
            yield self._finding(s, hot)

    def _finding(self, s: Site, hot) -> Finding:
        f, c, cost = s.function, s.call, s.cost
        chain = hot.chain(f.qualname)
        kind = hot.kinds.get(f.qualname, "hot")
        shown = render(c.func)
        via = " -> ".join(x.rsplit(".", 2)[-2] + "." + x.rsplit(".", 1)[-1] if x.count(".") >= 1 else x for x in chain)
        why = f" ({cost.why})" if cost.why else ""
        message = f"`{shown}(...)` is {cost.kind} work on a {kind} path{why}, and {s.repeated}; reached via {via}"
        if s.fix is None and s.notes:
            message += "; no fix: " + "; ".join(s.notes)
        elif s.fix is not None and s.notes and s.fix.edits[-1].kind.value != "add_decorator":
            message += "; " + "; ".join(s.notes)
        return Finding(
            code=self.code,
            path=f.path,
            span=Span(c.line, c.column, c.end_line, c.end_column),
            message=message,
            function=f.qualname,
            hot_path=chain,
            fix=s.fix,
            notes=tuple(s.notes),
            data={
                "catalog": cost.pattern,
                "kind": cost.kind,
                "hot_kind": kind,
                "inferred": cost.inferred,
                "pure": cost.pure,
                "fix_kind": _fix_kind(s.fix),
                "repeated": s.repeated,
            },
        )


def _fix_kind(fix) -> str | None:
    if fix is None:
        return None
    kinds = {e.kind.value for e in fix.edits}
    if "append_to_function" in kinds:
        return "hoist-init" if not any(e.target == "<module>" for e in fix.edits) else "module-constant"
    if "insert_before" in kinds:
        return "hoist-local"
    if "add_decorator" in kinds:
        return "memoize"
    return "replace"
