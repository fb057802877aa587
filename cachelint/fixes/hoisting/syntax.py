"""The syntax the hoist to a local reads, asking nothing of the program:
pure functions of AST nodes, of a function's parsed body and of annotations
(what a node binds, or runs implicitly; what is evaluated before a node, and
whether it may raise; where a use's statement ends; where code cachelint
does not follow runs; whether an annotation is of values no code can change).
"""

from __future__ import annotations

import ast

from ...index.expr import conv, dotted, render
from ...index.records import FunctionInfo
from ...semantic.types import string_annotation
from .site import _IMMUTABLE

# builtins that only look at their argument, never iterate it: `len(it)`,
# `isinstance(it, list)` leave an iterator as it was
_LOOKS_ONLY = frozenset({"isinstance", "type", "id", "len", "hasattr", "getattr", "callable", "range"})
# the iterator protocol: a method of these names advances (or ends) an iterator
_ADVANCES = frozenset({"send", "throw", "close", "__next__", "__iter__"})


# the dunders a builtin (or the syntax) runs on its argument: code of the
# tree, when the argument is an object of a class of the tree
_IMPLICIT_BUILTINS = {
    "len": ("__len__",),
    "bool": ("__bool__", "__len__"),
    "str": ("__str__", "__repr__"),
    "repr": ("__repr__",),
    "format": ("__format__", "__str__", "__repr__"),
    "print": ("__str__", "__repr__"),
    "hash": ("__hash__",),
    "iter": ("__iter__",),
    "next": ("__next__",),
    "list": ("__iter__", "__len__"),
    "tuple": ("__iter__", "__len__"),
    "sorted": ("__iter__", "__lt__"),
}
_COMPARE_DUNDERS = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__contains__")


def _implicit_uses(n: ast.AST, parent: ast.AST | None, field: str | None) -> list[tuple[ast.AST, tuple, str]]:
    """The objects node ``n`` runs code of implicitly, with the dunders (or
    ``("property:<name>",)``/``("setter:<name>",)``) and how the source says it."""
    out: list = []
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _IMPLICIT_BUILTINS and n.args:
        for a in n.args if n.func.id == "print" else n.args[:1]:
            out.append((a, _IMPLICIT_BUILTINS[n.func.id], f"`{n.func.id}({render(conv(a))})`"))
    elif isinstance(n, ast.FormattedValue):
        out.append((n.value, ("__format__", "__str__", "__repr__"), f'`f"{{{render(conv(n.value))}}}"`'))
    elif isinstance(n, ast.Compare):
        for a in [n.left, *n.comparators]:
            out.append((a, _COMPARE_DUNDERS, "a comparison"))
    elif isinstance(n, ast.Subscript):
        d = (
            "__getitem__"
            if isinstance(n.ctx, ast.Load)
            else "__setitem__"
            if isinstance(n.ctx, ast.Store)
            else "__delitem__"
        )
        out.append((n.value, (d,), f"`{render(conv(n.value))}[...]`"))
    elif isinstance(n, (ast.If, ast.While, ast.IfExp)) or (isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not)):
        t = n.operand if isinstance(n, ast.UnaryOp) else n.test
        out.append((t, ("__bool__", "__len__"), "a truth test"))
    elif isinstance(n, (ast.For, ast.comprehension)):
        out.append((n.iter, ("__iter__", "__next__"), "a loop"))
    elif isinstance(n, ast.Attribute) and not (isinstance(parent, ast.Call) and field == "func"):
        kind = "setter" if isinstance(n.ctx, ast.Store) else "property"
        out.append((n.value, (f"{kind}:{n.attr}",), f"`{render(conv(n))}`"))
        if isinstance(n.ctx, ast.Store):
            out.append((n.value, ("__setattr__",), f"`{render(conv(n))} = ...`"))
    return out


