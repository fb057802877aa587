"""Whether a call may raise: what a hoist into ``__init__`` must rule out.

A call moved from a method to the end of the constructor runs earlier, for
every object, and outside the method's ``try`` handlers: where the method
raised (and its caller caught it, or the method never ran), the construction
now raises. Only a call proven not to raise may move there: a catalog entry
declared ``total`` (``torch.cuda.is_available``), or a function of the tree
whose body is *total*: it only binds locals, returns, branches and loops over
constants, names, attribute reads (types are trusted, as annotations are),
arithmetic that cannot divide by zero or shift by a negative count, and
calls that are total in turn (a few builtins, catalog entries declared
``total``, functions of the tree whose bodies are total, and getters of
properties it reads). Everything else (a ``raise``, an ``assert``, a
division, a subscript, an unpacking, a ``with``, an import, a call cachelint
cannot see into) may raise.
"""

from __future__ import annotations

import ast

from ..index.expr import dotted
from ..index.records import FunctionInfo
from ..semantic.values import GlobalRoot

# builtins that raise on no argument of the types their callers pass (an
# iterable for the containers, as a ``for`` loop over it is trusted)
TOTAL_BUILTINS = frozenset(
    [
        "len",
        "isinstance",
        "issubclass",
        "bool",
        "id",
        "type",
        "callable",
        "hasattr",
        "abs",
        "list",
        "tuple",
        "set",
        "frozenset",
        "enumerate",
        "zip",
        "range",
        "str",
        "repr",
    ]
)

MAX_DEPTH = 3

_OPS = {
    ast.Div: "a division",
    ast.FloorDiv: "a division",
    ast.Mod: "a `%`",
    ast.Pow: "a power",
    ast.LShift: "a shift",
    ast.RShift: "a shift",
    ast.MatMult: "a matrix product",
}


