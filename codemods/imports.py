"""Add ``import X`` where isort and ruff's import sorting (``I001``) put it.

LibCST's ``AddImportsVisitor`` appends a new import after the last one, so
``import functools`` landed below the third-party block and the file then
failed ``ruff check --select I``. Here a standard-library import goes into
the standard-library section (after any ``from __future__`` imports), among
its plain ``import`` lines in sorted order (isort's default puts them before
the ``from`` imports of the section); a module with no such section gets one,
separated from its neighbours by a blank line. A third-party or first-party
module goes at the end of the leading import block, as before.
"""

from __future__ import annotations

import sys

import libcst as cst

_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ()))


def _imports(stmt: cst.CSTNode) -> list[cst.Import | cst.ImportFrom] | None:
    """The imports of a top-level line made only of imports, else None."""
    if not isinstance(stmt, cst.SimpleStatementLine) or not stmt.body:
        return None
    if not all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body):
        return None
    return list(stmt.body)  # type: ignore[arg-type]


def _module_of(imp: cst.Import | cst.ImportFrom) -> str:
    if isinstance(imp, cst.Import):
        return cst.Module(body=[]).code_for_node(imp.names[0].name)
    if imp.relative or imp.module is None:
        return "."
    return cst.Module(body=[]).code_for_node(imp.module)


def _section(stmt: cst.CSTNode) -> str:
    imps = _imports(stmt)
    if not imps:
        return "other"
    module = _module_of(imps[0])
    if module == "__future__":
        return "future"
    if module.split(".")[0] in _STDLIB:
        return "stdlib"
    return "other"


def _key(name: str) -> tuple[str, str]:
    return (name.lower(), name)


def _is_docstring(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def has_import(tree: cst.Module, module: str) -> bool:
    """``import module`` (no alias) at the top level of ``tree``."""
    for stmt in tree.body:
        for imp in _imports(stmt) or ():
            if isinstance(imp, cst.Import) and any(
                a.asname is None and cst.Module(body=[]).code_for_node(a.name) == module for a in imp.names
            ):
                return True
    return False


def _split_blank(lines) -> tuple[tuple, tuple]:
    """Leading lines as (the blank lines first, the rest: comments stay with their statement)."""
    lines = tuple(lines)
    n = 0
    while n < len(lines) and lines[n].comment is None:
        n += 1
    return lines[:n], lines[n:]


def add_import(tree: cst.Module, module: str) -> cst.Module:
    """``tree`` with ``import module`` added where import sorting puts it (unchanged if present)."""
    if has_import(tree, module):
        return tree
    body = list(tree.body)
    start = 1 if body and _is_docstring(body[0]) else 0
    end = start
    while end < len(body) and _imports(body[end]) is not None:
        end += 1
    new = cst.SimpleStatementLine(body=[cst.Import(names=[cst.ImportAlias(name=cst.parse_expression(module))])])  # type: ignore[arg-type]
    blank = cst.EmptyLine()
    if module.split(".")[0] not in _STDLIB:
        if end == start:  # no import block: a new one
            return _insert_section(tree, body, start, new, blank)
        body.insert(end, new)
        return tree.with_changes(body=body)
    sections = [_section(s) for s in body[start:end]]
    stdlib = [start + i for i, s in enumerate(sections) if s == "stdlib"]
    if not stdlib:
        at = start + sum(1 for s in sections if s == "future")
        if at == end and end > start:  # only __future__ imports: a section after them
            body.insert(at, new.with_changes(leading_lines=(blank,)))
            return tree.with_changes(body=body)
        return _insert_section(tree, body, at, new, blank)
    plain = [i for i in stdlib if isinstance(_imports(body[i])[0], cst.Import)]  # type: ignore[index]
    after = [i for i in plain if _key(_module_of(_imports(body[i])[0])) > _key(module)]  # type: ignore[index]
    if after:
        at = after[0]
    elif plain:
        at = plain[-1] + 1
    else:  # only `from` imports in the section: plain imports go first
        at = stdlib[0]
    if at <= stdlib[-1] and (after or not plain):
        # takes the place of the line it goes before: its blank lines move up, comments stay
        old = body[at]
        blanks, rest = _split_blank(old.leading_lines)
        body[at] = old.with_changes(leading_lines=rest)
        new = new.with_changes(leading_lines=blanks)
    body.insert(at, new)
    return tree.with_changes(body=body)


def _insert_section(tree: cst.Module, body: list, at: int, new, blank) -> cst.Module:
    """A section of its own at ``at``: a blank line after it, and one before it
    unless it opens the module."""
    if at < len(body):
        nxt = body[at]
        blanks, rest = _split_blank(nxt.leading_lines)
        new = new.with_changes(leading_lines=blanks if at > 0 else ())
        following = 2 if isinstance(nxt, (cst.FunctionDef, cst.ClassDef)) and _imports(nxt) is None else 1
        if _imports(nxt) is not None:
            following = 1
        body[at] = nxt.with_changes(leading_lines=(blank,) * following + tuple(rest))
    elif at > 0:
        new = new.with_changes(leading_lines=(blank,))
    body.insert(at, new)
    return tree.with_changes(body=body)
