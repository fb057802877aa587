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

Speed: only ``PositionProvider`` is computed for the rewrite (``ScopeProvider``
only when some applied edit lists ``remove_names``), the transform descends
only along the paths to the replaced nodes, and the tree is not deep-copied
for metadata (see :func:`_transform_without_copy`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import libcst as cst
from libcst.codemod import (
    CodemodContext,
    ContextAwareTransformer,
    VisitorBasedCodemodCommand,
)
from libcst.codemod.visitors import (
    AddImportsVisitor,
    GatherUnusedImportsVisitor,
    RemoveImportsVisitor,
)
from libcst.metadata import (
    ImportAssignment,
    MetadataWrapper,
    PositionProvider,
    ProviderT,
    ScopeProvider,
)

from cachelint.model import Applicability, Edit, EditKind, Span

__all__ = [
    "ApplyResult",
    "FixError",
    "RemoveImportsIfUnused",
    "ReplaceExpressionsCommand",
    "apply_edits",
    "load_edits",
]

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


# ---------------------------------------------------------------------------
# small helpers


def _span_key(span: Span) -> _Key:
    return (span.line, span.column, span.end_line, span.end_column)


def _overlaps(a: _Key, b: _Key) -> bool:
    return (a[0], a[1]) < (b[2], b[3]) and (b[0], b[1]) < (a[2], a[3])


def _describe(edit: Edit) -> str:
    s = edit.span
    return f"{s.line}:{s.column + 1}-{s.end_line}:{s.end_column + 1} -> {edit.replacement!r}"


def _local_name(alias: cst.ImportAlias) -> str:
    """The name an import alias binds (``import a.b`` binds ``a``)."""
    if alias.asname is not None:
        return cst.ensure_type(alias.asname.name, cst.Name).value
    return alias.evaluated_name.split(".", 1)[0]


def _binds(alias: cst.ImportAlias, name: str) -> bool:
    """Whether ``alias`` is the import that provides ``name``.

    ``name`` is the local name; for a plain ``import a.b`` the dotted
    ``a.b`` is accepted as well.
    """
    if alias.asname is not None:
        return _local_name(alias) == name
    full = alias.evaluated_name
    return name == full or name == full.split(".", 1)[0] or full.startswith(name + ".")


def _is_future_import(stmt: _AnyImport) -> bool:
    return (
        isinstance(stmt, cst.ImportFrom)
        and not stmt.relative
        and isinstance(stmt.module, cst.Name)
        and stmt.module.value == "__future__"
    )


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


# ---------------------------------------------------------------------------
# parenthesisation of replacements

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


# ---------------------------------------------------------------------------
# the findings report


_REPORT_CACHE: dict[tuple[str, int, int], list[Any]] = {}


def _read_report(path: str) -> list[Any]:
    real = os.path.realpath(path)
    st = os.stat(real)
    key = (real, st.st_mtime_ns, st.st_size)
    if key not in _REPORT_CACHE:
        with open(real, encoding="utf-8") as fp:
            data = json.load(fp)
        if isinstance(data, dict) and isinstance(data.get("findings"), list):
            data = data["findings"]
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON list of findings")
        _REPORT_CACHE.clear()
        _REPORT_CACHE[key] = data
    return _REPORT_CACHE[key]


def _same_file(candidates: Iterable[str], target: str) -> bool:
    target_real = os.path.realpath(target)
    for cand in candidates:
        if os.path.realpath(cand) == target_real:
            return True
        try:
            if os.path.samefile(cand, target):
                return True
        except OSError:
            continue
    return False


def load_edits(findings: str, filename: str, *, unsafe_fixes: bool = False) -> list[Edit]:
    """Edits of a cachelint JSON report that apply to ``filename``.

    The report is a JSON list of findings ``{"path": ..., "fix": null | {
    "applicability": "safe" | "unsafe", "edits": [{"line", "column", "end_line",
    "end_column", "replacement", "remove_names"}]}}`` with 1-based lines and
    1-based columns (converted here to the 0-based columns of :class:`Span`).
    A relative ``path`` is tried against the working directory and against the
    report's directory. Fixes not marked ``"safe"`` are skipped unless
    ``unsafe_fixes``. Edits keep the report's order.
    """
    report_dir = os.path.dirname(os.path.abspath(findings))
    edits: list[Edit] = []
    for finding in _read_report(findings):
        if not isinstance(finding, dict):
            continue
        fix = finding.get("fix")
        path = finding.get("path")
        if not fix or not isinstance(path, str):
            continue
        # anything not explicitly "safe" counts as unsafe
        safe = fix.get("applicability") == Applicability.SAFE.value
        if not safe and not unsafe_fixes:
            continue
        candidates = [path] if os.path.isabs(path) else [path, os.path.join(report_dir, path)]
        if not _same_file(candidates, filename):
            continue
        for raw in fix.get("edits") or ():
            edits.append(
                Edit(
                    span=Span(
                        line=int(raw["line"]),
                        column=int(raw["column"]) - 1,
                        end_line=int(raw["end_line"]),
                        end_column=int(raw["end_column"]) - 1,
                    ),
                    replacement=str(raw["replacement"]),
                    remove_names=tuple(raw.get("remove_names") or ()),
                    kind=EditKind(raw.get("kind") or EditKind.REPLACE.value),
                    target=str(raw.get("target") or ""),
                    anchors=tuple(
                        Span(int(a[0]), int(a[1]) - 1, int(a[2]), int(a[3]) - 1) for a in raw.get("anchors") or ()
                    ),
                )
            )
    return edits


# ---------------------------------------------------------------------------
# import clean-up, run after the main transform


def _comment_lines(ws: cst.BaseParenthesizableWhitespace) -> list[cst.EmptyLine]:
    if isinstance(ws, cst.ParenthesizedWhitespace):
        return [line for line in ws.empty_lines if line.comment is not None]
    return []


def _append_comments(
    ws: cst.BaseParenthesizableWhitespace,
    comments: Sequence[cst.EmptyLine],
    template: cst.BaseParenthesizableWhitespace | None,
) -> cst.BaseParenthesizableWhitespace:
    """``ws`` followed by own-line ``comments`` (of a removed alias).

    ``template`` is the whitespace that used to precede the next alias; it gives
    the indentation when ``ws`` was single-line.
    """
    if not comments:
        return ws
    if isinstance(ws, cst.ParenthesizedWhitespace):
        return ws.with_changes(empty_lines=[*ws.empty_lines, *comments])
    if isinstance(template, cst.ParenthesizedWhitespace):
        return template.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=list(comments))
    return cst.ParenthesizedWhitespace(first_line=cst.TrailingWhitespace(), empty_lines=list(comments), indent=True)


