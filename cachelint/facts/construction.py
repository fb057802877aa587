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

from typing import TYPE_CHECKING

from ..index.records import FunctionInfo
from ..semantic.program import Program

if TYPE_CHECKING:
    from .hazards import SiteHazards


class ConstructionOrder:
    """What runs before a cache site's fill (a mixin: ``self`` is the :class:`Hazards`)."""

    if TYPE_CHECKING:  # what Hazards provides (checked against it by mypy)
        p: Program
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
        for s in self.p.subclasses(f.class_qualname):
            c = self.p.classes.get(s)
            own = self.p.functions.get(c.methods.get(f.name, "")) if c is not None else None
            if own is None:
                continue
            supers = super_calls(own, f.name)
            if supers:
                out += [(own, x) for x in own.calls if x.line < min(supers)]
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
            t = resolve_call(self.p, f, c)
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
