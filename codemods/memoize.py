"""Memoize a function: add a decorator (``@functools.cache``) and its import.

:class:`MemoizeCommand` applies ``EditKind.ADD_DECORATOR`` edits (the
decorator expression in ``replacement``, the function's module-relative
qualified name in ``target``) and ``EditKind.ADD_IMPORT`` edits (``import
<target>``). The decorator goes on top, outermost, so it caches whatever the
rest of the stack returns. An import the module lacks is added where isort
and ruff's import sorting put it (:func:`codemods.imports.add_import`: a
standard-library module in that section, sorted), so a file that passed
``ruff check --select I`` still does.

Functions are found by name, not by position, so these edits can run after
:class:`~codemods.hoist.HoistCommand` has moved lines around. A function that
already carries the decorator is left alone (a second run changes nothing).

    python -m libcst.tool codemod --no-format memoize.MemoizeCommand --findings findings.json PATHS
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import libcst as cst
from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand

from cachelint.model import Edit, EditKind
from codemods._common import FixError, _validate
from codemods.findings import load_edits
from codemods.imports import add_import

__all__ = ["MemoizeCommand"]

_KINDS = (EditKind.ADD_DECORATOR, EditKind.ADD_IMPORT)


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node).strip()


class MemoizeCommand(VisitorBasedCodemodCommand):
    DESCRIPTION: str = "Apply cachelint memoization fixes: add @functools.cache (and its import) to a function."

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument("--findings", dest="findings", required=True, help="cachelint JSON report")
        arg_parser.add_argument("--unsafe-fixes", dest="unsafe_fixes", action="store_true", default=False)

    def __init__(
        self,
        context: CodemodContext,
        edits: Sequence[Edit] | None = None,
        findings: str | None = None,
        unsafe_fixes: bool = False,
    ) -> None:
        super().__init__(context)
        self.edits = tuple(edits or ())
        self.findings = findings
        self.unsafe_fixes = unsafe_fixes
        self.applied: list[Edit] = []
        self.unmatched: list[Edit] = []
        self._decorators: dict[str, list[Edit]] = {}
        self._names: list[str] = []
        self._seen: set[str] = set()

    def _selected(self) -> list[Edit]:
        edits = list(self.edits)
        if self.findings is not None and self.context.filename:
            edits.extend(load_edits(self.findings, self.context.filename, unsafe_fixes=self.unsafe_fixes))
        return [e for e in edits if e.kind in _KINDS]

    def transform_module(self, tree: cst.Module) -> cst.Module:
        self.applied, self.unmatched = [], []
        out = super().transform_module(tree)
        if self.applied:
            _validate(out.code, self.context.filename or "<string>")
        return out

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        edits = self._selected()
        self._decorators = {}
        for e in edits:
            if e.kind is EditKind.ADD_DECORATOR:
                try:
                    cst.parse_expression(e.replacement)
                except cst.ParserSyntaxError as exc:
                    raise FixError(f"decorator {e.replacement!r} is not an expression: {exc}") from exc
                self._decorators.setdefault(e.target, []).append(e)
        self._names, self._seen = [], set()
        if self._decorators:
            tree = tree.visit(self)
        for qn, es in self._decorators.items():
            if qn not in self._seen:
                for e in es:
                    self.unmatched.append(e)
                    self.warn(f"no function `{qn}` to decorate; edit not applied")
        if any(e in self.applied for es in self._decorators.values() for e in es):
            for e in edits:
                if e.kind is EditKind.ADD_IMPORT:
                    tree = add_import(tree, e.target)
                    self.applied.append(e)
        else:
            self.unmatched.extend(e for e in edits if e.kind is EditKind.ADD_IMPORT)
        return tree

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self._names.append(node.name.value)
        return True

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        self._names.pop()
        return updated_node

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._names.append(node.name.value)
        self._names.append("<locals>")
        return True

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> Any:
        self._names.pop()
        qn = ".".join(self._names)
        self._names.pop()
        edits = self._decorators.get(qn)
        if not edits:
            return updated_node
        if qn in self._seen:  # defined twice: ambiguous, leave both alone
            for e in edits:
                if e in self.applied:
                    self.applied.remove(e)
            return updated_node
        self._seen.add(qn)
        present = {_code(d.decorator) for d in updated_node.decorators}
        decorators = list(updated_node.decorators)
        for e in reversed(list(dict.fromkeys(edits))):
            if e.replacement.strip() not in present:
                decorators.insert(0, cst.Decorator(decorator=cst.parse_expression(e.replacement.strip())))
                present.add(e.replacement.strip())
        self.applied.extend(edits)
        return updated_node.with_changes(decorators=decorators)
