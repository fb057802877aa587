"""Pieces shared by the two glob dialects cachelint reads.

``.gitignore`` globs (``*`` stops at ``/``, ``**`` crosses it) and catalog /
hot-root globs (fnmatch: ``*`` crosses dots) differ on purpose; both accept
the same ``[...]`` character classes.
"""

from __future__ import annotations

import re


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


def glob_regex(pattern: str) -> str:
    """fnmatch semantics (``*`` crosses dots, ``?``, ``[...]``) without groups.

    ``fnmatch.translate`` emits named groups on Python 3.10, which cannot be
    combined into one alternation; this yields plain, group-free regex text.
    """
    out = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            while i + 1 < n and pattern[i + 1] == "*":
                i += 1
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[" and (b := bracket(pattern, i)) is not None:
            out.append(b[0])
            i = b[1]
        else:
            out.append(re.escape(c))
        i += 1
    return "(?s:" + "".join(out) + r")\Z"


def literal_runs(pattern: str) -> list[str]:
    """The literal stretches of a glob, between its wildcards and ``[...]`` classes."""
    runs: list[str] = []
    cur: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        b = bracket(pattern, i) if c == "[" else None
        if c in "*?" or b is not None:
            runs.append("".join(cur))
            cur = []
            if b is not None:
                i = b[1]
        else:
            cur.append(c)
        i += 1
    runs.append("".join(cur))
    return runs


class GlobSet:
    """Ordered fnmatch globs: the first pattern that matches wins.

    Each pattern is bucketed by the literal text after its last wildcard (a
    name it matches must end with that text), so a lookup runs the regexes of
    the few patterns whose tail fits the name, not one alternation of ~300
    patterns full of ``.*`` for each of ~70k call sites (that alternation took
    a second on vLLM). Results are memoized per name, and each regex is
    compiled when a name first needs it (compiling all ~400 of the catalog
    and the roots took 0.03 s of a run that needs a handful).
    """

    def __init__(self, patterns: list[str]) -> None:
        self.patterns = list(patterns)
        self._rx: list = [None] * len(self.patterns)
        self._by_last: dict[str, list[int]] = {}  # the name's last dotted segment must be this
        self._by_suffix: list[tuple[str, int]] = []  # the name must end with this
        self._always: list[tuple[str, int]] = []
        for i, p in enumerate(self.patterns):
            cut = max(p.rfind("*"), p.rfind("?"), p.rfind("["), p.rfind("]"))
            tail = p[cut + 1 :]
            if "." in tail:
                self._by_last.setdefault(tail.rpartition(".")[2], []).append(i)
            elif cut < 0:  # no wildcard: the whole name
                self._by_last.setdefault(tail, []).append(i)
            elif tail:
                self._by_suffix.append((tail, i))
            else:  # ends with a wildcard: the name must contain its longest literal run
                self._always.append((max(literal_runs(p), key=len), i))
        self._memo: dict[str, int] = {}
        # most names fit no pattern: one test each, in C, before building candidates
        self._suffixes = tuple(tail for tail, _ in self._by_suffix)
        self._anywhere = re.compile("|".join(re.escape(lit) for lit, _ in self._always)) if self._always else None

    def first(self, name: str) -> int:
        """Index of the first pattern matching ``name``, or -1."""
        hit = self._memo.get(name)
        if hit is not None:
            return hit
        bucket = self._by_last.get(name.rpartition(".")[2])
        if (
            bucket is None
            and not (self._suffixes and name.endswith(self._suffixes))
            and not (self._anywhere is not None and self._anywhere.search(name))
        ):
            self._memo[name] = -1
            return -1
        cands = list(bucket or ())
        cands.extend(i for tail, i in self._by_suffix if name.endswith(tail))
        cands.extend(i for lit, i in self._always if lit in name)
        hit = -1
        for i in sorted(cands):
            rx = self._rx[i]
            if rx is None:
                rx = self._rx[i] = re.compile(glob_regex(self.patterns[i]))
            if rx.match(name):
                hit = i
                break
        self._memo[name] = hit
        return hit
