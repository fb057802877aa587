"""Removing imports that a rewrite left unused: resolved through scopes, so
relative and function-local imports work and same-named imports elsewhere stay."""

from __future__ import annotations

import re
import symtable
from collections.abc import Sequence
from typing import Any, ClassVar

import libcst as cst
from libcst.codemod import (
    CodemodContext,
    ContextAwareTransformer,
)
from libcst.codemod.visitors import (
    GatherUnusedImportsVisitor,
)
from libcst.metadata import (
    ImportAssignment,
    ProviderT,
    ScopeProvider,
)

from codemods._common import _AnyImport, _transform_without_copy


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


def _mentioned_only_in(alias: cst.ImportAlias, stmt: _AnyImport, module: cst.Module, code: str) -> bool:
    """The names ``alias`` binds occur in ``code`` (the module's text) only
    inside its import statement ``stmt``: nothing can use them, not even a
    string annotation or ``__all__``."""
    names = {_local_name(alias)}
    if alias.asname is None:
        names.add(alias.evaluated_name)
    stmt_code = module.code_for_node(stmt)
    for n in names:
        pattern = rf"(?<![\w.]){re.escape(n)}(?!\w)"
        if len(re.findall(pattern, code)) > len(re.findall(pattern, stmt_code)):
            return False
    return True


def _used_at_module_level(code: str, names: set[str]) -> bool:
    """Every name of ``names`` is bound in ``code`` by a module-level import
    and nothing else (no other scope binds it, no module-level assignment,
    ``def`` or ``class``), and some scope reads it as that global: the import
    is used, and stays. Python's own symbol tables decide, at a fraction of
    the cost of LibCST's scope analysis; False when they cannot say (the
    name may be unused, or bound more than once)."""
    try:
        top = symtable.symtable(code, "<module>", "exec")
    except (SyntaxError, ValueError):
        return False
    read: set[str] = set()
    for n in names:
        try:
            sym = top.lookup(n)
        except KeyError:
            return False
        if not sym.is_imported() or sym.is_assigned():
            return False
        if sym.is_referenced():
            read.add(n)
    stack = list(top.get_children())
    while stack:
        t = stack.pop()
        stack.extend(t.get_children())
        for n in names:
            try:
                sym = t.lookup(n)
            except KeyError:
                continue
            if sym.is_local() or sym.is_imported() or sym.is_parameter():
                return False  # another binding of the name: which one a request means is for the scopes
            if sym.is_referenced() and sym.is_global():
                read.add(n)
    return read == names


def _is_future_import(stmt: _AnyImport) -> bool:
    return (
        isinstance(stmt, cst.ImportFrom)
        and not stmt.relative
        and isinstance(stmt.module, cst.Name)
        and stmt.module.value == "__future__"
    )


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
    module's text outside its import statement (removed), or Python's symbol
    tables show that some scope reads the module-level import (kept). ``from __future__`` imports and
    star imports are never removed, nor is any import not scheduled.

    When a whole import line goes, comment lines above it move to the next
    statement; own-line comments inside a parenthesised import are kept.
    """

    CONTEXT_KEY = "cachelint.codemods.RemoveImportsIfUnused"
    # ScopeProvider (and GatherUnusedImportsVisitor's other dependencies) are
    # resolved on demand: most requests are decided from the text (_by_text)
    METADATA_DEPENDENCIES: ClassVar[tuple[ProviderT, ...]] = ()

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
        code = node.code
        doomed = self._by_text(node, code)
        if doomed is None and _used_at_module_level(code, {n.split(".", 1)[0] for _w, n in self._requests}):
            doomed = set()  # every requested name is read: nothing to remove
        self._doomed = doomed if doomed is not None else self._by_scope(node, code)
        if not self._doomed:
            return False
        self._carry.append([])
        return True

    def _by_text(self, module: cst.Module, code: str) -> set[cst.ImportAlias] | None:
        """The doomed aliases without scope analysis, or None when the text
        cannot decide: every requested name is bound by exactly one alias of
        the module's top-level imports and occurs in the module's text only
        inside that import statement. Then that alias is the binding every
        scope of the module sees, and nothing uses it: what scope analysis
        would decide too, at the cost of a regular expression per name."""
        bindings: dict[str, list[tuple[cst.ImportAlias, _AnyImport]]] = {}
        for line in module.body:
            if not isinstance(line, cst.SimpleStatementLine):
                continue
            for small in line.body:
                if not isinstance(small, (cst.Import, cst.ImportFrom)) or isinstance(small.names, cst.ImportStar):
                    continue
                for alias in small.names:
                    bindings.setdefault(_local_name(alias), []).append((alias, small))
        doomed: set[cst.ImportAlias] = set()
        for _where, name in self._requests:
            bound = bindings.get(name.split(".", 1)[0], [])
            if len(bound) != 1 or not _binds(bound[0][0], name):
                return None
            alias, stmt = bound[0]
            if _is_future_import(stmt) or not _mentioned_only_in(alias, stmt, module, code):
                return None
            doomed.add(alias)
        return doomed

    def _by_scope(self, node: cst.Module, code: str) -> set[cst.ImportAlias]:
        wrapper = self.context.wrapper
        assert wrapper is not None
        scopes = wrapper.resolve(ScopeProvider)
        candidates: dict[cst.ImportAlias, _AnyImport] = {}
        for where, name in self._requests:
            scope = scopes.get(where)
            if scope is None:
                continue
            for assignment in scope[name]:
                stmt = getattr(assignment, "node", None)
                if not isinstance(assignment, ImportAssignment) or not isinstance(stmt, (cst.Import, cst.ImportFrom)):
                    continue
                if isinstance(stmt.names, cst.ImportStar) or _is_future_import(stmt):
                    continue
                for alias in stmt.names:
                    if _binds(alias, name):
                        candidates[alias] = stmt
        return self._unused(node, code, candidates) if candidates else set()

    def _unused(
        self, module: cst.Module, code: str, candidates: dict[cst.ImportAlias, _AnyImport]
    ) -> set[cst.ImportAlias]:
        """The candidates nothing in ``module`` uses.

        Fast path: a candidate whose bound names occur nowhere in the module's
        text except in its own import statement cannot be used (not even from a
        string annotation or ``__all__``). The others are decided by LibCST's
        ``GatherUnusedImportsVisitor`` (scope analysis + ``__all__`` + string
        annotations), which is computed only if needed -- it costs several full
        walks of the module.
        """
        unused: set[cst.ImportAlias] = set()
        undecided: dict[cst.ImportAlias, _AnyImport] = {}
        for alias, stmt in candidates.items():
            if _mentioned_only_in(alias, stmt, module, code):
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
