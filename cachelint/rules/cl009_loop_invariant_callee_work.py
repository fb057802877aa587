"""CL009: a helper called in a loop redoes, on each iteration, expensive work that depends only on arguments the loop does not change."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..facts import repeats
from ..facts.cost import Cost
from ..facts.timing import format_seconds
from ..fixes.hoisting.site import argument_for, names_in
from ..fixes.hotcalls import hot_route
from ..index.expr import dotted, render
from ..index.records import CallSite, FunctionInfo
from ..model import Finding, Span
from ..semantic.idioms import fills_once, never_runs
from .base import Example, Rule

if TYPE_CHECKING:
    from ..facts.analysis import Analysis
    from ..facts.bodies import Body

_ROOTS = ({"pattern": "*.Runner.execute_model", "kind": "per-step"},)
_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


class LoopInvariantCalleeWork(Rule):
    """## What it does
    Finds a call, inside a loop or comprehension of a hot function, of a
    helper of the tree that makes an expensive, pure call (a catalogued one,
    or a function whose body is costly) whose inputs are only some of the
    helper's parameters, when the loop passes the same values for those
    parameters on every iteration while the other arguments change:

    ```python
    def supports_kw(fn, name):
        return name in inspect.signature(fn).parameters

    allowed = {k: v for k, v in overrides.items() if supports_kw(fn, k)}
    ```

    builds the same `Signature` of `fn` once per override. The whole call is
    not loop-invariant (CL006 reports those), only the work inside it.

    Not reported: an expensive call the helper makes only under a condition
    (an ``if``, an ``except`` handler, a fill-once guard); one that reads a
    local of the helper or its own object's state, or that is not proven
    pure; a loop that rebinds or changes in place what is passed for those
    parameters, or that calls another method of the object an argument is
    read from; a memoized helper.

    ## Why is this bad?
    The loop pays the expensive call once per element for one value. vLLM
    memoized `supports_kw` upstream for this reason: the multimodal
    processor checked each user override against the same callable's
    signature, per request.

    ## Example
    ```python
    def width(layout, item):
        return inspect.signature(layout).parameters[item].default

    class Runner:
        def execute_model(self, items):
            return [width(self.layout, i) for i in items]
    ```
    Use instead:
    ```python
    def widths(layout, items):
        params = inspect.signature(layout).parameters
        return [params[i].default for i in items]
    ```
    or memoize the expensive part on its inputs
    (``functools.cache`` on a helper taking ``layout`` alone).

    ## Fix safety
    No automatic fix: computing the value before the loop means splitting
    the helper, and memoizing it keeps its arguments alive; which one fits
    is the author's choice.

    ## Fix availability
    Never.
    """

    code = "CL009"
    name = "loop-invariant-callee-work"
    summary = (
        "A helper called in a loop redoes, on each iteration, expensive work that depends only on"
        " arguments the loop does not change"
    )
    fix_availability = "never"
    default_severity = "warning"
    reads = ("hot", "program", "cost", "bodies", "estimates")
    needs_hot_paths = True

    VALID = [
        # the expensive call reads the element the loop passes: new work each time
        Example(
            """
import inspect

def width(layout, item):
    return inspect.signature(item)

