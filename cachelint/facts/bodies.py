"""Function bodies parsed again, for the questions the index cannot answer.

The index keeps each function's calls and assignments with their guards, not
its statements. A fix that moves a call needs a few facts only the statements
give, about one function at a time:

* the *conditions* a call runs under inside its function: enclosing ``if``
  branches, earlier ``if ...: return`` (early exits), the right operand of
  ``and``/``or``, a branch of ``x if c else y``, a ``try`` whose handlers
  catch what the call raises, a loop body (:meth:`Body.conditions`). An
  ``assert`` is not a condition: a correct program holds without it (``-O``
  removes it), so no legitimate path skips the call because of one;
* where a local hoisted before several uses goes (the innermost block that
  holds them all, before the statement holding the first) and whether some
  use runs whenever that statement is reached (:meth:`Body.hoist_point`);
* which statements may leave a block (``return``, ``raise``, ``break``,
  ``yield``) and which loops hold a point (:meth:`Body.exits`,
  :meth:`Body.loops_around`);
* the module-level names the body reads, with the attribute chains read on
  them, in conditions too (:meth:`Body.free_reads`).

Only the function's own lines are parsed (:func:`~cachelint.index.walk.
parse_function`), once per function and run, and only for the few sites a
fix is planned for; a file changed since it was indexed is not read.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..index.records import FunctionInfo
from ..index.walk import parse_function

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_TRY = tuple(t for t in (ast.Try, getattr(ast, "TryStar", None)) if t is not None)
_MATCH_CASE = getattr(ast, "match_case", None)


def _text(node: ast.AST) -> str:
    try:
        t = ast.unparse(node)
    except Exception:  # pragma: no cover - unparse handles every parsed node
        return "..."
    return t if len(t) <= 80 else t[:77] + "..."


def first_line(node: ast.AST | None) -> str:
    """The first line of a node's source as unparsed, cut at 60 characters:
    how an unsafe reason quotes a statement."""
    text = ast.unparse(node).splitlines()[0] if node is not None else "..."
    return text if len(text) <= 60 else text[:57] + "..."


def always_exits(body: list) -> bool:
    """``body`` ends in ``return``/``raise``/``continue``/``break``, or in an
    ``if``/``else`` whose branches both do (narrower than the index's
    :func:`cachelint.index.body.always_exits`, which also reads ``with`` and ``try``)."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
        return True
    if isinstance(last, ast.If):
        return always_exits(last.body) and always_exits(last.orelse)
    return False


def _children(n: ast.AST, parent: dict) -> list[ast.AST]:
    """``n``'s child nodes in field order (as ``ast.iter_child_nodes``), each
    entered in ``parent`` as (``n``, field, index or None)."""
    kids = []
    for fname in n._fields:
        v = getattr(n, fname, None)
        if v.__class__ is list:
            for i, x in enumerate(v):
                if isinstance(x, ast.AST):
                    parent[id(x)] = (n, fname, i)
                    kids.append(x)
        elif isinstance(v, ast.AST):
            parent[id(v)] = (n, fname, None)
            kids.append(v)
    return kids


def _parents_below(kids: list, parent: dict) -> None:
    stack = list(kids)
    while stack:
        stack.extend(_children(stack.pop(), parent))


