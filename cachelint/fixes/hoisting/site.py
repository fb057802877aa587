"""What the hoist planner plans for (:class:`Site`), and the helpers over
expressions, guards and annotations it shares."""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass, field

from ...facts.cost import Cost
from ...facts.repeats import char_col
from ...index.expr import dotted
from ...index.records import CallSite, FunctionInfo
from ...model import Fix, Span
from ...semantic.program import Program
from ...semantic.types import string_annotation

_BUILTINS = frozenset(dir(builtins))


# how many hot calls of a function a parameter's value is followed through
CALLERS_FOLLOWED = 24


# annotations of hashable values that do not change during a process
_HASHABLE = frozenset(
    [
        "int",
        "str",
        "bool",
        "float",
        "bytes",
        "complex",
        "None",
        "NoneType",
        "tuple",
        "Tuple",
        "frozenset",
        "FrozenSet",
        "Literal",
        "Optional",
        "Union",
        "dtype",
        "device",
        "Enum",
        "IntEnum",
        "StrEnum",
    ]
)


# returned values callers cannot mutate (a cached return is shared by all callers)
_IMMUTABLE = _HASHABLE


# catalog kinds whose value follows mutable process state
_CONTEXT_KINDS = {
    "environment": "the environment (os.environ can change at run time)",
    "io": "the filesystem or the network",
    "context-lookup": "a context set around each forward or model construction",
    "per-call-context": "the context of each call (the current stream, device or forward)",
    "distributed": "process groups, which are re-created on reconfiguration",
    "device": "the current device or stream",
}


_MUTATION_AFTER = re.compile(
    r"\s*(?:\.\s*(?:append|extend|update|pop|popitem|insert|remove|clear|setdefault|add|discard|sort|reverse|"
    r"__setitem__|__delitem__)\s*\(|\[[^\]]*\]\s*(?:[-+*/%|&^@]|//|<<|>>|\*\*)?=(?!=)|(?:[-+*/%|&^@]|//|<<|>>|\*\*)=)"
)


_DEL_BEFORE = re.compile(r"\bdel\s+$")


@dataclass
class Site:
    """One expensive call on a hot path, as CL002 reports it."""

    function: FunctionInfo
    call: CallSite
    cost: Cost
    callee: tuple | None
    key: tuple | None  # (callee, args) canonical values, None if not known
    fix: Fix | None = None
    notes: list = field(default_factory=list)
    repeated: str = ""  # why this is repeated work
    invariant: bool = False  # same inputs on every run (else: repeated within one run only)
    varies: str | None = None  # why the inputs change between runs (not reported)


def names_in(e, out: list) -> None:
    """Every name an indexed expression reads (``"?"`` for a part not indexed)."""
    if not isinstance(e, tuple) or not e:
        return
    k = e[0]
    if k == "name":
        out.append(e[1])
    elif k == "attr":
        names_in(e[1], out)
    elif k == "call":
        names_in(e[1], out)
        for a in e[2]:
            names_in(a, out)
        for _kw, v in e[3]:
            names_in(v, out)
    elif k == "sub":
        names_in(e[1], out)
        names_in(e[2], out)
    elif k in ("tuple", "and", "or"):
        for x in e[1]:
            names_in(x, out)
    elif k == "not":
        names_in(e[1], out)
    elif k == "cmp":
        names_in(e[2], out)
        for x in e[3]:
            names_in(x, out)
    elif k != "const":
        out.append("?")


def _call_expr(c: CallSite) -> tuple:
    """The expression evaluated at the site: the call, or the property read."""
    if c.is_read:
        return c.func
    return ("call", c.func, c.args, c.kwargs)


def _inputs_expr(c: CallSite) -> tuple:
    """What the site's value depends on, besides the callee's own body: the
    call with its arguments, or a property read's receiver (the property's
    name is not an input; its getter's reads are checked separately)."""
    if c.is_read:
        return c.func[1]
    return ("call", c.func, c.args, c.kwargs)


def _attr_chains(e, root: str, out: list) -> None:
    """Attribute chains ``root.a.b`` in an expression, as (a, b) tuples."""
    if not isinstance(e, tuple) or not e:
        return
    if e[0] == "attr":
        d = dotted(e)
        if d is not None and d.split(".")[0] == root:
            out.append(tuple(d.split(".")[1:]))
            return
    for part in e[1:] if isinstance(e[0], str) else e:  # a node, or a tuple of nodes (arguments)
        if isinstance(part, tuple):
            _attr_chains(part, root, out)


