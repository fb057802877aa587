"""Hoist a repeated or invariant expression: insert the statement that computes
it once, and replace its uses, in one LibCST pass.

:class:`HoistCommand` extends :class:`~codemods.replace_expression.ReplaceExpressionsCommand`
(which replaces expressions at exact spans) with two statement insertions,
located on the *same* parsed tree as the replacements so that all positions
refer to the original source:

* ``EditKind.APPEND_TO_FUNCTION``: append ``self._head_size = <call>`` at the
  end of the body of ``target`` (``Runner.__init__``), the function whose
  ``def`` name is on ``span.line``. Hoisting to ``__init__``. With target
  ``<module>``, append to the module (a module constant).
* ``EditKind.INSERT_BEFORE``: insert ``head_size = <call>`` before the
  statement that holds the first of ``anchors``, in the innermost block that
  holds every anchor (so the new local dominates every use, and stays inside
  any loop or branch that holds all of them). Hoisting to a local.

An inserted statement equal to one already inserted at the same place (two
findings sharing one hoisted value), or to the statement already there (a
second run), is not inserted twice.

Run it from the repository root like the other codemods::

    python -m libcst.tool codemod --no-format hoist.HoistCommand --findings findings.json PATHS
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import libcst as cst

from cachelint.model import Edit, EditKind
from codemods._common import FixError, _Locator, _span_key
from codemods.replace_expression import ReplaceExpressionsCommand

__all__ = ["HoistCommand"]

_STATEMENT_KINDS = (EditKind.APPEND_TO_FUNCTION, EditKind.INSERT_BEFORE)


class _FunctionFinder(cst.CSTVisitor):
    """FunctionDefs by module-relative qualified name, with their ancestors."""

    def __init__(self, positions: Any, wanted: set[str]) -> None:
        super().__init__()
        self.positions = positions
        self.wanted = wanted
        self.found: dict[str, list[tuple[cst.FunctionDef, int, tuple]]] = {}
        self._names: list[str] = []
        self._stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.BaseExpression, cst.SimpleStatementLine)):
            return False  # no defs in there (lambdas are not targets)
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            self._names.append(node.name.value)
            qn = ".".join(self._names)
            if isinstance(node, cst.FunctionDef) and qn in self.wanted:
                at = self.positions.get(node.name)
                if at is not None:  # None: outside the statements positions were computed for
                    self.found.setdefault(qn, []).append((node, at.start.line, tuple(self._stack)))
            if isinstance(node, cst.FunctionDef):
                self._names.append("<locals>")
        self._stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if self._stack and self._stack[-1] is original_node:
            self._stack.pop()
        if isinstance(original_node, cst.FunctionDef):
            self._names.pop()
            self._names.pop()
        elif isinstance(original_node, cst.ClassDef):
            self._names.pop()


def _parse_statement(text: str, filename: str) -> cst.BaseStatement:
    try:
        return cst.parse_statement(text.strip() + "\n")
    except cst.ParserSyntaxError as exc:
        raise FixError(f"{filename}: {text!r} is not a Python statement: {exc}") from exc


def _same(a: cst.CSTNode, b: cst.CSTNode) -> bool:
    return cst.Module(body=[]).code_for_node(a).strip() == cst.Module(body=[]).code_for_node(b).strip()


class HoistCommand(ReplaceExpressionsCommand):
    """Replace expressions and insert the statements that compute them once.

    Statement edits (``append_to_function``, ``insert_before``) whose place
    cannot be found end up in :attr:`unmatched`, like unmatched replacements.
    """

    DESCRIPTION: str = (
        "Apply cachelint hoisting fixes: insert the statement computing a value "
        "once (end of __init__, or a local before its first use) and replace the uses."
    )

    EDIT_KINDS = (EditKind.REPLACE, *_STATEMENT_KINDS)

    def __init__(self, context, edits: Sequence[Edit] | None = None, **kw: Any) -> None:
        super().__init__(context, edits, **kw)
        # block or FunctionDef node -> [(index or None for "append", statement, edit)]
        self._inserts: dict[cst.CSTNode, list[tuple[int | None, cst.BaseStatement, Edit]]] = {}

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        edits = self._selected_edits()
        if not edits:
            return tree
        self._inserts = {}
        self._pos = None
        self._positions(tree, edits)  # for every edit: _match hands the base class the replacements only
        self._match(tree, edits)
        if not self._targets and not self._inserts:
            return tree
        self._stack = []
        try:
            return tree.visit(self)
        finally:
            self._targets, self._ancestors, self._stack, self._inserts, self._pos = {}, set(), [], {}, None

    def _match(self, tree: cst.Module, edits: Sequence[Edit]) -> None:
        replaces = [e for e in edits if e.kind not in _STATEMENT_KINDS]
        statements = [e for e in edits if e.kind in _STATEMENT_KINDS]
        super()._match(tree, replaces)
        if statements:
            self._match_statements(tree, statements)

    def _match_statements(self, tree: cst.Module, edits: Sequence[Edit]) -> None:
        positions, enclosing = self._positions(tree, edits)
        filename = self.context.filename or "<string>"
        appends = [e for e in edits if e.kind is EditKind.APPEND_TO_FUNCTION]
        befores = [e for e in edits if e.kind is EditKind.INSERT_BEFORE]
        if appends:
            finder = _FunctionFinder(positions, {e.target for e in appends})
            tree.visit(finder)
            for e in appends:
                if e.target == "<module>":
                    stmt = _parse_statement(e.replacement, filename)
                    blank = cst.EmptyLine(indent=False, whitespace=cst.SimpleWhitespace(""))
                    stmt = stmt.with_changes(leading_lines=[blank, blank])
                    self._inserts.setdefault(tree, []).append((None, stmt, e))
                    self._ancestors.add(tree)
                    self.applied.append(e)
                    continue
                cands = [c for c in finder.found.get(e.target, []) if c[1] == e.span.line or not e.span.line]
                if len(cands) != 1 or not isinstance(cands[0][0].body, cst.IndentedBlock):
                    self._unmatch(e, f"no single function `{e.target}` defined on line {e.span.line}")
                    continue
                node, _, ancestors = cands[0]
                self._inserts.setdefault(node, []).append((None, _parse_statement(e.replacement, filename), e))
                self._ancestors.update(ancestors)
                self._ancestors.add(node)
                self.applied.append(e)
        if befores:
            wanted = {_span_key(a) for e in befores for a in e.anchors}
            locator = _Locator(positions, wanted, enclosing)
            tree.visit(locator)
            for e in befores:
                nodes = [locator.found.get(_span_key(a)) for a in e.anchors]
                if not nodes or any(n is None for n in nodes):
                    self._unmatch(e, "an anchor spans no expression")
                    continue
                # no node is None here (checked above)
                place = self._insertion_point([(*locator.ancestors[n], n) for n in nodes])  # type: ignore[index]
                if place is None:
                    self._unmatch(e, "the anchors share no statement block")
                    continue
                block, index, ancestors = place
                self._inserts.setdefault(block, []).append((index, _parse_statement(e.replacement, filename), e))
                self._ancestors.update(ancestors)
                self._ancestors.add(block)
                self.applied.append(e)

    @staticmethod
    def _insertion_point(paths: list[tuple]) -> tuple[cst.CSTNode, int, tuple] | None:
        """(block, index of the statement to insert before, ancestors of block)."""
        common = 0
        shortest = min(len(p) for p in paths)
        while common < shortest and all(p[common] is paths[0][common] for p in paths):
            common += 1
        first = paths[0]  # anchors are given in source order
        for i in range(common - 1, -1, -1):
            node = first[i]
            if isinstance(node, (cst.IndentedBlock, cst.Module)) and i + 1 < len(first):
                child = first[i + 1]
                body = list(node.body)
                for index, stmt in enumerate(body):
                    if stmt is child:
                        return node, index, first[:i]
                return None
            if isinstance(node, (cst.Lambda, cst.ClassDef, cst.FunctionDef)) and i < common - 1:
                return None  # the block would be outside the scope the anchors live in
        return None

    def _unmatch(self, edit: Edit, why: str) -> None:
        self.unmatched.append(edit)
        self.warn(f"{edit.kind.value} `{edit.replacement.strip()}`: {why}; edit not applied")

    def on_leave(self, original_node: cst.CSTNode, updated_node: Any) -> Any:
        updated = super().on_leave(original_node, updated_node)
        inserts = self._inserts.get(original_node)
        if not inserts:
            return updated
        if isinstance(updated, cst.FunctionDef):
            body = updated.body
            stmts = list(body.body)
            for _, stmt, _e in inserts:
                if (stmts and _same(stmts[-1], stmt)) or any(_same(s, stmt) for s in stmts):
                    continue  # already there (a second run, or a shared hoist)
                stmts.append(stmt)
            return updated.with_changes(body=body.with_changes(body=stmts))
        stmts = list(updated.body)
        if isinstance(updated, cst.Module):
            for index, stmt, _e in inserts:
                if index is None and not any(_same(s, stmt) for s in stmts):
                    stmts.append(stmt)
            inserts = [x for x in inserts if x[0] is not None]
        # insert from the back so earlier indexes stay valid
        by_index: dict[int, list[cst.BaseStatement]] = {}
        # no index is None here (filtered above)
        for index, stmt, _e in inserts:
            group = by_index.setdefault(index, [])  # type: ignore[arg-type]
            if any(_same(s, stmt) for s in group):
                continue
            if index > 0 and _same(stmts[index - 1], stmt):  # type: ignore[operator]
                continue
            group.append(stmt)
        for index in sorted(by_index, reverse=True):
            stmts[index:index] = by_index[index]
        return updated.with_changes(body=stmts)
