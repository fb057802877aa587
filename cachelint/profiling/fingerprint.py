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
  identity and its *version*, what its attributes are bound to (numbers and
  strings by value, other objects by identity). Rebinding an attribute
  changes the version; a change inside an attribute's own contents
  (appending to a list it holds) does not, nor does rebinding it to a new
  object at a freed one's address (the results are still compared);
* lists, dicts, sets, arrays and tensors, objects without a ``__dict__``
  and objects of more than :data:`ATTRIBUTES` attributes as *arguments*:
  not fingerprinted. The call is counted under the reason (``argument `x`
  is a list``), never guessed equal to another.

A call that returns ``None`` is not compared: it is a procedure, whose
repeated calls may be the point (they change state the fingerprints do not
see). Results are compared by content where arguments are compared by identity: a
call that builds an equal new object each time (a processor built per step)
returns the same result. Containers and objects are compared to
:data:`DEPTH` levels; a longer container by its length and its first
:data:`WIDTH` items, an object below the last level by its type. Arrays,
tensors and objects without a ``__dict__`` are not comparable: a call returning
one is not counted as identical to another. The comparison of results is bounded,
so two results equal by it may still differ further down: the report is
evidence for ranking, never for a fix's safety.
"""

from __future__ import annotations

import enum
import types
from itertools import islice
from typing import Any

DEPTH = 2  # levels of containers and attributes compared in a result
WIDTH = 32  # items of a container compared at most
ATTRIBUTES = 64  # attributes of an argument's object versioned at most

_VALUES = frozenset((type(None), bool, int, float, complex, str, bytes))
_IDENTITY = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type, types.ModuleType, enum.Enum)
_NO = object()  # not an immutable builtin value
_arrays: dict[type, bool] = {}


def _value(v: Any) -> Any:
    """The fingerprint of an immutable builtin value, or ``_NO``."""
    t = type(v)
    if t in _VALUES:
        return (t, v)
    if (t is tuple or t is frozenset) and len(v) <= WIDTH:
        items = [_value(x) for x in v]
        if _NO in items:
            return _NO
        return (t, tuple(items) if t is tuple else frozenset(items))
    return _NO


def _array(t: type) -> bool:
    """An array or a tensor (numpy, torch): its contents change in place and are costly to read."""
    hit = _arrays.get(t)
    if hit is None:
        hit = _arrays[t] = hasattr(t, "data_ptr") or hasattr(t, "__array_interface__")
    return hit


def _known(v: Any) -> Any:
    """The fingerprint of an immutable builtin value (by value) or of a function,
    class, module or enum member (by identity); ``_NO`` for anything else."""
    fp = _value(v)
    if fp is _NO and isinstance(v, _IDENTITY):
        return ("id", id(v))
    return fp


class Unfingerprinted(str):
    """Why an argument has no fingerprint (``argument `x` is a list``): a value, never raised."""


def argument(name: str, v: Any) -> Any:
    """The fingerprint of one argument, or an :class:`Unfingerprinted` reason."""
    fp = _known(v)
    if fp is not _NO:
        return fp
    t = type(v)
    attrs = getattr(v, "__dict__", None)
    if type(attrs) is not dict or t in (list, dict, set, bytearray) or _array(t):
        return Unfingerprinted(f"argument `{name}` is a {t.__name__}")
    if len(attrs) > ATTRIBUTES:
        return Unfingerprinted(f"argument `{name}` has more than {ATTRIBUTES} attributes")
    # the version: what each attribute is bound to (rebinding one changes it):
    # an immutable builtin by its value, any other object by its identity
    return ("obj", id(v), tuple([(type(x), x) if type(x) in _VALUES else id(x) for x in attrs.values()]))


def arguments(names: tuple[str, ...], values: dict) -> Any:
    """The fingerprint of a call's arguments from its frame's locals at entry, or the
    :class:`Unfingerprinted` reason of the first argument that has none."""
    out = []
    for n in names:
        fp = argument(n, values.get(n))
        if type(fp) is Unfingerprinted:
            return fp
        out.append(fp)
    return tuple(out)


OPAQUE_REASON = "result not comparable"


class _NotComparable(Exception):
    pass


def result(v: Any) -> Any:
    """The fingerprint of a returned value, by content, or None where it cannot be compared."""
    try:
        return _result(v, DEPTH)
    except _NotComparable:
        return None


def _result(v: Any, depth: int) -> Any:
    fp = _known(v)
    if fp is not _NO:
        return fp
    t = type(v)
    if depth < 0:
        if _array(t):
            raise _NotComparable
        return ("type", t)
    if t is list or t is tuple:
        return (t, len(v), tuple([_result(x, depth - 1) for x in v[:WIDTH]]))
    if t is set or t is frozenset:
        if len(v) > WIDTH:
            raise _NotComparable
        return (t, len(v), frozenset([_result(x, depth - 1) for x in v]))
    if t is dict:
        return (dict, len(v), tuple([(_key(k), _result(x, depth - 1)) for k, x in islice(v.items(), WIDTH)]))
    attrs = getattr(v, "__dict__", None)
    if type(attrs) is not dict or _array(t) or len(attrs) > ATTRIBUTES:
        raise _NotComparable
    return ("new", t, tuple([(k, _result(x, depth - 1)) for k, x in attrs.items()]))


def _key(k: Any) -> Any:
    fp = _value(k)
    return ("id", id(k)) if fp is _NO else fp
