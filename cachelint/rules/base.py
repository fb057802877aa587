"""What a rule is: code, name, documentation, examples, and a check.

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

    def check(self, analysis: Analysis) -> Iterable[Finding]:  # pragma: no cover - abstract
        raise NotImplementedError

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