def _base_name(c: CallSite) -> str:
    d = c.func
    last = d[2] if d[0] == "attr" else d[1] if d[0] == "name" else "value"
    last = last.lstrip("_")
    for prefix in ("get_", "compute_", "calc_", "make_", "read_", "load_"):
        if last.startswith(prefix) and len(last) > len(prefix):
            last = last[len(prefix) :]
            break
    last = re.sub(r"[^0-9a-zA-Z_]", "_", last) or "value"
    if last[0].isdigit():
        last = "v_" + last
    return last.lower()


def _class_level(p: Program, cls: str, attr: str) -> bool:
    for k in p.mro(cls):
        ci = p.classes.get(k)
        if ci is not None and (attr in ci.class_attrs or attr in ci.fields):
            return True
    return False


def argument_for(f: FunctionInfo, params: list, c: CallSite, n: str):
    """The expression a call passes for parameter ``n`` of ``f`` (its default if omitted)."""
    for kw, v in c.kwargs:
        if kw == n:
            return v
        if kw is None:
            return None  # **kwargs
    positional = [q for q in params if q.kind == "pos"]
    if f.self_name is not None and positional and positional[0].name == f.self_name:
        if c.func[0] == "attr":
            positional = positional[1:]
        else:
            return None  # Class.method(obj, ...) or a constructor: leave it
    if f.name == "__init__":
        return None
    for i, q in enumerate(positional):
        if q.name == n:
            if i < len(c.args):
                a = c.args[i]
                return None if a == ("?",) else a
            return q.default if q.default is not None else None
    for q in params:
        if q.name == n and q.kind == "kwonly":
            return q.default
    return None


def _on_one_path(calls: list) -> bool:
    """Some call runs whenever any of them runs (so hoisting adds no new path)."""
    prefix = _common_prefix([c.guard for c in calls])
    return any(c.guard == prefix and (not c.in_loop or all(d.in_loop for d in calls)) for c in calls)


def _common_prefix(guards: list) -> tuple:
    if not guards:
        return ()
    out = []
    for parts in zip(*guards):
        if all(x == parts[0] for x in parts):
            out.append(parts[0])
        else:
            break
    return tuple(out)


_CONTAINER_BUILDERS = frozenset({"list", "dict", "set", "sorted", "str", "bytearray", "tuple", "frozenset"})


def _builtin_container(e) -> bool:
    """``e`` (an indexed expression) builds a new builtin container: a list,
    dict or tuple display, a constant, or a call of ``list``, ``dict``,
    ``sorted``..."""
    if e is None:
        return False
    if e[0] in ("list", "dict", "tuple", "const"):
        return True
    return e[0] == "call" and e[1][0] == "name" and e[1][1] in _CONTAINER_BUILDERS


def _annotation_ok(ann, allowed: frozenset) -> bool:
    """Every name in the annotation is a hashable immutable type (``tuple[int, ...]`` too)."""
    if ann is None:
        return False
    k = ann[0]
    if k == "const":
        if ann[1] is None or ann[1] is Ellipsis:
            return True
        return _annotation_ok(string_annotation(ann), allowed)  # a string annotation, parsed
    if k in ("name", "attr"):
        d = dotted(ann) or ""
        return d.split(".")[-1] in allowed
    if k == "sub":
        return _annotation_ok(ann[1], allowed) and _annotation_ok(ann[2], allowed)
    if k in ("tuple", "or"):
        return all(_annotation_ok(x, allowed) for x in ann[1])
    return False


def _loop_head(body, loop) -> tuple[Span, ...] | None:
    """The anchor that puts a statement before ``loop`` (a ``for`` or
    ``while`` statement: the expression of its header, which the statement
    holding it evaluates; a comprehension needs none, the statement holding
    it is the one), or None when there is none."""
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        e = loop.iter
    elif isinstance(loop, ast.While):
        e = loop.test
    elif isinstance(loop, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return ()
    else:
        return None
    if e.end_lineno is None or e.end_col_offset is None:
        return None
    line, end = e.lineno + body.shift, e.end_lineno + body.shift
    return (Span(line, char_col(body, line, e.col_offset), end, char_col(body, end, e.end_col_offset)),)


def _calls_super_init(f: FunctionInfo) -> bool:
    for c in f.calls:
        fn = c.func
        if fn[0] == "attr" and fn[2] == "__init__":
            return True
    return False
