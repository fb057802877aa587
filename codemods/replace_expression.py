"""Replace expressions at exact source spans and drop imports that became unused.

This is the rewriting half of cachelint: a rule reports a :class:`~cachelint.model.Finding`
whose :class:`~cachelint.model.Fix` holds :class:`~cachelint.model.Edit` objects, and
this module applies them with LibCST so comments and formatting everywhere else
survive untouched.

Two entry points:

* :func:`apply_edits` -- what the cachelint fixer calls in-process::

      result = apply_edits(source, edits, filename=path)
      result.code, result.applied, result.unmatched

* :class:`ReplaceExpressionsCommand` -- a LibCST codemod command, so the same
  rewrite can be run by LibCST's own driver from the repository root::

      python -m libcst.tool codemod --no-format \\
          replace_expression.ReplaceExpressionsCommand \\
          --findings findings.json [--unsafe-fixes] PATHS

  (``--no-format`` is needed because the repository's ``.libcst.codemod.yaml``
  configures no formatter; LibCST otherwise refuses to write the file.)

Import clean-up follows the design of LibCST's ``AddImportsVisitor`` /
``RemoveImportsVisitor``: while transforming, the command only *schedules*
removals in ``context.scratch``; after the main transform a second transformer
(:class:`RemoveImportsIfUnused`) computes scope metadata on the rewritten
module, resolves each scheduled name from the scope of the replacement
expression to the import(s) binding it, and removes such an import only if
nothing references it any more. LibCST's own ``RemoveImportsVisitor`` is not
used because it identifies imports by ``(module, obj, asname)`` anywhere in the
file and needs ``context.full_package_name`` to resolve relative imports
(without it, ``from .x import Y`` is silently never removed -- and
``apply_edits`` has no package name); resolving through scopes makes relative
and function-local imports work and leaves same-named imports of other scopes
alone.

Speed: positions are computed only for the statements holding the edits
(the top-level statement, or the method inside its classes; see
:func:`codemods._common.partial_positions`) when the source text is known, and
for the whole module otherwise; whether an import is still used is decided
from the text or Python's symbol tables when they can, and by
``ScopeProvider`` otherwise; the transform descends only along the paths to
the replaced nodes, and the tree is not deep-copied for metadata (see
:func:`_transform_without_copy`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, ClassVar

import libcst as cst
from libcst.codemod import (
    CodemodContext,
    VisitorBasedCodemodCommand,
)
from libcst.codemod.visitors import (
    AddImportsVisitor,
    RemoveImportsVisitor,
)
from libcst.metadata import (
    PositionProvider,
    ProviderT,
)

from cachelint.model import Edit, EditKind
from codemods._common import (
    ApplyResult,
    FixError,
    _describe,
    _Key,
    _Locator,
    _needs_parens,
    _overlaps,
    _span_key,
    _transform_without_copy,
    _validate,
    partial_positions,
)
from codemods.findings import load_edits
from codemods.remove_imports import RemoveImportsIfUnused

__all__ = [
    "ApplyResult",
    "FixError",
    "RemoveImportsIfUnused",
    "ReplaceExpressionsCommand",
    "apply_edits",
    "load_edits",
]


class _Target:
    __slots__ = ("edit", "node", "replacement")

    def __init__(self, edit: Edit, node: cst.BaseExpression, replacement: cst.BaseExpression) -> None:
        self.edit = edit
        self.node = node
        self.replacement = replacement


class ReplaceExpressionsCommand(VisitorBasedCodemodCommand):
    """Replace the expression spanning each edit's span by the edit's replacement.

    A span matches an expression node whose :class:`PositionProvider` range
    (which excludes the node's own parentheses) is exactly the span; with
    several such nodes the outermost wins. The node's parentheses are kept, and
    a loosely-binding replacement (``a or b``) is parenthesised where needed.
    Edits are taken in order; an edit overlapping an already accepted one is
    skipped. Skipped and unmatched edits end up in :attr:`unmatched` (and as
    codemod warnings); applied ones in :attr:`applied`.

    For the applied edits, each name in ``remove_names`` has its import removed
    if the rewritten module no longer uses it (see :class:`RemoveImportsIfUnused`).
    The rewritten module must parse and compile, else :class:`FixError`.

    Edits come from the ``edits`` argument and/or a cachelint JSON report
    (``findings``, filtered to ``context.filename``; unsafe fixes only with
    ``unsafe_fixes``).
    """

    DESCRIPTION: str = (
        "Apply cachelint fixes: replace expressions at the reported spans and drop imports that become unused."
    )
    # positions are computed in _positions: for the statements holding the
    # edits when the source text is known, else for the whole module
    METADATA_DEPENDENCIES: ClassVar[tuple[ProviderT, ...]] = ()
    # the edit kinds this command applies (subclasses add statement insertions)
    EDIT_KINDS: tuple[EditKind, ...] = (EditKind.REPLACE,)

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument(
            "--findings",
            dest="findings",
            metavar="FINDINGS_JSON",
            required=True,
            help="cachelint JSON report whose fixes should be applied.",
        )
        arg_parser.add_argument(
            "--unsafe-fixes",
            dest="unsafe_fixes",
            action="store_true",
            default=False,
            help="Also apply fixes marked unsafe.",
        )

    def __init__(
        self,
        context: CodemodContext,
        edits: Sequence[Edit] | None = None,
        findings: str | None = None,
        unsafe_fixes: bool = False,
    ) -> None:
        super().__init__(context)
        self.edits: tuple[Edit, ...] = tuple(edits or ())
        self.findings = findings
        self.unsafe_fixes = unsafe_fixes
        self.applied: list[Edit] = []
        self.unmatched: list[Edit] = []
        self.conflicting: list[Edit] = []
        self.removed_imports: list[str] = []
        self._targets: dict[cst.CSTNode, _Target] = {}
        self._ancestors: set[cst.CSTNode] = set()
        self._stack: list[cst.CSTNode] = []
        # the text the module to transform was parsed from, when the caller has it
        self.source: str | None = None
        self._pos: tuple[Any, set[cst.CSTNode] | None] | None = None

    # -- which edits -----------------------------------------------------------

    def _selected_edits(self) -> list[Edit]:
        edits = list(self.edits)
        if self.findings is not None:
            filename = self.context.filename
            if not filename:
                self.warn("no filename in the codemod context; cannot select edits from the findings report")
            else:
                edits.extend(load_edits(self.findings, filename, unsafe_fixes=self.unsafe_fixes))
        return [e for e in edits if e.kind in self.EDIT_KINDS]

    # -- driver ------------------------------------------------------------------

    def transform_module(self, tree: cst.Module) -> cst.Module:
        """Run the rewrite, then the scheduled import clean-up, then validate.

        Mirrors ``CodemodCommand.transform_module`` (main transform first, then
        the import visitors whose work was queued in ``context.scratch``) but
        without deep-copying the tree for metadata (see
        :func:`_transform_without_copy`); the tree must not repeat a node, as
        is the case for any parsed module.
        """
        self.applied, self.unmatched, self.conflicting = [], [], []
        self.removed_imports = []
        self.context.scratch.pop(RemoveImportsIfUnused.CONTEXT_KEY, None)
        tree = _transform_without_copy(self, tree)
        # LibCST's own queued import visitors (only if a subclass used them)
        for key, transform in (
            (AddImportsVisitor.CONTEXT_KEY, AddImportsVisitor),
            (RemoveImportsVisitor.CONTEXT_KEY, RemoveImportsVisitor),
        ):
            if key in self.context.scratch:
                tree = transform(self.context).transform_module(tree)
        if self.context.scratch.get(RemoveImportsIfUnused.CONTEXT_KEY):
            remover = RemoveImportsIfUnused(self.context)
            tree = remover.transform_module(tree)
            self.removed_imports = remover.removed
        self.context.scratch.pop(RemoveImportsIfUnused.CONTEXT_KEY, None)
        if self.applied:
            _validate(tree.code, self.context.filename or "<string>")
        return tree

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        edits = self._selected_edits()
        if not edits:
            return tree
        self._pos = None
        self._match(tree, edits)
        if not self._targets:
            return tree
        self._stack = []
        try:
            return tree.visit(self)
        finally:
            self._targets, self._ancestors, self._stack, self._pos = {}, set(), [], None

    # -- matching ----------------------------------------------------------------

    def _positions(self, tree: cst.Module, edits: Sequence[Edit]) -> tuple[Any, set[cst.CSTNode] | None]:
        """Positions for matching ``edits`` (computed once per transform):
        those of the statements holding them when :attr:`source` is known
        (with the nodes enclosing those statements), else the whole module's."""
        if self._pos is None:
            lines = {x.line for e in edits for x in (e.span, *e.anchors) if x.line > 0}
            got = partial_positions(tree, self.source, lines) if self.source is not None else None
            if got is None:
                wrapper = self.context.wrapper
                assert wrapper is not None  # set by _transform_without_copy
                self._pos = (wrapper.resolve(PositionProvider), None)
            else:
                self._pos = got
        return self._pos

    def _match(self, tree: cst.Module, edits: Sequence[Edit]) -> None:
        positions, enclosing = self._positions(tree, edits)
        locator = _Locator(positions, {_span_key(e.span) for e in edits}, enclosing)
        tree.visit(locator)

        accepted: list[_Key] = []
        for edit in edits:
            key = _span_key(edit.span)
            node = locator.found.get(key)
            if node is None:
                self.unmatched.append(edit)
                self.warn(f"no expression spans exactly {_describe(edit)}; edit not applied")
                continue
            if any(_overlaps(key, other) for other in accepted):
                self.unmatched.append(edit)
                self.conflicting.append(edit)
                self.warn(f"edit {_describe(edit)} overlaps an earlier edit; not applied")
                continue
            try:
                replacement = cst.parse_expression(edit.replacement.strip())
            except cst.ParserSyntaxError as exc:
                raise FixError(
                    f"{self.context.filename or '<string>'}: replacement {edit.replacement!r} "
                    f"is not a Python expression: {exc}"
                ) from exc
            accepted.append(key)
            self._targets[node] = _Target(edit, node, replacement)
            self._ancestors.update(locator.ancestors[node])
            self.applied.append(edit)

    # -- rewriting ---------------------------------------------------------------

    def on_visit(self, node: cst.CSTNode) -> bool:
        self._stack.append(node)
        visit_children = super().on_visit(node)
        # Only descend along the paths to the replaced nodes: everything else is
        # returned as is, so the cost does not grow with the module size.
        return visit_children and node in self._ancestors

    def on_leave(self, original_node: cst.CSTNode, updated_node: Any) -> Any:
        updated = super().on_leave(original_node, updated_node)
        self._stack.pop()
        target = self._targets.get(original_node)
        if target is None:
            return updated
        repl = target.replacement
        parent = self._stack[-1] if self._stack else None
        lpar, rpar = list(repl.lpar), list(repl.rpar)
        # a target's node is an expression, which has parentheses
        if not original_node.lpar and _needs_parens(repl, parent, original_node):  # type: ignore[attr-defined]
            lpar, rpar = [cst.LeftParen()], [cst.RightParen()]
        new_node = repl.with_changes(
            lpar=[*original_node.lpar, *lpar],  # type: ignore[attr-defined]
            rpar=[*rpar, *original_node.rpar],  # type: ignore[attr-defined]
        )
        for name in dict.fromkeys(target.edit.remove_names):
            # resolved (and kept if still used) after the transform
            RemoveImportsIfUnused.schedule(self.context, new_node, name)
        return new_node


def apply_edits(source: str, edits: Sequence[Edit], *, filename: str = "<string>") -> ApplyResult:
    """Apply ``edits`` to ``source`` and return the new code.

    Raises :class:`FixError` if ``source`` does not parse, a replacement is not
    an expression, or the result does not parse/compile. With nothing applied
    the returned code is ``source`` itself (byte-identical). Line endings and
    any encoding declaration are preserved (LibCST round-trips the module).
    """
    try:
        module = cst.parse_module(source)
    except Exception as exc:  # ParserSyntaxError, or e.g. a null byte
        raise FixError(f"{filename}: cannot parse source: {exc}") from exc
    if not edits:
        return ApplyResult(code=source, applied=[], unmatched=[])
    context = CodemodContext(filename=None if filename == "<string>" else filename)
    command = ReplaceExpressionsCommand(context, edits)
    command.source = source
    try:
        new_module = command.transform_module(module)
    except FixError:
        raise
    except Exception as exc:  # e.g. a CSTValidationError from an odd replacement
        raise FixError(f"{filename}: rewriting failed: {exc!r}") from exc
    code = new_module.code if command.applied else source
    return ApplyResult(
        code=code,
        applied=list(command.applied),
        unmatched=list(command.unmatched),
        conflicting=list(command.conflicting),
        removed_imports=list(command.removed_imports),
    )
