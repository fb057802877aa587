"""CL000: a file cachelint cannot read or parse."""

from __future__ import annotations

from ..model import Finding, Span
from .base import Example, Rule


class ParseError(Rule):
    """## What it does
    Reports a Python file that cachelint cannot decode or parse: a syntax
    error, a null byte, an encoding the file's coding cookie does not match.

    ## Why is this bad?
    cachelint never crashes on such a file and keeps checking the others, but
    it cannot see the calls inside it: hot paths through it are cut short and
    its cache sites are unknown, so findings elsewhere may be missing.

    ## Example
    ```python
    def step(self:
        pass
    ```

    ## Fix safety
    There is no fix; correct the file.

    ## Fix availability
    Never.
    """

    code = "CL000"
    name = "parse-error"
    summary = "File cannot be parsed"
    fix_availability = "never"
    default_severity = "error"
    reads = ("program",)

    VALID = [Example("def step(self):\n    return 1\n")]
    INVALID = [
        Example("def step(self:\n    pass\n", expect=(("example.py", 1),), message_contains=("SyntaxError",)),
        Example("x = 1\ny = (\n", expect=(("example.py", 2),)),
    ]

    def check(self, analysis):
        for fi in analysis.program.indexes:
            if fi.error is None:
                continue
            message, line, col = fi.error
            yield Finding(
                code=self.code,
                path=fi.path,
                span=Span(line, col, line, col),
                message=f"cannot analyse this file: {message}",
            )
