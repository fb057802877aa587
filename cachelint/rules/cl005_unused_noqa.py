"""CL005: a suppression comment that names a rule code nothing needs suppressed."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar

from ..model import Finding, Span
from ._shared import LOCK_CATALOG, LOCK_CONFIG, LOCK_FILL
from .base import Example, Rule

if TYPE_CHECKING:
    from ..facts.analysis import Analysis


class UnusedNoqa(Rule):
    """## What it does
    Finds ``# noqa: CLxxx`` and ``# cachelint: ignore[CLxxx]`` comments that
    suppress nothing: no finding of that rule spans the comment's line in this
    run, or no rule has that code. Only codes of the rules that ran are
    judged (a ``# noqa: CL002`` is left alone by ``--select CL001``), and
    other tools' codes (``E501``) and bare ``# noqa`` are never reported. Like
    ruff's RUF100 it is off unless selected: ``--select CL005``, or a
    selector that names it (``CL``, ``ALL``).

    ## Why is this bad?
    A stale suppression hides the next real finding on its line: once the
    expensive call it silenced is gone, a new one added there is silenced
    too. A comment naming a code no rule has (a typo) never suppressed
    anything.

    ## Example
    ```python
    def step(self):
        return self.cache.value  # noqa: CL001  (the call it silenced was fixed)
    ```
    Use instead:
    ```python
    def step(self):
        return self.cache.value
    ```

    ## Fix safety
    There is no automatic fix yet; remove the code from the comment (or the
    comment).

    ## Fix availability
    Never.
    """

    code = "CL005"
    name = "unused-noqa"
    summary = "Suppression comment naming a rule code that suppresses nothing"
    fix_availability = "never"
    default_severity = "warning"
    default_enabled = False
    reads = ("program",)
    # every rule code there is (set by the registry, rules/__init__.py)
    known_codes: ClassVar[frozenset[str]] = frozenset()

    VALID = [
        # the comment suppresses a finding of the rule it names
        Example(
            files={
                "config.py": LOCK_CONFIG + LOCK_FILL,
                "user.py": """
                    from config import REGISTRY, EngineConfig

                    def budget(config: EngineConfig) -> int:
                        if config.model_config.is_encoder_decoder:
                            return REGISTRY.max_len(config.model_config)  # noqa: CL001
                        return 0
                """,
            },
            select=("CL001", "CL005"),
            expensive_calls=LOCK_CATALOG,
        ),
        # other tools' codes and bare noqa are not judged
        Example("import os  # noqa: F401\nx = 1  # noqa\n", select=("CL001", "CL005")),
    ]
    INVALID = [
        # the finding it silenced is gone; and a code no rule has
        Example(
            """
            def step(x):
                return x + 1  # noqa: CL001
            y = 2  # cachelint: ignore[CL099]
            """,
            select=("CL001", "CL005"),
            expect=(("example.py", 2), ("example.py", 3)),
            message_contains=("suppress",),
        ),
    ]

    def check(self, analysis: Analysis) -> Iterable[Finding]:
        """Codes that no rule has (the ones of rules that ran: :meth:`audit`)."""
        for fi in analysis.program.indexes:
            for line, codes in sorted(fi.suppressions.items()):
                for code in sorted(codes or ()):
                    if code.startswith("CL") and code[2:].isdigit() and code not in self.known_codes:
                        yield self._finding(
                            fi.path, line, f"`{code}` in a suppression comment is no rule's code: it suppresses nothing"
                        )

    def audit(self, analysis: Analysis, findings: list[Finding], ran: frozenset[str]) -> Iterable[Finding]:
        """Codes of rules that ran whose comment no finding of theirs spans."""
        used: set[tuple[str, int, str]] = set()
        for f in findings:
            for line in range(f.span.line, max(f.span.end_line, f.span.line) + 1):
                used.add((f.path, line, f.code))
        for fi in analysis.program.indexes:
            for line, codes in sorted(fi.suppressions.items()):
                for code in sorted(codes or ()):
                    if code in ran and code != self.code and (fi.path, line, code) not in used:
                        yield self._finding(
                            fi.path, line, f"`# noqa: {code}` suppresses nothing: no {code} finding is on this line"
                        )

    def _finding(self, path: str, line: int, message: str) -> Finding:
        return Finding(self.code, path, Span(line, 0, line, 0), message)