class Totality:
    """Why a function of the tree may raise, memoized per function."""

    def __init__(self, program, bodies, catalog) -> None:
        self.p = program
        self.bodies = bodies
        self.catalog = catalog
        self._memo: dict = {}
        self._properties: dict | None = None

    def call_may_raise(self, names: list[str], fn: FunctionInfo | None) -> str | None:
        """Why calling ``fn`` (known by ``names``) may raise, or None when it is proven not to."""
        entry = self.catalog.match(names)
        if entry is not None and entry.total:
            return None
        if fn is None:
            return "cachelint cannot see its body, and the catalog does not declare it `total`"
        return self.may_raise(fn)

    def may_raise(self, fn: FunctionInfo, depth: int = 0) -> str | None:
        key = (fn.qualname, depth)
        if key not in self._memo:
            self._memo[key] = "it is being analysed"  # recursion: not proven
            self._memo[key] = self._scan(fn, depth)
        return self._memo[key]

    def _scan(self, fn: FunctionInfo, depth: int) -> str | None:
        body = self.bodies.body(fn)
        if body is None:
            return f"cachelint cannot read the body of `{fn.qualname}`"
        where = f" in `{fn.qualname}`" if depth else ""
        for n in body.code_nodes:
            why = self._node(n, fn)
            if why is not None:
                return why + where
        for c in fn.calls:  # those in `except` handlers too: they run when the `try` body raises
            why = self._call(fn, c, depth)
            if why is not None:
                return why
        # what the syntax calls (`for x in xs`, `k in d`): a dunder of the tree
        # runs its body; on other objects the subscripts and `with`s that may
        # raise are found above, and iteration is trusted as types are
        for c in fn.implicit_calls:
            target = self.p.call_function(fn, c)
            if target is not None:
                why = self.may_raise(target, depth + 1) if depth < MAX_DEPTH else "too deep to follow"
                if why is not None:
                    return f"`{dotted(c.func) or '...'}`: {why}"
        return None

    def _node(self, n: ast.AST, fn: FunctionInfo) -> str | None:
        if isinstance(n, ast.Raise):
            return "a `raise`"
        if isinstance(n, ast.Assert):
            return "an `assert`"
        if isinstance(n, (ast.BinOp, ast.AugAssign)) and type(n.op) in _OPS:
            right = n.right if isinstance(n, ast.BinOp) else n.value
            left = n.left if isinstance(n, ast.BinOp) else n.target
            by_number = isinstance(n.op, (ast.Div, ast.FloorDiv)) or not isinstance(left, (ast.Constant, ast.JoinedStr))
            if not (isinstance(n.op, (ast.Div, ast.FloorDiv, ast.Mod)) and by_number and _nonzero_number(right)):
                return _OPS[type(n.op)]
        if (
            isinstance(n, ast.Subscript)
            and isinstance(n.ctx, (ast.Load, ast.Del))
            and not isinstance(n.slice, ast.Slice)
        ):
            return "a subscript"
        if isinstance(n, (ast.Assign, ast.For, ast.AsyncFor, ast.comprehension)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            if any(isinstance(t, (ast.Tuple, ast.List, ast.Starred)) for t in targets):
                return "an unpacking"
        if isinstance(n, (ast.With, ast.AsyncWith)):
            return "a `with`"
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            return "an import"
        if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)):
            return "a `yield` or `await`"
        if isinstance(n, ast.Delete):
            return "a `del`"
        if isinstance(n, ast.FormattedValue) and n.format_spec is not None:
            return "a format spec"
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and not self._on_module(n.value, fn):
            getter = self.property_named(n.attr)
            if getter is not None:
                return getter
        return None

    def _on_module(self, e: ast.AST, fn: FunctionInfo) -> bool:
        """``e`` names a module (``importlib.metadata``): its attributes are no properties of the tree."""
        while isinstance(e, ast.Attribute):
            e = e.value
        if not isinstance(e, ast.Name):
            return False
        fi = self.p.modules.get(fn.module)
        if fi is not None and e.id in fi.module_imports:
            return True
        qn = self.p.resolve_name(fn.module, e.id)
        return qn is not None and qn in self.p.modules

    def property_named(self, attr: str) -> str | None:
        """A reason when ``attr`` is the name of a property of the tree whose
        getter is not proven total (a read of it runs the getter)."""
        if self._properties is None:
            props: dict = {}
            for ci in self.p.classes.values():
                for name, qn in ci.methods.items():
                    m = self.p.functions.get(qn)
                    if m is not None and any(
                        (dotted(d[1] if d[0] == "call" else d) or "").rsplit(".", 1)[-1]
                        in ("property", "cached_property")
                        for d in m.decorators
                    ):
                        props.setdefault(name, []).append(m)
            self._properties = props
        for m in self._properties.get(attr, ()):
            why = self.may_raise(m, MAX_DEPTH)  # followed one level only
            if why is not None:
                return f"a read of property `{m.qualname}`, whose getter may raise ({why})"
        return None

    def _call(self, fn: FunctionInfo, c, depth: int) -> str | None:
        p = self.p
        shown = dotted(c.func) or "..."
        callee = p.call_callee(fn, c)
        if callee is not None and len(callee) == 1 and isinstance(callee[0], GlobalRoot):
            qn = callee[0].qualname
            if qn.startswith("builtins.") and qn[9:] in TOTAL_BUILTINS:
                return None
            if qn in ("builtins.min", "builtins.max") and len(c.args) >= 2 and not c.kwargs:
                return None  # of two or more values, never of an empty iterable
            if qn == "builtins.getattr" and len(c.args) == 3:
                return None  # with a default: a missing attribute is no error
        names = p.callee_names(callee, dotted(c.func))
        entry = self.catalog.match(names)
        if entry is not None and entry.total:
            return None
        target = p.call_function(fn, c)
        if target is None or depth >= MAX_DEPTH:
            return f"a call of `{shown}(...)` not proven total"
        why = self.may_raise(target, depth + 1)
        return None if why is None else f"`{shown}(...)`: {why}"


def _nonzero_number(e: ast.AST) -> bool:
    """``e`` is a numeric constant other than zero (``x // 4``)."""
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
        e = e.operand
    return (
        isinstance(e, ast.Constant)
        and isinstance(e.value, (int, float))
        and not isinstance(e.value, bool)
        and e.value != 0
    )
