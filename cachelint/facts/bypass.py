"""Objects made without running the fill: construction that bypasses ``__init__``.

A fill in ``__init__`` (or a dataclass's ``__post_init__``) holds for an
object only if the object was built by calling its class, and calling the
class ran that method. Python makes objects other ways, and cachelint counts
each as an object the fill never ran for (:class:`Bypasses`, a mixin of
:class:`~cachelint.facts.hazards.Hazards`):

* ``X.__new__(X)`` or ``object.__new__(X)`` outside a ``__new__``
  implementation, for ``X`` the class, a subclass, ``cls`` in a classmethod
  of a related class, or an object whose class cachelint cannot tell;
* a metaclass (of the class, a base or a subclass) that defines
  ``__call__``, or one cachelint cannot see into: calling the class runs it,
  and it need not call ``__init__``;
* ``__getstate__``, ``__setstate__``, ``__reduce__``, ``__reduce_ex__``,
  ``__copy__`` or ``__deepcopy__`` in the class's family: a copy or an
  unpickled object gets the state they give it, not the fill's;
* an assignment (or ``setattr``) to the class's ``__init__``,
  ``__post_init__`` or ``__new__`` (on the class, a related class, ``cls`` in
  a classmethod or ``__init_subclass__``): construction runs the new code;
* the object escaping before the fill (handed to a call, stored into a
  global or another object) when what runs between the escape and the fill
  may raise: whoever caught the exception holds an object never filled.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..index.expr import dotted, render
from ..index.records import FunctionInfo
from ..index.scans import scan_hits
from ..semantic.program import Program
from ..semantic.values import GlobalRoot
from .bodies import first_line
from .construction import super_calls

if TYPE_CHECKING:
    from ..semantic.writes import Writes
    from .bodies import Bodies
    from .totality import Totality

# the metaclasses whose `__call__` is `type.__call__` (it runs `__init__`)
_PLAIN_METACLASSES = frozenset(
    {"type", "builtins.type", "abc.ABCMeta", "typing._ProtocolMeta", "enum.EnumMeta", "enum.EnumType"}
)
# what a copy (`copy.copy`, `copy.deepcopy`) or an unpickled object is built from
STATE_METHODS = ("__getstate__", "__setstate__", "__reduce__", "__reduce_ex__", "__copy__", "__deepcopy__")
# builtins that neither keep the object they are given nor hand it on, nor
# run a method of it that could (``str``, ``print``, ``hash``, ``len`` and
# ``getattr`` run the object's own ``__str__``, ``__hash__``, ``__len__``,
# ``__getattr__``, which may store it)
_KEEP_NOTHING = frozenset(
    "builtins." + n
    for n in (
        "isinstance",
        "issubclass",
        "type",
        "id",
        "callable",
        "super",
    )
)


def _first_param(g: FunctionInfo) -> str | None:
    return g.params[0].name if g.params else None


def _is_classmethod(g: FunctionInfo) -> bool:
    if g.name in ("__init_subclass__", "__class_getitem__"):
        return True
    return any(render(d).rsplit(".", 1)[-1] == "classmethod" for d in g.decorators)


class Bypasses:
    """The ways an object of the fill's class may exist without the fill
    having run (a mixin: ``self`` is the :class:`Hazards`)."""

    if TYPE_CHECKING:  # what Hazards provides (checked against it by mypy)
        p: Program
        writes: Writes
        _totality: Totality | None
        bodies: Bodies

        def _skippers_at(self, f: FunctionInfo, stmt_line: int) -> list: ...

    def _bypasses(self, site) -> list:
        """(class, reason) for each construction that skips the fill (see the module docstring)."""
        f = site.function
        if not site.in_constructor or f.class_qualname is None:
            return []
        cls = f.class_qualname
        out = self._new_calls(cls)
        out += self._metaclass_calls(cls)
        out += self._state_methods(cls)
        out += self._replaced_constructors(cls, f)
        return out

    def _family(self, cls: str) -> list:
        """The classes of the tree whose objects may be ``cls`` objects, or whose methods they run."""
        p = self.p
        return [k for k in (*p.mro(cls), *p.subclasses(cls)) if k in p.classes]

    def _own(self, k: str, cls: str) -> str:
        """The class a reason about ``k`` (of ``cls``'s family) is filed under."""
        return k if self.p.is_subclass(k, cls) else cls

    # ----- `__new__` called directly ------------------------------------------------
    def _new_calls(self, cls: str) -> list:
        p = self.p
        hits = list(scan_hits(p.functions, p.indexes, lambda scans: list(scans[1].get("__new__", ()))))
        for m in self.writes.module_functions().values():
            hits += [(m, c) for c in m.calls if c.func[0] == "attr" and c.func[2] == "__new__"]
        out: list = []
        for g, c in hits:
            if c.func[0] != "attr" or c.func[2] != "__new__" or not c.args:
                continue
            if g.name == "__new__" and g.params and c.args[0] == ("name", g.params[0].name):
                continue  # `super().__new__(cls)` making its own `cls` inside `__new__` is construction itself
            made = self._made_class(g, c.args[0])
            shown = f"`{render(('call', c.func, c.args, c.kwargs))}` in `{g.qualname}` (line {c.line})"
            if made is None:
                out.append(
                    (
                        cls,
                        f"{shown} makes an object of a class cachelint cannot tell (it may be a "
                        f"`{cls.rsplit('.', 1)[-1]}`) without calling its `__init__`, so the fill never runs for it",
                    )
                )
                continue
            k, any_subclass = made
            if k not in p.classes:
                continue  # a class outside the tree
            if p.is_subclass(k, cls) or (any_subclass and p.is_subclass(cls, k)):
                out.append(
                    (
                        self._own(k, cls),
                        f"{shown} makes a `{k.rsplit('.', 1)[-1]}`{' (or a subclass)' if any_subclass else ''} "
                        "without calling its `__init__`, so the fill never runs for it",
                    )
                )
        return out

    def _made_class(self, g: FunctionInfo, e) -> tuple | None:
        """(class, may be any subclass) of the class object ``e`` in ``g``
        denotes, or None when cachelint cannot tell."""
        p = self.p
        if e[0] == "name" and e[1] == _first_param(g) and g.class_qualname is not None:
            if self._is_metaclass(g.class_qualname):
                return None  # any class with this metaclass
            if _is_classmethod(g):
                return g.class_qualname, True
        v = p.canon(e, p.context(g))
        if v is not None and len(v) == 1 and isinstance(v[0], GlobalRoot):
            qn = v[0].qualname
            if qn in p.classes or not p.is_module_level_variable(qn):
                return qn, False  # a class of the tree, or one outside it
        return None

    def _is_metaclass(self, k: str) -> bool:
        return any(b in ("type", "builtins.type", "abc.ABCMeta") for b in self.p.mro(k))

    # ----- metaclasses ---------------------------------------------------------------
    def _metaclass_calls(self, cls: str) -> list:
        p = self.p
        out: list = []
        for k in self._family(cls):
            c = p.classes[k]
            if c.metaclass is None:
                continue
            meta = self._resolve(c.module, c.metaclass)
            text = render(c.metaclass)
            if meta in _PLAIN_METACLASSES:
                continue
            if meta is not None and meta in p.classes:
                call = p.lookup_method(meta, "__call__")
                if call is not None:
                    out.append(
                        (
                            self._own(k, cls),
                            f"the metaclass `{text}` of `{k}` defines `{call.qualname}` (line {call.line}): calling "
                            "the class runs it, which may make the object without calling `__init__`",
                        )
                    )
                    continue
                if all(b in p.classes or b in _PLAIN_METACLASSES or b == "builtins.object" for b in p.mro(meta)):
                    continue
            out.append(
                (
                    self._own(k, cls),
                    f"the metaclass `{text}` of `{k}` is one cachelint cannot see into: calling the class runs "
                    "its `__call__`, which may make the object without calling `__init__`",
                )
            )
        return out

    def _resolve(self, module: str, e) -> str | None:
        p = self.p
        d = dotted(e)
        if d is None:
            return None
        head, _, rest = d.partition(".")
        r = p.resolve_name(module, head)
        if r is None:
            return "builtins.type" if d == "type" else None
        return p.resolve_qualified(f"{r}.{rest}" if rest else r)

    # ----- copies and pickles ----------------------------------------------------------
    def _state_methods(self, cls: str) -> list:
        p = self.p
        out: list = []
        for k in self._family(cls):
            c = p.classes[k]
            for name in STATE_METHODS:
                if name in c.methods:
                    m = p.functions.get(c.methods[name])
                    line = f" (line {m.line})" if m is not None else ""
                    out.append(
                        (
                            self._own(k, cls),
                            f"`{k}.{name}`{line} gives a copy (`copy.copy`, `copy.deepcopy`) or an unpickled object "
                            "its state, without calling `__init__`: that object holds what it gives, not the fill's "
                            "value of the call",
                        )
                    )
        return out

    # ----- constructors replaced ---------------------------------------------------------
    def _replaced_constructors(self, cls: str, f: FunctionInfo) -> list:
        p = self.p
        out: list = []
        seen: set = set()
        for name in dict.fromkeys((f.name, "__init__", "__post_init__", "__new__")):
            for w in self.writes.of(name):
                if id(w) in seen or (w.attr is not None and w.attr != name):
                    continue
                seen.add(id(w))
                got = self.writes.receiver_class(w)
                g = w.function
                if got is None and w.receiver == ("name", _first_param(g)) and g.class_qualname and _is_classmethod(g):
                    got = (g.class_qualname, True)
                if got is not None:
                    k, any_subclass = got
                    if not (p.is_subclass(k, cls) or p.is_subclass(cls, k) or (any_subclass and k in p.mro(cls))):
                        continue
                    what = f"`{k.rsplit('.', 1)[-1]}`" + (" or a subclass" if any_subclass else "")
                elif w.attr is not None:
                    reach = self.writes.reaches(w, cls)
                    if reach is None or reach.sure:
                        continue  # an instance's own attribute: construction looks the method up on the class
                    what = f"`{render(w.receiver)}`, which may be a class of the `{cls.rsplit('.', 1)[-1]}` family"
                else:
                    continue
                out.append(
                    (
                        cls,
                        f"{w.where} (line {w.line}: `{w.text}`) replaces the `{w.attr or name}` of {what}: "
                        "construction then runs that code instead, which need not fill",
                    )
                )
        return out

    # ----- the object handed out before the fill ---------------------------------------
    def _escapes(self, site) -> list:
        """Reasons the object may be held elsewhere while its fill has not run:
        the constructor (or a subclass's, before its ``super()`` call) hands
        ``self`` to a call or stores it somewhere before the fill, and what
        runs from there to the fill may raise; whoever caught the exception
        still holds the object."""
        f = site.function
        if not site.in_constructor or f.class_qualname is None or f.self_name is None:
            return []
        fill = site.call
        places = [(f, fill.line)]
        for s in self.p.subclasses(f.class_qualname):
            c = self.p.classes.get(s)
            own = self.p.functions.get(c.methods.get(f.name, "")) if c is not None else None
            if own is not None and own.self_name is not None and super_calls(own, f.name):
                places.append((own, min(super_calls(own, f.name))))
        for g, before in places:
            esc = self._first_escape(g, before)
            if esc is None:
                continue
            line, text = esc
            later = [c for c in f.calls if (g is not f or c.line > line) and c.line <= fill.line]
            if fill not in later:
                later.append(fill)
            why = self._statement_may_raise(f, line if g is f else f.line, fill)
            if why is None and g is not f:
                why = f"`{g.qualname}` runs its own code between them, which cachelint does not prove cannot raise"
            if why is None:
                why = self._may_raise(f, later)
            if why is None:
                continue
            return [
                f"`{g.qualname}` hands the object out before the fill (line {line}: `{text}`), and the construction "
                f"may raise before `{site.attr}` is assigned (line {fill.line}; {why}): code that catches the "
                "exception holds an object the fill never ran for"
            ]
        return []

    def _first_escape(self, g: FunctionInfo, before: int) -> tuple | None:
        """(line, text) of the first statement of ``g`` before line ``before``
        that hands ``self`` (or a bound method of it) to a call or stores it
        outside the object."""
        p = self.p
        me = ("name", g.self_name)
        supers = set(super_calls(g, g.name))
        hits: list = []

        def mine(a) -> bool:
            return a == me or (
                a[0] == "attr" and a[1] == me and p.lookup_method(g.class_qualname or "", a[2]) is not None
            )

        for c in g.calls:
            if c.line >= before or c.line in supers:
                continue
            if not any(mine(a) for a in (*c.args, *(v for _k, v in c.kwargs))):
                continue
            callee = p.call_callee(g, c)
            if callee is not None and len(callee) == 1 and isinstance(callee[0], GlobalRoot):
                qn = callee[0].qualname
                if qn in _KEEP_NOTHING or qn in ("builtins.object.__setattr__", "object.__setattr__"):
                    continue
            if c.func == ("attr", ("name", "object"), "__setattr__"):
                continue
            hits.append((c.line, f"{render(c.func)}(...)"))
        for a in g.assigns:
            if a.line >= before or a.value != me or a.target[0] not in ("attr", "sub"):
                continue
            if a.target[0] == "attr" and a.target[1] == me:
                continue
            hits.append((a.line, f"{render(a.target)} = {g.self_name}"))
        return min(hits) if hits else None

    def _statement_may_raise(self, f: FunctionInfo, after: int, fill) -> str | None:
        """A statement of ``f`` after line ``after`` and before the fill's, other
        than a call made for its effect (whose callee :meth:`_may_raise` asks),
        or an argument of the fill other than a name, an attribute chain or a
        constant: it may raise (a subscript, a division, an ``assert``), and
        cachelint does not prove it cannot."""
        for e in (*fill.args, *(v for _k, v in fill.kwargs)):
            if e[0] not in ("name", "attr", "const") or (e[0] == "attr" and dotted(e) is None):
                return f"the fill's argument `{render(e)}` may raise"
        body = self.bodies.body(f)
        if body is None:
            return "cachelint cannot read the constructor's statements"
        for n in ast.walk(body.node):
            if not isinstance(n, ast.stmt) or n is body.node:
                continue
            at = n.lineno + body.shift
            if not after < at < fill.stmt_line:
                continue
            if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call):
                continue  # a call for its effect: its callee is asked below
            return f"the statement at line {at} (`{first_line(n)}`) may raise"
        return None

    def _may_raise(self, f: FunctionInfo, calls: list) -> str | None:
        t = self._totality
        for c in calls:
            if t is None:
                return f"`{render(c.func)}(...)` may raise"
            callee = self.p.call_callee(f, c)
            fn = self.p.callee_function(callee) if callee is not None else None
            why = t.call_may_raise(self.p.callee_names(callee, dotted(c.func)), fn)
            if why is not None:
                return f"`{render(c.func)}(...)` may raise ({why})"
        return None

    # ----- subclass constructors ---------------------------------------------------------
    def unconditional_super(self, own: FunctionInfo, name: str) -> bool:
        """``own`` calls ``super().<name>(...)`` on every path: not under a
        condition, in a loop, in an ``except`` handler, or in a ``try`` whose
        ``except`` goes on (or a ``with`` that may swallow the exception)."""
        lines = set(super_calls(own, name))
        for c in own.calls:
            if c.line in lines and not c.guard and not c.in_loop and not c.in_handler:
                if not self._skippers_at(own, c.stmt_line):
                    return True
        return False
