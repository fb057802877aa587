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


class EditKind(str, Enum):
    """What an :class:`Edit` does; each kind is applied by one codemod."""

    # replace the expression spanning exactly ``span`` by ``replacement``
    REPLACE = "replace"
    # append the statement ``replacement`` at the end of the body of the
    # function ``target`` (a qualified name inside the module, e.g.
    # ``Runner.__init__``) whose ``def`` is on ``span.line``
    APPEND_TO_FUNCTION = "append_to_function"
    # insert the statement ``replacement`` before the statement that holds the
    # first of ``anchors``, in the innermost block holding all of them
    INSERT_BEFORE = "insert_before"
    # add the decorator ``replacement`` (outermost) to the function ``target``
    ADD_DECORATOR = "add_decorator"
    # make sure the module imports ``target`` (``import target``)
    ADD_IMPORT = "add_import"


@dataclass(frozen=True)
class Edit:
    """One change to a file. By default: replace the expression that spans
    exactly ``span`` by ``replacement`` (see :class:`EditKind` for the others).

    ``remove_names`` are module-level names the replaced expression used; the
    codemod drops their imports if, after the edit, nothing in the module uses
    them any more. The fixer only lists names it knows no other module imports
    from this one.

    Edits are values: two findings whose fixes need the same statement
    (two reads of one hoisted value) carry equal edits, applied once.
    """

    span: Span
    replacement: str
    remove_names: tuple[str, ...] = ()
    kind: EditKind = EditKind.REPLACE
    target: str = ""
    anchors: tuple[Span, ...] = ()


@dataclass(frozen=True)
class Fix:
    applicability: Applicability
    edits: tuple[Edit, ...]
    message: str = ""
    # what the rewrite relies on, in words (the guard, the fill site, ...)
    relies_on: tuple[str, ...] = ()

    @property
    def replacement(self) -> str:
        for e in self.edits:
            if e.kind is EditKind.REPLACE:
                return e.replacement
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


@dataclass(frozen=True)
class HotCoverage:
    """How much of the program the hot-root patterns made hot, for a run's summary.

    ``patterns``: the hot-root patterns configured (presets included);
    ``matched``: the patterns that matched at least one function; ``roots``:
    the functions they matched; ``functions``: every function reachable from
    them (the roots included), i.e. what CL002 analysed as hot.
    """

    patterns: int
    matched: int
    roots: int
    functions: int
    # the roots were set to an empty list on purpose (`hot-roots = []`)
    declared_empty: bool = False

    @property
    def vacuous(self) -> bool:
        """No function was analysed as hot, and nobody asked for that."""
        return self.functions == 0 and not self.declared_empty
