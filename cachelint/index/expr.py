"""Expressions as small tuples, converted from ``ast`` and rendered back:

    ("name", id)                       ("attr", base, attr)
    ("call", func, args, kwargs)       ("const", value)
    ("sub", base, index)               ("tuple", elts)
    ("not", e)  ("and", es)  ("or", es)  ("cmp", ops, left, rights)
    ("dict", keys, values)             ("list", elts)   (literals of at most 64 items;
                                        a ``**`` key is UNKNOWN)
    ("def", qualname)                   a lambda (indexed as a function)
    ("?",)                              anything else

Tuples, not classes: millions of them are built per run and marshalled into the
cache, where tuples are several times cheaper than any object.
"""

from __future__ import annotations

import ast
from typing import Any

Expr = tuple


Guard = tuple  # tuple[tuple[Expr, bool], ...]


UNKNOWN: Expr = ("?",)


def _last_name(e: Expr) -> str | None:
    if e[0] == "name":
        return e[1]
    if e[0] == "attr":
        return e[2]
    if e[0] == "call":
        return _last_name(e[1])
    return None


def dotted(e: Expr) -> str | None:
    """``a.b.c`` for a name/attribute chain, else None."""
    parts = []
    while e[0] == "attr":
        parts.append(e[2])
        e = e[1]
    if e[0] != "name":
        return None
    parts.append(e[1])
    return ".".join(reversed(parts))


def render(e: Expr) -> str:
    """Source-like text of an indexed expression (for messages)."""
    k = e[0]
    if k == "name":
        return e[1]
    if k == "attr":
        return f"{render(e[1])}.{e[2]}"
    if k == "call":
        args = [render(a) for a in e[2]] + [(f"{n}={render(v)}" if n else f"**{render(v)}") for n, v in e[3]]
        return f"{render(e[1])}({', '.join(args)})"
    if k == "const":
        return repr(e[1])
    if k == "sub":
        return f"{render(e[1])}[{render(e[2])}]"
    if k == "tuple":
        return "(" + ", ".join(render(x) for x in e[1]) + ("," if len(e[1]) == 1 else "") + ")"
    if k == "not":
        return f"not {render(e[1])}"
    if k in ("and", "or"):
        return f" {k} ".join(_paren(x) for x in e[1])
    if k == "cmp":
        s = _paren(e[2])
        for op, r in zip(e[1], e[3]):
            s += f" {op} {_paren(r)}"
        return s
    return "..."


def _paren(e: Expr) -> str:
    s = render(e)
    return f"({s})" if e[0] in ("and", "or", "not", "cmp") else s


_CMP = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}


_Name, _Attribute, _Call, _Constant, _Starred = ast.Name, ast.Attribute, ast.Call, ast.Constant, ast.Starred


_Subscript, _Tuple, _UnaryOp, _Not, _BoolOp, _And = ast.Subscript, ast.Tuple, ast.UnaryOp, ast.Not, ast.BoolOp, ast.And


_Compare, _BinOp, _BitOr = ast.Compare, ast.BinOp, ast.BitOr


_Dict, _List, _Lambda = ast.Dict, ast.List, ast.Lambda


_CONST_TYPES = (str, int, float, bool, bytes)