class RemoveImportsIfUnused(ContextAwareTransformer):
    """Remove the imports of scheduled names if nothing in the module uses them.

    Works like LibCST's ``RemoveImportsVisitor``: while transforming, call
    :meth:`schedule` (it records the request in ``context.scratch``); afterwards
    run this transformer on the transformed module (the command does it in its
    ``transform_module``). A request is ``(node, name)``: the import(s) that
    ``name`` resolves to as seen from ``node``'s scope -- ``node`` being a node
    of the module to transform, e.g. the replacement expression. An import
    alias is removed only if it is unused in that module: LibCST's
    ``GatherUnusedImportsVisitor`` (scope analysis, ``__all__``, names in string
    annotations) decides, unless the bound name does not even occur in the
    module's text outside its import statement. ``from __future__`` imports and
    star imports are never removed, nor is any import not scheduled.

    When a whole import line goes, comment lines above it move to the next
    statement; own-line comments inside a parenthesised import are kept.
    """

    CONTEXT_KEY = "cachelint.codemods.RemoveImportsIfUnused"
    # GatherUnusedImportsVisitor's other dependencies are resolved on demand
    METADATA_DEPENDENCIES: ClassVar[tuple[ProviderT, ...]] = (ScopeProvider,)

    @staticmethod
    def schedule(context: CodemodContext, node: cst.CSTNode, name: str) -> None:
        """Remove the import binding ``name`` (as seen from ``node``) if unused."""
        requests = context.scratch.setdefault(RemoveImportsIfUnused.CONTEXT_KEY, [])
        requests.append((node, name))

    def __init__(self, context: CodemodContext, requests: Sequence[tuple[cst.CSTNode, str]] = ()) -> None:
        super().__init__(context)
        self._requests: list[tuple[cst.CSTNode, str]] = [
            *context.scratch.get(self.CONTEXT_KEY, ()),
            *requests,
        ]
        self._doomed: set[cst.ImportAlias] = set()
        self._removed_stmts: set[cst.CSTNode] = set()
        # one frame per statement block being visited: comment lines waiting
        # for the next statement of that block
        self._carry: list[list[cst.EmptyLine]] = []
        self._carry_for: dict[cst.CSTNode, list[cst.EmptyLine]] = {}
        self.removed: list[str] = []

    def transform_module(self, tree: cst.Module) -> cst.Module:
        # no deep copy: the scheduled nodes must keep their identity
        return _transform_without_copy(self, tree)

    # -- selection ---------------------------------------------------------

    def visit_Module(self, node: cst.Module) -> bool:
        if not self._requests:
            return False
        scopes = self.metadata[ScopeProvider]
        candidates: dict[cst.ImportAlias, _AnyImport] = {}
        for where, name in self._requests:
            scope = scopes.get(where)
            if scope is None:
                continue
            for assignment in scope[name]:  # type: ignore[index]  # libcst types the metadata values `object`
                stmt = getattr(assignment, "node", None)
                if not isinstance(assignment, ImportAssignment) or not isinstance(stmt, (cst.Import, cst.ImportFrom)):
                    continue
                if isinstance(stmt.names, cst.ImportStar) or _is_future_import(stmt):
                    continue
                for alias in stmt.names:
                    if _binds(alias, name):
                        candidates[alias] = stmt
        if candidates:
            self._doomed = self._unused(node, candidates)
        if not self._doomed:
            return False
        self._carry.append([])
        return True

    def _unused(self, module: cst.Module, candidates: dict[cst.ImportAlias, _AnyImport]) -> set[cst.ImportAlias]:
        """The candidates nothing in ``module`` uses.

        Fast path: a candidate whose bound names occur nowhere in the module's
        text except in its own import statement cannot be used (not even from a
        string annotation or ``__all__``). The others are decided by LibCST's
        ``GatherUnusedImportsVisitor`` (scope analysis + ``__all__`` + string
        annotations), which is computed only if needed -- it costs several full
        walks of the module.
        """
        code = module.code
        unused: set[cst.ImportAlias] = set()
        undecided: dict[cst.ImportAlias, _AnyImport] = {}
        for alias, stmt in candidates.items():
            names = {_local_name(alias)}
            if alias.asname is None:
                names.add(alias.evaluated_name)
            stmt_code = module.code_for_node(stmt)
            if all(
                len(re.findall(rf"(?<![\w.]){re.escape(n)}(?!\w)", code))
                <= len(re.findall(rf"(?<![\w.]){re.escape(n)}(?!\w)", stmt_code))
                for n in names
            ):
                unused.add(alias)
            else:
                undecided[alias] = stmt
        if undecided:
            wrapper = self.context.wrapper
            assert wrapper is not None
            wrapper.resolve_many(GatherUnusedImportsVisitor.get_inherited_dependencies())
            gather = GatherUnusedImportsVisitor(self.context)
            module.visit(gather)
            unused.update(alias for alias, _ in gather.unused_imports if alias in undecided)
        return unused

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if not self._doomed:
            return updated_node
        carry = self._carry.pop()
        if carry:
            updated_node = updated_node.with_changes(footer=[*carry, *updated_node.footer])
        return updated_node

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> bool:
        self._carry.append([])
        return True

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        carry = self._carry.pop()
        if carry:
            updated_node = updated_node.with_changes(footer=[*carry, *updated_node.footer])
        return updated_node

    # -- statements ----------------------------------------------------------

    def on_visit(self, node: cst.CSTNode) -> bool:
        # Comment lines carried from a removed line go to the next statement of
        # the same block, i.e. the next statement *visited* while that block's
        # frame is on top (an ``elif`` is visited after its ``if`` took them).
        if isinstance(node, cst.BaseStatement) and self._carry and self._carry[-1]:
            self._carry_for[node], self._carry[-1] = self._carry[-1], []
        visit_children = super().on_visit(node)
        # imports are statements, never inside an expression
        return visit_children and not isinstance(node, cst.BaseExpression)

    def on_leave(self, original_node: cst.CSTNode, updated_node: Any) -> Any:
        updated = super().on_leave(original_node, updated_node)
        carry = self._carry_for.pop(original_node, None)
        if carry:
            if isinstance(updated, cst.RemovalSentinel):
                self._carry[-1].extend(carry)
            elif isinstance(updated, cst.CSTNode) and hasattr(updated, "leading_lines"):
                updated = updated.with_changes(leading_lines=[*carry, *updated.leading_lines])
        return updated

    def leave_SimpleStatementLine(
        self,
        original_node: cst.SimpleStatementLine,
        updated_node: cst.SimpleStatementLine,
    ) -> cst.SimpleStatementLine | cst.RemovalSentinel:
        if not any(s in self._removed_stmts for s in original_node.body):
            return updated_node
        if not updated_node.body:
            # the whole line goes; comment lines above it move to the next statement
            # (in on_leave, after any lines carried to this one)
            if any(line.comment is not None for line in updated_node.leading_lines):
                carry = self._carry_for.setdefault(original_node, [])
                carry.extend(updated_node.leading_lines)
            return cst.RemoveFromParent()
        if original_node.body[-1] in self._removed_stmts:
            last = updated_node.body[-1]
            updated_node = updated_node.with_changes(
                body=[
                    *updated_node.body[:-1],
                    last.with_changes(semicolon=cst.MaybeSentinel.DEFAULT),
                ]
            )
        return updated_node

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import) -> cst.Import | cst.RemovalSentinel:
        return self._prune(original_node, updated_node)

    def leave_ImportFrom(
        self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
    ) -> cst.ImportFrom | cst.RemovalSentinel:
        return self._prune(original_node, updated_node)

    def _prune(self, original: _AnyImport, updated: Any) -> Any:
        if isinstance(original.names, cst.ImportStar):
            return updated
        flags = [alias in self._doomed for alias in original.names]
        if not any(flags):
            return updated
        self.removed.extend(_local_name(a) for a, doomed in zip(original.names, flags) if doomed)
        if all(flags):
            self._removed_stmts.add(original)
            return cst.RemoveFromParent()

        names: Sequence[cst.ImportAlias] = updated.names
        parenthesized = isinstance(original, cst.ImportFrom) and isinstance(updated.lpar, cst.LeftParen)
        lpar = updated.lpar if parenthesized else None
        kept: list[cst.ImportAlias] = []
        pending: list[cst.EmptyLine] = []  # own-line comments of removed aliases
        template: cst.BaseParenthesizableWhitespace | None = None
        for alias, doomed in zip(names, flags):
            if doomed:
                if isinstance(alias.comma, cst.Comma):
                    pending.extend(_comment_lines(alias.comma.whitespace_after))
                    template = alias.comma.whitespace_after
                continue
            if pending:
                if kept:
                    prev = kept[-1]
                    comma = cst.ensure_type(prev.comma, cst.Comma)
                    kept[-1] = prev.with_changes(
                        comma=comma.with_changes(
                            whitespace_after=_append_comments(comma.whitespace_after, pending, template)
                        )
                    )
                elif lpar is not None:
                    lpar = lpar.with_changes(
                        whitespace_after=_append_comments(lpar.whitespace_after, pending, template)
                    )
                pending = []
            kept.append(alias)

        rpar = updated.rpar if parenthesized else None
        if flags[-1]:
            # The old last alias went: what now follows the new last alias is
            # its comma's whitespace, then (old trailing comma's whitespace and)
            # the whitespace before ")".
            last = kept[-1]
            last_comma = cst.ensure_type(last.comma, cst.Comma)
            last_ws = last_comma.whitespace_after
            old_last_comma = names[-1].comma
            tail = old_last_comma.whitespace_after if isinstance(old_last_comma, cst.Comma) else None
            PW = cst.ParenthesizedWhitespace
            close_ws = rpar.whitespace_before if rpar is not None else None
            last_has_comments = isinstance(last_ws, PW) and (
                last_ws.first_line.comment is not None or bool(_comment_lines(last_ws))
            )
            if rpar is not None and (last_has_comments or pending or isinstance(tail, PW) or isinstance(close_ws, PW)):
                # multi-line: keep the comma (legal inside parentheses), keep the
                # new last alias's trailing comment and any own-line comments,
                # and close with the old indentation of ")".
                closing = [
                    *pending,
                    *(_comment_lines(close_ws) if close_ws is not None else ()),
                ]
                if isinstance(last_ws, PW):
                    ws = last_ws.with_changes(empty_lines=[*last_ws.empty_lines, *closing])
                else:
                    ws = PW(first_line=cst.TrailingWhitespace(), empty_lines=closing)
                indent_from = close_ws if isinstance(close_ws, PW) else tail
                if isinstance(indent_from, PW):
                    ws = ws.with_changes(indent=indent_from.indent, last_line=indent_from.last_line)
                else:
                    ws = ws.with_changes(indent=True, last_line=cst.SimpleWhitespace(""))
                kept[-1] = last.with_changes(comma=last_comma.with_changes(whitespace_after=ws))
                rpar = rpar.with_changes(whitespace_before=cst.SimpleWhitespace(""))
            elif rpar is not None and tail is not None:
                # single line with a trailing comma: "(A, B,)" -> "(A,)"
                kept[-1] = last.with_changes(comma=last_comma.with_changes(whitespace_after=tail))
            else:
                kept[-1] = last.with_changes(comma=cst.MaybeSentinel.DEFAULT)

        changes: dict[str, Any] = {"names": kept}
        if lpar is not None:
            changes["lpar"] = lpar
        if rpar is not None:
            changes["rpar"] = rpar
        return updated.with_changes(**changes)


# ---------------------------------------------------------------------------
# the codemod command


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
    METADATA_DEPENDENCIES: ClassVar[tuple[ProviderT, ...]] = (PositionProvider,)
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
        self._match(tree, edits)
        if not self._targets:
            return tree
        self._stack = []
        try:
            return tree.visit(self)
        finally:
            self._targets, self._ancestors, self._stack = {}, set(), []

    # -- matching ----------------------------------------------------------------

    def _match(self, tree: cst.Module, edits: Sequence[Edit]) -> None:
        locator = _Locator(self.metadata[PositionProvider], {_span_key(e.span) for e in edits})
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


# ---------------------------------------------------------------------------
# in-process entry point


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
