"""Whether a call may raise: what a hoist into ``__init__`` must rule out.

A call moved from a method to the end of the constructor runs earlier, for
every object, and outside the method's ``try`` handlers: where the method
raised (and its caller caught it, or the method never ran), the construction
now raises, or hangs where the method looped forever. Only a call proven not
to raise (nor loop) may move there: a catalog entry declared ``total``
(``torch.cuda.is_available``), or a function of the tree whose body is
*total*, a deliberately small subset of Python that cannot raise whatever
values it is given (annotations are not trusted: nothing checks them):

- statements: ``pass``, a docstring, ``x = e`` and ``x: T = e`` to a plain
  name, ``return``, ``if``/``else``; every local read is bound on every path
  to the read (no ``UnboundLocalError``); no loop, ``try``, ``with``,
  ``raise``, ``assert``, ``del``, import, augmented assignment;
- expressions: constants, names, tuple and list displays of total items,
  dict and set displays whose keys are constants, ``and``/``or``/``not``
  and conditional expressions over comparisons and constants, comparisons
  by ``is``/``is not``, ``==``/``!=`` between constants, arithmetic
  ``+``/``-``/``*`` between small int constants, f-strings without
  replacement fields; no attribute read (the attribute may be missing, or
  run a property or a ``__getattr__``), no subscript or slice, no other
  comparison or arithmetic (a dunder of any class may run, an int may be too
  large to format or divide), no formatting;
- calls: ``id``, ``callable``, ``isinstance`` against builtin types, catalog
  entries declared ``total``, and undecorated module-level functions of the
  tree whose bodies are total in turn, called with arguments that bind their
  parameters (no ``*``/``**``).

Most bodies are not total: the hoist is then unsafe and says what may raise.
"""

from __future__ import annotations

import ast
import builtins

from ..index.expr import dotted
from ..index.records import FunctionInfo
from ..semantic.values import GlobalRoot

# builtins that raise on no argument: ``id(x)``, ``callable(x)`` (the
# others run dunders of their argument, iterate it, or reject its type)
TOTAL_BUILTINS = frozenset(["id", "callable"])

# ``isinstance(x, T)`` with these ``T`` (no ``__instancecheck__`` of the tree)
_BUILTIN_TYPES = frozenset(
    [
        "int",
        "float",
        "complex",
        "bool",
        "str",
        "bytes",
        "bytearray",
        "tuple",
        "list",
        "dict",
        "set",
        "frozenset",
        "type",
        "object",
    ]
)

MAX_DEPTH = 3

# decorators that run nothing of their own on a call (a read of a property runs its getter)
_PLAIN_DECORATORS = frozenset(["property", "cached_property", "staticmethod"])

_OPS = {
    ast.Div: "a division",
    ast.FloorDiv: "a division",
    ast.Mod: "a `%`",
    ast.Pow: "a power",
    ast.LShift: "a shift",
    ast.RShift: "a shift",
    ast.MatMult: "a matrix product",
}
_SMALL = 1 << 64

_STMTS = {
    ast.For: "a `for` loop{at} (it may raise, or never end)",
    ast.AsyncFor: "an `async for` loop",
    ast.While: "a `while` loop{at} (it may never end)",
    ast.Try: "a `try`",
    ast.With: "a `with`",
    ast.AsyncWith: "an `async with`",
    ast.Raise: "a `raise`",
    ast.Assert: "an `assert`",
    ast.Delete: "a `del`",
    ast.Import: "an import",
    ast.ImportFrom: "an import",
    ast.AugAssign: "an augmented assignment",
    ast.Global: "a `global`",
    ast.Nonlocal: "a `nonlocal`",
}


class Totality:
    """Why a function of the tree may raise, memoized per function."""

    def __init__(self, program, bodies, catalog) -> None:
        self.p = program
        self.bodies = bodies
        self.catalog = catalog
        self._memo: dict = {}

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
            why = self._scan(fn, depth)
            self._memo[key] = None if why is None else (why + (f" in `{fn.qualname}`" if depth else ""))
        return self._memo[key]

    def _scan(self, fn: FunctionInfo, depth: int) -> str | None:
        if fn.is_async:
            return "an `async` function"
        for d in fn.decorators:
            if (dotted(d[1] if d[0] == "call" else d) or "").rsplit(".", 1)[-1] not in _PLAIN_DECORATORS:
                return "a decorated function (the decorator runs too)"
        body = self.bodies.body(fn)
        if body is None or not isinstance(body.node, ast.FunctionDef):
            return f"cachelint cannot read the body of `{fn.qualname}`"
        return _Scan(self, fn, body, depth).run()


