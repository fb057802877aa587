"""The rule registry: one module per rule, listed here in code order."""

from __future__ import annotations

from .base import Example, Rule
from .cl000_parse_error import ParseError
from .cl001_cached_value_recomputed import CachedValueRecomputed
from .cl002_expensive_call_on_hot_path import ExpensiveCallOnHotPath

ALL_RULES: tuple[type[Rule], ...] = (ParseError, CachedValueRecomputed, ExpensiveCallOnHotPath)
BY_CODE = {r.code: r for r in ALL_RULES}


class UnknownRuleError(ValueError):
    pass


def select_rules(select: tuple[str, ...] = (), ignore: tuple[str, ...] = ()) -> list[type[Rule]]:
    """ruff-style prefix selection: ``CL`` selects all, ``CL00`` CL000-CL009."""
    for code in tuple(select) + tuple(ignore):
        if code.upper() in ("ALL",):
            continue
        if not any(r.code.startswith(code.upper()) for r in ALL_RULES):
            raise UnknownRuleError(f"unknown rule selector `{code}` (known: {', '.join(BY_CODE)})")
    chosen = []
    for r in ALL_RULES:
        sel = not select or any(r.code.startswith(s.upper()) or s.upper() == "ALL" for s in select)
        ign = any(r.code.startswith(s.upper()) or s.upper() == "ALL" for s in ignore)
        if sel and not ign:
            chosen.append(r)
    return chosen


__all__ = ["ALL_RULES", "BY_CODE", "Example", "Rule", "UnknownRuleError", "select_rules"]