def _looks_only(parent: ast.AST, field: str, n: ast.Name) -> bool:
    """The use of ``n`` as ``parent``'s ``field`` leaves an iterator as it was."""
    if isinstance(parent, ast.Compare):
        return all(isinstance(o, (ast.Is, ast.IsNot)) for o in parent.ops)
    if isinstance(parent, ast.Call) and field == "args":
        return isinstance(parent.func, ast.Name) and parent.func.id in _LOOKS_ONLY
    if isinstance(parent, ast.Attribute):
        return parent.attr not in _ADVANCES
    if isinstance(parent, ast.Subscript):
        return field == "value"
    if isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)):
        return field == "test"
    return isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not)


_TRY = tuple(t for t in (ast.Try, getattr(ast, "TryStar", None)) if t is not None)


def _evaluated_before(parent: ast.AST, field: str, index: int | None) -> list[ast.AST]:
    """The parts of ``parent`` evaluated before its child at ``field[index]``
    (in field order, which is evaluation order but for an assignment, whose
    value comes before its targets; a dict's keys all count as before)."""
    out: list[ast.AST] = []
    for name, value in ast.iter_fields(parent):
        if isinstance(parent, (ast.Assign, ast.AnnAssign)) and name in ("targets", "target", "annotation"):
            continue
        if name == field:
            if isinstance(value, list) and index is not None:
                out.extend(x for x in value[:index] if isinstance(x, ast.AST))
            break
        if isinstance(value, ast.AST):
            out.append(value)
        elif isinstance(value, list):
            out.extend(x for x in value if isinstance(x, ast.AST))
    return out


_NEVER_RAISE = (
    ast.Name,
    ast.Constant,
    ast.Tuple,
    ast.List,
    ast.expr_context,
    ast.operator,
    ast.boolop,
    ast.cmpop,
    ast.unaryop,
)


def _may_raise(n: ast.AST, getter) -> bool:
    """Evaluating ``n`` may raise: anything but names, constants, tuples or
    lists of them, ``is`` tests, and attribute reads that run no getter of
    the tree (``getter(node)``: the property an attribute read runs, or None)."""
    for x in ast.walk(n):
        if isinstance(x, _NEVER_RAISE):
            continue
        if isinstance(x, ast.Compare) and all(isinstance(o, (ast.Is, ast.IsNot)) for o in x.ops):
            continue
        if isinstance(x, ast.Attribute) and isinstance(x.ctx, ast.Load) and getter(x) is None:
            continue
        return True
    return False


def _deep_immutable(ann) -> bool:
    """An annotation of values no code can change in place: ``int``, ``str``,
    ``tuple[int, ...]``, ``frozenset[str]``, ``int | None``. A bare ``tuple``
    or ``frozenset`` may hold lists: not proven."""
    if ann is None:
        return False
    k = ann[0]
    if k == "const":
        if ann[1] is None or ann[1] is Ellipsis:
            return True
        return _deep_immutable(string_annotation(ann))  # a string annotation, parsed
    if k in ("name", "attr"):
        last = (dotted(ann) or "").split(".")[-1]
        return last in _IMMUTABLE and last not in _CONTAINERS
    if k == "sub":
        last = (dotted(ann[1]) or "").split(".")[-1]
        if last not in _CONTAINERS and last != "Optional":
            return False
        inner = ann[2]
        items = inner[1] if inner[0] == "tuple" else [inner]
        return all(_deep_immutable(x) for x in items)
    if k in ("tuple", "or"):
        return all(_deep_immutable(x) for x in ann[1])
    return False


# immutable containers: immutable only when what they hold is
_CONTAINERS = frozenset({"tuple", "Tuple", "frozenset", "FrozenSet"})


def _class_of(n: ast.AST, self_name: str) -> bool:
    """``n`` is ``type(self)`` or ``self.__class__``."""
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "type" and len(n.args) == 1:
        a = n.args[0]
        return isinstance(a, ast.Name) and a.id == self_name and not n.keywords
    return (
        isinstance(n, ast.Attribute)
        and n.attr == "__class__"
        and isinstance(n.value, ast.Name)
        and n.value.id == self_name
    )