class _Scan:
    """One body, statement by statement, with the locals bound so far."""

    def __init__(self, t: Totality, fn: FunctionInfo, body, depth: int) -> None:
        self.t = t
        self.fn = fn
        self.depth = depth
        node = body.node
        a = node.args
        self.params = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
        self.params |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
        self.locals = set(self.params)
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                self.locals.add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not node:
                self.locals.add(n.name)
        self.calls: dict = {}
        for c in fn.calls:
            try:
                want = (
                    c.line - body.shift,
                    body._bcol(c.line, c.column),
                    c.end_line - body.shift,
                    body._bcol(c.end_line, c.end_column),
                )
            except (IndexError, TypeError):
                continue
            self.calls[want] = c
        self.node = node
        self.shift = body.shift

    def run(self) -> str | None:
        why, _, _ = self.block(self.node.body, set(self.params))
        return why

    def block(self, stmts: list, bound: set) -> tuple[str | None, set, bool]:
        """(why it may raise, the names bound after it, whether it falls through)."""
        for i, s in enumerate(stmts):
            if isinstance(s, ast.Pass):
                continue
            if isinstance(s, ast.Expr):
                if i == 0 and isinstance(s.value, ast.Constant):
                    continue  # a docstring
                why = self.expr(s.value, bound)
            elif isinstance(s, ast.Assign):
                if len(s.targets) != 1 or not isinstance(s.targets[0], ast.Name):
                    return f"an assignment to `{_r(s.targets[0])}`", bound, True
                why = self.expr(s.value, bound)
                bound = bound | {s.targets[0].id}
            elif isinstance(s, ast.AnnAssign):
                if not isinstance(s.target, ast.Name):
                    return f"an assignment to `{_r(s.target)}`", bound, True
                why = self.expr(s.value, bound) if s.value is not None else None
                if s.value is not None:
                    bound = bound | {s.target.id}
            elif isinstance(s, ast.Return):
                why = self.expr(s.value, bound) if s.value is not None else None
                return why, bound, False
            elif isinstance(s, ast.If):
                why = self.test(s.test, bound)
                if why is not None:
                    return why, bound, True
                w1, b1, f1 = self.block(s.body, bound)
                if w1 is not None:
                    return w1, bound, True
                w2, b2, f2 = self.block(s.orelse, bound)
                if w2 is not None:
                    return w2, bound, True
                if not (f1 or f2):
                    return None, bound, False
                bound = (b1 & b2) if (f1 and f2) else (b1 if f1 else b2)
                continue
            else:
                at = f" at line {s.lineno + self.shift}"
                kind = _STMTS.get(type(s), "a `" + type(s).__name__ + "` statement{at}")
                return kind.format(at=at) if "{at}" in kind else kind + at, bound, True
            if why is not None:
                return why, bound, True
        return None, bound, True

    def test(self, e: ast.AST, bound: set) -> str | None:
        """A truth test: only of values whose truth runs no code (``bool``s of comparisons, constants)."""
        if isinstance(e, ast.Constant):
            return None
        if isinstance(e, ast.Compare):
            return self.expr(e, bound)
        if isinstance(e, ast.BoolOp):
            for v in e.values:
                why = self.test(v, bound)
                if why is not None:
                    return why
            return None
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            return self.test(e.operand, bound)
        return f"a truth test of `{_r(e)}` (its `__bool__` or `__len__` may raise)"

    def expr(self, e: ast.AST, bound: set) -> str | None:
        if isinstance(e, ast.Constant):
            return None
        if isinstance(e, ast.Name):
            if e.id in self.locals:
                return None if e.id in bound else f"`{e.id}` may be unbound where it is read"
            if self.t.p.resolve_name(self.fn.module, e.id) is not None or hasattr(builtins, e.id):
                return None
            return f"the name `{e.id}` may be undefined"
        if isinstance(e, (ast.Tuple, ast.List)):
            return self._all(e.elts, bound)
        if isinstance(e, ast.Dict):
            if not all(isinstance(k, ast.Constant) for k in e.keys):
                return f"a dict display `{_r(e)}` whose keys may be unhashable"
            return self._all(e.values, bound)
        if isinstance(e, ast.Set):
            if not all(isinstance(k, ast.Constant) for k in e.elts):
                return f"a set display `{_r(e)}` whose items may be unhashable"
            return None
        if isinstance(e, ast.Compare):
            ops_is = all(isinstance(o, (ast.Is, ast.IsNot)) for o in e.ops)
            consts = all(isinstance(o, (ast.Eq, ast.NotEq)) for o in e.ops) and all(
                isinstance(x, ast.Constant) for x in [e.left, *e.comparators]
            )
            if not (ops_is or consts):
                return f"a comparison `{_r(e)}` (a dunder of its operands may raise)"
            return self._all([e.left, *e.comparators], bound)
        if isinstance(e, (ast.BoolOp, ast.UnaryOp)) and (not isinstance(e, ast.UnaryOp) or isinstance(e.op, ast.Not)):
            return self.test(e, bound)
        if isinstance(e, ast.IfExp):
            return self.test(e.test, bound) or self.expr(e.body, bound) or self.expr(e.orelse, bound)
        if (
            isinstance(e, ast.BinOp)
            and _small_int(e.left)
            and _small_int(e.right)
            and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult))
        ):
            return None
        if isinstance(e, (ast.BinOp, ast.UnaryOp)):
            kind = _OPS.get(type(e.op), "arithmetic") if isinstance(e, ast.BinOp) else "arithmetic"
            return f"{kind} `{_r(e)}` (it may raise on what its operands hold)"
        if isinstance(e, ast.JoinedStr):
            if all(isinstance(v, ast.Constant) for v in e.values):
                return None
            return f"a formatting `{_r(e)}` (`__format__` may raise)"
        if isinstance(e, ast.Attribute):
            return f"a read of `{_r(e)}` (the attribute may be missing, or run a property or `__getattr__`)"
        if isinstance(e, ast.Subscript):
            return f"a subscript `{_r(e)}`"
        if isinstance(e, ast.Call):
            return self.call(e, bound)
        if isinstance(e, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return f"a comprehension `{_r(e)}` (it iterates)"
        return f"`{_r(e)}`"

    def _all(self, es: list, bound: set) -> str | None:
        for x in es:
            if isinstance(x, ast.Starred):
                return f"an unpacking `{_r(x)}`"
            why = self.expr(x, bound)
            if why is not None:
                return why
        return None

    def _rebound(self) -> set:
        """The names the function's module or the function itself binds (a
        module's ``int = 3`` hides the builtin)."""
        p = self.t.p
        ctx = p.context(self.fn)
        out = set(ctx.locals) | set(ctx.params)
        fi = p.modules_by_path.get(self.fn.path)
        if fi is not None:
            out |= set(fi.globals) | set(fi.defs) | set(fi.imports)
        return out

    def call(self, e: ast.Call, bound: set) -> str | None:
        shown = f"{_r(e.func)}(...)"
        c = self.calls.get((e.lineno, e.col_offset, e.end_lineno, e.end_col_offset))
        if c is None or any(isinstance(a, ast.Starred) for a in e.args) or any(k.arg is None for k in e.keywords):
            return f"a call of `{shown}` not proven total"
        if isinstance(e.func, ast.Name):
            why = self.expr(e.func, bound)
            if why is not None:
                return why
        why = self._all([*e.args, *(k.value for k in e.keywords)], bound)
        if why is not None:
            return why
        p = self.t.p
        callee = p.call_callee(self.fn, c)
        if callee is not None and len(callee) == 1 and isinstance(callee[0], GlobalRoot):
            qn = callee[0].qualname
            if qn.startswith("builtins.") and qn[9:] in TOTAL_BUILTINS and len(e.args) == 1 and not e.keywords:
                return None
            if (
                qn == "builtins.isinstance"
                and len(e.args) == 2
                and not e.keywords
                and _builtin_types(e.args[1], self._rebound())
            ):
                return None
        names = p.callee_names(callee, dotted(c.func))
        entry = self.t.catalog.match(names)
        if entry is not None and entry.total:
            return None
        target = p.call_function(self.fn, c)
        if target is None or not isinstance(e.func, ast.Name):
            return f"a call of `{shown}` not proven total"
        if target.class_qualname is not None or target.parent_function is not None:
            return f"a call of `{shown}` not proven total (a method or nested function)"
        if target.decorators:
            return f"a call of `{shown}` not proven total (a decorated function: the decorator's object is called)"
        if self.depth >= MAX_DEPTH:
            return f"a call of `{shown}` too deep to follow"
        why = self.t.may_raise(target, self.depth + 1)
        if why is not None:
            return f"`{shown}`: {why}"
        tb = self.t.bodies.body(target)
        if tb is None or not _binds(tb.node.args, e):
            return f"a call of `{shown}` whose arguments may not bind its parameters"
        return None


def _binds(a: ast.arguments, e: ast.Call) -> bool:
    """The call's arguments bind the parameters (no ``TypeError``)."""
    pos = [x.arg for x in [*a.posonlyargs, *a.args]]
    n = len(e.args)
    if n > len(pos) and a.vararg is None:
        return False
    named = [k.arg for k in e.keywords]
    if len(set(named)) != len(named):
        return False
    by_kw = {x.arg for x in a.args} | {x.arg for x in a.kwonlyargs}
    if any(k not in by_kw and a.kwarg is None for k in named):
        return False
    if any(k in pos[:n] for k in named):
        return False
    first_default = len(pos) - len(a.defaults)
    for i, name in enumerate(pos):
        if i >= n and i < first_default and name not in named:
            return False
    return all(d is not None or x.arg in named for x, d in zip(a.kwonlyargs, a.kw_defaults))


def _builtin_types(e: ast.AST, rebound: set) -> bool:
    """``e`` names builtin types (``int``, ``(str, bytes)``) that neither the
    module nor the function binds to something else."""
    if isinstance(e, ast.Tuple):
        return bool(e.elts) and all(_builtin_types(x, rebound) for x in e.elts)
    return isinstance(e, ast.Name) and e.id in _BUILTIN_TYPES and e.id not in rebound


def _small_int(e: ast.AST) -> bool:
    return isinstance(e, ast.Constant) and type(e.value) is int and abs(e.value) < _SMALL


def _r(e: ast.AST) -> str:
    try:
        s = ast.unparse(e)
    except Exception:  # pragma: no cover
        return "..."
    return s if len(s) <= 60 else s[:57] + "..."
