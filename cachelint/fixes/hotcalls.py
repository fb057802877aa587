"""The findings for expensive calls on hot paths: message and data of each site.

What CL002 reports about a :class:`~cachelint.fixes.hoisting.Site` once the
hoisting planner chose its fix: the kind of work, how often it runs (the most
frequent hot root reaching it), why it is expensive, whether the same value is
recomputed, the chain from the root, and the rewrite's notes.
"""

from __future__ import annotations

from ..facts.estimate import Estimate
from ..index.expr import render
from ..model import Finding, Fix, Span
from ..semantic.callgraph import HotPaths
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
    via = " -> ".join(x.rsplit(".", 2)[-2] + "." + x.rsplit(".", 1)[-1] if x.count(".") >= 1 else x for x in chain)
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
