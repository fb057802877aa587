"""Cheap fingerprints of a call's arguments and result, for finding repeated identical calls.

A fingerprint is a hashable value built from the *contents* of Python's own
immutable types and from the *identity and attribute bindings* of objects,
never by calling code of the program (no ``__hash__``, ``__eq__`` or
``__repr__`` of its classes runs):

* ``None``, ``bool``, ``int``, ``float``, ``complex``, ``str``, ``bytes``,
  and tuples and frozensets of them: their value;
* functions, classes, modules, enum members: their identity (they do not
  change);
* any other object with a ``__dict__`` (a config, a processor, ``self``): its
  identity and its *version*, the fingerprints one level down of its
  attributes (objects there by identity). Rebinding an attribute changes the
  version; a change inside an attribute's own contents (appending to a list
  it holds) does not, which the report states;
* lists, dicts, sets, arrays and tensors, and objects without a
  ``__dict__`` as *arguments*: not fingerprinted. The call is counted under
  the reason (``argument `x` is a list``), never guessed equal to another.

A call that returns ``None`` is not compared: it is a procedure, whose
repeated calls may be the point (they change state the fingerprints do not
see). Results are compared by content where arguments are compared by identity: a
call that builds an equal new object each time (a processor built per step)
returns the same result. Containers and objects are compared to
:data:`DEPTH` levels; a longer container by its length and its first
:data:`WIDTH` items, an object below the last level by its type. Arrays,
tensors and objects without a ``__dict__`` are *opaque*: a call returning one
is not counted as identical to another. The comparison of results is bounded,
so two results equal by it may still differ further down: the report is
evidence for ranking, never for a fix's safety.
"""

from __future__ import annotations

import enum
import types
from typing import Any

DEPTH = 2  # levels of containers and attributes compared in a result
WIDTH = 32  # items of a container, attributes of an object, compared at most

_VALUES = (type(None), bool, int, float, complex, str, bytes)
_IDENTITY = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type, types.ModuleType)


class Unfingerprinted(Exception):
    """An argument the fingerprint cannot represent; ``str()`` says which and why."""


class _Opaque:
    """A result too large or too foreign to compare: equal to nothing, itself included."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return id(self)


def _value(v: Any) -> Any:
    """The fingerprint of an immutable builtin value (or raise KeyError)."""
    t = type(v)
    if t in _VALUES:
        return (t, v)
    if t is tuple and len(v) <= WIDTH:
        return (tuple, tuple(_value(x) for x in v))
    if t is frozenset and len(v) <= WIDTH:
        return (frozenset, frozenset(_value(x) for x in v))
    raise KeyError(t)


def _shallow(v: Any) -> Any:
    """An attribute's fingerprint inside an argument's version: values by value, the rest by identity."""
    try:
        return _value(v)
    except KeyError:
        return ("id", id(v))


def _array(t: type) -> bool:
    """An array or a tensor (numpy, torch): its contents change in place and are costly to read."""
    return hasattr(t, "data_ptr") or hasattr(t, "__array_interface__")


def argument(name: str, v: Any) -> Any:
    """The fingerprint of one argument; raises :class:`Unfingerprinted`."""
    try:
        return _value(v)
    except KeyError:
        pass
    if isinstance(v, (*_IDENTITY, enum.Enum)):
        return ("id", id(v))
    attrs = getattr(v, "__dict__", None)
    t = type(v)
    if type(attrs) is not dict or t in (list, dict, set, bytearray) or _array(t):
        raise Unfingerprinted(f"argument `{name}` is a {t.__name__}")
    if len(attrs) > 8 * WIDTH:
        raise Unfingerprinted(f"argument `{name}` has {len(attrs)} attributes")
    return ("obj", id(v), tuple((k, _shallow(x)) for k, x in attrs.items()))


def arguments(names: tuple[str, ...], values: dict) -> tuple:
    """The fingerprint of a call's arguments from its frame's locals at entry."""
    return tuple(argument(n, values.get(n)) for n in names)


OPAQUE_REASON = "result not comparable"


def result(v: Any, depth: int = DEPTH) -> Any:
    """The fingerprint of a returned value, by content (:class:`_Opaque` where it cannot be compared)."""
    try:
        return _value(v)
    except KeyError:
        pass
    if isinstance(v, (*_IDENTITY, enum.Enum)):
        return ("id", id(v))
    t = type(v)
    if depth < 0:
        return _Opaque() if _array(t) else ("type", t)
    if t in (list, tuple):
        return (t, len(v), tuple(result(x, depth - 1) for x in v[:WIDTH]))
    if t in (set, frozenset):
        if len(v) > WIDTH:
            return (t, len(v), _Opaque())
        return (t, len(v), frozenset(result(x, depth - 1) for x in v))
    if t is dict:
        items = v.items() if len(v) <= WIDTH else list(v.items())[:WIDTH]
        return (dict, len(v), tuple((_shallow(k), result(x, depth - 1)) for k, x in items))
    attrs = getattr(v, "__dict__", None)
    if type(attrs) is not dict or _array(t) or len(attrs) > 8 * WIDTH:
        return _Opaque()
    return ("new", t, tuple((k, result(x, depth - 1)) for k, x in attrs.items()))


def comparable(fp: Any) -> bool:
    """Whether a result fingerprint can equal another (no opaque part)."""
    if isinstance(fp, _Opaque):
        return False
    if type(fp) is tuple:
        return all(comparable(x) for x in fp)
    if type(fp) is frozenset:
        return all(comparable(x) for x in fp)
    return True