def walk_scope(node: ast.AST):
    """The nodes of a function body, not those of nested functions, lambdas or
    classes: a stack walk, last child first (:meth:`Body.scope_nodes` gives
    the same from one walk of the body)."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, _SCOPES):
            continue
        stack.extend(ast.iter_child_nodes(n))


def walk_code(fn: ast.AST):
    """The nodes of a function's statements that run (not its signature, its
    decorators, annotations, nested scopes)."""
    stack = list(getattr(fn, "body", []))
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, _SCOPES):
            continue
        for fname, value in ast.iter_fields(n):
            if isinstance(n, ast.AnnAssign) and fname == "annotation":
                continue
            if isinstance(value, list):
                stack.extend(x for x in value if isinstance(x, ast.AST))
            elif isinstance(value, ast.AST):
                stack.append(value)


@dataclass(frozen=True)
class Condition:
    """One thing a point in a body runs only under."""

    kind: str  # if | else | early-exit | and | or | ternary | while | loop | comprehension | try | ...
    text: str  # the condition (or the construct) as source text
    line: int  # file line of the construct

    def describe(self) -> str:
        """A clause for messages: ``under `if self.use_cuda:` (line 9)``."""
        k, t, at = self.kind, self.text, f"line {self.line}"
        if k == "if":
            return f"only when `{t}` (`if` at {at})"
        if k == "else":
            return f"only when `{t}` is false (`else` at {at})"
        if k == "early-exit":
            return f"only past an early return: `if {t}:` exits first ({at})"
        if k == "early-exit-else":
            return f"only when `{t}`: its `else` exits first ({at})"
        if k in ("and", "or"):
            return f"only when `{t}` is {'true' if k == 'and' else 'false'} (the left of `{k}`, {at})"
        if k == "ternary":
            return f"only when `{t}` (a branch of `... if {t} else ...`, {at})"
        if k == "ternary-else":
            return f"only when `{t}` is false (a branch of `... if {t} else ...`, {at})"
        if k == "while":
            return f"only while `{t}` (`while` at {at})"
        if k == "loop":
            return f"only when `{t}` iterates (a loop body, {at})"
        if k == "comprehension":
            return f"only for the items of `{t}` ({at})"
        if k == "try":
            return f"inside a `try` whose `{t}` handles what it raises ({at}); moved out, an exception escapes"
        if k == "try-else":
            return f"only when the `try` at {at} raised nothing"
        if k == "except":
            return f"only in the handler `{t}` ({at})"
        if k == "case":
            return f"only in `case {t}:` ({at})"
        if k == "assert":
            return f"only when asserts run, in `assert {t}` ({at}; `python -O` strips it)"
        if k == "lambda":
            return f"only when the lambda at {at} is called"
        if k == "compare":
            return f"only when `{t}` is true (a chained comparison stops at the first false one, {at})"
        return f"only under `{t}` ({at})"


@dataclass(frozen=True)
class HoistPoint:
    """Where a local computed once for several uses goes, and whether the
    uses cover it: ``block`` (a statement list of the body), ``index`` (the
    statement it goes before), the file line of that statement, and
    ``uncovered``, the conditions under which the first use runs there when
    no use runs on every path from that statement (else empty)."""

    block: list
    index: int
    line: int
    uncovered: tuple[Condition, ...]
    exit_line: int | None  # a statement between the point and the use that covers it leaves the block
    # the use that runs on every path from the point (None: none does), and the
    # index in ``block`` of its statement
    cover: ast.AST | None = None
    cover_index: int | None = None


class Body:
    """One function's ``def``, parsed again, with a parent map."""

    def __init__(self, f: FunctionInfo, node: Any, shift: int, lines: list[str]) -> None:
        self.f = f
        self.node = node
        self.shift = shift
        self.lines = lines
        self._code: list[ast.AST] | None = None
        self._parent: dict[int, tuple[ast.AST, str, int | None]] = {}
        # the def's nodes, nested scopes' insides apart, in the order a stack
        # walk yields them (last child first), and where each node's own
        # nodes are in it: ``scope_nodes`` answers from one walk of the body
        self._order: list[ast.AST] = []
        self._spans: dict[int, tuple[int, int]] = {}
        self._index(node)

    def _index(self, root: ast.AST) -> None:
        parent, order, spans = self._parent, self._order, self._spans
        stack: list = [root]
        while stack:
            n = stack.pop()
            if n.__class__ is tuple:  # all of a node's own nodes are in order
                spans[n[0]] = (n[1], len(order))
                continue
            at = len(order)
            order.append(n)
            kids = _children(n, parent)
            if n is not root and isinstance(n, _SCOPES):
                spans[id(n)] = (at, at + 1)  # its insides are not walked
                _parents_below(kids, parent)  # a nested scope: in the parent map only
            else:
                stack.append((id(n), at))
                stack.extend(kids)

    def scope_nodes(self, node: ast.AST) -> list[ast.AST]:
        """The nodes below ``node``, not inside nested functions, lambdas or
        classes, in :func:`walk_scope`'s order."""
        span = self._spans.get(id(node))
        if span is None or self._order[span[0]] is not node or (node is not self.node and isinstance(node, _SCOPES)):
            return list(walk_scope(node))
        return self._order[span[0] + 1 : span[1]]

    @property
    def code_nodes(self) -> list[ast.AST]:
        """The nodes of the def's statements that run (not its signature,
        decorators, annotations, nested scopes), in :func:`walk_code`'s order;
        computed once. The statements are siblings, so their nodes are one
        run of the walk's order, from the last statement's to the first's;
        the annotations of ``x: T = v`` are cut out of it."""
        if self._code is None:
            stmts = getattr(self.node, "body", None)
            if not stmts or self._order[0] is not self.node:
                self._code = list(walk_code(self.node))
                return self._code
            order, spans = self._order, self._spans
            lo, hi = spans[id(stmts[-1])][0], spans[id(stmts[0])][1]
            out: list[ast.AST] = []
            for n in order[lo:hi]:
                if isinstance(n, ast.AnnAssign):
                    a, b = spans[id(n.annotation)]
                    out.extend(order[lo:a])
                    lo = b
            out.extend(order[lo:hi])
            self._code = out
        return self._code

    # ----- positions ----------------------------------------------------------------
    def line_of(self, node: ast.AST) -> int:
        return getattr(node, "lineno", 0) + self.shift

    def _bcol(self, line: int, col: int) -> int:
        """Character column -> UTF-8 byte column (``ast``'s unit) on a file line."""
        if not 0 < line <= len(self.lines):
            return col
        text = self.lines[line - 1]
        return col if text.isascii() else len(text[:col].encode("utf-8"))

    def find(self, line: int, col: int, end_line: int, end_col: int) -> ast.AST | None:
        """The call (or attribute read) the index recorded at this span."""
        want = (line - self.shift, self._bcol(line, col), end_line - self.shift, self._bcol(end_line, end_col))
        for n in ast.walk(self.node):
            if (
                isinstance(n, (ast.Call, ast.Attribute))
                and (
                    n.lineno,
                    n.col_offset,
                    n.end_lineno,
                    n.end_col_offset,
                )
                == want
            ):
                return n
        return None

    def steps(self, node: ast.AST) -> list[tuple[ast.AST, str, int | None, ast.AST]]:
        """(parent, field, index, child) from the ``def`` down to ``node``."""
        out = []
        cur = node
        while cur is not self.node:
            up = self._parent.get(id(cur))
            if up is None:
                return []
            out.append((up[0], up[1], up[2], cur))
            cur = up[0]
        out.reverse()
        return out

    def statement_of(self, node: ast.AST) -> ast.stmt | None:
        """The innermost statement holding ``node``."""
        cur = node
        while cur is not self.node:
            if isinstance(cur, ast.stmt):
                return cur
            up = self._parent.get(id(cur))
            if up is None:
                return None
            cur = up[0]
        return None

    # ----- conditions ---------------------------------------------------------------------
    def conditions(self, node: ast.AST, below: ast.AST | None = None, loops: bool = False) -> list[Condition]:
        """What ``node`` runs only under, from the ``def`` (or from statement
        ``below``, exclusive of the conditions around it) down. Loop bodies
        count only with ``loops`` (a loop over the batch runs on every step
        that has one; a local hoisted before the loop runs even when it is
        empty)."""
        out: list[Condition] = []
        path = self.steps(node)
        if below is not None:
            for i, (_p, _f, _i, child) in enumerate(path):
                if child is below:
                    path = path[i + 1 :]
                    break
            else:
                return out
        for parent, fname, idx, child in path:
            line = self.line_of(parent)
            if isinstance(parent, ast.If):
                if fname == "body":
                    out.append(Condition("if", _text(parent.test), line))
                elif fname == "orelse":
                    out.append(Condition("else", _text(parent.test), line))
            elif isinstance(parent, ast.While):
                if fname == "body":
                    out.append(Condition("while", _text(parent.test), line))
            elif isinstance(parent, (ast.For, ast.AsyncFor)):
                if fname == "body" and loops:
                    out.append(Condition("loop", f"for {_text(parent.target)} in {_text(parent.iter)}", line))
            elif _TRY and isinstance(parent, _TRY):
                if fname == "body" and parent.handlers:
                    caught = ", ".join(
                        "except " + _text(h.type) if h.type is not None else "except" for h in parent.handlers
                    )
                    out.append(Condition("try", caught, line))
                elif fname == "orelse":
                    out.append(Condition("try-else", "", line))
            elif isinstance(parent, ast.ExceptHandler):
                out.append(Condition("except", _text(parent.type) if parent.type is not None else "", line))
            elif isinstance(parent, ast.BoolOp) and fname == "values" and idx:
                op = "and" if isinstance(parent.op, ast.And) else "or"
                left = f" {op} ".join(_text(v) for v in parent.values[:idx])
                out.append(Condition(op, left, self.line_of(child)))
            elif isinstance(parent, ast.Compare) and fname == "comparators" and idx:
                # `a < b < c`: `c` is evaluated only when `a < b` holds
                left = _text(ast.Compare(parent.left, parent.ops[:idx], parent.comparators[:idx]))
                out.append(Condition("compare", left, self.line_of(child)))
            elif isinstance(parent, ast.IfExp):
                if fname == "body":
                    out.append(Condition("ternary", _text(parent.test), line))
                elif fname == "orelse":
                    out.append(Condition("ternary-else", _text(parent.test), line))
            elif isinstance(parent, _COMPS) and fname in ("elt", "key", "value"):
                gens = " ".join(f"for {_text(g.target)} in {_text(g.iter)}" for g in parent.generators)
                out.append(Condition("comprehension", gens, line))
            elif isinstance(parent, ast.comprehension) and (
                fname == "ifs" or (fname == "iter" and self._later_generator(parent))
            ):
                out.append(
                    Condition(
                        "comprehension", f"for {_text(parent.target)} in {_text(parent.iter)}", self.line_of(child)
                    )
                )
            elif isinstance(parent, ast.Lambda):
                out.append(Condition("lambda", "", line))
            elif _MATCH_CASE is not None and isinstance(parent, _MATCH_CASE) and fname == "body":
                out.append(Condition("case", _text(parent.pattern), self.line_of(child)))
            if isinstance(idx, int) and isinstance(child, ast.stmt):
                out.extend(self._earlier_exits(getattr(parent, fname), idx))
        return out

    def _later_generator(self, comp: ast.comprehension) -> bool:
        up = self._parent.get(id(comp))
        if up is None:
            return True
        owner, _f, i = up
        return bool(i) or isinstance(owner, ast.GeneratorExp)

    def _earlier_exits(self, block: list, idx: int) -> list[Condition]:
        out = []
        for stmt in block[:idx]:
            if isinstance(stmt, ast.If) and not stmt.orelse and always_exits(stmt.body):
                out.append(Condition("early-exit", _text(stmt.test), self.line_of(stmt)))
            elif isinstance(stmt, ast.If) and stmt.orelse and always_exits(stmt.orelse) and not always_exits(stmt.body):
                out.append(Condition("early-exit-else", _text(stmt.test), self.line_of(stmt)))
        return out

    # ----- hoisting to a local -------------------------------------------------------------
    def _block_path(self, node: ast.AST) -> list[tuple[int, str, int]]:
        """(id of the block's owner, field, index) of each statement list holding ``node``, outermost first."""
        return [(id(p), f, i) for p, f, i, c in self.steps(node) if isinstance(i, int) and isinstance(c, ast.stmt)]

    def hoist_point(self, uses: list[ast.AST]) -> HoistPoint | None:
        """Where the codemod puts one local for ``uses`` (source order): before
        the statement holding the first use, in the innermost statement list
        holding them all; and whether a use then runs on every path from there.

        Covered when some use, in a statement of that list at or after the
        point, runs whenever its statement does (no condition between them,
        loop bodies included) and no statement from the point up to that one
        may leave the list (``return``, ``raise``, ``assert``, ``yield``, a
        ``break`` or ``continue`` of an enclosing loop). Implicit exceptions
        are not paths.
        """
        paths = [self._block_path(u) for u in uses]
        if not paths or any(not p for p in paths):
            return None
        level, k = -1, 0
        while all(len(p) > k for p in paths) and all(p[k][:2] == paths[0][k][:2] for p in paths):
            level = k  # one statement list holds every use at this depth
            if any(p[k][2] != paths[0][k][2] for p in paths):
                break  # ... in different statements of it
            k += 1
        if level < 0:
            return None
        owner_id, fname, index = paths[0][level]
        owner = next((n for n in ast.walk(self.node) if id(n) == owner_id), None)
        if owner is None:
            return None
        block = getattr(owner, fname)
        start = block[index]
        first_conditions = tuple(self.conditions(uses[0], below=start, loops=True))
        asserted = self._assert_of(uses[0])
        if asserted is not None:  # `python -O` strips it: the use may not run
            first_conditions += (Condition("assert", _text(asserted.test), self.line_of(asserted)),)
        exit_line = None
        for u, path in zip(uses, paths):
            j = path[level][2]
            if j < index:
                continue
            stmt = block[j]
            if self.conditions(u, below=stmt, loops=True):
                continue
            if self._header(u, stmt) is False or self._assert_of(u) is not None:
                continue
            leaving = self.exits(block[index:j])
            if leaving is not None:
                exit_line = exit_line or leaving
                continue
            return HoistPoint(block, index, self.line_of(start), (), None, u, j)
        return HoistPoint(block, index, self.line_of(start), first_conditions or (), exit_line)

    def _assert_of(self, node: ast.AST) -> ast.Assert | None:
        """The ``assert`` statement ``node`` is in, if any: under ``python -O``
        it does not run, so a use there covers no path."""
        for parent, _f, _i, _child in self.steps(node):
            if isinstance(parent, ast.Assert):
                return parent
        return None

    def _header(self, node: ast.AST, stmt: ast.stmt) -> bool:
        """``node`` is evaluated whenever ``stmt`` starts: in a simple
        statement, or in a compound statement's header (not its bodies)."""
        for parent, fname, _i, _child in self.steps(node):
            if parent is stmt:
                return fname not in ("body", "orelse", "finalbody", "handlers", "cases")
        return False

    def exits(self, stmts: list) -> int | None:
        """The file line of a statement in ``stmts`` that may leave their block, or None."""
        for stmt in stmts:
            hit = self._exit_in(stmt, in_loop=False)
            if hit is not None:
                return hit
        return None

    def _exit_in(self, node: ast.AST, in_loop: bool) -> int | None:
        # an `assert` leaves the block when its test is false: a call moved
        # above it would run where it did not (and could raise first)
        if isinstance(node, (ast.Return, ast.Raise, ast.Yield, ast.YieldFrom, ast.Assert)):
            return self.line_of(node)
        if isinstance(node, (ast.Break, ast.Continue)) and not in_loop:
            return self.line_of(node)
        if isinstance(node, _SCOPES):
            return None
        loop = in_loop or isinstance(node, _LOOPS)
        for child in ast.iter_child_nodes(node):
            if isinstance(node, _LOOPS) and child in getattr(node, "orelse", ()):
                hit = self._exit_in(child, in_loop)
            else:
                hit = self._exit_in(child, loop)
            if hit is not None:
                return hit
        return None

    def loops_around(self, node: ast.AST, below: list | None = None) -> list[tuple[int, int]]:
        """File line ranges of the loops (and comprehensions) holding ``node``,
        innermost last; with ``below``, only those inside statement list ``below``."""
        out = []
        inside = below is None
        for parent, fname, _i, _child in self.steps(node):
            if below is not None and getattr(parent, fname, None) is below:
                inside = True
                continue
            if inside and (
                isinstance(parent, _LOOPS + _COMPS) and fname in ("body", "elt", "key", "value", "generators", "test")
            ):
                out.append((self.line_of(parent), (parent.end_lineno or parent.lineno) + self.shift))
        return out

    # ----- reads --------------------------------------------------------------------------------
    def _chain_up(self, n: ast.Name) -> tuple[str, ...]:
        parts = [n.id]
        cur: ast.AST = n
        while True:
            up = self._parent.get(id(cur))
            if up is None or not isinstance(up[0], ast.Attribute) or up[1] != "value":
                break
            cur = up[0]
            parts.append(cur.attr)
        return tuple(parts)

    def _called_object(self, parts: tuple[str, ...], n: ast.Name) -> tuple[str, ...]:
        """``("_TABLE", "get")`` read as ``_TABLE.get(k)``: the object is what is read."""
        if len(parts) < 2:
            return parts
        top: ast.AST = n
        for _ in parts[1:]:
            top = self._parent[id(top)][0]
        up = self._parent.get(id(top))
        if up is not None and isinstance(up[0], ast.Call) and up[1] == "func":
            return parts[:-1]
        return parts

    def reads_of(self, name: str) -> list[tuple[tuple[str, ...], int]]:
        """Attribute chains read on the name ``name`` (a parameter: ``self``),
        as ``(("self", "block_size"), line)``; not inside nested ``def``s or classes."""
        out = []
        todo = list(self.node.body)
        while todo:
            n = todo.pop()
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load):
                out.append((self._chain_up(n), self.line_of(n)))
            todo.extend(ast.iter_child_nodes(n))
        out.sort(key=lambda r: r[1])
        return out

    def free_reads(self) -> list[tuple[tuple[str, ...], int]]:
        """Attribute chains the body reads on names it does not bind (module
        names, builtins), as ``(("os", "environ"), line)``: the longest chain
        of each read (without the method, for a method called on it), in
        conditions and subscripts too; not inside nested ``def``s or classes."""
        node = self.node
        local: set[str] = set()
        declared: set[str] = set()
        args = node.args
        for a in [*getattr(args, "posonlyargs", []), *args.args, *args.kwonlyargs]:
            local.add(a.arg)
        if args.vararg:
            local.add(args.vararg.arg)
        if args.kwarg:
            local.add(args.kwarg.arg)
        todo = list(node.body)
        seen: list[ast.AST] = []
        while todo:
            n = todo.pop()
            if isinstance(n, (ast.Global, ast.Nonlocal)):
                declared.update(n.names)
            elif isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                local.add(n.id)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                for a in n.names:
                    local.add((a.asname or a.name).split(".")[0])
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                local.add(n.name)
                continue
            elif isinstance(n, ast.ExceptHandler) and n.name:
                local.add(n.name)
            seen.append(n)
            todo.extend(ast.iter_child_nodes(n))
        local -= declared
        out = []
        for n in seen:
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in local:
                out.append((self._called_object(self._chain_up(n), n), self.line_of(n)))
        out.sort(key=lambda r: r[1])
        return out


