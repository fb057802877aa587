"""Where the uses of one expression in a function body can share one value.

The AST facts CL006 decides a repeat by: the names a body binds and the
objects it changes in place (nested scopes apart), the segments of uses
between barriers, branches no run takes both of, uses followed by a
``return`` in the same branch, loops that suspend (``await``/``yield``) and
statements that always leave a loop, uses whose value is kept apart (stored
into a slot, added to a collection), and the key a subscript lookup uses.
"""

from __future__ import annotations

import ast
import builtins

from ..index.expr import dotted
from .bodies import always_exits, walk_scope
from .state import is_mutator
from .timing import CONDITIONAL

_BUILTIN_NAMES = frozenset(dir(builtins))
LOOPS = (ast.For, ast.AsyncFor, ast.While)
COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
# methods that keep their argument in a collection (each call adds an element)
ADDS = frozenset({"append", "appendleft", "add", "insert", "put", "put_nowait", "setdefault"})
# pairs of conditions (kinds of :class:`~cachelint.facts.bodies.Condition`) no run meets both of
EXCLUSIVE = {
    frozenset(("if", "else")),
    frozenset(("if", "early-exit")),
    frozenset(("else", "early-exit-else")),
    frozenset(("ternary", "ternary-else")),
}


def char_col(body, line: int, col: int) -> int:
    lines = body.lines
    if not 0 < line <= len(lines) or lines[line - 1].isascii():
        return col
    return len(lines[line - 1].encode("utf-8")[:col].decode("utf-8", "replace"))


def class_like(name: str) -> bool:
    """A name that calls a class: ``Foo``, ``cls``, ``self.parser_cls``, ``tokenizer_class``."""
    return name[:1].isupper() or name in ("cls", "klass") or name.endswith(("_cls", "_class"))


def _nodes(node: ast.AST, include_self: bool, body) -> list:
    below = body.scope_nodes(node) if body is not None else list(walk_scope(node))
    return [node, *below] if include_self else below


def stores(node: ast.AST, include_self: bool = False, body=None) -> dict[str, list[int]]:
    """Names bound in ``node`` (a body, or a loop with its target), with the
    (0-based-shift-free) source lines: assignments, loop and comprehension
    targets, ``with ... as``, ``except ... as``, walrus, ``del``, imports.
    With ``body`` (the :class:`~cachelint.facts.bodies.Body` holding
    ``node``), from its one walk."""
    out: dict[str, list[int]] = {}
    for n in _nodes(node, include_self, body):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.setdefault(n.id, []).append(n.lineno)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.setdefault(n.name, []).append(n.lineno)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                out.setdefault((a.asname or a.name).split(".")[0], []).append(n.lineno)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            for name in n.names:
                out.setdefault(name, []).append(n.lineno)
        else:
            for name in _captures(n):
                out.setdefault(name, []).append(n.lineno)
    return out


def _captures(n: ast.AST) -> list[str]:
    """The names a ``match`` pattern node binds: ``case (_, n)``, ``case [*rest]``,
    ``case {**rest}``, ``case Point(x=px)`` (its sub-patterns bind)."""
    if isinstance(n, (_MatchAs, _MatchStar)) and n.name:
        return [n.name]
    if isinstance(n, _MatchMapping) and n.rest:
        return [n.rest]
    return []


class _Absent:  # a pattern class this Python does not have
    pass


_MatchAs = getattr(ast, "MatchAs", _Absent)
_MatchStar = getattr(ast, "MatchStar", _Absent)
_MatchMapping = getattr(ast, "MatchMapping", _Absent)


def store_positions(node: ast.AST, body) -> dict[str, list[tuple[int, int]]]:
    """Like :func:`stores`, with where each binding takes effect as an AST
    (line, column): an assignment's (or a walrus's) targets when its whole
    statement (or the walrus) is evaluated, after its value; a loop, ``with``
    or pattern target where it stands; ``global``/``nonlocal`` where
    declared. Two uses on one line are apart when a binding lands between them
    (``f(x), (x := x + 1), f(x)``)."""
    out: dict[str, list[tuple[int, int]]] = {}
    for n in _nodes(node, False, body):
        names: list[str] = []
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            names = [n.id]
        elif isinstance(n, ast.ExceptHandler) and n.name:
            names = [n.name]
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            names = [(a.asname or a.name).split(".")[0] for a in n.names]
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            names = list(n.names)
        else:
            names = _captures(n)
        if not names:
            continue
        at = (n.lineno, n.col_offset)
        if isinstance(n, ast.Name):
            for parent, field, _i, _child in reversed(body.steps(n)):
                if isinstance(parent, ast.NamedExpr) or (
                    isinstance(parent, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and field in ("targets", "target")
                ):
                    at = (parent.end_lineno or n.lineno, parent.end_col_offset or 0)
                    break
                if isinstance(parent, ast.stmt):
                    break
        for name in names:
            out.setdefault(name, []).append(at)
    return out


def chains(e, out: list) -> None:
    """The maximal name or attribute chains an indexed expression reads, as dotted text."""
    if not isinstance(e, tuple) or not e:
        return
    d = dotted(e) if e[0] in ("name", "attr") else None
    if d is not None:
        out.append(d)
        return
    for part in e[1:] if isinstance(e[0], str) else e:
        if isinstance(part, tuple):
            chains(part, out)


def mutations(node: ast.AST, include_self: bool = False, body=None) -> list[tuple[str, int]]:
    """What ``node`` changes in place, as (dotted chain, AST line): ``x.append(..)``
    (and the other mutators), ``x[k] = v``, ``del x[k]``, ``x.a = v``, ``x += ..``."""
    out: list[tuple[str, int]] = []
    for n in _nodes(node, include_self, body):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and is_mutator(n.func.attr):
            if plain(n.func.value):
                out.append((ast.unparse(n.func.value), n.lineno))
        elif isinstance(n, ast.Subscript) and isinstance(n.ctx, (ast.Store, ast.Del)) and plain(n.value):
            out.append((ast.unparse(n.value), n.lineno))
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, (ast.Store, ast.Del)) and plain(n):
            out.append((ast.unparse(n), n.lineno))
    return out


