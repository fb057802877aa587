"""What a rule is: code, name, documentation, examples, the facts it reads, and a check.

A rule is one module defining one :class:`Rule` subclass, listed in
``rules/__init__.py``. It declares, as class attributes, its ``code``,
``name``, ``summary``, ``default_severity`` and ``fix_availability``, its
documentation (the docstring) and examples, and ``reads``: the attributes of
:class:`~cachelint.facts.analysis.Analysis` its check (and what the check
hands the analysis to) may read. ``check(analysis)`` returns findings, each
with an optional fix. A rule does not assign to the analysis or to the
objects it holds, and does not import another rule's module; what two rules
share lives in a facts module or in ``rules/_shared.py``.
``tests/test_rule_api.py`` runs every example against an analysis that
records what is read and written, and fails on an undeclared read or any
write.

A rule whose fixes rely on a cached value keeping its invariant returns, from
:meth:`Rule.lock_invariants`, what ``--fix`` records in ``cachelint.lock``
for the findings it fixed.

A rule's docstring is its documentation, in ruff's sections (What it does /
Why is this bad? / Example / Fix safety / Fix availability); ``cachelint
explain CODE`` prints it and the docs are generated from it. Its ``VALID`` and
``INVALID`` examples (Fixit's model) are run by the test suite, so the
documentation cannot drift from the behaviour: an invalid example names the
findings it must produce and, when the rule fixes it, the code after the fix.
Examples may span several modules, since cachelint's rules are whole-program.
"""

from __future__ import annotations

import inspect
import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from ..facts.analysis import Analysis
    from ..lock.lockfile import Invariant
    from ..model import Finding


@dataclass(frozen=True)
class Example:
    """Source files (module path -> code); ``code`` alone is ``example.py``."""

    code: str = ""
    files: dict = field(default_factory=dict)
    # expected findings: (path, line) pairs, for INVALID examples
    expect: tuple = ()
    # expected source after `--fix --unsafe-fixes`, by path (INVALID examples)
    fixed: dict = field(default_factory=dict)
    # expected applicability of each expected finding's fix ("safe"/"unsafe"/None)
    applicability: tuple = ()
    # text every expected finding's message must contain
    message_contains: tuple = ()
    preset: str = "none"
    # rule codes to run with the rule (default: the rule alone)
    select: tuple = ()
    hot_roots: tuple = ()
    expensive_calls: tuple = ()

    def sources(self) -> dict:
        if self.files:
            return {k: textwrap.dedent(v).lstrip("\n") for k, v in self.files.items()}
        return {"example.py": textwrap.dedent(self.code).lstrip("\n")}


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    fix_availability: ClassVar[str] = "never"  # never | sometimes | always
    default_severity: ClassVar[str] = "warning"
    VALID: ClassVar[list] = []
    INVALID: ClassVar[list] = []
    # the Analysis attributes the check reads (facts, methods, configuration)
    reads: ClassVar[tuple[str, ...]] = ()
    # the rule finds nothing unless some function is hot: a run that selects
    # it while no hot-root pattern matched warns that it checked nothing
    needs_hot_paths: ClassVar[bool] = False
    # off unless a selector names it (`--select CL005`, `CL`, `ALL`), as ruff's RUF100
    default_enabled: ClassVar[bool] = True

    def check(self, analysis: Analysis) -> Iterable[Finding]:  # pragma: no cover - abstract
        raise NotImplementedError

    def audit(self, analysis: Analysis, findings: list[Finding], ran: frozenset[str]) -> Iterable[Finding]:
        """Findings about the other rules' findings of this run (``findings``,
        before suppression; ``ran``: the codes of the rules that ran), made
        after every rule's :meth:`check`; none by default."""
        return ()

    def lock_invariants(self, analysis: Analysis, fixed: list[Finding]) -> list[Invariant]:
        """The invariants this rule's applied fixes (``fixed``, all of this
        rule's code) rely on, for ``cachelint.lock``; none by default."""
        return []

    @classmethod
    def documentation(cls, level: int = 1) -> str:
        """The rule's docs as Markdown, its title at heading ``level``."""
        doc = inspect.cleandoc(cls.__doc__ or "")
        head = (
            f"# {cls.name} ({cls.code})\n\n{cls.summary}\n\n"
            f"Severity: {cls.default_severity}. Fix is {cls.fix_availability} available.\n\n"
        )
        text = head + doc + "\n"
        if level == 1:
            return text
        out, fenced = [], False
        for line in text.splitlines(keepends=True):
            if line.lstrip().startswith("```"):
                fenced = not fenced
            elif not fenced and re.match(r"#+ ", line):
                line = "#" * (level - 1) + line
            out.append(line)
        return "".join(out)
