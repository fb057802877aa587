"""Pieces the codemods share: the error and result types, locating nodes by
source span, validating rewritten code, and parenthesising replacements."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import libcst as cst
from libcst.metadata import (
    CodePosition,
    CodeRange,
    MetadataWrapper,
    PositionProvider,
)

from cachelint.model import Edit, Span

_Key = tuple[int, int, int, int]


_AnyImport = cst.Import | cst.ImportFrom


class FixError(Exception):
    """The edits cannot be applied to this file (the fixer then skips the file).

    Raised when the source does not parse, a replacement is not a valid
    expression, or the rewritten module does not parse/compile.
    """


@dataclass
class ApplyResult:
    """Outcome of :func:`apply_edits`.

    ``unmatched`` holds every edit that was not applied: spans matching no
    expression node, and edits skipped because they overlap an edit applied
    before them (those are also listed in ``conflicting``).
    """

    code: str
    applied: list[Edit]
    unmatched: list[Edit]
    conflicting: list[Edit] = field(default_factory=list)
    # local names whose import binding was removed
    removed_imports: list[str] = field(default_factory=list)


def _span_key(span: Span) -> _Key:
    return (span.line, span.column, span.end_line, span.end_column)


def _overlaps(a: _Key, b: _Key) -> bool:
    return (a[0], a[1]) < (b[2], b[3]) and (b[0], b[1]) < (a[2], a[3])


def _describe(edit: Edit) -> str:
    s = edit.span
    return f"{s.line}:{s.column + 1}-{s.end_line}:{s.end_column + 1} -> {edit.replacement!r}"


def _is_name_slot(parent: cst.CSTNode | None, node: cst.CSTNode) -> bool:
    """Whether ``node`` is a Name that LibCST types as an expression but that
    Python treats as a bare identifier (``obj.attr``'s ``attr``, a keyword
    argument's name, a def/class/parameter name, ``except ... as name``, ...)."""
    if not isinstance(node, cst.Name) or parent is None:
        return False
    if isinstance(parent, cst.Attribute):
        return parent.attr is node
    if isinstance(parent, cst.Arg):
        return parent.keyword is node
    return getattr(parent, "name", None) is node and isinstance(
        parent,
        (
            cst.Param,
            cst.FunctionDef,
            cst.ClassDef,
            cst.AsName,
            cst.NameItem,
            cst.TypeVar,
            cst.ParamSpec,
            cst.TypeVarTuple,
            cst.TypeAlias,
        ),
    )


class _Collector(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.nodes: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.nodes.append(node)
        return True


def _first_line(stmt: ast.stmt) -> int:
    return min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])


def _statement_at(body: Sequence[cst.BaseStatement], nodes: list[ast.stmt], line: int) -> tuple | None:
    """The statement of ``body`` (a block of the CST; ``nodes``, the same
    block in Python's ``ast``) holding ``line``, going down into class bodies:
    ``(statement, its first ast statement, the enclosing ClassDefs outermost
    first)``, or None when the two trees do not line up."""
    j = 0
    for stmt in body:
        k = len(stmt.body) if isinstance(stmt, cst.SimpleStatementLine) else 1
        group = nodes[j : j + k]
        j += k
        if len(group) != k:
            return None
        if not min(_first_line(a) for a in group) <= line <= max(a.end_lineno or a.lineno for a in group):
            continue
        first = group[0]
        if (
            isinstance(stmt, cst.ClassDef)
            and isinstance(first, ast.ClassDef)
            and isinstance(stmt.body, cst.IndentedBlock)
            and first.body
            and line >= _first_line(first.body[0])
        ):
            inner = _statement_at(stmt.body.body, first.body, line)
            if inner is None:
                return None
            return inner[0], inner[1], (stmt, *inner[2])
        return stmt, first, ()
    return None


def partial_positions(
    tree: cst.Module, source: str, lines: Iterable[int]
) -> tuple[dict[cst.CSTNode, CodeRange], set[cst.CSTNode]] | None:
    """``PositionProvider`` ranges for the statements of ``tree`` (parsed
    from ``source``) that hold ``lines``, and the statements enclosing them:
    the top-level statement, or the method when it is inside a class. Each
    statement's positions come from a module holding it alone (inside copies
    of its classes, so that columns stay the same), shifted to its line in
    ``source`` as Python's ``ast`` gives it; the cost follows the size of
    those statements, not of the module. None when the trees do not line up
    (the caller then computes positions for the whole module)."""
    try:
        mod = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    positions: dict[cst.CSTNode, CodeRange] = {}
    enclosing: set[cst.CSTNode] = {tree}
    done: set[cst.CSTNode] = set()
    for line in sorted(set(lines)):
        found = _statement_at(tree.body, mod.body, line)
        if found is None:
            return None
        stmt, first, classes = found
        if stmt in done:
            continue
        done.add(stmt)
        node: cst.CSTNode = stmt
        for cls in reversed(classes):
            node = cls.with_changes(body=cls.body.with_changes(body=[node]))
        mini = tree.with_changes(body=[node], header=(), footer=())
        pos = MetadataWrapper(mini, unsafe_skip_copy=True).resolve(PositionProvider)
        anchor = stmt.name if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) else stmt
        at = pos.get(anchor)
        if at is None:
            return None
        shift = first.lineno - at.start.line
        collect = _Collector()
        stmt.visit(collect)
        for n in collect.nodes:
            r = pos.get(n)
            if r is not None:
                positions[n] = CodeRange(
                    CodePosition(r.start.line + shift, r.start.column),
                    CodePosition(r.end.line + shift, r.end.column),
                )
        enclosing.update(classes)
    return positions, enclosing