def related(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def segments(uses: list, barrier_lines: list) -> list[list]:
    """Split source-ordered uses where a name they read is rebound between two of them.

    ``barrier_lines`` are AST lines (no shift), a change anywhere on the
    line after a use there, or AST (line, column) positions where a binding
    takes effect (:func:`store_positions`); uses carry file lines and nodes
    with AST lines."""
    if not barrier_lines:
        return [uses]
    inf = float("inf")
    at = [b if isinstance(b, tuple) else (b, inf) for b in barrier_lines]
    out: list[list] = [[]]
    for c, n in uses:
        cur = out[-1]
        if cur:
            prev = cur[-1][1]
            if any((prev.lineno, prev.col_offset) < b <= (n.lineno, n.col_offset) for b in at):
                out.append([])
        out[-1].append((c, n))
    return out


def compatible(uses: list, body) -> list:
    """The uses (source order) no two of which are on exclusive branches,
    dropping each use exclusive with one kept before it."""
    kept: list = []
    conds: list = []
    for c, n in uses:
        mine = body.conditions(n)
        if any(x.kind in ("except", "lambda") for x in mine):
            continue
        if any(exclusive(mine, other) for other in conds):
            continue
        if kept and returns_after(body, kept[-1][1], n):
            continue  # the use before it is followed by a `return`: not both in one run
        kept.append((c, n))
        conds.append(mine)
    return kept


def suspends(loop: ast.AST, body=None) -> bool:
    """The loop is an ``async for`` or awaits in its body (nested scopes apart)."""
    if isinstance(loop, ast.AsyncFor):
        return True
    return any(isinstance(n, (ast.Await, ast.AsyncFor, ast.AsyncWith)) for n in _nodes(loop, False, body))


def returns_after(body, node: ast.AST, later: ast.AST) -> bool:
    """The statement list holding ``node``'s statement always ends in a
    ``return`` or ``raise`` from there on (``x = call(); ...; return x``
    inside an ``if``), and ``later`` is not in that rest of the list: no
    later code of the function runs in the same run, unless a loop around
    repeats it. A use in the ``return`` itself, or between, runs in the same
    run (``log(x.dump()); return Response(x.dump())``)."""
    for parent, fname, idx, child in reversed(body.steps(node)):
        if isinstance(parent, LOOPS + SCOPES):
            return False
        if isinstance(idx, int) and isinstance(child, ast.stmt):
            rest = getattr(parent, fname)[idx:]
            at = getattr(later, "lineno", 0)
            if any(st.lineno <= at <= (st.end_lineno or st.lineno) for st in rest):
                return False
            last = rest[-1] if rest else None
            return isinstance(last, (ast.Return, ast.Raise)) or (
                isinstance(last, ast.If) and always_exits(last.body) and always_exits(last.orelse)
            )
    return False


def exclusive(a: list, b: list) -> bool:
    for x in a:
        for y in b:
            if x.line == y.line and x.text == y.text and frozenset((x.kind, y.kind)) in EXCLUSIVE:
                return True
    return False


def always_leaves(body, node: ast.AST, loop: ast.AST) -> bool:
    """Past ``node``, every path through its statement blocks leaves ``loop``
    (``return``, ``raise``, ``break``): the call runs at most once per run."""
    for parent, fname, idx, child in reversed(body.steps(node)):
        if parent is loop:
            return False
        if isinstance(idx, int) and isinstance(child, ast.stmt):
            rest = getattr(parent, fname)[idx:]
            if always_exits(rest) or any(isinstance(s, ast.Break) for s in rest):
                return True
    return False


def within(body, node: ast.AST, top: ast.AST) -> bool:
    """``node`` is ``top`` or inside it."""
    n: ast.AST | None = node
    while n is not None:
        if n is top:
            return True
        up = body._parent.get(id(n))
        n = up[0] if up is not None else None
    return False


def kept_apart(body, node: ast.AST) -> bool:
    """The value of ``node`` (a call) is kept where each run of it keeps its
    own: it is the value (or one branch of a conditional expression that is
    the value) assigned to an attribute or item (``tables[seq.id] =
    base.fork()``, ``req.state = make() if c else None``), or the argument of
    a method that adds to a collection (``out.append(make())``). Two such
    uses want two objects: one shared value would alias the slots."""
    child = node
    up = body._parent.get(id(child))
    while up is not None and isinstance(up[0], ast.IfExp) and child is not up[0].test:
        child = up[0]
        up = body._parent.get(id(child))
    parent = up[0] if up is not None else None
    if isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is child:
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        return any(isinstance(t, (ast.Attribute, ast.Subscript)) for t in targets)
    return (
        isinstance(parent, ast.Call)
        and child in parent.args
        and isinstance(parent.func, ast.Attribute)
        and parent.func.attr in ADDS
    )


def lookup_key(table: ast.AST, key: ast.AST) -> str | None:
    """``T[k]`` as text when ``T`` is an attribute chain (``self.table``) and
    ``k`` a name or attribute chain (so it is the same lookup each time)."""
    if not isinstance(table, ast.Attribute) or not plain(table) or not plain(key):
        # a constant key (`x[0]`, `cfg["name"]`) reads a record, not a table; a
        # local's items (`row[i]`) are data being walked, not a lookup table
        return None
    if isinstance(table, ast.Name) and (table.id in _BUILTIN_NAMES or table.id[:1].isupper()):
        return None  # `list[int]`, `Optional[str]`: a type, not a table
    return f"{ast.unparse(table)}[{ast.unparse(key)}]"


def plain(e: ast.AST) -> bool:
    while isinstance(e, ast.Attribute):
        e = e.value
    return isinstance(e, ast.Name)


# the kinds of :class:`~cachelint.facts.bodies.Condition` that are branches
# taken on some runs only (not a loop iterating, not a `try` that raised nothing)
BRANCHES = frozenset(
    {"if", "else", "early-exit", "early-exit-else", "and", "or", "ternary", "ternary-else", "while", "case"}
)


def run_share(body, node: ast.AST, below: ast.AST | None = None) -> float:
    """The share of the runs of statement ``below`` (or loop iterations, for a
    loop; or of the function, with no ``below``) in which ``node`` runs: the cost model's share for a branch whose
    test is not evaluated (:data:`~cachelint.facts.timing.CONDITIONAL`, one
    half) per distinct branch condition between them (an early exit included)."""
    conds = {(c.kind, c.text) for c in body.conditions(node, below=below) if c.kind in BRANCHES}
    return CONDITIONAL ** len(conds)


def repeated_runs(shares: list[float]) -> float:
    """The runs of a call beyond the first in one run of its function, on
    average, when its uses run with these shares (independently): the runs
    expected, less the chance that any runs at all (the one call a fix keeps,
    whether the value is computed before the uses or at the first of them)."""
    none = 1.0
    for p in shares:
        none *= 1 - p
    return sum(shares) - (1 - none)


def repeated_runs_each(share: float, count: int) -> float:
    """:func:`repeated_runs` of ``count`` uses that each run with ``share``
    (a loop's iterations), in closed form: ``range(10**9)`` is a count, not a list."""
    return count * share - (1 - (1 - share) ** count)


def statement_in(body, node: ast.AST, block: list) -> int | None:
    """The index in statement list ``block`` of the statement holding ``node``."""
    for parent, fname, idx, _child in body.steps(node):
        if isinstance(idx, int) and getattr(parent, fname, None) is block:
            return idx
    return None


def trip_count(loop: ast.AST) -> int | None:
    """How many times the body of ``loop`` runs, when its source says:
    ``for _ in range(3)``, ``for x in (a, b)``, ``[... for s in range(2)]``
    (every generator of a comprehension known); None otherwise."""
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        return iterations(loop.iter)
    if isinstance(loop, COMPS):
        total = 1
        for g in loop.generators:
            n = iterations(g.iter)
            if n is None or g.ifs:
                return None
            total *= n
        return total
    return None


def iterations(e: ast.AST) -> int | None:
    """How many items iterable ``e`` yields, when its source says: ``range``
    of constants, a literal tuple, list or set without ``*``; None otherwise."""
    if isinstance(e, (ast.Tuple, ast.List, ast.Set)):
        return None if any(isinstance(x, ast.Starred) for x in e.elts) else len(e.elts)
    if (
        isinstance(e, ast.Call)
        and isinstance(e.func, ast.Name)
        and e.func.id == "range"
        and not e.keywords
        and 1 <= len(e.args) <= 3
    ):
        bounds = [a.value for a in e.args if isinstance(a, ast.Constant) and type(a.value) is int]
        if len(bounds) == len(e.args):
            try:
                return len(range(*bounds))
            except ValueError:  # a step of 0
                return None
    return None
