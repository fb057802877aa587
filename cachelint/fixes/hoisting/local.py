"""Hoist to a local: the same call evaluated more than once in one run of a
function, computed once before its first use.

See :mod:`cachelint.fixes.hoisting.planner` for what makes it safe.
"""

from __future__ import annotations

import ast

from ...facts.bodies import HoistPoint, first_line, walk_code
from ...facts.catalog import pure_builtin
from ...index.expr import conv
from ...index.records import FunctionInfo
from ...model import Applicability, Edit, EditKind, Fix, Span
from ...semantic.values import GlobalRoot
from .between import ChangesBetween
from .callinputs import CallInputs
from .callsbetween import CallsBetween
from .init import InitHoists
from .runsonce import RunsOnce
from .sharedvalue import SharedValue
from .site import _BUILTINS, Site, _base_name, _call_expr, _loop_head, names_in
from .syntax import _SUSPENDS, _TRY, _bound_by, _evaluated_before, _introspection, _may_raise, _names_of

# builtins that consume a generator given them at once
_CONSUMES = frozenset({"sum", "any", "all", "min", "max", "sorted", "list", "tuple", "set", "frozenset", "dict"})


class LocalHoists(ChangesBetween, CallsBetween, CallInputs, RunsOnce, SharedValue, InitHoists):
    """The hoist-to-a-local fix and its safety checks."""

    # hoist to a local -------------------------------------------------------------------
    def hoist_local(self, s: Site, same: list[Site], loop: ast.AST | None = None) -> Fix | None:
        """The hoist-to-a-local fix for the uses ``same`` of one call (``s``
        among them), or, with ``loop`` (a ``for``/``while`` statement or a
        comprehension of ``s.function``'s body holding the one use), the fix
        that computes the call once before that loop (CL006)."""
        return self._hoist_local(s, same, loop)

    def changed_between(
        self, s: Site, same: list[Site], loop: ast.AST | None = None, nodes: list | None = None
    ) -> str | None:
        """What, proven from the code, changes an input of the call between
        its uses ``same`` (or, with ``loop``, anywhere in that loop): the
        message clause, or None when nothing is seen to change one.
        ``nodes``: the uses' nodes in the function's body, in source order,
        when the caller has them."""
        f = s.function
        occ = sorted(same, key=lambda x: (x.call.line, x.call.column))
        body = self.a.bodies.body(f)
        if body is None:
            return None
        if nodes is None:
            nodes = [body.find(x.call.line, x.call.column, x.call.end_line, x.call.end_column) for x in occ]
        if not nodes or any(n is None for n in nodes):
            return None
        hp = self._local_point(body, nodes, loop)
        if hp is None:
            return None
        return self._first_change(s, occ, nodes, body, hp)

    @staticmethod
    def _local_point(body, nodes: list, loop: ast.AST | None):
        """Where the local goes: before the statement of the first use (in the
        block holding every use), or, for a loop, before the statement that
        holds the loop, with the loop (and what is inside it) uncovering the use."""
        if loop is None:
            return body.hoist_point(nodes)
        at = body.hoist_point([loop])
        if at is None:
            return None
        uncovered = tuple(body.conditions(nodes[0], below=at.block[at.index], loops=True))
        return HoistPoint(at.block, at.index, at.line, uncovered, None)

    def _hoist_local(self, s: Site, same: list[Site], loop: ast.AST | None = None) -> Fix | None:
        p = self.p
        f = s.function
        ctx = p.context(f)
        occ = sorted(same, key=lambda x: (x.call.line, x.call.column))
        first = occ[0].call
        used: list[str] = []
        names_in(_call_expr(first), used)
        fi = p.modules_by_path.get(f.path)
        reasons: list[str] = []
        for n in dict.fromkeys(used):
            if n == "?":
                return None
            if n in ctx.params:
                continue
            if n in ctx.locals:
                assigns = ctx.locals[n]
                if len(assigns) != 1 or assigns[0].in_loop or assigns[0].line >= first.line:
                    return None  # rebound, or bound after the first use
                continue
            if (fi is None or p.resolve_name(fi.module, n) is None) and ctx.parent is None:
                return None  # e.g. a comprehension variable
        texts = {self.call_text(f, x.call) for x in occ}
        if None in texts or len(texts) != 1:
            return None  # spelled differently: the replacement must be the same expression
        text = texts.pop()
        assert text is not None  # None was ruled out above
        if not s.cost.pure:
            reasons.append(f"the callee is not known to be pure ({s.cost.pure_reason})")
        shared = None
        if any(self.mutated_at(f, x.call) for x in occ):
            shared = "a use changes the value in place"
        impure_arg = self._impure_argument(f, occ[0].call)
        if impure_arg is not None:
            reasons.append(impure_arg)
        used_up = self._used_up_argument(f, s)
        if used_up is not None:
            reasons.append(used_up)
        at_line = first.line
        body = self.a.bodies.body(f)
        nodes = [body.find(x.call.line, x.call.column, x.call.end_line, x.call.end_column) for x in occ] if body else []
        anchors: tuple[Span, ...] = ()
        if body is None or not nodes or any(n is None for n in nodes):
            if loop is not None:
                return None
            reasons.append(f"cachelint could not read `{f.name}` again to check what runs between the uses")
        else:
            hp = self._local_point(body, nodes, loop)
            if hp is None:
                return None  # the uses share no statement block: the codemod would not apply it
            at_line = hp.line
            if loop is not None:
                head = _loop_head(body, loop)
                if head is None:
                    return None
                anchors = head
            if (hp.uncovered or hp.exit_line is not None) and not (s.cost.pure and s.cost.total):
                parts = []
                if hp.uncovered:
                    parts.append("the first use runs " + "; and ".join(x.describe() for x in hp.uncovered))
                if hp.exit_line is not None:
                    parts.append(f"the statement at line {hp.exit_line} may leave the block before a later use runs")
                why = "; ".join(parts)
                reasons.append(
                    f"no use runs on every path from line {hp.line}, where the local would be computed ({why}): "
                    "the call would run where it did not"
                )
            lazy = self._lazy_use(nodes, body)
            if lazy is not None:
                reasons.append(lazy)
            early = None if s.cost.total else self._effect_before_cover(s, nodes, body, hp)
            if early is not None:
                reasons.append(early)
            moved = self._moved_out(s, nodes[0], body, hp)
            if moved is not None:
                reasons.append(moved)
            self._check_between(s, occ, nodes, body, hp, reasons)
            shared = shared or self._shared_change(s, nodes, body)
        if shared is not None:
            reasons.append(f"{shared}, and the uses would now share one object")
        dunder = self._argument_dunder(s)
        if dunder is not None:
            reasons.append(dunder)
        local = self._fresh_local(f, _base_name(first))
        if body is not None:
            seen = _introspection(body)
            if seen is not None:
                reasons.append(f"{seen}: it would also see the new local `{local}`")
        spans = tuple(Span(x.call.line, x.call.column, x.call.end_line, x.call.end_column) for x in occ)
        edits = tuple(Edit(sp, local) for sp in spans) + (
            Edit(spans[0], f"{local} = {text}", kind=EditKind.INSERT_BEFORE, anchors=anchors + spans),
        )
        shown = text if len(text) < 60 else text[:57] + "..."
        how = (
            f"runs once per iteration of the loop at line {at_line}"
            if loop is not None
            else f"appears {len(occ)} times"
        )
        return Fix(
            Applicability.UNSAFE if reasons else Applicability.SAFE,
            edits,
            message=f"Hoist to a local: `{shown}` {how} in `{f.name}`; compute `{local}` once before line {at_line}"
            + (f" (unsafe: {'; '.join(reasons)})" if reasons else ""),
            relies_on=(f"callee: {s.cost.pure_reason}", f"uses: lines {', '.join(str(x.call.line) for x in occ)}"),
        )

    # where the call now runs ---------------------------------------------------------------
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

    def _module_bindings(self, path: str) -> set[str]:
        """Every name the module at ``path`` binds at its top level, by any
        form (``for``/``with``/``except`` targets, imports, walrus, ``match``
        captures, ``global`` statements in its functions)."""
        cache = self.__dict__.setdefault("_module_names", {})
        hit = cache.get(path)
        if hit is not None:
            return hit
        out: set[str] = set()
        lines = self.a.bodies.lines(path)
        try:
            tree = ast.parse("".join(x if x.endswith("\n") else x + "\n" for x in lines or ()))
        except (SyntaxError, ValueError):
            tree = None
        if tree is not None:
            stack: list[ast.AST] = list(tree.body)
            while stack:
                n = stack.pop()
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    out.add(n.name)
                    out |= {x for g in ast.walk(n) if isinstance(g, ast.Global) for x in g.names}
                    continue
                if isinstance(n, ast.Lambda):
                    continue
                out |= _bound_by(n)
                stack.extend(ast.iter_child_nodes(n))
        cache[path] = out
        return out

    def _fresh_local(self, f: FunctionInfo, base: str) -> str:
        p = self.p
        ctx = p.context(f)
        fi = p.modules_by_path.get(f.path)
        taken = set(ctx.locals) | set(ctx.params) | _BUILTINS
        if fi is not None:
            taken |= set(fi.imports) | set(fi.defs) | set(fi.globals)
        c = ctx.parent
        while c is not None:
            taken |= set(c.locals) | set(c.params)
            c = c.parent
        body = self.a.bodies.body(f)
        if body is not None:
            # every name the function and its nested scopes read or bind (a
            # global it reads, a name a star import may define)
            taken |= _names_of(body.node)
        name, i = base, 2
        while name in taken or not name.isidentifier() or self._bound_in_module(f.path, name):
            name, i = f"{base}_{i}", i + 1
        return name

    def _bound_in_module(self, path: str, name: str) -> bool:
        """The module at ``path`` binds ``name`` at its top level (see
        :meth:`_module_bindings`); a name its text never spells is not
        bound there, and the module is parsed only when it is."""
        lines = self.a.bodies.lines(path)
        if lines is None:
            return True  # unreadable: every name may be taken
        if not any(name in x for x in lines):
            return False
        return name in self._module_bindings(path)