class Runner:
    def __init__(self, layout):
        self.layout = layout

    def execute_model(self, items):
        return [width(self.layout, i) for i in items]
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # every argument is the same: the whole call is loop-invariant (CL006's)
        Example(
            """
import inspect

def width(layout, item):
    return inspect.signature(layout).parameters[item]

class Runner:
    def __init__(self, layout):
        self.layout = layout

    def execute_model(self, items):
        return [width(self.layout, "x") for _ in items]
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # the loop rebinds what it passes
        Example(
            """
import inspect

def width(layout, item):
    return inspect.signature(layout).parameters[item]

class Runner:
    def execute_model(self, layouts):
        out = []
        for layout in layouts:
            out.append(width(layout, "x"))
        return out
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # the expensive call runs only when the caller passes nothing
        Example(
            """
import inspect

def width(layout, item, params=None):
    if params is None:
        params = inspect.signature(layout).parameters
    return params[item]

class Runner:
    def __init__(self, layout):
        self.layout = layout
        self.params = inspect.signature(layout).parameters

    def execute_model(self, items):
        return [width(self.layout, i, self.params) for i in items]
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # another method of the object runs in the loop and may change what is passed
        Example(
            """
import inspect

def width(layout, item):
    return inspect.signature(layout).parameters[item]

class Runner:
    def __init__(self, layout):
        self.layout = layout

    def swap(self, item):
        self.layout = item

    def execute_model(self, items):
        out = []
        for i in items:
            out.append(width(self.layout, i))
            self.swap(i)
        return out
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # the helper is memoized
        Example(
            """
import functools
import inspect

@functools.cache
def width(layout, item):
    return inspect.signature(layout).parameters[item]

class Runner:
    def __init__(self, layout):
        self.layout = layout

    def execute_model(self, items):
        return [width(self.layout, i) for i in items]
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # the expensive call is not pure (it reads the environment)
        Example(
            """
import os

def flag(prefix, item):
    return os.getenv(prefix) == item

class Runner:
    def __init__(self, prefix):
        self.prefix = prefix

    def execute_model(self, items):
        return [flag(self.prefix, i) for i in items]
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
    ]

    INVALID = [
        # the same Signature once per override
        Example(
            """
import inspect

def supports_kw(fn, name):
    return name in inspect.signature(fn).parameters

class Runner:
    def __init__(self, fn):
        self.fn = fn

    def execute_model(self, overrides: dict):
        return {k: v for k, v in overrides.items() if supports_kw(self.fn, k)}
""",
            preset="python",
            hot_roots=_ROOTS,
            expect=(("example.py", 11),),
            applicability=(None,),
            message_contains=(
                "runs `inspect.signature(...)` on each iteration of the comprehension at line 11",
                "`fn` (here `self.fn`)",
            ),
        ),
        # a method of the tree, in a for loop: its work is keyed on one of its arguments
        Example(
            """
import inspect

class Table:
    def __init__(self, fn):
        self.fn = fn

    def lookup(self, kind, key):
        return inspect.signature(kind).parameters.get(key)

class Runner:
    def __init__(self, table: Table, kind):
        self.table = table
        self.kind = kind

    def execute_model(self, keys):
        out = []
        for key in keys:
            out.append(self.table.lookup(self.kind, key))
        return out
""",
            preset="python",
            hot_roots=_ROOTS,
            expect=(("example.py", 18),),
            applicability=(None,),
            message_contains=("on each iteration of the loop at line 17",),
        ),
    ]

    def check(self, analysis: Analysis) -> Iterable[Finding]:
        hot = analysis.hot
        p = analysis.program
        keyed: dict[str, list] = {}
        out: list[Finding] = []
        for qn in sorted(hot.chains):
            f = p.functions.get(qn)
            if f is None or f.under_type_checking:
                continue
            loops = [c for c in f.calls if c.in_loop and not c.in_handler and not never_runs(c)]
            if not loops:
                continue
            with analysis.bodies.transient():  # one function's parsed body at a time
                out.extend(_function_findings(self.code, analysis, f, loops, keyed))
        return out


def _function_findings(code: str, analysis: Analysis, f: FunctionInfo, loops: list, keyed: dict) -> list[Finding]:
    """The findings for the calls in loops (``loops``) of hot function ``f``."""
    p = analysis.program
    out: list[Finding] = []
    body: Body | None = None
    for c in loops:
        h = p.call_function(f, c)
        if h is None or h is f or h.is_async or p.is_cached(h):
            continue
        if h.qualname not in keyed:
            keyed[h.qualname] = _keyed_work(analysis, h)
        work = keyed[h.qualname]
        if not work:
            continue
        if body is None:
            body = analysis.bodies.body(f)
            if body is None:
                break
        found = _finding(code, analysis, f, body, c, h, work)
        if found is not None:
            out.append(found)
    return out


def _keyed_work(analysis: Analysis, h: FunctionInfo) -> list[tuple[CallSite, Cost, frozenset[str]]]:
    """The expensive, pure calls helper ``h`` makes each time it runs whose
    inputs are only some of its parameters (and module names), with those
    parameters."""
    p = analysis.program
    params = {q.name for q in h.params}
    ctx = p.context(h)
    out = []
    for gc in h.calls:
        if gc.guard or gc.in_handler or gc.is_import or gc.is_read:
            continue  # only work the helper does on every call
        if never_runs(gc) or fills_once(h, gc):
            continue
        callee = p.call_callee(h, gc)
        names = p.callee_names(callee, dotted(gc.func))
        fn = p.callee_function(callee) if callee is not None else None
        cost = analysis.cost.call_cost(names, fn)
        if cost is None or cost.cost == "low" or not cost.pure:
            continue
        used: list[str] = []
        names_in(("call", gc.func, gc.args, gc.kwargs), used)
        if any(n in ctx.locals and n not in params for n in used):
            continue  # it reads what the helper computes
        keys = frozenset(n for n in used if n in params)
        if keys and h.self_name not in keys:  # not its object's state, which calls in the loop may change
            out.append((gc, cost, keys))
    return out


def _finding(
    code: str, analysis: Analysis, f: FunctionInfo, body: Body, c: CallSite, h: FunctionInfo, work: list
) -> Finding | None:
    node = body.find(c.line, c.column, c.end_line, c.end_column)
    if node is None:
        return None
    loop = next((par for par, _f, _i, _c in reversed(body.steps(node)) if isinstance(par, _LOOPS)), None)
    if loop is None or any(isinstance(par, ast.Lambda) for par, _f, _i, _c in body.steps(node)):
        return None
    bound = repeats.stores(loop, include_self=True, body=body)
    changed = [m for m, _line in repeats.mutations(loop, include_self=True, body=body)]
    params = list(h.params)
    passed_keys: set[str] = set()
    for gc, cost, keys in work:
        args = {}
        for k in sorted(keys):
            if k == h.self_name:
                a = c.func[1] if c.func[0] == "attr" else None
            else:
                a = argument_for(h, params, c, k)
            if a is None or a == ("?",):
                break
            args[k] = a
        else:
            names: list[str] = []
            for a in args.values():
                names_in(a, names)
            if any(n in bound for n in names):
                continue  # the loop rebinds what it passes
            chains: list = []
            for a in args.values():
                repeats.chains(a, chains)
            if any(repeats.related(m, u) for m in changed for u in chains):
                continue  # the loop changes it in place
            if f.self_name in names and _self_calls_in(f, c, body, loop):
                continue  # another method of the object runs in the loop: it may change what is passed
            passed_keys = set(keys)
            if not _varies_elsewhere(c, h, params, passed_keys, bound):
                continue  # the whole call is loop-invariant: CL006 reports it
            return _report(code, analysis, f, body, c, h, loop, gc, cost, args)
    return None


def _self_calls_in(f: FunctionInfo, c: CallSite, body: Body, loop: ast.AST) -> bool:
    """A call other than ``c`` on ``f``'s object (``self.m(...)``,
    ``self.x.m(...)``) runs inside ``loop``."""
    first = body.line_of(loop)
    last = (getattr(loop, "end_lineno", None) or first - body.shift) + body.shift
    for other in f.calls:
        if other is c or not first <= other.line <= last or other.func[0] != "attr":
            continue
        root = other.func[1]
        while root[0] == "attr":
            root = root[1]
        if root == ("name", f.self_name):
            return True
    return False


def _varies_elsewhere(c: CallSite, h: FunctionInfo, params: list, keys: set[str], bound: dict) -> bool:
    """Some argument of ``c`` for a parameter outside ``keys`` reads a name
    the loop binds: the call as a whole changes with the loop."""
    for q in params:
        if q.name in keys or q.name == h.self_name:
            continue
        a = argument_for(h, params, c, q.name)
        if a is None:
            continue
        names: list[str] = []
        names_in(a, names)
        if any(n in bound for n in names):
            return True
    return any(a == ("?",) for a in c.args)


def _report(
    code: str,
    analysis: Analysis,
    f: FunctionInfo,
    body: Body,
    c: CallSite,
    h: FunctionInfo,
    loop: ast.AST,
    gc: CallSite,
    cost: Cost,
    args: dict,
) -> Finding:
    hot = analysis.hot
    chain = hot.chain(f.qualname)
    kind = hot.kind(f.qualname, "hot")
    line = body.line_of(loop)
    what = "comprehension" if isinstance(loop, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)) else "loop"
    keyed = ", ".join(f"`{k}` (here `{render(v)}`)" if render(v) != k else f"`{k}`" for k, v in sorted(args.items()))
    timing = analysis.estimates.call_timing(h, gc)
    estimate = analysis.estimates.work(
        f, timing.seconds, f"`{render(gc.func)}`: {timing.basis}", analysis.estimates.loop, True
    )
    why = f" ({cost.why})" if cost.why else ""
    short = ".".join(h.qualname.split(".")[-2:]) if h.class_qualname else h.name
    note = (
        f"no fix: compute it once before the {what}, or memoize the part of `{short}` that depends only on"
        f" {'it' if len(args) == 1 else 'them'}"
    )
    message = (
        f"`{render(c.func)}(...)` runs `{render(gc.func)}(...)` on each iteration of the {what} at line {line},"
        f" {cost.kind} work{why} whose inputs are only {keyed}, the same on every iteration"
        f" (`{short}` line {gc.line}); on a {kind} path, reached via {hot_route(chain)}; {note}"
    )
    return Finding(
        code=code,
        path=f.path,
        span=Span(c.line, c.column, c.end_line, c.end_column),
        message=message,
        function=f.qualname,
        hot_path=chain,
        fix=None,
        notes=(note,),
        data={
            "helper": h.qualname,
            "work": render(gc.func),
            "work_line": gc.line,
            "keyed_on": sorted(args),
            "loop_line": line,
            "kind": cost.kind,
            "hot_kind": kind,
            "estimate": estimate.to_data(),
            "per_iteration": format_seconds(timing.seconds),
        },
    )
