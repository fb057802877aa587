"""What changes an input of the call between its uses, for the hoist to a
local (:class:`ChangesBetween`, a mixin of
:class:`~cachelint.fixes.hoisting.local.LocalHoists`): from the statement the
local is computed before to the last use, or in a loop that repeats a use, a
statement that changes or rebinds what the call reads (or an object holding
the same one), a call that runs the function again, and code Python runs
implicitly there (an iterator's ``__iter__`` and ``__next__``, a property, a
dunder).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ...facts.bodies import first_line
from ...facts.repeats import store_positions
from ...facts.state import related, show
from ...index.expr import conv, render
from ...index.records import FunctionInfo
from ...semantic.idioms import is_property
from ...semantic.values import GlobalRoot, SelfRoot
from .site import Site, _call_expr, names_in
from .syntax import _implicit_uses, _window_end

if TYPE_CHECKING:
    from ...semantic.program import Program


class ChangesBetween:
    """What, between the uses, changes what the call reads (a mixin: ``self``
    is the :class:`~cachelint.fixes.hoisting.local.LocalHoists`)."""

    if TYPE_CHECKING:  # what LocalHoists provides (checked against it by mypy)
        p: Program
        a: Any  # the Analysis, untyped where InputAnalysis binds it

        def _local_inputs(self, s: Site) -> list[tuple[tuple, str]]: ...

        def _callee_inputs(self, s: Site) -> list[tuple[tuple, str]]: ...

        def _recursive_call_between(self, f: FunctionInfo, occ: list, hp, loops: list): ...

        def _callbacks_between(self, f: FunctionInfo, occ: list, hp, loops: list) -> list: ...

        def _check_unresolved_between(
            self, f, occ: list, hp, loops: list, inputs: list, reasons: list, body=None, code: list | None = None
        ) -> None: ...

    def _check_between(self, s: Site, occ: list, nodes: list, body, hp, reasons: list) -> None:
        """Nothing between the hoisted statement and the last use (and, for a
        use in a loop below it, anywhere in that loop) changes what the call
        reads: its arguments and receiver (for a method of the tree, the
        attributes it reads of its object), and the module state its body
        reads. Changes are assignments, in-place method calls, ``del``, and
        what the functions of the tree called there change."""
        changed = self._first_change(s, occ, nodes, body, hp)
        if changed is not None:
            reasons.append(changed)
            return
        inputs = self._local_inputs(s)
        if inputs:
            loops = self._loops(body, nodes, hp)
            code = self._callee_inputs(s)
            self._check_unresolved_between(s.function, occ, hp, loops, inputs, reasons, body, code)

    @staticmethod
    def _loops(body, nodes: list, hp) -> list:
        loops: list = []
        for n in nodes:
            loops.extend(body.loops_around(n, below=hp.block))
        return loops

    def _first_change(self, s: Site, occ: list, nodes: list, body, hp) -> str | None:
        """The first change (an effect of the function's code) to an input of
        the call between the hoisted statement and the last use, or in a loop
        that repeats a use: the message clause, or None."""
        f = s.function
        last = occ[-1].call
        loops = self._loops(body, nodes, hp)
        rebound = self._rebound_between(s, nodes, body, hp, loops)
        if rebound is not None:
            return rebound
        inputs = self._local_inputs(s) + self._callee_inputs(s)
        if not inputs:
            return None
        again = self._recursive_call_between(f, occ, hp, loops)
        end = _window_end(body, last)
        for e in self.a.state.effects(f):
            # from the hoisted statement to the end of the last use's statement
            # (evaluation order is not line order: `b = (f(x) if x.append(7)
            # is None else 0)` runs the test, on a later line, first)
            between = hp.line <= e.line <= end
            looped = any(a <= e.line <= b for a, b in loops)
            if not between and not looped and again is None:
                continue
            for v, shown in inputs:
                if again is not None and not between and not looped:
                    # the call between the uses runs the whole function again
                    if not related(e.value, v):
                        continue
                    return (
                        f"`{render(again.func)}(...)` (line {again.line}) may run `{f.name}` again, whose "
                        f"`{e.text}` (line {e.line}) changes `{show(e.value)}`, and the call reads `{shown}`: "
                        "one value for all of the uses would be stale"
                    )
                if not related(e.value, v):
                    alias = next((a for a in self._stored_from(e.value) if related(a, v)), None)
                    if alias is None:
                        continue
                    where = f"`{e.text}` (line {e.line})"
                    return (
                        f"{where} changes `{show(e.value)}`, which holds the object `{show(alias)}` was bound to, "
                        f"and the call reads `{shown}`: one value for all of the uses would be stale"
                    )
                where = (
                    f"`{e.text}` (line {e.line}{', in a loop that repeats a use' if looped and not between else ''})"
                )
                through = f" through `{e.via}`" if e.via else ""
                changed = show(e.value)
                what = f"`{shown}`" if changed == shown else f"`{changed}`{through}, and the call reads `{shown}`"
                if changed != shown:
                    through = ""
                return f"{where} changes {what}{through} between the uses: one value for all of them would be stale"
        for c, handed, changes in self._callbacks_between(f, occ, hp, loops):
            for w in changes or ():
                for v, shown in inputs:
                    if related(w, v):
                        return (
                            f"`{render(c.func)}(...)` (line {c.line}) may call the `{render(handed)}` it is given, "
                            f"which changes `{show(w)}`, and the call reads `{shown}`: one value for all of the "
                            "uses would be stale"
                        )
        why = self._iterator_change(f, nodes, body, hp)
        if why is not None:
            return why
        return self._implicit_change(f, inputs, body, hp.line, end, loops)

    def _iterator_change(self, f: FunctionInfo, nodes: list, body, hp) -> str | None:
        """A ``for`` loop repeating a use iterates an object of a class of the
        tree: its ``__iter__`` and ``__next__`` run on every iteration,
        implicitly, and may change what the object was given (``self.ids =
        ids`` in its ``__init__``, then ``self.ids.append(k)`` in
        ``__next__``) or module state. The message clause, or None."""
        p = self.p
        ctx = p.context(f)
        for u in nodes[:1]:
            inside = False
            for parent, field, _index, _child in body.steps(u):
                if getattr(parent, field, None) is hp.block:
                    inside = True
                if not (inside and isinstance(parent, (ast.For, ast.AsyncFor)) and field == "body"):
                    continue
                it = parent.iter
                cls = None
                if isinstance(it, ast.Call):
                    callee = p.canon(conv(it.func), ctx)
                    if callee is not None and len(callee) == 1 and isinstance(callee[0], GlobalRoot):
                        cls = callee[0].qualname if callee[0].qualname in p.classes else None
                else:
                    cls = p.type_of(self.a.state.value(f, conv(it)))
                if cls is None or cls not in p.classes:
                    continue
                family = {*p.mro(cls), *p.subclasses(cls)}
                given = {a.target[2] for _w, a in self._param_bound_attrs(family) if isinstance(a.target[2], str)}
                for k in p.mro(cls):
                    ci = p.classes.get(k)
                    for dunder in ("__iter__", "__next__"):
                        qn = ci.methods.get(dunder) if ci is not None else None
                        g = p.functions.get(qn) if qn else None
                        if g is None:
                            continue
                        for e in self.a.state.effects(g):
                            root = e.value[0]
                            if isinstance(root, SelfRoot) and not (len(e.value) > 1 and e.value[1] in given):
                                continue  # the iterator's own state
                            return (
                                f"the loop at line {body.line_of(parent)} iterates `{first_line(it)}`, whose "
                                f"`{g.qualname.rsplit('.', 2)[-2]}.{dunder}` runs on every iteration and changes "
                                f"`{show(e.value)}` (`{e.text}`, line {e.line}): it may change what the call reads"
                            )
        return None

    def _implicit_change(self, f: FunctionInfo, inputs: list, body, lo: int, hi: int, loops: list) -> str | None:
        """Code of the tree that runs implicitly between the uses (or in a loop
        repeating one) on an object of a class of the tree: a property's getter
        or setter, ``__setattr__``, the dunders ``len(x)``, ``f"{x}"``,
        ``x == y``, ``x[k]``, ``if x:`` run. What it changes (in the object,
        or module state) is changed there too."""
        p = self.p
        state = self.a.state
        for n in body.code_nodes:
            line = getattr(n, "lineno", None)
            if line is None:
                continue
            at = line + body.shift
            if not (lo <= at <= hi or any(a <= at <= b for a, b in loops)):
                continue
            up = body.steps(n)
            parent, field = (up[-1][0], up[-1][1]) if up else (None, None)
            for obj, dunders, shown in _implicit_uses(n, parent, field):
                base = state.value(f, conv(obj))
                t = p.type_of(base) if base else None
                if t is None or t not in p.classes:
                    continue
                family = [*p.mro(t), *p.subclasses(t)]
                for d in dunders:
                    kind, _, name = d.rpartition(":")
                    for cls in family:
                        ci = p.classes.get(cls)
                        qn = ci.methods.get(name) if ci is not None else None
                        g = p.functions.get(qn) if qn is not None else None
                        if g is None or g is f:
                            continue
                        if kind and not is_property(g):
                            continue
                        if kind == "setter":
                            # the setter is code cachelint does not index: it may change anything of the object
                            for v, shown_in in inputs:
                                if base is not None and related(base, v):
                                    return (
                                        f"{shown} (line {at}) runs the setter of property `{g.qualname}`, which may "
                                        f"change `{shown_in}` between the uses: one value for all of them would be stale"
                                    )
                            continue
                        for e in state.effects(g):
                            root = e.value[0]
                            if isinstance(root, SelfRoot):
                                w = base + tuple(e.value[1:])
                            elif isinstance(root, GlobalRoot):
                                w = e.value
                            else:
                                continue
                            for v, shown_in in inputs:
                                if related(w, v):
                                    return (
                                        f"{shown} (line {at}) runs `{g.qualname}`, which changes `{show(w)}` "
                                        f"(line {e.line}: `{e.text}`) between the uses, and the call reads "
                                        f"`{shown_in}`: one value for all of them would be stale"
                                    )
        return None

    def _stored_from(self, v: tuple) -> list[tuple]:
        """Other names for what ``v`` (``obj.attr...``, an object of a class of
        the tree) holds: ``attr`` is bound in a method of the object's class
        from a parameter (``self.items = items``), so it holds what each call
        of that method passes (``Holder(self.ids)``: ``self.ids``), one level
        deep."""
        p = self.p
        out: list[tuple] = []
        for k in range(1, len(v) + 1):
            attr = v[k] if k < len(v) else None  # None: the object itself changes, any attribute of it
            if attr is not None and not isinstance(attr, str):
                continue
            t = p.type_of(v[:k])
            if t is None or t not in p.classes:
                continue
            family = {*p.mro(t), *p.subclasses(t)}
            writers = p.writers(attr) if attr is not None else self._param_bound_attrs(family)
            for w, a in writers:
                if w.class_qualname not in family or a.target[1] != ("name", w.self_name) or a.value[0] != "name":
                    continue
                params = [q.name for q in w.params if q.kind == "pos"]
                if a.value[1] not in params or a.value[1] == w.self_name:
                    continue
                index = params.index(a.value[1]) - (1 if w.self_name else 0)
                for g, c, _bound in self.a.writes.callers(w):
                    arg = next((x for kw, x in c.kwargs if kw == a.value[1]), None)
                    if arg is None and 0 <= index < len(c.args):
                        arg = c.args[index]
                    got = self.a.state.value(g, arg) if arg is not None else None
                    if got is not None:
                        out.append(got + tuple(v[k + 1 :]))
        return out

    def _param_bound_attrs(self, family: set) -> list:
        """The ``self.x = param`` statements of the methods of ``family``'s classes."""
        out: list = []
        for cls in family:
            ci = self.p.classes.get(cls)
            for qn in ci.methods.values() if ci is not None else ():
                w = self.p.functions.get(qn)
                if w is None or w.self_name is None:
                    continue
                for a in w.assigns:
                    if a.target[0] == "attr" and a.target[1] == ("name", w.self_name) and a.value[0] == "name":
                        out.append((w, a))
        return out

    def _rebound_between(self, s: Site, nodes: list, body, hp, loops: list) -> str | None:
        """A name of the function the call reads, bound again from the hoisted
        statement to the last use (or in a loop repeating a use): by any
        binding form (a walrus on the uses' own line, a ``match`` capture, ...),
        or by a nested function writing it through ``nonlocal`` that is called
        there (or handed out, to be called anywhere)."""
        used: list[str] = []
        names_in(_call_expr(s.call), used)
        ctx = self.p.context(s.function)
        local = {n for n in used if n in ctx.params or n in ctx.locals}
        if not local:
            return None
        start = hp.block[hp.index]
        lo, hi = (start.lineno, start.col_offset), (nodes[-1].lineno, nodes[-1].col_offset)

        def inside(at: tuple) -> bool:
            return lo < at <= hi or any(a <= at[0] + body.shift <= b for a, b in loops)

        positions = store_positions(body.node, body)
        for name in sorted(local):
            for at in positions.get(name, ()):
                if inside(at):
                    return f"`{name}` is bound again at line {at[0] + body.shift}, between the uses"
        for d in ast.walk(body.node):
            if d is body.node or not isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            declared = {x for st in ast.walk(d) if isinstance(st, ast.Nonlocal) for x in st.names} & local
            if not declared:
                continue
            for n in body.code_nodes:
                if not (isinstance(n, ast.Name) and n.id == d.name and isinstance(n.ctx, ast.Load)):
                    continue
                up = body.steps(n)
                called = bool(up) and isinstance(up[-1][0], ast.Call) and up[-1][1] == "func"
                if inside((n.lineno, n.col_offset)) or not called:
                    name = sorted(declared)[0]
                    return (
                        f"`{d.name}` (line {body.line_of(d)}) rebinds `{name}` through `nonlocal`, and "
                        f"{'is called' if called else 'is handed out'} at line {body.line_of(n)}: "
                        f"`{name}` may change between the uses"
                    )
        return None
