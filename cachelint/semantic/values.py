"""Typed records for symbolic values and guard-atom keys.

A canonical value (see :mod:`cachelint.semantic.program`) is a plain tuple
``(root, attr, attr, ...)``; its root is one of the records below, and guard
atoms (:mod:`cachelint.semantic.guards`) are keyed by the ``*Key`` records.
Test them with ``isinstance`` and read them by field name.

They are tuples (``typing.NamedTuple``) and not dataclasses: values are keys
of many memos and are compared millions of times in a run, and tuples hash
and compare in C (a frozen slotted dataclass measured two to three times
slower to hash and compare, see the commit that introduced this module).
Tuple equality ignores the class, so each record's first field is a ``tag``
that differs between records and is filled in by the constructor:
``SelfRoot("m.C") != GlobalRoot("m.C")``. The tags are the ones the untyped
tuples used, so records order and compare exactly as those did. Records are
never marshalled: the cache stores file indexes, the lock stores text.
"""

from __future__ import annotations

from typing import Any, NamedTuple

_new = tuple.__new__

Value = tuple  # a symbolic value: (root, attr, attr, ...)
CONSTRUCTORS = ("__init__", "__post_init__")
MODULE_CODE = "<module>"  # the name of the function that stands for a module's top-level code
ALIAS_KINDS = ("assign", "annassign", "walrus")  # the bindings a local alias is made by
# calls whose result is an object of their first argument's class
COPY_CALLS = frozenset({"copy.copy", "copy.deepcopy", "dataclasses.replace"})

# ----- roots of values ----------------------------------------------------------


class _SelfRoot(NamedTuple):
    tag: str
    cls: str


class SelfRoot(_SelfRoot):
    """The instance ``self`` of class ``cls`` (a qualified name)."""

    __slots__ = ()

    def __new__(cls, class_qualname: str) -> SelfRoot:
        return _new(cls, ("s", class_qualname))

    def __getnewargs__(self) -> tuple:
        return (self.cls,)

    def __repr__(self) -> str:
        return f"SelfRoot({self.cls!r})"


class _ParamRoot(NamedTuple):
    tag: str
    function: str
    name: str


class ParamRoot(_ParamRoot):
    """Parameter ``name`` of the function qualified ``function``."""

    __slots__ = ()

    def __new__(cls, function: str, name: str) -> ParamRoot:
        return _new(cls, ("p", function, name))

    def __getnewargs__(self) -> tuple:
        return (self.function, self.name)

    def __repr__(self) -> str:
        return f"ParamRoot({self.function!r}, {self.name!r})"


class _GlobalRoot(NamedTuple):
    tag: str
    qualname: str


class GlobalRoot(_GlobalRoot):
    """A module-level object, function, class or module, or an external name."""

    __slots__ = ()

    def __new__(cls, qualname: str) -> GlobalRoot:
        return _new(cls, ("g", qualname))

    def __getnewargs__(self) -> tuple:
        return (self.qualname,)

    def __repr__(self) -> str:
        return f"GlobalRoot({self.qualname!r})"


class _ConstRoot(NamedTuple):
    tag: str
    value: Any


class ConstRoot(_ConstRoot):
    """A constant."""

    __slots__ = ()

    def __new__(cls, value: Any) -> ConstRoot:
        return _new(cls, ("k", value))

    def __getnewargs__(self) -> tuple:
        return (self.value,)

    def __repr__(self) -> str:
        return f"ConstRoot({self.value!r})"


class _KwArg(NamedTuple):
    tag: str
    name: str | None
    value: Any  # a value, or None when it has none


class KwArg(_KwArg):
    """A keyword argument ``name=value`` among a call's arguments."""

    __slots__ = ()

    def __new__(cls, name: str | None, value: Any) -> KwArg:
        return _new(cls, ("kw", name, value))

    def __getnewargs__(self) -> tuple:
        return (self.name, self.value)

    def __repr__(self) -> str:
        return f"KwArg({self.name!r}, {self.value!r})"


class _CallRoot(NamedTuple):
    tag: str
    callee: tuple
    args: tuple


class CallRoot(_CallRoot):
    """The result of calling value ``callee`` with ``args``: values, then
    :class:`KwArg` for the keyword arguments."""

    __slots__ = ()

    def __new__(cls, callee: tuple, args: tuple) -> CallRoot:
        return _new(cls, ("c", callee, args))

    def __getnewargs__(self) -> tuple:
        return (self.callee, self.args)

    def __repr__(self) -> str:
        return f"CallRoot({self.callee!r}, {self.args!r})"


Root = SelfRoot | ParamRoot | GlobalRoot | ConstRoot | CallRoot

# ----- guard atom keys ------------------------------------------------------------


class _TruthyKey(NamedTuple):
    tag: str
    value: tuple


class TruthyKey(_TruthyKey):
    """``if value:``"""

    __slots__ = ()

    def __new__(cls, value: tuple) -> TruthyKey:
        return _new(cls, ("truthy", value))

    def __getnewargs__(self) -> tuple:
        return (self.value,)

    def __repr__(self) -> str:
        return f"TruthyKey({self.value!r})"


class _IsNoneKey(NamedTuple):
    tag: str
    value: tuple


class IsNoneKey(_IsNoneKey):
    """``if value is None:``"""

    __slots__ = ()

    def __new__(cls, value: tuple) -> IsNoneKey:
        return _new(cls, ("isnone", value))

    def __getnewargs__(self) -> tuple:
        return (self.value,)

    def __repr__(self) -> str:
        return f"IsNoneKey({self.value!r})"


class _CmpKey(NamedTuple):
    tag: str
    op: str
    left: tuple
    right: tuple


class CmpKey(_CmpKey):
    """``if left op right:`` over known values; ``op`` is never a negated
    operator (``!=``, ``not in``, ``is not`` become the atom's polarity)."""

    __slots__ = ()

    def __new__(cls, op: str, left: tuple, right: tuple) -> CmpKey:
        return _new(cls, ("cmp", op, left, right))

    def __getnewargs__(self) -> tuple:
        return (self.op, self.left, self.right)

    def __repr__(self) -> str:
        return f"CmpKey({self.op!r}, {self.left!r}, {self.right!r})"


class _OpaqueKey(NamedTuple):
    tag: str
    where: str
    expr: tuple


class OpaqueKey(_OpaqueKey):
    """A condition cachelint cannot evaluate: the index expression ``expr`` in
    the function qualified ``where``."""

    __slots__ = ()

    def __new__(cls, where: str, expr: tuple) -> OpaqueKey:
        return _new(cls, ("opaque", where, expr))

    def __getnewargs__(self) -> tuple:
        return (self.where, self.expr)

    def __repr__(self) -> str:
        return f"OpaqueKey({self.where!r}, {self.expr!r})"


AtomKey = TruthyKey | IsNoneKey | CmpKey | OpaqueKey