def _param_annotation(f: FunctionInfo, name: str):
    """The annotation of ``f``'s parameter ``name`` (None: none, or no such parameter)."""
    return next((q.annotation for q in f.params if q.name == name), None)


_SUSPENDS = {ast.Await: "await", ast.Yield: "yield", ast.YieldFrom: "yield from"}


def _opaque_point(body, lo: int, hi: int, loops: list) -> str | None:
    """A place between lines ``lo`` and ``hi`` (or in ``loops``) of ``body``
    where code cachelint does not follow runs: an ``await`` or ``yield``
    (the caller, or other tasks, run while the function is suspended), an
    ``async for``/``async with``, or a ``with`` whose context manager is not
    made by a call there (its ``__enter__`` and ``__exit__`` are not followed)."""
    for n in body.code_nodes:
        line = body.line_of(n)
        if not (lo <= line <= hi or any(a <= line <= b for a, b in loops)):
            continue
        kw = _SUSPENDS.get(type(n))
        if kw is not None:
            return f"the `{kw}` at line {line} suspends the function"
        if isinstance(n, (ast.AsyncFor, ast.AsyncWith)):
            return (
                f"the `async {'for' if isinstance(n, ast.AsyncFor) else 'with'}` at line {line} suspends the function"
            )
        if isinstance(n, ast.With):
            for item in n.items:
                if not isinstance(item.context_expr, ast.Call):
                    return (
                        f"`with {ast.unparse(item.context_expr)}` (line {line}) enters a context manager "
                        "whose `__enter__` and `__exit__` cachelint does not follow"
                    )
    return None


def _window_end(body, use) -> int:
    """The last file line of what runs with the use ``use`` (a call record):
    the end of its statement (of a compound statement's header), as parts
    of it on later lines may run before it."""
    end = use.end_line
    node = body.find(use.line, use.column, use.end_line, use.end_column) if body is not None else None
    stmt = body.statement_of(node) if node is not None else None
    if stmt is None:
        return end
    if any(isinstance(getattr(stmt, k, None), list) for k in ("body", "orelse", "cases")):
        parts = [getattr(stmt, k, None) for k in ("test", "iter", "target", "subject")]
        parts += list(getattr(stmt, "items", ()))
        ends = [x.end_lineno for x in parts if isinstance(x, ast.expr)]
        ends += [x.context_expr.end_lineno for x in parts if isinstance(x, ast.withitem)]
        return max([end, *(e + body.shift for e in ends if e is not None)])
    return max(end, (stmt.end_lineno or stmt.lineno) + body.shift)


def _bound_by(n: ast.AST) -> set[str]:
    """The names node ``n`` itself binds."""
    if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
        return {n.id}
    if isinstance(n, ast.alias):
        return {(n.asname or n.name).split(".")[0]} if n.name != "*" else set()
    if isinstance(n, ast.ExceptHandler) and n.name:
        return {n.name}
    names = [getattr(n, k, None) for k in ("name", "rest")] if type(n).__name__.startswith("Match") else []
    return {x for x in names if isinstance(x, str)}


def _names_of(node: ast.AST) -> set[str]:
    """Every name read or bound anywhere in ``node``, nested scopes included."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            out |= set(n.names)
        else:
            out |= _bound_by(n)
    return out


# builtins whose result is an immutable value (a local bound to one is sealed)
_IMMUTABLE_RESULTS = frozenset({"int", "float", "bool", "str", "bytes", "complex", "len", "repr", "hash", "abs"})


# builtins that read (or run code on) the local variables of the function that calls them
_INTROSPECTS = frozenset({"locals", "vars", "dir", "eval", "exec"})


def _introspection(body) -> str | None:
    """A call of ``f``'s body that sees its local variables: ``locals()``,
    ``vars()`` or ``dir()`` without arguments, ``eval``, ``exec``."""
    for n in body.code_nodes:
        if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _INTROSPECTS):
            continue
        if n.func.id in ("vars", "dir") and (n.args or n.keywords):
            continue
        return f"`{ast.unparse(n)[:50]}` (line {body.line_of(n)}) reads the function's local variables"
    return None
