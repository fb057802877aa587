"""Stage 2, one function body: its assignments, calls and returns, each with
the guard it sits under (see :mod:`cachelint.index.walk`, which walks
modules and classes and hands each function body to
:class:`FunctionBodyIndexer`).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from .expr import (
    LAMBDAS,
    UNKNOWN,
    Expr,
    Guard,
    _And,
    _Attribute,
    _BinOp,
    _BoolOp,
    _Call,
    _Compare,
    _Name,
    _Starred,
    _Subscript,
    _Tuple,
    conv,
    has_unknown,
)
from .records import Assign, CallSite, FileIndex, FunctionInfo

if TYPE_CHECKING:
    from .walk import _Indexer

# node types bound once: the walk compares `type(n) is X` in its inner loop
_Await, _FormattedValue, _List, _Set, _JoinedStr = ast.Await, ast.FormattedValue, ast.List, ast.Set, ast.JoinedStr
_Lambda, _IfExp, _NamedExpr, _DictComp = ast.Lambda, ast.IfExp, ast.NamedExpr, ast.DictComp
_Load, _In, _NotIn = ast.Load, ast.In, ast.NotIn
_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
_TryStar = getattr(ast, "TryStar", None)  # 3.11+
_Match = getattr(ast, "Match", None)  # 3.10+
_ExprStmt = ast.Expr
_COMPS = frozenset({ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp})
_NO_EXPRS = frozenset({ast.Pass, ast.Break, ast.Continue})
_LEAVES = frozenset({ast.Name, ast.Constant, ast.Load, ast.Store, ast.Del})


def always_exits(body: list) -> bool:
    if not body:
        return False
    last = body[-1]
    if isinstance(last, _EXITS):
        return True
    if isinstance(last, ast.If):
        return always_exits(last.body) and always_exits(last.orelse)
    if isinstance(last, (ast.With, ast.AsyncWith)):
        return always_exits(last.body) and not _suppresses(last)
    if isinstance(last, ast.Try) or (_TryStar is not None and isinstance(last, _TryStar)):
        if always_exits(last.finalbody):
            return True
        return (always_exits(last.body) or always_exits(last.orelse)) and all(
            always_exits(h.body) for h in last.handlers
        )
    return False


def doomed_from(body: list) -> int:
    """The index of the first statement of ``body`` from which every run of
    the block ends at the ``raise`` that closes it (``len(body)`` if it does
    not end in one): going back from the ``raise``, each statement that
    cannot leave the block otherwise (no ``return``, no ``break`` or
    ``continue`` of a loop around it). Those statements run only to fail:
    ``sm = get_device_capability()`` to format the error a check raises."""
    if not body or type(body[-1]) is not ast.Raise:
        return len(body)
    i = len(body) - 1
    while i > 0 and not _leaves(body[i - 1]):
        i -= 1
    return i


def _leaves(stmt) -> bool:
    """``stmt`` may end its block, or hand a value out, other than by
    running to its end or raising: a ``return`` or a ``yield`` in it (a
    generator's values reach its consumer before it fails), or a
    ``break``/``continue`` outside the loops it holds (nested definitions
    apart)."""
    stack: list = [(stmt, False)]
    while stack:
        n, in_loop = stack.pop()
        if isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom)):
            return True
        if isinstance(n, (ast.Break, ast.Continue)) and not in_loop:
            return True
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        inner = in_loop or isinstance(n, (ast.For, ast.AsyncFor, ast.While))
        stack.extend((c, inner) for c in ast.iter_child_nodes(n))
    return False


def _returns_in(body: list) -> bool:
    """A ``return`` anywhere in ``body``, outside nested definitions."""
    stack = list(body)
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Return):
            return True
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(c for c in ast.iter_child_nodes(n) if isinstance(c, (ast.stmt, ast.excepthandler, ast.match_case)))
    return False


def suppress_call(e) -> bool:
    """Context expression ``e`` is ``suppress(...)`` (``contextlib.suppress``)."""
    f = e.func if isinstance(e, ast.Call) else e
    return (f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else "") == "suppress"


def _suppresses(stmt) -> bool:
    """A ``with`` whose context manager is ``suppress(...)``: an exception in
    its body skips the rest of the body and goes on after the statement."""
    return any(suppress_call(item.context_expr) for item in stmt.items)


def _marker(text: str) -> tuple:
    """A guard fact that names a condition on how control got here, not on any
    value: it never implies anything, and a fill under it is never proven."""
    return (("name", f"<{text}>"), True)


def always_raises(body: list) -> bool:
    """Every path through ``body`` ends in a ``raise`` (a ``return`` does not count)."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, ast.Raise):
        return True
    if isinstance(last, ast.If):
        return always_raises(last.body) and always_raises(last.orelse)
    return False


def _breaks(stmt) -> int | None:
    """The line of a ``break`` that leaves loop ``stmt`` (not one of a loop
    nested in it, nor in a nested definition), or None."""
    stack = list(stmt.body)
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Break):
            return n.lineno
        if isinstance(n, (ast.For, ast.AsyncFor, ast.While)):
            stack.extend(n.orelse)  # a `break` in a nested loop's `else` leaves this loop
            continue
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(c for c in ast.iter_child_nodes(n) if isinstance(c, (ast.stmt, ast.excepthandler, ast.match_case)))
    return None