def conv(node: Any, depth: int = 0) -> Expr:
    """AST expression -> tuple form (bounded depth).

    The indexer calls this about a million times on vLLM: names are
    converted inline (no call) where the depth bound allows, and sequences
    are built from lists (faster than generator expressions).

    ``node`` is an ``ast.AST``, typed ``Any``: the branches test ``type(node)``
    through a local, which a type checker does not narrow on.
    """
    if depth > 12:
        return UNKNOWN
    t = type(node)
    if t is _Name:
        return ("name", node.id)
    d = depth + 1
    if t is _Attribute:
        v = node.value
        return ("attr", ("name", v.id) if type(v) is _Name and d <= 12 else conv(v, d), node.attr)
    if t is _Call:
        f = node.func
        func = ("name", f.id) if type(f) is _Name and d <= 12 else conv(f, d)
        args = tuple([UNKNOWN if type(a) is _Starred else conv(a, d) for a in node.args]) if node.args else ()
        kwargs = tuple([(k.arg, conv(k.value, d)) for k in node.keywords]) if node.keywords else ()
        return ("call", func, args, kwargs)
    if t is _Constant:
        v = node.value
        if isinstance(v, _CONST_TYPES) or v is None or v is Ellipsis:
            return ("const", v)
        return UNKNOWN
    if t is _Subscript:
        return ("sub", conv(node.value, d), conv(node.slice, d))
    if t is _Tuple:
        return ("tuple", tuple([conv(x, d) for x in node.elts]))
    if t is _UnaryOp and type(node.op) is _Not:
        return ("not", conv(node.operand, d))
    if t is _BoolOp:
        return ("and" if type(node.op) is _And else "or", tuple([conv(v, d) for v in node.values]))
    if t is _Compare:
        ops = tuple([_CMP.get(type(o), "?") for o in node.ops])
        return ("cmp", ops, conv(node.left, d), tuple([conv(c, d) for c in node.comparators]))
    if t is _BinOp and type(node.op) is _BitOr:  # X | None annotations
        return ("or", (conv(node.left, d), conv(node.right, d)))
    if t is _Dict:
        if len(node.keys) > LITERAL_ITEMS:
            return UNKNOWN
        return (
            "dict",
            tuple([UNKNOWN if k is None else conv(k, d) for k in node.keys]),
            tuple([conv(v, d) for v in node.values]),
        )
    if t is _List:
        if len(node.elts) > LITERAL_ITEMS:
            return UNKNOWN
        return ("list", tuple([UNKNOWN if type(x) is _Starred else conv(x, d) for x in node.elts]))
    if t is _Lambda:
        qn = LAMBDAS.name(node)
        return ("def", qn) if qn is not None else UNKNOWN
    return UNKNOWN


def has_unknown(e: Any) -> bool:
    """``e`` holds a part :func:`conv` could not express (``UNKNOWN``): two
    such expressions may be different code although they compare equal
    (``(x := a)`` and ``(y := b)`` are both ``UNKNOWN``)."""
    stack = [e]
    while stack:
        x = stack.pop()
        if x == UNKNOWN:
            return True
        if isinstance(x, tuple):
            stack.extend(y for y in x if isinstance(y, tuple))
    return False


def guard_extends(longer: Guard, prefix: Guard) -> bool:
    """``longer`` starts with the facts of ``prefix``, read as the same
    conditions of the same statements: equal facts holding no ``UNKNOWN``
    part (which would make two different conditions look alike)."""
    n = len(prefix)
    return tuple(longer[:n]) == tuple(prefix) and not any(has_unknown(cond) for cond, _ in prefix)


# container literals larger than this are not kept (a registry's values are
# resolved through the literal; a table of data is not worth storing)
LITERAL_ITEMS = 64


class _LambdaNames:
    """Names of the lambdas of the file being indexed, given on first sight
    (by :func:`conv` or the indexer), ``<lambda1>``, ``<lambda2>``... in the
    scope that holds them, in source order as PyCG numbers them:
    ``mod.<lambda1>``, ``mod.f.<locals>.<lambda1>``. The indexer sets the
    scope; outside indexing (``scope`` None) a lambda stays UNKNOWN."""

    def __init__(self) -> None:
        self.names: dict = {}  # id(node) -> qualname (the nodes live while their tree does)
        self.counts: dict = {}
        self.scope: str | None = None

    def reset(self) -> None:
        self.names = {}
        self.counts = {}
        self.scope = None

    def name(self, node: ast.Lambda) -> str | None:
        qn = self.names.get(id(node))
        if qn is None and self.scope is not None:
            n = self.counts.get(self.scope, 0) + 1
            self.counts[self.scope] = n
            qn = f"{self.scope}.<lambda{n}>" if self.scope else f"<lambda{n}>"
            self.names[id(node)] = qn
        return qn


LAMBDAS = _LambdaNames()


def subexpressions(e: Expr, whole_chains: bool = False) -> list:
    """The names, attribute chains and calls inside an indexed expression,
    outermost first. With ``whole_chains``, a plain dotted chain
    (``self.config.model``) is listed whole, without its prefixes."""
    out = []
    stack = [e]
    while stack:
        x = stack.pop()
        if not isinstance(x, tuple) or not x or not isinstance(x[0], str):
            continue
        if x[0] in ("name", "attr", "call"):
            out.append(x)
            if whole_chains and dotted(x) is not None:
                continue  # a plain chain: its prefixes are read through it
        for y in x[1:]:
            if isinstance(y, tuple):
                stack.append(y)
    return out
