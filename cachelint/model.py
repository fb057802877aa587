"""Plain data shared by every stage of the pipeline: findings, fixes and edits.

Everything here is a frozen dataclass of builtins so it pickles cheaply (the
index and the findings cross process boundaries and, later, an on-disk cache).

Positions: ``line`` is 1-based; ``column`` is a 0-based offset in *characters*
(code points) inside the line, the convention LibCST's ``PositionProvider``
uses. Output formats convert to 1-based columns, as ruff does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Applicability(str, Enum):
    """How much a fix can be trusted, computed per finding (ruff's model)."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True)
class Span:
    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True)
class Edit:
    """Replace the expression that spans exactly ``span`` by ``replacement``.

    ``remove_names`` are module-level names the replaced expression used; the
    codemod drops their imports if, after the edit, nothing in the module uses
    them any more. The fixer only lists names it knows no other module imports
    from this one.
    """

    span: Span
    replacement: str
    remove_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Fix:
    applicability: Applicability
    edits: tuple[Edit, ...]
    message: str = ""
    # what the rewrite relies on, in words (the guard, the fill site, ...)
    relies_on: tuple[str, ...] = ()

    @property
    def replacement(self) -> str:
        return self.edits[0].replacement if self.edits else ""


@dataclass(frozen=True)
class Finding:
    code: str
    path: str
    span: Span
    message: str
    function: str | None = None
    hot_path: tuple[str, ...] | None = None
    fix: Fix | None = None
    notes: tuple[str, ...] = ()
    # rule-specific structured data (cache site, residual guard, ...); JSON-able
    data: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def line(self) -> int:
        return self.span.line

    @property
    def column(self) -> int:
        return self.span.column
