"""The calls made between the uses of a call, for the hoist to a local
(:class:`CallsBetween`, a mixin of
:class:`~cachelint.fixes.hoisting.local.LocalHoists`): which of them may run
the function again, which may call a callable they are given (and what
calling it changes), and which, not resolved to a function of the tree, may
change an input of the call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...facts.catalog import pure_builtin
from ...facts.state import is_mutator, related
from ...index.expr import dotted, render
from ...index.records import FunctionInfo
from ...semantic.callgraph import resolve_call
from ...semantic.values import GlobalRoot, ParamRoot, SelfRoot
from .site import _builtin_container
from .syntax import _opaque_point, _window_end

if TYPE_CHECKING:
    from ...semantic.program import Program

# calls whose only effects are on the objects they are given
_RECEIVES_ONLY = frozenset({"builtins.print"})


class CallsBetween:
    """The calls between the uses and what they may change (a mixin: ``self``
    is the :class:`~cachelint.fixes.hoisting.local.LocalHoists`)."""

    if TYPE_CHECKING:  # what LocalHoists provides (checked against it by mypy)
        p: Program
        a: Any  # the Analysis, untyped where InputAnalysis binds it

        def _sealed(self, v: tuple) -> bool: ...

    def _between_calls(self, f: FunctionInfo, occ: list, hp, loops: list) -> list:
        """The calls of ``f`` from the hoisted statement to the last use (or in a
        loop repeating a use), but the uses and the calls inside them."""
        last = occ[-1].call
        uses = {(x.call.line, x.call.column) for x in occ}
        out = []
        for c in f.calls:
            if (c.line, c.column) in uses or c.in_handler:
                continue
            if not (hp.line <= c.line <= last.end_line) and not any(a <= c.line <= b for a, b in loops):
                continue
            if any(
                x.call.line <= c.line <= x.call.end_line
                and (c.line, c.column) >= (x.call.line, x.call.column)
                and (c.end_line, c.end_column) <= (x.call.end_line, x.call.end_column)
                for x in occ
            ):
                continue
            out.append(c)
        return out

    def _recursive_call_between(self, f: FunctionInfo, occ: list, hp, loops: list):
        """A call between the uses that may run ``f`` again (itself, or a function
        of the tree that calls it, a few calls deep): every change ``f`` makes,
        wherever it stands in the body, is then a change between the uses."""
        for c in self._between_calls(f, occ, hp, loops):
            for g in self._targets(f, c):
                if g is f or self._reaches(g, f, 0, set()):
                    return c
        return None

    def _targets(self, f: FunctionInfo, c) -> list[FunctionInfo]:
        g0 = resolve_call(self.p, f, c)
        return self.p.dispatch(g0) if g0 is not None else []

    def _reaches(self, g: FunctionInfo, target: FunctionInfo, depth: int, seen: set) -> bool:
        if depth > 4 or g.qualname in seen:
            return False
        seen.add(g.qualname)
        for c in g.calls:
            for h in self._targets(g, c):
                if h is target or self._reaches(h, target, depth + 1, seen):
                    return True
        return False

    def _calls_param(self, g: FunctionInfo, name: str, depth: int) -> bool:
        """Function ``g`` may call what its parameter ``name`` is given: it calls
        it, or hands it to a call that may (a function of the tree that calls
        its own parameter, a few calls deep, or any call cachelint cannot follow)."""
        me = ("name", name)
        for c in g.calls:
            if c.func == me:
                return True
            passed = [(i, a) for i, a in enumerate(c.args) if a == me] + [(kw, v) for kw, v in c.kwargs if v == me]
            if not passed or (c.func[0] == "name" and any(q.name == c.func[1] for q in g.params)):
                continue  # none, or given to the callback itself (`fn(x)`): an argument, not called
            h = resolve_call(self.p, g, c)
            if h is None:
                callee = self.p.call_callee(g, c)
                if callee is not None and len(callee) == 1 and isinstance(callee[0], GlobalRoot):
                    if pure_builtin(callee[0].qualname):
                        continue
                return True
            if depth >= 3:
                return True
            params = [q.name for q in h.params if q.kind == "pos"]
            if h.self_name is not None and c.func[0] == "attr":
                params = params[1:]
            for key, _a in passed:
                # `**name` (a keyword of None): the callee receives it under a name cachelint cannot tell
                inner = key if isinstance(key, str) or key is None else (params[key] if key < len(params) else None)
                if inner is None or self._calls_param(h, inner, depth + 1):
                    return True
        return False

    def _callbacks_between(self, f: FunctionInfo, occ: list, hp, loops: list) -> list:
        """The callables handed, between the uses, to a call that may call them:
        a function of the tree that calls its parameter (``apply(ids.append,
        7)``, ``call(self.bump)``), or a call cachelint cannot follow given a
        function of the tree (``run(bump)``). Each as (call, callable, what
        calling it changes in ``f``'s terms, or None when cachelint cannot tell)."""
        p = self.p
        out = []
        for c in self._between_calls(f, occ, hp, loops):
            g = resolve_call(p, f, c)
            handed = []
            if g is not None:
                for impl in p.dispatch(g):
                    params = [q.name for q in impl.params if q.kind == "pos"]
                    if impl.self_name is not None and c.func[0] == "attr":
                        params = params[1:]
                    pairs = list(zip(params, c.args)) + [(kw, v) for kw, v in c.kwargs if kw is not None]
                    handed += [a for name, a in pairs if self._calls_param(impl, name, 0)]
            else:
                for a in (*c.args, *(v for _kw, v in c.kwargs)):
                    callee = p.canon(a, p.context(f)) if a[0] in ("name", "attr") else None
                    if callee is not None and p.callee_function(callee) is not None:
                        handed.append(a)
            for a in dict.fromkeys(handed):
                out.append((c, a, self._callable_changes(f, c, a)))
        return out

    def _callable_changes(self, f: FunctionInfo, c, a) -> list | None:
        """What calling ``a`` (handed to call ``c`` of ``f``) changes, in ``f``'s
        terms: a function of the tree's effects (on its object, for a bound
        method; on anything ``c`` is given, for its parameters; on module state;
        on variables of ``f`` it captured), ``ids.append``'s object; nothing for
        a pure callable; None when cachelint cannot tell."""
        p, st = self.p, self.a.state
        if a[0] in ("const", "list", "tuple", "dict", "set"):
            return []  # not a callable
        if a[0] not in ("name", "attr"):
            return None
        callee = p.canon(a, p.context(f))
        h = p.callee_function(callee) if callee is not None else None
        if h is not None:
            given = [st.value(f, x) for x in (*c.args, *(v for _kw, v in c.kwargs))]
            out: list = []
            for impl in self.a.cost.implementations(h):
                for e in st.effects(impl):
                    root = e.value[0]
                    if isinstance(root, SelfRoot):
                        base = st.value(f, a[1]) if a[0] == "attr" else None
                        out.extend([base + tuple(e.value[1:])] if base is not None else [e.value])
                    elif isinstance(root, ParamRoot) and root.function == impl.qualname:
                        out.extend(v for v in given if v is not None)  # it may be given any of them
                    else:
                        out.append(e.value)
            return out
        if a[0] == "attr" and is_mutator(a[2]):
            base = st.value(f, a[1])
            return [base] if base is not None else None
        if callee is not None and len(callee) == 1 and isinstance(callee[0], GlobalRoot):
            if pure_builtin(callee[0].qualname):
                return []
        if self.a.cost.purity(p.callee_names(callee, dotted(a)), None).pure:
            return []
        return None

    def _check_unresolved_between(
        self, f, occ: list, hp, loops: list, inputs: list, reasons: list, body=None, code: list | None = None
    ) -> None:
        """A call between the uses (or in a loop repeating one) that cachelint
        cannot resolve to a function of the tree may change an input of the
        call: nothing proves it does not. One that receives an input, or an
        object the input hangs off (as its receiver or an argument), is named
        with it; one that receives none of them may still reach the input
        (a callback holding the object, module state), unless every input is
        sealed: a constant, or a parameter or local of an immutable type,
        which no call can rebind or change. ``code``: the bindings the callee
        is looked up through, which only a call given what holds them (a module,
        the receiver) is taken to rebind."""
        p, st = self.p, self.a.state
        last = occ[-1].call
        uses = {(x.call.line, x.call.column) for x in occ}
        unsealed = [shown for iv, shown in inputs if not self._sealed(iv)]
        first_unresolved = None
        end = _window_end(body, last)
        for c in f.calls:
            if (c.line, c.column) in uses or c.in_handler:
                continue
            between = hp.line <= c.line <= end
            if not between and not any(a <= c.line <= b for a, b in loops):
                continue
            if any(
                x.call.line <= c.line <= x.call.end_line
                and (c.line, c.column) >= (x.call.line, x.call.column)
                and (c.end_line, c.end_column) <= (x.call.end_line, x.call.end_column)
                for x in occ
            ):
                continue  # part of a use (its arguments are evaluated with it)
            if resolve_call(p, f, c) is not None:
                continue  # a function of the tree: the effects above follow it
            callee = p.call_callee(f, c)
            if callee is not None and len(callee) == 1 and isinstance(callee[0], GlobalRoot):
                if pure_builtin(callee[0].qualname):
                    continue
            if self.a.cost.purity(p.callee_names(callee, dotted(c.func)), None).pure:
                continue  # declared pure (catalog or configuration)
            passed = [c.func[1]] if c.func[0] == "attr" else []
            passed += [*c.args, *(v for _kw, v in c.kwargs)]
            for part in passed:
                v = st.value(f, part)
                if v is None:
                    continue
                for iv, shown in [*inputs, *(code or ())]:
                    if related(v, iv) and ((iv, shown) in (code or ()) or not self._sealed(iv)):
                        reasons.append(
                            f"`{render(c.func)}(...)` (line {c.line}) is a call cachelint cannot resolve, and it "
                            f"receives `{render(part)}`: it may change `{shown}` between the uses"
                        )
                        return
            if first_unresolved is None and not self._reaches_only_what_it_receives(f, c, callee):
                first_unresolved = c
        if first_unresolved is not None and unsealed and not reasons:
            c = first_unresolved
            reasons.append(
                f"`{render(c.func)}(...)` (line {c.line}) is a call cachelint cannot resolve: it may reach "
                f"`{unsealed[0]}` (through an object it holds or module state) and change it between the uses"
            )
        if unsealed and not reasons:
            for c, handed, changes in self._callbacks_between(f, occ, hp, loops):
                if changes is None:
                    reasons.append(
                        f"`{render(c.func)}(...)` (line {c.line}) may call the `{render(handed)}` it is given, "
                        f"which cachelint cannot resolve: it may change `{unsealed[0]}` between the uses"
                    )
                    break
        if unsealed and not reasons and body is not None:
            opaque = _opaque_point(body, hp.line, end, loops)
            if opaque is not None:
                reasons.append(f"{opaque}: code that runs there may change `{unsealed[0]}` between the uses")

    def _reaches_only_what_it_receives(self, f: FunctionInfo, c, callee) -> bool:
        """The call's only effects are on the objects it is given: ``print``,
        or a method of a builtin list, dict or string held by a local or an
        attribute of ``self`` that every binding makes one (``out = []``,
        ``ids = sorted(xs)``, ``self.lens = []``)."""
        if callee is not None and len(callee) == 1 and isinstance(callee[0], GlobalRoot):
            return callee[0].qualname in _RECEIVES_ONLY
        if c.func[0] != "attr":
            return False
        recv = c.func[1]
        if recv[0] == "name":
            return self._local_container(f, recv[1])
        if recv[0] == "attr" and recv[1] == ("name", f.self_name):
            # ``self.lens.append(n)``: every binding of the attribute makes a builtin
            # container (in the class's family, and through any receiver but another class's ``self``)
            family = {*self.p.mro(f.class_qualname or ""), *self.p.subclasses(f.class_qualname or "")}
            binds = [
                a.value
                for w, a in self.p.writers(recv[2])
                if w.class_qualname in family or a.target[1] != ("name", w.self_name)
            ]
            return bool(binds) and all(_builtin_container(b) for b in binds)
        return False

    def _local_container(self, f: FunctionInfo, name: str) -> bool:
        """Every binding of local ``name`` of ``f`` builds a builtin container."""
        binds = self.p.context(f).locals.get(name) or []
        return bool(binds) and all(_builtin_container(a.value) for a in binds)
