"""The findings for expensive calls on hot paths: message and data of each site.

What CL002 reports about a :class:`~cachelint.fixes.hoisting.Site` once the
hoisting planner chose its fix: the kind of work, how often it runs (the most
frequent hot root reaching it), why it is expensive, whether the same value is
recomputed, the chain from the root, and the rewrite's notes.
"""

from __future__ import annotations

from ..facts.cost import CostModel
from ..facts.estimate import Estimate
from ..index.expr import dotted, render
from ..model import Finding, Fix, Span
from ..semantic.callgraph import HotPaths
from ..semantic.idioms import fills_once, never_runs
from ..semantic.values import KwArg
from .hoisting import Site


def hot_call_finding(
    code: str, s: Site, hot: HotPaths, estimate: Estimate, compiled_from: str | None = None
) -> Finding:
    """The finding for expensive call (or property read) ``s`` on a hot path:
    its message (the work, how often, why, the chain, what the fix relies on)
    and its structured data, with its ``estimate`` per step."""
    f, c, cost = s.function, s.call, s.cost
    chain = hot.chain(f.qualname)
    assert chain is not None  # a planned site is in a hot function
    kind = hot.kind(f.qualname, "hot")
    shown = render(c.func)
    via = hot_route(chain)
    why = f" ({cost.why})" if cost.why else ""
    if c.is_import:
        module = c.args[0][1] if c.args and c.args[0][0] == "const" else "..."
        message = f"`import {module}` is {cost.kind} work on a {kind} path{why}, and {s.repeated}"
    elif c.is_read:
        getter = s.callee[-1] if s.callee else shown
        message = f"`{shown}` reads the uncached property `{getter}`, {cost.kind} work on a {kind} path{why}, and {s.repeated}"
    else:
        message = f"`{shown}(...)` is {cost.kind} work on a {kind} path{why}, and {s.repeated}"
    if compiled_from is not None:
        message += (
            f" (inside code compiled by torch.compile from `{compiled_from}`: it runs on each call in eager"
            " mode, and is traced into the graph and its guards otherwise)"
        )
    message += f"; reached via {via}"
    if s.fix is None and s.notes:
        message += "; no fix: " + "; ".join(s.notes)
    elif s.fix is not None and s.notes and s.fix.edits[-1].kind.value != "add_decorator":
        message += "; " + "; ".join(s.notes)
    return Finding(
        code=code,
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
            "fix_kind": fix_kind(s.fix),
            "repeated": s.repeated,
            "compiled_from": compiled_from,
            "property_read": c.is_read,
            "estimate": estimate.to_data(),
            # the same call (its text) in the same function is the same work: reported once
            "group": render(("call", c.func, c.args, c.kwargs)) if not c.is_read else render(c.func),
        },
    )


def hot_route(chain: tuple[str, ...] | None) -> str:
    """The chain of calls from a hot root, as findings show it (``Runner.execute_model -> Model.forward``)."""
    return " -> ".join(
        x.rsplit(".", 2)[-2] + "." + x.rsplit(".", 1)[-1] if x.count(".") >= 1 else x for x in chain or ()
    )


def fix_kind(fix: Fix | None) -> str | None:
    """The kind of rewrite a fix makes, as the findings' data names it."""
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


def call_sites(p, costs: CostModel, f, covered: set, low_ok: bool) -> list[Site]:
    """The calls of hot function ``f`` CL002 reports: expensive, and run each
    time ``f`` runs (the cache checks a function that became hot with this)."""
    sites: list[Site] = []
    if f.under_type_checking:
        return sites
    ctx = p.context(f)
    for c in f.calls:
        if not runs_each_time(f, c, covered):
            continue
        callee = p.call_callee(f, c)
        names = p.callee_names(callee, dotted(c.func))
        fn = p.callee_function(callee) if callee is not None else None
        cost = costs.call_cost(names, fn)
        if cost is None or (cost.cost == "low" and not low_ok):
            continue
        key = None
        if callee is not None:
            args = tuple(p.canon(a, ctx) for a in c.args) + tuple(KwArg(n, p.canon(v, ctx)) for n, v in c.kwargs)
            if all(a is not None and (not isinstance(a, KwArg) or a.value is not None) for a in args):
                key = (callee, args)
        sites.append(Site(f, c, cost, callee, key))
    return sites


def runs_each_time(f, c, covered: set) -> bool:
    """A site CL002 may report: not CL001's (an attribute already caches it),
    not in an ``except`` handler (the error path, not the hot one), and not
    under a fill-once guard (``if self._x is None: self._x = call()`` runs once),
    and not under ``if TYPE_CHECKING:`` (never runs)."""
    return (f.path, c.line, c.column) not in covered and not c.in_handler and not never_runs(c) and not fills_once(f, c)