def _loop_else_facts(stmt) -> tuple:
    """What holds in a loop's ``else``: that no ``break`` left the loop, a
    condition on how control got there, which only a marker can say."""
    line = _breaks(stmt) if stmt.orelse else None
    if line is None:
        return ()
    return (_marker(f"no `break` (line {line}) left the loop at line {stmt.lineno}"),)


# the subject of a `match` whose cases become comparisons: a name or an
# attribute chain (evaluated once, like an `if`'s test reading the same chain)
def _plain_subject(e) -> bool:
    while type(e) is _Attribute:
        e = e.value
    return type(e) is _Name


def _pattern_cond(p, subject) -> Expr | bool | None:
    """A pattern as a condition on ``subject`` (a name or attribute chain):
    an expression, True when it always matches (``_``, a capture), or None
    when it has no exact expression here (a class, sequence or mapping
    pattern, or a subject cachelint does not spell)."""
    if isinstance(p, ast.MatchAs):
        return True if p.pattern is None else _pattern_cond(p.pattern, subject)
    if subject is None:
        return None
    if isinstance(p, ast.MatchValue):
        v = conv(p.value)
        return None if v == UNKNOWN else ("cmp", ("==",), subject, (v,))
    if isinstance(p, ast.MatchSingleton):
        return ("cmp", ("is",), subject, (("const", p.value),))
    if isinstance(p, ast.MatchOr):
        alts = []
        for q in p.patterns:
            c = _pattern_cond(q, subject)
            if c is True:
                return True
            if c is None:
                return None
            alts.append(c)
        return ("or", tuple(alts))
    return None


def _case_facts(stmt, i: int, case) -> tuple:
    """(the facts that hold when case ``i`` of ``match`` statement ``stmt``
    matches, the one fact that holds when it does not, or None when it always
    matches). A pattern with an exact condition (a literal, a value, ``None``,
    an or-pattern of those) is a comparison of the subject; any other pattern
    is a marker that implies nothing, so a fill under it is never proven."""
    subject = conv(stmt.subject) if _plain_subject(stmt.subject) else None
    cond = _pattern_cond(case.pattern, subject)
    where = f"case {i} of the `match` at line {stmt.lineno}"
    matched: list = []
    if cond is None:
        matched.append(_marker(f"{where} matched"))
    elif cond is not True:
        matched.append((cond, True))
    test = conv(case.guard) if case.guard is not None else None
    if test is not None:
        matched.append((test, True))
    if cond is True and test is None:
        return tuple(matched), None
    if cond is None:
        missed = _marker(f"{where} did not match")
    elif cond is True:
        missed = (test, False)
    elif test is None:
        missed = (cond, False)
    else:
        missed = (("and", (cond, test)), False)
    return tuple(matched), missed


MAX_CASES = 8  # earlier cases of a `match` spelled one by one; past that, one marker


def _earlier_facts(stmt, earlier: list, missed: tuple, i: int) -> list:
    if i < MAX_CASES:
        return [*earlier, missed]
    return [_marker(f"none of cases 1 to {i} of the `match` at line {stmt.lineno} matched")]


def _fact_expr(fact: tuple) -> Expr:
    cond, positive = fact
    return cond if positive else ("not", cond)


def _join(paths: list) -> tuple:
    """The facts that hold after a statement whose normal completions are
    ``paths`` (the facts each adds to the guard it started from): their
    disjunction, as conjuncts. What all paths share is a fact on its own;
    what is left is one disjunction (after dropping complementary pairs such
    as ``b`` / ``not b`` of an ``elif`` chain), an opaque condition unless it
    is always true. Exact, so that a fill's guard is sufficient for the fill
    to have run and a reader's guard holds wherever the reader runs."""
    if not paths:
        return ()

    def same(a, b) -> bool:
        return a == b and not has_unknown(a[0])  # two conditions cachelint cannot read are never one

    common = tuple(f for f in paths[0] if all(any(same(f, x) for x in p) for p in paths[1:]))
    rests = [[f for f in p if not any(same(f, c) for c in common)] for p in paths]
    changed = True
    while changed:
        if any(not r for r in rests):
            return common
        changed = False
        for i in range(len(rests)):
            for j in range(len(rests)):
                if i == j or changed:
                    continue
                a, b = rests[i], rests[j]
                if all(any(same(x, y) for y in b) for x in a):  # a implies nothing more than b: b is absorbed
                    rests.pop(j)
                    changed = True
                    continue
                if len(a) == 1 and not has_unknown(a[0][0]):  # l or (not l and m) == l or m
                    rest = [y for y in b if not (y[0] == a[0][0] and y[1] != a[0][1])]
                    if len(rest) < len(b):
                        rests[j] = rest
                        changed = True
                        continue
                if len(a) == len(b):
                    da = [x for x in a if not any(same(x, y) for y in b)]
                    db = [y for y in b if not any(same(y, x) for x in a)]
                    if (
                        len(da) == 1
                        and len(db) == 1
                        and da[0][0] == db[0][0]
                        and da[0][1] != db[0][1]
                        and not has_unknown(da[0][0])
                    ):
                        rests[i] = [x for x in a if x is not da[0]]
                        rests.pop(j)
                        changed = True
            if changed:
                break
    disjuncts = tuple(_fact_expr(r[0]) if len(r) == 1 else ("and", tuple(_fact_expr(x) for x in r)) for r in rests)
    return common + ((("or", disjuncts), True),)


