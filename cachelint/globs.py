"""Pieces shared by the two glob dialects cachelint reads.

``.gitignore`` globs (``*`` stops at ``/``, ``**`` crosses it) and catalog /
hot-root globs (fnmatch: ``*`` crosses dots) differ on purpose; both accept
the same ``[...]`` character classes.
"""

from __future__ import annotations


def bracket(pattern: str, i: int) -> tuple[str, int] | None:
    """Regex for the ``[...]`` class starting at ``pattern[i]``, and the index of
    its closing ``]``; None when the bracket is not closed (then it is literal)."""
    n = len(pattern)
    start = i + 1
    if start < n and pattern[start] in "!^":
        start += 1
    if start < n and pattern[start] == "]":
        start += 1  # a leading ] is a member
    j = pattern.find("]", start)
    if j == -1:
        return None
    body = pattern[i + 1 : j].replace("\\", "\\\\")
    if body.startswith("!"):
        body = "^" + body[1:]
    elif body.startswith("^"):
        body = "\\" + body
    return "[" + body + "]", j