class Bodies:
    """Parsed function bodies, once per function and run (or per
    :meth:`transient` block)."""

    def __init__(self, program) -> None:
        self.program = program
        self._bodies: dict[str, Body | None] = {}
        self._blocks: list[list[str]] = []  # per open transient block, the bodies parsed in it

    @contextmanager
    def transient(self) -> Iterator[None]:
        """Bodies first parsed inside the block are forgotten when it ends;
        those parsed before stay. A parsed body (its tree, parent map and
        walk order) takes many times its source's memory: a rule that reads
        the bodies of every hot function one at a time (CL006: about 260 on
        vLLM 0.10.2, 57 MB held to the end of the run) keeps one function's
        at a time. Nothing may keep a node of such a body past the block: a
        body parsed again is a new tree."""
        self._blocks.append([])
        try:
            yield
        finally:
            for key in self._blocks.pop():
                self._bodies.pop(key, None)

    def lines(self, path: str) -> list[str] | None:
        """The file's lines as indexed; None if unreadable or changed since."""
        return self.program.source_lines(path)

    def body(self, f: FunctionInfo) -> Body | None:
        key = f.qualname + "@" + f.path + ":" + str(f.line)
        if key in self._bodies:
            return self._bodies[key]
        out = None
        lines = self.lines(f.path)
        if lines is not None:
            parsed = parse_function(lines, f)
            if parsed is not None:
                out = Body(f, parsed[0], parsed[1], lines)
        self._bodies[key] = out
        if self._blocks:
            self._blocks[-1].append(key)
        return out