def import_base(stmt: ast.ImportFrom, fi: FileIndex) -> str:
    base = stmt.module or ""
    if stmt.level:
        pkg = fi.module.split(".") if fi.module else []
        if not fi.is_package:
            pkg = pkg[:-1]
        up = stmt.level - 1
        if up:
            pkg = pkg[: len(pkg) - up] if up <= len(pkg) else []
        base = ".".join(pkg + ([base] if base else []))
    return base


_IMPORT_ERRORS = frozenset(["ImportError", "ModuleNotFoundError", "Exception", "BaseException"])


def _catches_import_error(h) -> bool:
    """An ``except`` clause that catches a failed import (bare, or naming ImportError or a base of it)."""
    if h.type is None:
        return True
    types = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
    return any((t.attr if isinstance(t, ast.Attribute) else getattr(t, "id", "")) in _IMPORT_ERRORS for t in types)


def import_bindings(stmt, fi: FileIndex) -> list[tuple[str, str]]:
    """(local name, qualified target) for each name an import statement binds."""
    out = []
    if isinstance(stmt, ast.Import):
        for a in stmt.names:
            if a.asname:
                out.append((a.asname, a.name))
            else:
                top = a.name.split(".")[0]
                out.append((top, top))
        return out
    base = import_base(stmt, fi)
    for a in stmt.names:
        if a.name != "*":
            out.append((a.asname or a.name, f"{base}.{a.name}" if base else a.name))
    return out


_CALLEE = object()  # marks an attribute that is the function of a call (``x.m(...)``)


_BUILT_FROM_ELEMENTS = frozenset({"tuple", "list", "set", "frozenset", "sorted"})


def _elements(value) -> Expr | None:
    """The expression each element of ``value`` is, when ``value`` builds a
    container from a comprehension: ``[e for ...]``, ``{e for ...}``, ``(e
    for ...)``, ``tuple``/``list``/``set``/``frozenset``/``sorted`` of one,
    or a class that holds what it is given (``nn.ModuleList([Block() for
    ...])``: a call of a capitalised name whose one argument is a list
    comprehension)."""
    t = type(value)
    if t is _Call and type(value.func) is ast.Name and value.func.id in _BUILT_FROM_ELEMENTS and len(value.args) == 1:
        value = value.args[0]
        t = type(value)
    elif t is _Call and len(value.args) == 1 and not value.keywords and type(value.args[0]) is ast.ListComp:
        f = value.func
        name = f.id if type(f) is ast.Name else f.attr if type(f) is _Attribute else ""
        if name[:1].isupper():
            value = value.args[0]
            t = type(value)
    if t in (ast.ListComp, ast.SetComp, ast.GeneratorExp):
        return conv(value.elt)
    return None


# builtins that copy a whole collection into a new one (FunctionInfo.return_kinds)
COPIES = frozenset({"list", "tuple", "sorted", "set", "frozenset", "dict"})
_COMP_KINDS = {ast.ListComp: "list", ast.SetComp: "set", ast.DictComp: "dict"}


def _built_kind(node, top: bool) -> str:
    """What a returned expression builds (FunctionInfo.return_kinds): the
    collection a comprehension or a copy (``list(x)``, ``sorted(x)``) makes,
    the same from both branches of a conditional, ``"concat"`` for ``a +
    b``, ``"call"`` for another call at the top, else ``"?"``."""
    t = type(node)
    k = _COMP_KINDS.get(t)
    if k is not None:
        return k
    if t is _Call:
        f = node.func
        if type(f) is ast.Name and f.id in COPIES and node.args:
            return f.id
        return "call" if top else "?"
    if t is _BinOp and type(node.op) is ast.Add:
        return "concat"  # a new sequence when the operands are sequences (the analysis asks the annotation)
    if t is _IfExp:
        a, b = _built_kind(node.body, False), _built_kind(node.orelse, False)
        if a == b:
            return a
        return "list" if {a, b} == {"list", "sorted"} else "?"
    return "?"


