"""Construction order: what runs while an object is being built, before a fill.

A cached attribute holds its value only once its fill has run. Calls made in
the fill's constructor before the fill, and in subclasses' constructors
before their ``super()`` call, run before it, and so does every function
they reach (:class:`ConstructionOrder`, a mixin of
:class:`~cachelint.facts.hazards.Hazards`). A constructor that hands ``self``
to code cachelint cannot resolve (:func:`hands_self`) may have any of the
object's methods called there, before the fill (CL001) or before a value
hoisted into ``__init__`` is assigned.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..index.expr import dotted, render
from ..index.records import FunctionInfo
from ..semantic.program import Program

if TYPE_CHECKING:
    from .bodies import Bodies
    from .hazards import SiteHazards


@dataclass(frozen=True)
class ImplicitCall:
    """Code a constructor runs without a call naming it: a dunder method
    formatting, comparing or testing ``self`` calls, a property getter a
    read of ``self.x`` runs, the class's ``__new__`` (before ``__init__``).
    ``target`` is the function of the tree it runs; None when the object's
    class inherits the method from outside the tree (unknown code given
    the object). Spelled like a call (``func``, ``line``) for the walks."""

    line: int
    text: str  # what the code does, as a call: `format(self)`, `self.room`, `ModelRunner.__new__`
    target: FunctionInfo | None
    in_handler: bool = False

    @property
    def func(self) -> tuple:
        return ("name", self.text)


def call_text(c) -> str:
    """A call (or an :class:`ImplicitCall`) as a reason shows it."""
    return c.text if isinstance(c, ImplicitCall) else f"{render(c.func)}(...)"


# the dunders that formatting an object may run, most specific first
_FORMAT = ("__format__", "__str__", "__repr__")
_FORMATTERS = {"str": ("__str__", "__repr__"), "repr": ("__repr__",), "ascii": ("__repr__",), "format": _FORMAT}
_BUILTIN_DUNDERS = {
    "print": ("__str__", "__repr__"),
    "hash": ("__hash__",),
    "len": ("__len__",),
    "iter": ("__iter__",),
    "bool": ("__bool__", "__len__"),
    "list": ("__iter__", "__len__"),
    "tuple": ("__iter__", "__len__"),
    "sorted": ("__iter__",),
    **_FORMATTERS,
}
_CMP = {
    ast.Eq: ("__eq__",),
    ast.NotEq: ("__ne__", "__eq__"),
    ast.Lt: ("__lt__", "__gt__"),
    ast.LtE: ("__le__", "__ge__"),
    ast.Gt: ("__gt__", "__lt__"),
    ast.GtE: ("__ge__", "__le__"),
}
_TRUTH = ("__bool__", "__len__")
_PROPERTY_DECORATORS = frozenset({"property", "cached_property"})


def implicit_calls(p: Program, bodies: Bodies, f: FunctionInfo, before: int | None = None) -> list:
    """The :class:`ImplicitCall` s constructor ``f`` makes on its own object
    (before line ``before``, if given): ``f"{self}"``, ``str(self)``,
    ``print(self)``, ``"%s" % self`` (``__format__``/``__str__``/
    ``__repr__``), ``self == x``, ``hash(self)``, ``len(self)``, ``if self``
    (the dunders), a read of a property ``self.x`` (its getter), the
    syntax's calls the index records (``for x in self``, ``self[k]``); and,
    for ``__init__``, the ``__new__`` of the class, which runs first. A
    subclass object dispatches to the subclass's method: each
    implementation in the class's family counts."""
    cls = f.class_qualname
    if cls is None or f.self_name is None:
        return []
    me = f.self_name
    body = bodies.body(f)
    wanted: list = []  # (line, text, dunders or property name, is_property)

    def is_self(e) -> bool:
        return isinstance(e, ast.Name) and e.id == me

    if body is not None:
        for n in body.code_nodes:
            line = body.line_of(n)
            if before is not None and line >= before:
                continue
            if isinstance(n, ast.FormattedValue) and is_self(n.value):
                names = {ord("r"): ("__repr__",), ord("a"): ("__repr__",), ord("s"): ("__str__", "__repr__")}
                wanted.append((line, "format(self)", names.get(n.conversion, _FORMAT), False))
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _BUILTIN_DUNDERS:
                args = [*n.args, *(k.value for k in n.keywords)]
                if any(is_self(a) for a in args):
                    wanted.append((line, f"{n.func.id}(self)", _BUILTIN_DUNDERS[n.func.id], False))
            elif (
                isinstance(n, ast.BinOp)
                and isinstance(n.op, ast.Mod)
                and isinstance(n.left, (ast.Constant, ast.JoinedStr))
            ):
                right = n.right.elts if isinstance(n.right, ast.Tuple) else [n.right]
                if any(is_self(a) for a in right):
                    wanted.append((line, "'...' % self", ("__str__", "__repr__"), False))
            elif isinstance(n, ast.Compare):
                operands = [n.left, *n.comparators]
                for i, op in enumerate(n.ops):
                    if (is_self(operands[i]) or is_self(operands[i + 1])) and type(op) in _CMP:
                        wanted.append((line, "a comparison of self", _CMP[type(op)], False))
            elif _tests_truth(n, is_self):
                wanted.append((line, "bool(self)", _TRUTH, False))
            elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and is_self(n.value):
                wanted.append((line, f"self.{n.attr}", (n.attr,), True))
    for c in f.implicit_calls:
        if c.func[0] == "attr" and c.func[1] == ("name", me) and (before is None or c.line < before):
            wanted.append((c.line, render(c.func), (c.func[2],), False))
    family = [cls, *p.subclasses(cls)]
    outside = any(k not in p.classes and k not in ("object", "builtins.object") for k in p.mro(cls))
    out: list = []
    for line, text, names, prop in wanted:
        found = False
        for k in family:
            for name in names:
                m = p.lookup_method(k, name)
                if m is None:
                    continue
                if prop and not _is_property(m):
                    break  # a method read as a bound method: nothing runs
                if not any(o.target is m for o in out):
                    out.append(ImplicitCall(line, text, m))
                found = True
                break
        if not found and not prop and outside:
            out.append(ImplicitCall(line, text, None))  # a dunder inherited from outside the tree
    if f.name in ("__init__", "__post_init__"):
        for k in family:
            new = p.lookup_method(k, "__new__")
            if new is not None and not any(o.target is new for o in out):
                out.append(ImplicitCall(new.line, f"{new.qualname.rsplit('.', 2)[-2]}.__new__ (which runs first)", new))
                out += _new_object_calls(p, new, k)
    return out


