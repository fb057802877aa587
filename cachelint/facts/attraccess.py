"""Reads that run code, on an object a cache site depends on
(:class:`AttributeAccess`, a mixin of :class:`~cachelint.facts.hazards.Hazards`):
a property, a method or a class attribute that is (or may be) a descriptor
where the dependency is read, and the attribute-access hooks
(``__getattribute__``, ``__getattr__``, ``__setattr__``, ``__delattr__``) of
its class, a base or a subclass. Their inputs are not followed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..index.expr import dotted, render
from ..index.records import FunctionInfo
from ..semantic.idioms import is_property
from .hazardtext import _short

if TYPE_CHECKING:
    from ..semantic.program import Program


class AttributeAccess:
    """The code that reading (or storing) a dependency runs (a mixin: ``self``
    is the :class:`~cachelint.facts.hazards.Hazards`)."""

    if TYPE_CHECKING:  # what Hazards provides (checked against it by mypy)
        p: Program

        def _instance_owned(self, cls: str | None, attr: str) -> bool: ...

    def _related(self, cls: str) -> list:
        """The classes an object typed ``cls`` may take attributes from: its
        MRO, and that of every subclass of the tree (the object may be one)."""
        p = self.p
        out = list(p.mro(cls))
        seen = set(out)
        for sub in p.subclasses(cls):
            for qn in p.mro(sub):
                if qn not in seen:
                    seen.add(qn)
                    out.append(qn)
        return out

    def _properties(self, site, deps: dict) -> list:
        """Dependencies whose reads (or, for the cached attribute, stores too)
        run code whose inputs this analysis does not follow: a property of
        their owner, a base or a subclass (the object may be any subclass),
        another method of the owner or a base, or a class attribute that is a
        descriptor (an object whose class defines ``__get__``, ``__set__`` or
        ``__delete__``) or may be one (made by a call cachelint cannot
        resolve). Items: (path, role, class it is found in, what it is)."""
        p = self.p
        out = []
        for dep in deps.values():
            owner = dep.owner
            if owner is None or owner not in p.classes:
                continue
            name = dep.path[-1]
            mro = p.mro(owner)
            for qn in self._related(owner):
                c = p.classes.get(qn)
                if c is None:
                    continue
                sub = qn not in mro
                in_sub = f", in the subclass `{c.name}`" if sub else ""
                m = p.functions.get(c.methods[name]) if name in c.methods else None
                if m is not None:
                    if is_property(m):
                        what = f"a property (`{m.qualname}`{in_sub})"
                    elif _descriptor_decorated(m):
                        what = f"a method made into a descriptor by a decorator (`{m.qualname}`{in_sub})"
                    elif dep.role != "attribute" and not sub:
                        what = f"a method (`{m.qualname}`)"
                    else:
                        continue  # a plain function: an instance's own attribute hides it
                    out.append((dep.path, dep.role, qn, what))
                    continue
                if name in c.class_attrs:
                    desc = self._descriptor(c, name)
                    if desc is not None:
                        out.append((dep.path, dep.role, qn, desc + in_sub))
        return out

    def _descriptor(self, c, name: str) -> str | None:
        """What makes class attribute ``name`` of class ``c`` a descriptor
        (or maybe one), or None: an object of a class of the tree defining
        ``__get__``/``__set__``/``__delete__``, or made by a call cachelint
        cannot resolve to a class or factory known to make none."""
        p = self.p
        v = c.class_attrs.get(name)
        for _ in range(3):  # through a module variable bound once (`X = Doubled()`; `encoder_len = X`)
            if v is None or v[0] != "name":
                break
            qn = p.resolve_name(c.module, v[1])
            mod, _, var = (qn or "").rpartition(".")
            fi = p.modules.get(mod)
            v = fi.globals.get(var) if fi is not None and var not in fi.defs else None
        if v is None or v[0] != "call":
            return None
        d = dotted(v[1])
        text = f"`{c.name}.{name} = {_short(render(v))}`"
        if d is None:
            return f"may be a descriptor: {text} is made by a call cachelint cannot resolve"
        head, _, rest = d.partition(".")
        r = p.resolve_name(c.module, head)
        qn = p.resolve_qualified(f"{r}.{rest}" if rest else r) if r is not None else d
        if qn in p.classes:
            hooks = [h for h in DESCRIPTOR_HOOKS if p.lookup_method(qn, h) is not None]
            if hooks:
                names = ", ".join(f"`{h}`" for h in hooks)
                return f"is a descriptor: {text} is a `{qn}`, whose {names} run on each read and store"
            outside = [b for b in p.mro(qn)[1:] if b not in p.classes and b not in ("builtins.object", "object")]
            if outside:
                return f"may be a descriptor: {text} is a `{qn}`, which inherits from `{outside[0]}` outside the tree"
            return None
        if qn in p.functions or not _makes_no_descriptor(qn):
            return f"may be a descriptor: {text} is made by `{qn}`, which cachelint cannot see makes no descriptor"
        return None

    def _access_hooks(self, site, deps: dict) -> list:
        """Methods of the tree that run on attribute access of an object the
        invariant reads: ``__getattribute__``, ``__setattr__`` and
        ``__delattr__`` on every attribute, ``__getattr__`` on one the object
        does not hold itself (no constructor binds it, no class defines it).
        On the owner's class, a base or a subclass. Items: (class, text)."""
        p = self.p
        out: list = []
        seen: set = set()
        for dep in deps.values():
            owner = dep.owner
            if owner is None or owner not in p.classes:
                continue
            name = dep.path[-1]
            related = self._related(owner)
            for qn in related:
                c = p.classes.get(qn)
                if c is None:
                    continue
                for hook in ACCESS_HOOKS:
                    if hook not in c.methods or (c.methods[hook], dep.path) in seen:
                        continue
                    if hook == "__getattr__":
                        if dep.role == "attribute" or self._held(owner, name, related):
                            continue
                        seen.add((c.methods[hook], dep.path))
                        text = f"`{c.methods[hook]}` computes `{name}`, which the object does not hold itself"
                    else:
                        key = (c.methods[hook], ())
                        if key in seen:
                            continue
                        seen.add(key)
                        runs = "read" if hook == "__getattribute__" else "store" if hook == "__setattr__" else "delete"
                        text = f"`{c.methods[hook]}` runs on every attribute {runs} of a `{c.name}`"
                    out.append((qn, text + ", code whose inputs cachelint does not follow"))
        return out

    def _held(self, owner: str, name: str, related: list) -> bool:
        """``name`` is an attribute an object typed ``owner`` holds without
        ``__getattr__``: a constructor binds it or a class defines it."""
        p = self.p
        if self._instance_owned(owner, name):
            return True
        for qn in related:
            c = p.classes.get(qn)
            if c is not None and (name in c.methods or name in c.class_attrs or name in c.fields):
                return True
        return False