class FunctionBodyIndexer:
    """Walks one function body (not into nested defs, which get their own)."""

    def __init__(self, indexer: _Indexer, f: FunctionInfo | None) -> None:
        self.ix = indexer
        self.f = f
        self.assigns: list[Assign] = []
        self.calls: list[CallSite] = []
        self.implicit: list[tuple] = []  # CallSite fields, see _implicit
        self.returns: list[Expr] = []
        self.global_names: list[str] = []
        self.handler_depth = 0
        self.try_depth = 0  # inside the body of a `try` (or a suppressing `with`)
        self.probe_depth = 0  # inside the body of a `try` that catches ImportError
        self._after: tuple = ()  # what the last statement establishes for the next (see block)
        # (name, iterable node or None) of each `for` and comprehension target,
        # converted once the body is walked (see iterated)
        self._iterates: list[tuple[str, Any]] = []
        self.return_kinds: list[str] = []  # see FunctionInfo.return_kinds
        self.refusals: list = []  # see FunctionInfo.refusals

    def _iteration(self, target, iterable) -> None:
        """Record the names ``for target in iterable`` binds to elements: a
        name takes the iterable's; ``i, x in enumerate(xs)`` gives ``x`` the
        elements of ``xs``, ``a, b in zip(as, bs)`` each its own, ``k, v in
        d.items()`` ``v`` those of ``d.values()``; other unpacked names none."""
        t = type(target)
        if t is ast.Name:
            self._iterates.append((target.id, iterable))
            return
        if t not in (ast.Tuple, ast.List):
            return
        elts = target.elts
        parts: list = [None] * len(elts)
        if type(iterable) is _Call and type(iterable.func) is ast.Name and not iterable.keywords:
            fn, args = iterable.func.id, iterable.args
            if fn == "enumerate" and len(args) == 1 and len(elts) == 2:
                parts[1] = args[0]
            elif fn == "zip" and len(args) == len(elts) and not any(type(a) is ast.Starred for a in args):
                parts = list(args)
        elif (
            type(iterable) is _Call
            and type(iterable.func) is ast.Attribute
            and iterable.func.attr == "items"
            and not iterable.args
            and len(elts) == 2
        ):
            parts[1] = ast.Call(ast.Attribute(iterable.func.value, "values", ast.Load()), [], [])
        for e, part in zip(elts, parts):
            if type(e) is ast.Name:
                self._iterates.append((e.id, part))
            elif type(e) in (ast.Tuple, ast.List) and part is None:
                self._iteration(e, None)

    def iterated(self) -> dict:
        """Each name bound by iteration -> the iterable expressions it takes
        elements of (FunctionInfo.iterated), converted now that the walk has
        named every lambda in them."""
        out: dict = {}
        for name, node in self._iterates:
            e = conv(node) if node is not None else UNKNOWN
            seen = out.setdefault(name, [])
            if e not in seen:
                seen.append(e)
        return {k: tuple(v) for k, v in out.items()}

    def _pos(self, node) -> tuple[int, int, int, int]:
        line = node.lineno
        end_line = node.end_lineno or line
        end_col = node.end_col_offset
        if end_col is None:
            end_col = node.col_offset
        wide = self.ix.cols.wide
        if not wide or (line not in wide and end_line not in wide):  # byte offsets are character offsets
            return (line, node.col_offset, end_line, end_col or 0)
        c = self.ix.cols
        return (line, c.col(line, node.col_offset), end_line, c.col(end_line, end_col or 0))

    def _lambda(self, node) -> None:
        """Index a lambda as a function (named by LAMBDAS), once."""
        qn = LAMBDAS.name(node)
        done = self.ix.lambdas_done
        if qn is None or qn in done:
            return
        done.add(qn)
        f = self.f
        self.ix._function(node, qn, None, f.qualname if f is not None else None, f.under_type_checking if f else False)

    def _implicit(self, node, receiver: Expr, dunder: str, args: tuple, guard: Guard, in_loop: bool, stmt_line: int):
        """Record ``receiver.dunder(*args)``, a call the syntax makes (see FunctionInfo.implicit_calls)."""
        line, col, end_line, end_col = self._pos(node)
        # CallSite's fields as a plain tuple: marshalled at the end of the
        # function (FunctionInfo.implicit_calls is unpacked on first read)
        self.implicit.append(
            (
                ("attr", receiver, dunder),
                args,
                (),
                line,
                col,
                end_line,
                end_col,
                guard,
                in_loop,
                stmt_line,
                None,
                self.handler_depth > 0,
            )
        )

    def block(self, body: list, guard: Guard, in_loop: bool) -> Guard:
        """Index ``body`` under ``guard``; return the guard that holds when it
        completes normally: ``guard`` plus what each statement establishes for
        the statements after it: an ``assert``; the negation of an ``if``
        (or ``elif``/``else``) branch that always exits; and, from inside a
        branch, a ``with`` or a ``try`` body, the conditions of a nested
        ``return``, as one disjunction where need be (:func:`_join`); a marker
        after a loop, ``match`` or ``try`` a ``return`` may leave early.

        A fill needs every condition under which it may be skipped while its
        object still gets built: a nested ``return``. A nested ``raise`` or
        ``assert`` aborts the construction, and ``continue``/``break`` only
        skip code inside a loop (a fill there is never proven), so the facts
        they would add are left out; a reader only loses facts by that."""
        g = guard
        # the statements that only lead to the block's closing `raise` are an
        # error path, as an `except` handler is (unless a `try` of the
        # function may catch what it raises)
        doomed = doomed_from(body) if not self.try_depth else len(body)
        try:
            for i, stmt in enumerate(body):
                if i == doomed:
                    self.handler_depth += 1
                self._after = ()
                self.stmt(stmt, g, in_loop)
                if type(stmt) is ast.Assert:
                    g = g + ((conv(stmt.test), True),)
                elif self._after:
                    g = g + self._after
        finally:
            if doomed < len(body):
                self.handler_depth -= 1
        self._after = ()
        return g

    def _nested_def(self, stmt, guard) -> None:
        f = self.f
        if f is None:
            return
        qn = f"{f.qualname}.<locals>.{stmt.name}"
        f.nested[stmt.name] = qn
        ix = self.ix
        outer_sink, ix.deco_sink = ix.deco_sink, self.implicit
        try:
            if isinstance(stmt, ast.ClassDef):
                ix._class(stmt, qn, f.qualname, f.under_type_checking)
            else:
                ix._function(stmt, qn, None, f.qualname, f.under_type_checking)
            ix.decorations(stmt, qn, calls=False)  # the statement recorded the decorators' calls
        finally:
            ix.deco_sink = outer_sink
        self.assigns.append(
            Assign(("name", stmt.name), ("def", qn), stmt.lineno, 0, stmt.lineno, 0, guard, False, "def")
        )

    def stmt(self, stmt: Any, guard: Guard, in_loop: bool) -> None:  # an ast.stmt (see _module_stmt)
        t = type(stmt)
        if t is _ExprStmt:  # the commonest statement (a call made for its effect)
            self.expr(stmt.value, guard, in_loop, stmt.lineno)
            return
        if t in _NO_EXPRS:
            return
        if t in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            for d in stmt.decorator_list:
                self.expr(d, guard, in_loop, stmt.lineno)
            self._nested_def(stmt, guard)
            return
        if t is ast.If:
            self.expr(stmt.test, guard, in_loop, stmt.lineno)
            test = conv(stmt.test)
            if not stmt.orelse and type(stmt.body[-1]) is ast.Raise:
                self.refusals.append(test)
            base = len(guard)
            paths = []
            g_body = self.block(stmt.body, guard + ((test, True),), in_loop)
            if not always_exits(stmt.body):
                paths.append(g_body[base:] if _returns_in(stmt.body) else g_body[base : base + 1])
            g_else = guard + ((test, False),)
            if stmt.orelse:
                g_else = self.block(stmt.orelse, g_else, in_loop)
            if not always_exits(stmt.orelse):
                paths.append(g_else[base:] if _returns_in(stmt.orelse) else g_else[base : base + 1])
            self._after = _join(paths)
            return
        if t is ast.While:
            self.expr(stmt.test, guard, True, stmt.lineno)
            self.block(stmt.body, guard + ((conv(stmt.test), True),), True)
            self.block(stmt.orelse, guard + _loop_else_facts(stmt), in_loop)
            self._after = self._loop_after(stmt)
            return
        if t in (ast.For, ast.AsyncFor):
            self.expr(stmt.iter, guard, in_loop, stmt.lineno)
            it = conv(stmt.iter, 1)
            if it[0] != "?":
                aiter = t is ast.AsyncFor
                self._implicit(stmt.iter, it, "__aiter__" if aiter else "__iter__", (), guard, in_loop, stmt.lineno)
                self._implicit(
                    stmt.iter,
                    ("call", ("attr", it, "__aiter__" if aiter else "__iter__"), (), ()),
                    "__anext__" if aiter else "__next__",
                    (),
                    guard,
                    True,
                    stmt.lineno,
                )
            self._bind(stmt.target, UNKNOWN, stmt, guard, True, "for")
            self._iteration(stmt.target, stmt.iter)
            self.block(stmt.body, guard, True)
            self.block(stmt.orelse, guard + _loop_else_facts(stmt), in_loop)
            self._after = self._loop_after(stmt)
            return
        if t in (ast.With, ast.AsyncWith):
            for item in stmt.items:
                self.expr(item.context_expr, guard, in_loop, stmt.lineno)
                cm = conv(item.context_expr, 1)
                if cm[0] != "?":
                    a = t is ast.AsyncWith
                    self._implicit(
                        item.context_expr, cm, "__aenter__" if a else "__enter__", (), guard, in_loop, stmt.lineno
                    )
                    none = ("const", None)
                    self._implicit(
                        item.context_expr,
                        cm,
                        "__aexit__" if a else "__exit__",
                        (none, none, none),
                        guard,
                        in_loop,
                        stmt.lineno,
                    )
                if item.optional_vars is not None:
                    self._bind(item.optional_vars, UNKNOWN, stmt, guard, in_loop, "with")
            suppresses = _suppresses(stmt)
            self.try_depth += suppresses
            try:
                g_body = self.block(stmt.body, guard, in_loop)  # always indexed; its facts only when it may return
            finally:
                self.try_depth -= suppresses
            after = g_body[len(guard) :] if _returns_in(stmt.body) else ()
            if suppresses and after:
                after = _join([after, (_marker(f"an exception suppressed by the `with` at line {stmt.lineno}"),)])
            self._after = after
            return
        if t is ast.Try or t is _TryStar:
            base = len(guard)
            probe = any(_catches_import_error(h) for h in stmt.handlers)
            self.probe_depth += probe
            self.try_depth += 1
            try:
                g = self.block(stmt.body, guard, in_loop)
            finally:
                self.probe_depth -= probe
                self.try_depth -= 1
            # the `else` runs only when the body raised nothing: a handler
            # that goes on (or returns) skips it while the function completes
            g_else = g + tuple(
                _marker(f"no exception caught at line {h.lineno}") for h in stmt.handlers if not always_raises(h.body)
            )
            normal = self.block(stmt.orelse, g_else, in_loop)[base:] if stmt.orelse else g[base:]
            if not (_returns_in(stmt.body) or _returns_in(stmt.orelse)):
                normal = ()
            paths = [] if always_exits(stmt.body) or always_exits(stmt.orelse) else [normal]
            for h in stmt.handlers:
                if h.name:
                    self.assigns.append(
                        Assign(("name", h.name), UNKNOWN, h.lineno, 0, h.lineno, 0, guard, in_loop, "except")
                    )
                self.handler_depth += 1
                try:
                    caught = guard + (_marker(f"an exception caught at line {h.lineno}"),)
                    g_h = self.block(h.body, caught, in_loop)
                finally:
                    self.handler_depth -= 1
                if not always_exits(h.body):
                    paths.append(g_h[base:] if _returns_in(h.body) else g_h[base : base + 1])
                mark = _marker(f"no exception caught at line {h.lineno}")
                if _returns_in(h.body) and paths and paths[0] is normal and mark not in normal:
                    # the body's facts alone do not say that this handler did not return
                    normal = paths[0] = normal + (mark,)
            g_fin = self.block(stmt.finalbody, guard, in_loop)
            fin = g_fin[base:] if _returns_in(stmt.finalbody) else ()
            self._after = _join(paths) + fin
            return
        if t is _Match:
            self.expr(stmt.subject, guard, in_loop, stmt.lineno)
            base = len(guard)
            paths = []
            informative = False
            earlier: list = []  # the facts that no earlier case matched
            for i, case in enumerate(stmt.cases, 1):
                for n in ast.walk(case.pattern):
                    name = getattr(n, "name", None) or getattr(n, "rest", None)
                    if isinstance(name, str):
                        self.assigns.append(
                            Assign(("name", name), UNKNOWN, stmt.lineno, 0, stmt.lineno, 0, guard, in_loop, "match")
                        )
                if case.guard is not None:
                    self.expr(case.guard, guard, in_loop, case.guard.lineno)
                matched, missed = _case_facts(stmt, i, case)
                facts = tuple(earlier) + matched
                g_case = self.block(case.body, guard + facts, in_loop)
                returns = _returns_in(case.body)
                informative = informative or returns
                if not always_exits(case.body):
                    paths.append(g_case[base:] if returns else g_case[base : base + len(facts)])
                if missed is None:  # an irrefutable case: no later case, and no fall-through, runs
                    break
                earlier = _earlier_facts(stmt, earlier, missed, i)
            else:
                paths.append(tuple(earlier))  # no case matched
            if informative:
                self._after = _join(paths)
            return
        if t is ast.Assign:
            call_target = None
            if len(stmt.targets) == 1 and type(stmt.value) is ast.Call:
                call_target = conv(stmt.targets[0])
            value = self.expr(stmt.value, guard, in_loop, stmt.lineno, assigned_to=call_target) or conv(stmt.value)
            elements = _elements(stmt.value)
            for tgt in stmt.targets:
                self._bind(tgt, value, stmt, guard, in_loop, "assign", elements)
            return
        if t is ast.AnnAssign:
            if stmt.value is not None:
                call_target = conv(stmt.target) if type(stmt.value) is ast.Call else None
                value = self.expr(stmt.value, guard, in_loop, stmt.lineno, assigned_to=call_target)
                self._bind(
                    stmt.target,
                    value or conv(stmt.value),
                    stmt,
                    guard,
                    in_loop,
                    "annassign",
                    _elements(stmt.value),
                    conv(stmt.annotation),
                )
            return
        if t is ast.AugAssign:
            self.expr(stmt.value, guard, in_loop, stmt.lineno)
            self.expr(stmt.target, guard, in_loop, stmt.lineno)
            self._bind(stmt.target, UNKNOWN, stmt, guard, in_loop, "augassign")
            return
        if t is ast.Return:
            if stmt.value is not None:
                self.returns.append(self.expr(stmt.value, guard, in_loop, stmt.lineno) or conv(stmt.value))
                self.return_kinds.append(_built_kind(stmt.value, True))
            else:
                self.returns.append(("const", None))
                self.return_kinds.append("?")
            return
        if t in (ast.Global, ast.Nonlocal):
            self.global_names.extend(stmt.names)
            return
        if t is ast.Delete:
            for tgt in stmt.targets:
                self._bind(tgt, UNKNOWN, stmt, guard, in_loop, "del")
            return
        if t in (ast.Import, ast.ImportFrom):
            if self.probe_depth and self.f is not None:
                self._import_probe(stmt, guard, in_loop)
            # function-local (lazy) imports bind names like module-level ones
            for local, target in import_bindings(stmt, self.ix.fi):
                self.assigns.append(
                    Assign(
                        ("name", local), ("import", target), stmt.lineno, 0, stmt.lineno, 0, guard, in_loop, "import"
                    )
                )
            return
        # Expr, Raise, Assert, ...
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.expr):
                self.expr(child, guard, in_loop, stmt.lineno)

    def _import_probe(self, stmt, guard: Guard, in_loop: bool) -> None:
        """An ``import`` that probes for an optional module: a call of the
        pseudo-function ``import-probe`` (no Python name can spell it; the
        catalog prices it) with the module's name (see ``CallSite.is_import``)."""
        if isinstance(stmt, ast.Import):
            name = stmt.names[0].name
        else:
            name = "." * stmt.level + (stmt.module or "")
        if name.startswith(".") or name.split(".")[0] == self.ix.fi.module.split(".")[0]:
            return  # a module of the analysed package itself is there: no probe
        line, col, end_line, end_col = self._pos(stmt)
        self.calls.append(
            CallSite(
                ("name", "import-probe"),
                (("const", name),),
                (),
                line,
                col,
                end_line,
                end_col,
                guard,
                in_loop,
                stmt.lineno,
                None,
                self.handler_depth > 0,
                False,
                True,
            )
        )

    @staticmethod
    def _loop_after(stmt) -> tuple:
        """After a loop: nothing, unless it may ``return`` (the code after it
        then runs only on the iterations' condition that it did not)."""
        if _returns_in(stmt.body) or _returns_in(stmt.orelse):
            return (_marker(f"no `return` in the loop at line {stmt.lineno}"),)
        return ()

    def _bind(
        self, tgt, value: Expr, stmt, guard, in_loop, kind, elements: Expr | None = None, annotation: Expr | None = None
    ) -> None:
        if isinstance(tgt, (ast.Tuple, ast.List)):
            for e in tgt.elts:
                self._bind(e.value if isinstance(e, ast.Starred) else e, UNKNOWN, stmt, guard, in_loop, "unpack")
            return
        if isinstance(tgt, (ast.Attribute, ast.Subscript)):
            # evaluate the receiver's calls (e.g. f().x = ...)
            self.expr(tgt.value, guard, in_loop, stmt.lineno)
        line, col, end_line, end_col = self._pos(tgt)
        self.assigns.append(
            Assign(conv(tgt), value, line, col, end_line, end_col, guard, in_loop, kind, elements, annotation)
        )

    def expr(self, node: Any, guard: Guard, in_loop: bool, stmt_line: int, assigned_to: Expr | None = None):
        """Record every call in ``node`` (not inside lambdas / nested defs).
        If ``node`` is a call, return ``conv(node)``, built from the parts
        its CallSite converted (else None): an assignment's or a return's
        value is most often a call (3 to 4 % of the walk on vLLM 0.33.0).

        The hottest loop of indexing: node types are tested commonest first
        against module constants, and leaves (names, constants) are never
        pushed."""
        top = None
        # (node, guard, in loop, what it is assigned to: an Expr, None or _CALLEE)
        stack: list[tuple[Any, Guard, bool, Any]] = [(node, guard, in_loop, assigned_to)]
        push, pop = stack.append, stack.pop
        leaves = _LEAVES
        while stack:
            n, g, loop, at = pop()
            t = type(n)
            if t is _Call:
                line, col, end_line, end_col = self._pos(n)
                # at depth 1, as conv(n) converts them (see above)
                args = tuple([UNKNOWN if type(a) is _Starred else conv(a, 1) for a in n.args]) if n.args else ()
                kwargs = tuple([(k.arg, conv(k.value, 1)) for k in n.keywords]) if n.keywords else ()
                f = n.func
                func = ("name", f.id) if type(f) is _Name else conv(f, 1)
                if n is node:
                    top = ("call", func, args, kwargs)
                self.calls.append(
                    CallSite(
                        func, args, kwargs, line, col, end_line, end_col, g, loop, stmt_line, at, self.handler_depth > 0
                    )
                )
                # leaves hold no calls: not pushed (most arguments are names and constants)
                if type(f) is _Attribute:
                    push((f, g, loop, _CALLEE))
                elif type(f) not in leaves:
                    push((f, g, loop, None))
                for a in n.args:
                    if type(a) not in leaves:
                        push((a, g, loop, None))
                for k in n.keywords:
                    if type(k.value) not in leaves:
                        push((k.value, g, loop, None))
                continue
            # the common shapes, without visiting leaves and Load() contexts
            if t is _Attribute or t is _Starred or t is _Await or t is _FormattedValue:
                if t is _Attribute and self.ix.watch and n.attr in self.ix.watch and self.f is not None:
                    if type(n.ctx) is ast.Load:
                        self.ix.fi.reads.append(
                            (
                                self.f.qualname,
                                conv(n),
                                *self._pos(n),
                                g,
                                loop,
                                stmt_line,
                                self.handler_depth > 0,
                                at is _CALLEE,
                            )
                        )
                v = n.value
                if type(v) not in leaves:
                    push((v, g, loop, None))
                continue
            if t is _Subscript:
                v = n.value
                tv = type(v)
                if (tv is _Name or tv is _Attribute) and type(n.ctx) is _Load:
                    # the key only when it is a name or a constant: the commonest
                    # subscripts, tensor slices, would cost the index more than they tell
                    ts = type(n.slice)
                    key = conv(n.slice, 1) if ts is _Name or ts is ast.Constant else UNKNOWN
                    self._implicit(n, conv(v, 1), "__getitem__", (key,), g, loop, stmt_line)
                elif (
                    tv is _Call
                    and type(n.slice) is ast.Constant
                    and type(n.ctx) is _Load
                    and not any(type(a) is _Lambda for a in v.args)
                    and not any(type(k.value) is _Lambda for k in v.keywords)
                ):
                    # `make()[0]`: one element of what a call returns (CL007 reads these)
                    self._implicit(n, conv(v, 1), "__getitem__", (conv(n.slice, 1),), g, loop, stmt_line)
                if tv not in leaves:
                    push((v, g, loop, None))
                v = n.slice
                if type(v) not in leaves:
                    push((v, g, loop, None))
                continue
            if t is _BinOp:
                v = n.left
                if type(v) not in leaves:
                    push((v, g, loop, None))
                v = n.right
                if type(v) not in leaves:
                    push((v, g, loop, None))
                continue
            if t is _Tuple or t is _List or t is _Set or t is _JoinedStr:
                for v in n.elts if t is not _JoinedStr else n.values:
                    if type(v) not in leaves:
                        push((v, g, loop, None))
                continue
            if t is _Compare:
                for op, c in zip(n.ops, n.comparators):
                    to = type(op)
                    if (to is _In or to is _NotIn) and type(c) in (_Name, _Attribute):
                        self._implicit(n, conv(c, 1), "__contains__", (conv(n.left, 1),), g, loop, stmt_line)
                v = n.left
                if type(v) not in leaves:
                    push((v, g, loop, None))
                for v in n.comparators:
                    if type(v) not in leaves:
                        push((v, g, loop, None))
                continue
            if t is _Lambda:
                self._lambda(n)
                continue
            if t is _IfExp:
                test = conv(n.test)
                push((n.test, g, loop, None))
                push((n.body, g + ((test, True),), loop, None))
                push((n.orelse, g + ((test, False),), loop, None))
                continue
            if t is _BoolOp:
                acc = g
                for v in n.values:
                    push((v, acc, loop, None))
                    acc = acc + ((conv(v), type(n.op) is _And),)
                continue
            if t in _COMPS:
                for gen in n.generators:
                    push((gen.iter, g, loop, None))
                    self._iteration(gen.target, gen.iter)
                    for cond in gen.ifs:
                        push((cond, g, True, None))
                    # comprehension targets are local to the comprehension
                inner = g
                for gen in n.generators:
                    for cond in gen.ifs:
                        inner = inner + ((conv(cond), True),)
                if t is _DictComp:
                    push((n.key, inner, True, None))
                    push((n.value, inner, True, None))
                else:
                    push((n.elt, inner, True, None))
                continue
            if t is _NamedExpr:
                line, col, end_line, end_col = self._pos(n.target)
                self.assigns.append(
                    Assign(("name", n.target.id), conv(n.value), line, col, end_line, end_col, g, loop, "walrus")
                )
                push((n.value, g, loop, None))
                continue
            if t in leaves:
                continue
            for child in ast.iter_child_nodes(n):
                if (type(child) not in leaves and isinstance(child, ast.expr)) or isinstance(
                    child, (ast.keyword, ast.comprehension, ast.arg, ast.arguments)
                ):
                    push((child, g, loop, None))
        # keep calls in source order for stable output
        # (the stack visits in reverse; callers sort once per function)
        return top