def _new_object_calls(p: Program, new: FunctionInfo, cls: str) -> list:
    """What ``__new__`` does with the object it makes (``obj =
    super().__new__(cls)``): its methods called there (``obj.m()``, the
    implementation of ``cls``), and calls it is handed to that cachelint
    cannot resolve (target None)."""
    from ..semantic.callgraph import resolve_call

    short = new.qualname[len(new.module) + 1 :]
    made = set()
    for a in new.assigns:
        v = a.value
        if a.target[0] == "name" and v and v[0] == "call" and v[1][0] == "attr" and v[1][2] == "__new__":
            made.add(a.target[1])
    out = []
    for c in new.calls:
        if c.func[0] == "attr" and c.func[1][0] == "name" and c.func[1][1] in made:
            m = p.lookup_method(cls, c.func[2])
            if m is not None:
                out.append(ImplicitCall(c.line, f"{render(c.func)}(...)` in `{short}", m))
        elif any(a[0] == "name" and a[1] in made for a in (*c.args, *(v for _k, v in c.kwargs))):
            if resolve_call(p, new, c) is None:
                out.append(ImplicitCall(c.line, f"{render(c.func)}(...)` in `{short}", None))
    return out


def _tests_truth(n: ast.AST, is_self) -> bool:
    """``n`` takes the truth value of the object (``if self``, ``not self``, ``self or x``)."""
    if isinstance(n, (ast.If, ast.While, ast.IfExp, ast.Assert)):
        return is_self(n.test)
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
        return is_self(n.operand)
    return isinstance(n, ast.BoolOp) and any(is_self(v) for v in n.values[:-1])


