"""What computing the call earlier, at the local's statement, changes about
where it runs, for the hoist to a local (:class:`ComputedEarlier`, a mixin of
:class:`~cachelint.fixes.hoisting.local.LocalHoists`): the first use taken out
of a ``with`` or a ``try``, ahead of parts of its statement that may raise, or
ahead of effects when a later use is the one that runs on every path; and a
use in a generator expression, which ran when the generator was consumed.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ...facts.bodies import first_line, walk_code
from ...facts.catalog import pure_builtin
from ...index.expr import conv
from ...index.records import FunctionInfo
from ...semantic.values import GlobalRoot
from .site import Site
from .syntax import _SUSPENDS, _TRY, _evaluated_before, _may_raise

if TYPE_CHECKING:
    from ...semantic.program import Program

# builtins that consume a generator given them at once
_CONSUMES = frozenset({"sum", "any", "all", "min", "max", "sorted", "list", "tuple", "set", "frozenset", "dict"})


class ComputedEarlier:
    """Where the call now runs, and what that changes (a mixin: ``self`` is
    the :class:`~cachelint.fixes.hoisting.local.LocalHoists`)."""

    if TYPE_CHECKING:  # what LocalHoists provides (checked against it by mypy)
        p: Program
        a: Any  # the Analysis, untyped where InputAnalysis binds it

        def _property_of(self, f: FunctionInfo, n: ast.Attribute) -> FunctionInfo | None: ...

    def _moved_out(self, s: Site, first: ast.AST, body, hp) -> str | None:
        """What the local, computed before the statement at ``hp``, takes the
        first use out of: a ``with`` body (the context manager's state and
        exception handling no longer surround it), a ``try`` body (its
        handlers and ``finally`` no longer see an exception the call raises),
        or, when the call may raise (not catalogued ``total``), evaluation of
        its own statement that came first and may raise (``ids[0] +
        mean(ids)``: now the call's exception would win). The message clause,
        or None."""
        start = hp.block[hp.index]
        steps = body.steps(first)
        path = []
        inside = False
        for parent, field, index, child in steps:
            if parent is start:
                inside = True
            if inside:
                path.append((parent, field, index, child))
        if not inside:
            return None
        for parent, field, _index, _child in path:
            line = body.line_of(parent)
            if isinstance(parent, (ast.With, ast.AsyncWith)) and field == "body":
                head = first_line(parent).rstrip(":")
                return (
                    f"the first use is inside `{head}` (line {line}): the local would be computed before the "
                    "context manager is entered, outside what it sets and the exceptions it handles"
                )
            if isinstance(parent, _TRY) and not s.cost.total:
                part = {"body": "body", "handlers": "handler", "orelse": "`else`", "finalbody": "`finally`"}[field]
                return (
                    f"the first use is in the {part} of the `try` at line {line}: an exception the call raises "
                    "would now be raised before it, and its handlers and `finally` would not see it"
                )
        if s.cost.total or hp.uncovered:
            return None  # (a first use under a condition is reported as such)
        for parent, field, index, _child in path:
            for earlier in _evaluated_before(parent, field, index):
                if _may_raise(earlier, lambda x: self._property_of(s.function, x)):
                    return (
                        f"`{first_line(earlier)}` (line {body.line_of(earlier)}) is evaluated before the first use "
                        f"in `{first_line(start)}` and may raise: the call, now run first, may raise instead"
                    )
        return None

    @staticmethod
    def _lazy_use(nodes: list, body) -> str | None:
        """A use inside a generator expression (its element, a condition, an
        iterable past the first) runs when the generator is consumed, not where
        it is written: what changes in between is not seen. Unless a builtin
        consumes it at once (``sum(... for ...)``, ``any``, ``list``,
        ``", ".join``...). The message clause, or None."""
        for u in nodes:
            for parent, field, index, _child in body.steps(u):
                if not isinstance(parent, ast.GeneratorExp):
                    continue
                if field == "generators" and index == 0:
                    first = parent.generators[0]
                    if any(x is u for x in ast.walk(first.iter)):
                        continue  # the first iterable is evaluated where the generator is made
                up = body.steps(parent)
                holder = up[-1][0] if up else None
                if (
                    isinstance(holder, ast.Call)
                    and up[-1][1] == "args"
                    and (
                        (isinstance(holder.func, ast.Name) and holder.func.id in _CONSUMES)
                        or (isinstance(holder.func, ast.Attribute) and holder.func.attr == "join")
                    )
                ):
                    continue
                return (
                    f"the use at line {body.line_of(u)} is inside the generator expression at line "
                    f"{body.line_of(parent)}, which runs when it is consumed, not where it is written: "
                    "what changes before then is not seen"
                )
        return None

    def _effect_before_cover(self, s: Site, nodes: list, body, hp) -> str | None:
        """When the first use runs only under a condition and a later use is the
        one that runs on every path, the call (which may raise: not catalogued
        ``total``) now runs before everything between: what of it is
        observable (a call not proven pure, a store to anything but a local, a
        suspension) would no longer happen when the call raises. The first such
        thing, as a message clause, or None."""
        cover, j = hp.cover, hp.cover_index
        if cover is None or j is None or cover is nodes[0]:
            return None
        f = s.function
        ctx = self.p.context(f)
        declared = {x for n in walk_code(body.node) if isinstance(n, (ast.Global, ast.Nonlocal)) for x in n.names}
        skip = {id(x) for u in nodes for x in ast.walk(u)}
        # a call holding a use (`print(f(x))`) runs after it: it never ran where the use did not
        skip |= {id(parent) for u in nodes for parent, _f, _i, _c in body.steps(u) if isinstance(parent, ast.Call)}
        first_when = "; and ".join(
            x.describe() for x in body.conditions(nodes[0], below=hp.block[hp.index], loops=True)
        )

        def said(n: ast.AST, what: str) -> str:
            return (
                f"`{first_line(n)}` (line {body.line_of(n)}) {what} before line {body.line_of(cover)}, the first "
                f"use that runs on every path, and the first use (line {body.line_of(nodes[0])}) runs "
                f"{first_when or 'only on some paths'}: the call, computed before line {hp.line}, may raise "
                "where it did not, before that is done"
            )

        for stmt in hp.block[hp.index : j + 1]:
            for n in [stmt, *walk_code(ast.Module(body=[stmt], type_ignores=[]))]:
                if id(n) in skip:
                    continue
                if isinstance(n, ast.Call):
                    if self._pure_call(n, ctx):
                        continue
                    return said(n, "runs a call cachelint does not prove pure")
                if isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, (ast.Store, ast.Del)):
                    return said(n, "changes state")
                if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)) and n.id in declared:
                    return said(n, f"rebinds `{n.id}` outside the function")
                kw = _SUSPENDS.get(type(n))
                if kw is not None:
                    return said(n, f"suspends the function (`{kw}`)")
                if isinstance(n, (ast.With, ast.AsyncWith, ast.AsyncFor)):
                    return said(n, "runs a context manager or an async iterator")
        return None

    def _pure_call(self, n: ast.Call, ctx) -> bool:
        """The call ``n`` is proven pure (a pure builtin, the catalog, a pure body of the tree)."""
        p = self.p
        callee = p.canon(conv(n.func), ctx)
        if callee is not None and len(callee) == 1 and isinstance(callee[0], GlobalRoot):
            if pure_builtin(callee[0].qualname):
                return True
        h = p.callee_function(callee) if callee is not None else None
        return bool(self.a.cost.purity(p.callee_names(callee, ast.unparse(n.func)), h).pure)
