"""Pieces the codemods share: the error and result types, locating nodes by
source span, validating rewritten code, and parenthesising replacements."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import libcst as cst
from libcst.metadata import (
    MetadataWrapper,
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


class _Locator(cst.CSTVisitor):
    """Pre-order walk finding, for each wanted range, the outermost expression
    whose PositionProvider range it is, and the ancestors of every such node."""

    def __init__(self, positions: Any, wanted: set[_Key]) -> None:
        super().__init__()
        self.positions = positions
        self.wanted = wanted
        self.found: dict[_Key, cst.BaseExpression] = {}
        self.ancestors: dict[cst.BaseExpression, tuple[cst.CSTNode, ...]] = {}
        self._stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if len(self.found) == len(self.wanted):
            return False
        if isinstance(node, (cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal)):
            return False  # names in there are not expressions to replace
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
