"""What each use of the call ran that the local would run only once, for the
hoist to a local (:class:`RunsOnce`, a mixin of
:class:`~cachelint.fixes.hoisting.local.LocalHoists`): a call or property
getter evaluated with the use that is not proven pure, a dunder Python calls
implicitly on an argument, an argument the callee iterates that may be an
iterator the first use would use up.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ...facts.catalog import pure_builtin
from ...facts.state import show
from ...index.expr import conv, dotted, render
from ...index.records import FunctionInfo
from ...semantic.idioms import is_property
from ...semantic.values import GlobalRoot, SelfRoot
from .site import _IMMUTABLE, Site, _annotation_ok, _builtin_container
from .syntax import _looks_only, _param_annotation

if TYPE_CHECKING:
    from ...semantic.program import Program

# annotations of collections that can be iterated again
_COLLECTIONS = _IMMUTABLE | frozenset(
    {"list", "List", "dict", "Dict", "set", "Set", "Sequence", "Mapping", "MutableSequence", "MutableMapping"}
)
# what Python calls implicitly on an object a function iterates, measures, tests or indexes
_PROTOCOL = ("__iter__", "__len__", "__contains__", "__getitem__", "__bool__")


# what Python calls implicitly on an object a function hashes, compares, iterates, tests or formats
_IMPLICIT = (
    "__hash__",
    "__eq__",
    "__ne__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__contains__",
    "__iter__",
    "__len__",
    "__bool__",
    "__getitem__",
    "__format__",
    "__str__",
    "__repr__",
)


def _iterates(planner, g: FunctionInfo, name: str, depth: int) -> bool:
    """Function ``g`` may use up an iterator passed as its parameter ``name``:
    any use of it but those proven to leave an iterator as it was (``x is
    None``, ``isinstance(x, T)``, ``len(x)``, ``x.attr``, ``x[i]``, a test
    ``if x:``, passing it to a function of the tree that does none either,
    three calls deep). A ``for``, a comprehension, ``in``, ``*x``, ``yield
    from x``, ``list(x)``, ``out.extend(x)``, ``", ".join(x)``, a call
    cachelint cannot follow, an alias all count."""
    body = planner.a.bodies.body(g)
    if body is None:
        return True  # cannot read it: assume it may
    p = planner.p
    for sub in ast.walk(body.node):
        if sub is body.node or not isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if any(isinstance(x, ast.Name) and x.id == name for x in ast.walk(sub)):
            return True  # a nested function or lambda holds it
    for n in body.code_nodes:
        if not (isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)):
            continue
        steps = body.steps(n)
        if not steps:
            return True
        parent, field, index, _child = steps[-1]
        if _looks_only(parent, field, n):
            continue
        if isinstance(parent, ast.Call) and field == "args" and index is not None and depth < 3:
            callee = p.canon(conv(parent.func), p.context(g))
            h = p.callee_function(callee) if callee is not None else None
            if h is not None and h is not g:
                params = [q for q in h.params if q.kind == "pos"]
                if h.self_name is not None and isinstance(parent.func, ast.Attribute):
                    params = params[1:]
                if index < len(params) and not any(isinstance(a, ast.Starred) for a in parent.args[: index + 1]):
                    if not _iterates(planner, h, params[index].name, depth + 1):
                        continue
        return True
    return False


class RunsOnce:
    """What the uses ran that one computation runs once (a mixin: ``self``
    is the :class:`~cachelint.fixes.hoisting.local.LocalHoists`)."""

    if TYPE_CHECKING:  # what LocalHoists provides (checked against it by mypy)
        p: Program
        a: Any  # the Analysis, untyped where InputAnalysis binds it

        def _sealed(self, v: tuple) -> bool: ...

        def _local_container(self, f: FunctionInfo, name: str) -> bool: ...

    def _argument_dunder(self, s: Site) -> str | None:
        """A method Python calls implicitly on an argument of the call
        (``__hash__`` for ``k in table``, ``__eq__``, ``__iter__``, ...) that
        is not pure: each use ran it, and the local runs it once. For an
        argument of a class of the tree, its class's (and subclasses') methods
        not known to be pure; for one of unknown type, any such method of the
        tree that changes something (the object, its class, module state)."""
        p, st, f = self.p, self.a.state, s.function
        if s.callee is None or p.callee_function(s.callee) is None:
            return None  # a catalogued callee's `pure` covers its arguments
        for part in (*s.call.args, *(v for _kw, v in s.call.kwargs)):
            v = st.value(f, part)
            if v is None or self._sealed(v):
                continue
            t = p.type_of(v)
            if t is not None and t in p.classes:
                for cls in dict.fromkeys([t, *p.subclasses(t)]):
                    if p.is_protocol(cls):
                        continue  # its methods are declarations: the implementations are its subclasses'
                    for name in _IMPLICIT:
                        m = p.lookup_method(cls, name)
                        if m is None or self._identity_only(m):
                            continue
                        pur = self.a.cost.purity([m.qualname], m)
                        if not pur.pure:
                            return (
                                f"`{m.qualname}`, which Python may call implicitly on `{render(part)}`, is not "
                                f"known to be pure ({pur.reason}): the local would run it once"
                            )
            elif t is None:
                m = next(iter(self._changing_dunders()), None)
                if m is not None:
                    return (
                        f"`{render(part)}` is of a type cachelint does not know, and `{m.qualname}`, which Python "
                        f"may call implicitly on it, changes `{show(st.effects(m)[0].value)}`: the local would "
                        "run it once"
                    )
        return None

    def _identity_only(self, m: FunctionInfo) -> bool:
        """``m`` changes nothing and calls only pure builtins or ``id``/``hash``
        (``return hash(id(self))``): within one run, on one object, it gives the
        same answer each time, so running it once instead of twice changes
        nothing. (A memo across runs may not rely on identity; a local may.)"""
        if self.a.state.effects(m):
            return False
        for c in m.calls:
            callee = self.p.call_callee(m, c)
            if callee is None or len(callee) != 1 or not isinstance(callee[0], GlobalRoot):
                return False
            q = callee[0].qualname
            if not (pure_builtin(q) or q in ("builtins.id", "builtins.hash")):
                return False
        return True

    def _changing_dunders(self) -> list[FunctionInfo]:
        """The implicitly called methods of the tree's classes that change something."""
        memo = self.__dict__.setdefault("_dunders_memo", [])
        if not memo:
            found = [
                g
                for g in self.p.functions.values()
                if g.class_qualname and g.name in _IMPLICIT and self.a.state.effects(g)
            ]
            memo.append(sorted(found, key=lambda g: g.qualname))
        return memo[0]

    def _impure_argument(self, f: FunctionInfo, use) -> str | None:
        """A call made in evaluating the use's receiver or arguments (a
        property getter, a function of the tree, any call) that is not
        proven pure: each use ran it, and the local would run it once."""
        p = self.p
        for c in f.calls:
            if (c.line, c.column, c.end_line, c.end_column) == (use.line, use.column, use.end_line, use.end_column):
                continue
            if (c.line, c.column) < (use.line, use.column) or (c.end_line, c.end_column) > (
                use.end_line,
                use.end_column,
            ):
                continue
            callee = p.call_callee(f, c)
            if callee is not None and len(callee) == 1 and isinstance(callee[0], GlobalRoot):
                if pure_builtin(callee[0].qualname):
                    continue
            g = p.callee_function(callee) if callee is not None else None
            pur = self.a.cost.purity(p.callee_names(callee, dotted(c.func)), g)
            if pur.pure:
                continue
            what = "reading the property" if c.is_read else "the call"
            return (
                f"{what} `{render(c.func)}` (line {c.line}), evaluated with each use, is not known to be pure "
                f"({pur.reason}): the local would run it once"
            )
        body = self.a.bodies.body(f)
        node = body.find(use.line, use.column, use.end_line, use.end_column) if body is not None else None
        if node is None:
            return None
        for n in ast.walk(node):
            if n is node or not isinstance(n, ast.Attribute) or not isinstance(n.ctx, ast.Load):
                continue
            getter = self._property_of(f, n)
            if getter is None or p.is_cached(getter):
                continue
            pur = self.a.cost.purity([getter.qualname], getter)
            if not pur.pure:
                return (
                    f"reading the property `{ast.unparse(n)}` (line {body.line_of(n)}), evaluated with each use, "
                    f"is not known to be pure ({pur.reason}): the local would run its getter once"
                )
        return None

    def _property_of(self, f: FunctionInfo, n: ast.Attribute) -> FunctionInfo | None:
        """The property getter of the tree that reading ``n`` in ``f`` runs, if any."""
        p = self.p
        recv = p.canon(conv(n.value), p.context(f))
        t = p.type_of(recv) if recv is not None else None
        getter = p.lookup_method(t, n.attr) if t is not None and t in p.classes else None
        return getter if getter is not None and is_property(getter) else None

    def _used_up_argument(self, f: FunctionInfo, s: Site) -> str | None:
        """An argument the callee (a function of the tree) iterates, of a type
        cachelint cannot show to be a collection: an iterator would be used
        up by the first use, and the later ones would see it empty."""
        g0 = self.p.callee_function(s.callee) if s.callee is not None else None
        if g0 is None:
            return None  # a catalogued callee's `pure` covers its arguments
        c = s.call
        for g in self.a.cost.implementations(g0):  # the call may run an override
            params = [q for q in g.params if q.kind == "pos"]
            if g.self_name is not None and c.func[0] == "attr":
                params = params[1:]
            passed = [(q.name, a) for q, a in zip(params, c.args)]
            passed += [(k, v) for k, v in c.kwargs if k is not None]
            for name, arg in passed:
                if _annotation_ok(_param_annotation(g, name), _COLLECTIONS):
                    continue  # declared a collection or a scalar: not an iterator
                if not _iterates(self, g, name, 0) or self._collection(f, arg):
                    continue
                t = self.p.type_of(self.a.state.value(f, arg))
                changer = self._protocol_change(t) if t is not None and t in self.p.classes else None
                if changer is not None:
                    return (
                        f"`{g.name}` uses its parameter `{name}`, and `{changer}`, which Python calls on "
                        f"`{render(arg)}` implicitly, changes the object: the first use would leave it changed"
                    )
                return (
                    f"`{g.name}` iterates its parameter `{name}`, and nothing shows that `{render(arg)}` is a "
                    "collection: an iterator would be used up by the first use"
                )
        return None

    def _collection(self, f: FunctionInfo, e, depth: int = 0) -> bool:
        """``e`` can be iterated again: a constant, a display, a local that
        every binding makes a builtin container, a parameter annotated as a
        collection, or an object of a class of the tree that is no iterator."""
        if _builtin_container(e):
            return True
        if e[0] == "name":
            if self._local_container(f, e[1]) or _annotation_ok(_param_annotation(f, e[1]), _COLLECTIONS):
                return True
            # a local every binding of which (plain assignments, none in a loop) is a collection
            binds = self.p.context(f).locals.get(e[1]) or []
            if (
                depth < 4
                and binds
                and e[1] not in self.p.context(f).params
                and all(a.kind in ("assign", "annassign") and a.value is not None for a in binds)
                and all(a.value != e and self._collection(f, a.value, depth + 1) for a in binds)
            ):
                return True
        if e[0] == "attr":
            # every binding of the attribute, through any receiver, makes a
            # builtin container or stores a parameter annotated as a collection
            binds = self.p.writers(e[2])
            if binds and all(
                _builtin_container(a.value)
                or (a.value[0] == "name" and _annotation_ok(_param_annotation(w, a.value[1]), _COLLECTIONS))
                for w, a in binds
            ):
                return True
        t = self.p.type_of(self.a.state.value(f, e))
        return (
            t is not None
            and t in self.p.classes
            and self.p.lookup_method(t, "__next__") is None
            and self._protocol_change(t) is None
        )

    def _protocol_change(self, t: str) -> str | None:
        """A method of class ``t`` (or a subclass) that Python calls implicitly on an object
        a function is given (``for x in obj``, ``len(obj)``, ``k in obj``,
        ``obj[i]``, ``if obj:``) and that changes the object: the first
        such method, or None. A ``__iter__`` that empties the object hands
        the first use everything and the later ones nothing."""
        p = self.p
        for cls in dict.fromkeys([t, *p.subclasses(t)]):
            for name in _PROTOCOL:
                g = p.lookup_method(cls, name)
                if g is None:
                    continue
                if any(isinstance(e.value[0], SelfRoot) for e in self.a.state.effects(g)):
                    return g.qualname
        return None
