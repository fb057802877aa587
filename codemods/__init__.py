"""LibCST codemods that apply cachelint fixes.

:func:`apply_edits` is what the cachelint fixer calls in-process;
:class:`ReplaceExpressionsCommand` is the same rewrite as a LibCST codemod
command, runnable from the repository root with::

    python -m libcst.tool codemod --no-format \\
        replace_expression.ReplaceExpressionsCommand --findings findings.json PATHS

The names are loaded lazily (PEP 562) so that ``python -m libcst.tool list``,
which scans this package's modules and keeps the shortest name per command,
lists ``replace_expression.ReplaceExpressionsCommand`` rather than
``__init__.ReplaceExpressionsCommand``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codemods.hoist import HoistCommand
    from codemods.memoize import MemoizeCommand
    from codemods.replace_expression import (
        ApplyResult,
        FixError,
        RemoveImportsIfUnused,
        ReplaceExpressionsCommand,
        apply_edits,
        load_edits,
    )

_HOME = {"HoistCommand": "codemods.hoist", "MemoizeCommand": "codemods.memoize"}

__all__ = [
    "ApplyResult",
    "FixError",
    "HoistCommand",
    "MemoizeCommand",
    "RemoveImportsIfUnused",
    "ReplaceExpressionsCommand",
    "apply_edits",
    "load_edits",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module(_HOME.get(name, "codemods.replace_expression")), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