class _Locator(cst.CSTVisitor):
    """Pre-order walk finding, for each wanted range, the outermost expression
    whose PositionProvider range it is, and the ancestors of every such node."""

    def __init__(self, positions: Any, wanted: set[_Key], enclosing: set[cst.CSTNode] | None = None) -> None:
        super().__init__()
        self.positions = positions
        self.wanted = wanted
        # with positions for some statements only: the nodes enclosing them
        self.enclosing = enclosing
        self.found: dict[_Key, cst.BaseExpression] = {}
        self.ancestors: dict[cst.BaseExpression, tuple[cst.CSTNode, ...]] = {}
        self._stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if len(self.found) == len(self.wanted):
            return False
        if isinstance(node, (cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal)):
            return False  # names in there are not expressions to replace
        if (
            self.enclosing is not None
            and isinstance(node, cst.BaseStatement)
            and node not in self.positions
            and node not in self.enclosing
        ):
            return False  # a statement holding none of the wanted lines
        if isinstance(node, (cst.BaseExpression, cst.SimpleStatementLine)):
            rng = self.positions.get(node)
            if rng is not None:
                start = (rng.start.line, rng.start.column)
                end = (rng.end.line, rng.end.column)
                key = (*start, *end)
                if (
                    key in self.wanted
                    and key not in self.found
                    and isinstance(node, cst.BaseExpression)
                    and not _is_name_slot(self._stack[-1] if self._stack else None, node)
                ):
                    self.found[key] = node
                    self.ancestors[node] = tuple(self._stack)
                # Everything below an expression or a simple statement lies in
                # its range; skip subtrees that cannot hold a wanted range.
                # (Not done for compound statements: a FunctionDef's range may
                # not cover its decorators.)
                if not any(start <= (k[0], k[1]) and (k[2], k[3]) <= end for k in self.wanted):
                    return False
        self._stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if self._stack and self._stack[-1] is original_node:
            self._stack.pop()


def _transform_without_copy(codemod: Any, tree: cst.Module) -> cst.Module:
    """``Codemod.transform_module`` minus the defensive deep copy of the tree.

    LibCST's ``Codemod.transform_module`` wraps the module in a
    ``MetadataWrapper`` that deep-copies it first (so metadata keys are unique
    nodes). Every module given to these codemods is freshly parsed, or the
    output of :class:`ReplaceExpressionsCommand` (which shares untouched subtrees
    with its input but never repeats a node inside one tree), so the copy only
    costs time -- about as much as computing positions. Skipping it also keeps
    node identity, which :meth:`RemoveImportsIfUnused.schedule` relies on.
    """
    context = codemod.context
    cache: dict[Any, object] = {}
    if context.metadata_manager is not None and context.filename:
        cache = context.metadata_manager.get_cache_for_path(context.filename)
    wrapper = MetadataWrapper(tree, unsafe_skip_copy=True, cache=cache)
    previous = context.wrapper
    with codemod.resolve(wrapper):
        codemod.context = replace(context, wrapper=wrapper)
        try:
            return codemod.transform_module_impl(wrapper.module)
        finally:
            codemod.context = replace(codemod.context, wrapper=previous)


def _validate(code: str, filename: str) -> None:
    try:
        cst.parse_module(code)
        compile(code, filename, "exec", dont_inherit=True)
    except (cst.ParserSyntaxError, SyntaxError, ValueError) as exc:
        raise FixError(f"{filename}: rewritten code is not valid Python: {exc}") from exc


# Expressions that bind at least as tightly as a call/attribute access: they can
# stand wherever the original (call) expression stood without extra parentheses.
_ATOMIC = (
    cst.Name,
    cst.Attribute,
    cst.Call,
    cst.Subscript,
    cst.Integer,
    cst.Float,
    cst.Imaginary,
    cst.SimpleString,
    cst.ConcatenatedString,
    cst.FormattedString,
    cst.List,
    cst.Set,
    cst.Dict,
    cst.ListComp,
    cst.SetComp,
    cst.DictComp,
    cst.GeneratorExp,
    cst.Ellipsis,
)


# Parents whose ``value`` slot accepts any (non-tuple, non-walrus) expression.
_LOOSE_SLOTS = (
    cst.Assign,
    cst.AnnAssign,
    cst.AugAssign,
    cst.Return,
    cst.Expr,
    cst.Arg,
    cst.Index,
    cst.Element,
    cst.DictElement,
)


def _needs_parens(repl: cst.BaseExpression, parent: cst.CSTNode | None, original: cst.CSTNode) -> bool:
    if repl.lpar or isinstance(repl, _ATOMIC):
        return False
    if isinstance(repl, (cst.NamedExpr, cst.Yield, cst.Tuple, cst.StarredElement)):
        return True
    return not (isinstance(parent, _LOOSE_SLOTS) and getattr(parent, "value", None) is original)
