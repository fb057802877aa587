"""Whether what a function returns comes from outside: it *draws* a new value on each call.

A call matching a ``receive-calls`` pattern (a point-to-point receive, a
socket, pipe or queue read, a poll) takes the next value from another
process, thread or device: two calls are two receives, and the second
returns the next message, not the first one again. So do calls whose value
depends on when or where they are made (a clock, a random source, the
catalog's ``varies`` entries such as ``traceback.format_stack``).

A function of the tree draws when a value it returns or yields flows from
such a call, or from a call of a function that draws (followed
:data:`~cachelint.facts.purity.MAX_DEPTH` calls deep). The flow is followed
through the body as written: assignments (unpacking, ``for`` and ``with``
targets, walrus included), the buffers a receive fills in place
(``dist.irecv(buf)``), and attributes assigned and read back
(``self.data = recv(); return self.data``). A receive whose value goes
nowhere the function returns (a poll logged and dropped) does not make it
draw: its result can still repeat.

Two calls of a function that draws are never one repeated value: CL006 does
not report them, and CL002 does not count them as the same call made twice.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..globs import GlobSet
from ..index.expr import conv, dotted
from ..index.records import CallSite, FunctionInfo
from .catalog import NONDETERMINISTIC
from .purity import MAX_DEPTH

if TYPE_CHECKING:
    from ..semantic.program import Program
    from .bodies import Bodies
    from .catalog import Catalog

# nodes that bind the names of their targets from a value
_BINDS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor, ast.withitem)


class Receives:
    """Which calls receive, and which functions of the tree draw (one memo per run)."""

    def __init__(self, program: Program, bodies: Bodies, catalog: Catalog, patterns: tuple[str, ...]) -> None:
        self.p = program
        self.bodies = bodies
        self.catalog = catalog
        self.patterns = patterns
        self._globs = GlobSet(list(patterns)) if patterns else None
        self._memo: dict[tuple[str, int], str | None] = {}

    def receive(self, names: list[str]) -> str | None:
        """Why a call known by ``names`` returns a new value each time, or None:
        the ``receive-calls`` pattern it matches, a clock or random source, or
        a catalog entry marked ``varies``."""
        if self._globs is not None:
            for n in names:
                i = self._globs.first(n)
                if i >= 0:
                    return f"`{names[0]}` receives the next value (`receive-calls`: `{self.patterns[i]}`)"
        for n in names:
            if n.startswith(NONDETERMINISTIC):
                return f"`{n}` reads a clock or a random source"
        entry = self.catalog.match(names)
        if entry is not None and entry.varies:
            return f"`{names[0]}` depends on where and when it is called"
        return None

    def call(self, fn: FunctionInfo, c: CallSite, depth: int = 0) -> str | None:
        """Why call ``c`` in ``fn`` returns a new value each time, or None: it
        receives (:meth:`receive`), or it calls a function of the tree that draws."""
        p = self.p
        callee = p.call_callee(fn, c)
        names = p.callee_names(callee, dotted(c.func))
        why = self.receive(names) if names else None
        if why is not None:
            return why
        target = p.callee_function(callee) if callee is not None else None
        if target is None or target is fn or p.is_cached(target) or depth >= MAX_DEPTH:
            return None
        return self._source(target, depth + 1)

    def draws(self, fn: FunctionInfo) -> str | None:
        """Why a value ``fn`` returns or yields may be new on each call (it
        flows from a receive), or None."""
        why = self._source(fn, 0)
        if why is None:
            return None
        return f"what `{fn.qualname}` returns comes from a call whose value is new each time: {why}"

    def _source(self, fn: FunctionInfo, depth: int) -> str | None:
        """The receive a value ``fn`` returns flows from (memoized)."""
        key = (fn.qualname, depth)
        memo = self._memo
        if key in memo:
            return memo[key]
        memo[key] = None  # recursion proves nothing: a cycle adds no receive
        why = memo[key] = self._draws(fn, depth)
        return why

    def _draws(self, fn: FunctionInfo, depth: int) -> str | None:
        # the calls that draw, from the index; the body is parsed again only
        # when there is one, to follow where its value goes
        drawing: dict[tuple, str] = {}
        for c in fn.calls:
            why = self.call(fn, c, depth)
            if why is not None:
                drawing[(c.line, c.column, c.end_line, c.end_column)] = why
        if not drawing:
            return None
        body = self.bodies.body(fn)
        if body is None:
            return None
        by_span: dict[tuple, str] = {}
        sh, col = body.shift, body._bcol
        for (line, column, end_line, end_column), why in drawing.items():
            by_span[(line - sh, col(line, column), end_line - sh, col(end_line, end_column))] = why
        nodes = body.code_nodes
        sources: dict[int, str] = {}  # id of a call node -> why it draws
        for n in nodes:
            if isinstance(n, ast.Call):
                why = by_span.get((n.lineno, n.col_offset, n.end_lineno, n.end_col_offset))
                if why is not None:
                    sources[id(n)] = why
        if not sources:
            return None
        tainted: dict[str, str] = {}  # name or dotted attribute -> why it holds a drawn value

        def drawn(e: ast.AST | None) -> str | None:
            if e is None:
                return None
            for x in ast.walk(e):
                why = sources.get(id(x))
                if why is not None:
                    return why
                if isinstance(x, (ast.Name, ast.Attribute)):
                    d = dotted(conv(x))
                    if d is not None and d in tainted:
                        return tainted[d]
            return None

        def bind(target: ast.AST, why: str) -> bool:
            changed = False
            for x in ast.walk(target):
                if isinstance(x, (ast.Name, ast.Attribute, ast.Subscript)) and not isinstance(x.ctx, ast.Load):
                    # `buf[i] = v` puts the value in `buf`
                    d = dotted(conv(x.value if isinstance(x, ast.Subscript) else x))
                    if d is not None and d not in tainted:
                        tainted[d] = why
                        changed = True
            return changed

        changed = True
        while changed:
            changed = False
            for n in nodes:
                if isinstance(n, ast.Call) and id(n) in sources and n.args:
                    # a receive fills the buffers it is given (`dist.irecv(buf)`)
                    for a in n.args:
                        d = dotted(conv(a)) if isinstance(a, (ast.Name, ast.Attribute)) else None
                        if d is not None and d not in tainted:
                            tainted[d] = sources[id(n)]
                            changed = True
                elif isinstance(n, _BINDS):
                    value, targets = _flow(n)
                    why = drawn(value)
                    if why is not None:
                        for t in targets:
                            changed |= bind(t, why)
        for n in nodes:
            if isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom)):
                why = drawn(n.value)
                if why is not None:
                    return why
        return None


def _flow(n: ast.AST) -> tuple[ast.AST | None, list[ast.AST]]:
    """The value a binding node reads and the targets it binds."""
    if isinstance(n, ast.Assign):
        return n.value, list(n.targets)
    if isinstance(n, (ast.AnnAssign, ast.AugAssign)):
        return n.value, [n.target]
    if isinstance(n, ast.NamedExpr):
        return n.value, [n.target]
    if isinstance(n, (ast.For, ast.AsyncFor)):
        return n.iter, [n.target]
    if isinstance(n, ast.withitem):
        return n.context_expr, [n.optional_vars] if n.optional_vars is not None else []
    return None, []