DESCRIPTOR_HOOKS = ("__get__", "__set__", "__delete__")


ACCESS_HOOKS = ("__getattribute__", "__getattr__", "__setattr__", "__delattr__")


# decorators that leave a plain function (or a non-data descriptor an
# instance's own attribute hides)
_PLAIN_DECORATORS = frozenset(
    {"staticmethod", "classmethod", "cached_property", "abstractmethod", "override", "final", "overload"}
)


# module prefixes and factories whose calls make no descriptor (a class
# attribute bound to one is a plain value)
_NO_DESCRIPTOR_MODULES = ("builtins.", "typing.", "collections.", "enum.", "re.", "threading.", "logging.")


_NO_DESCRIPTOR_CALLS = frozenset(
    {
        "dataclasses.field",
        "pydantic.Field",
        "pydantic.fields.Field",
        "pydantic.PrivateAttr",
        "attr.ib",
        "attrs.field",
        "msgspec.field",
        "os.getenv",
        "os.environ.get",
        "weakref.WeakKeyDictionary",
        "weakref.WeakValueDictionary",
        "weakref.WeakSet",
    }
)


def _makes_no_descriptor(qn: str) -> bool:
    return qn in _NO_DESCRIPTOR_CALLS or qn.startswith(_NO_DESCRIPTOR_MODULES) or "." not in qn


def _descriptor_decorated(m: FunctionInfo) -> bool:
    """A decorator other than the plain ones (``staticmethod``, ...) may make the method a data descriptor."""
    return any((dotted(d) or "").split(".")[-1] not in _PLAIN_DECORATORS for d in m.decorators)