def _is_property(m: FunctionInfo) -> bool:
    return any(
        (dotted(d[1] if d[0] == "call" else d) or "").rsplit(".", 1)[-1] in _PROPERTY_DECORATORS for d in m.decorators
    )


class ConstructionOrder:
    """What runs before a cache site's fill (a mixin: ``self`` is the :class:`Hazards`)."""

    if TYPE_CHECKING:  # what Hazards provides (checked against it by mypy)
        p: Program
        bodies: Bodies
        _reach: dict

        def of(self, site) -> SiteHazards: ...

    def _pre_fill_calls(self, site) -> list:
        """Calls made while the anchor is being built before the fill has run:
        in the fill's constructor before the fill, and in subclasses'
        constructors before their ``super()`` call."""
        f = site.function
        if not site.in_constructor or f.class_qualname is None:
            return []
        out = [(f, c) for c in f.calls if c.line < site.call.line and c is not site.call]
        out += [(f, c) for c in implicit_calls(self.p, self.bodies, f, site.call.line)]
        for s in self.p.subclasses(f.class_qualname):
            c = self.p.classes.get(s)
            own = self.p.functions.get(c.methods.get(f.name, "")) if c is not None else None
            if own is None:
                continue
            supers = super_calls(own, f.name)
            if supers:
                out += [(own, x) for x in own.calls if x.line < min(supers)]
                out += [(own, x) for x in implicit_calls(self.p, self.bodies, own, min(supers))]
        return out

    def reached_before_fill(self, site, g: FunctionInfo) -> tuple | None:
        """(caller, call, chain) when ``g`` may run during construction, before
        the fill: a call made before the fill reaches it in the call graph."""
        h = self.of(site)
        if not h.pre_fill_calls:
            return None
        key = id(site)
        hit = self._reach.get(key)
        if hit is None or hit[0] is not site:
            hit = (site, self._reachable(h.pre_fill_calls))
            self._reach[key] = hit
        return hit[1].get(g.qualname)

    def _reachable(self, starts: list) -> dict:
        """qualname -> (constructor, call made before the fill, chain) for every
        function those calls reach (breadth-first, bounded)."""
        from ..semantic.callgraph import resolve_call

        seen: dict = {}
        queue = []
        for f, c in starts:
            t = c.target if isinstance(c, ImplicitCall) else resolve_call(self.p, f, c)
            if t is not None and t.qualname not in seen:
                seen[t.qualname] = (f, c, (t.qualname,))
                queue.append(t)
        i = 0
        while i < len(queue) and len(seen) < 5000:
            g = queue[i]
            i += 1
            origin = seen[g.qualname]
            for c in g.calls:
                if c.in_handler:
                    continue
                t = resolve_call(self.p, g, c)
                if t is not None and t.qualname not in seen:
                    seen[t.qualname] = (origin[0], origin[1], origin[2] + (t.qualname,))
                    queue.append(t)
        return seen


def hands_self(p: Program, f: FunctionInfo, c) -> bool:
    """Call ``c`` of method ``f`` is one cachelint cannot resolve, and it is
    given the object ``f`` runs on (``self``, or one of its bound methods,
    as an argument): it may call any of the object's methods there."""
    from ..semantic.callgraph import resolve_call

    if isinstance(c, ImplicitCall):
        return c.target is None
    if f.self_name is None or resolve_call(p, f, c) is not None:
        return False
    me = ("name", f.self_name)
    return any(
        arg == me or (arg[0] == "attr" and arg[1] == me and p.lookup_method(f.class_qualname or "", arg[2]) is not None)
        for arg in (*c.args, *(v for _k, v in c.kwargs))
    )


def super_calls(f: FunctionInfo, name: str) -> list[int]:
    """Lines where ``f`` calls ``super().<name>(...)`` or ``Base.<name>(self, ...)``."""
    out = []
    for c in f.calls:
        func = c.func
        if func[0] != "attr" or func[2] != name:
            continue
        base = func[1]
        by_super = base[0] == "call" and base[1] == ("name", "super")
        by_base = base[0] in ("name", "attr") and bool(c.args) and c.args[0] == ("name", f.self_name)
        if by_super or by_base:
            out.append(c.line)
    return out
