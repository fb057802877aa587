"""Suppression comments: ``# cachelint: ignore[CL001]`` and ``# noqa: CL001``."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..files import split_lines

_SUPPRESS_RE = re.compile(
    r"#\s*(?:cachelint\s*:\s*ignore(?:\[(?P<c1>[A-Za-z0-9_,\s]*)\])?|noqa(?::\s*(?P<c2>[A-Za-z0-9_,\s]*[A-Za-z0-9]))?)",
    re.IGNORECASE,
)


def parse_suppressions(source: str) -> dict:
    """line -> frozenset of codes, or None for a bare ``noqa`` / ``ignore``.

    A line scan, not a tokenizer pass (tokenizing vLLM costs seconds): a
    marker counts when the ``#`` before it is outside string quotes on its line.
    Only the lines that mention a marker are looked at.
    """
    out: dict = {}
    low = source.lower()
    if "noqa" not in low and "cachelint" not in low:
        return out
    lines: Iterable[tuple[int, str]]
    if "\r" in source or len(low) != len(source):
        # a line may end in \r alone, or lowering moved the offsets: split it all
        lines = enumerate(split_lines(source, False), 1)
    else:
        lines = _marked_lines(source, low)
    for lineno, text in lines:
        if "#" not in text:
            continue
        lt = text.lower()
        if "noqa" not in lt and "cachelint" not in lt:
            continue
        for m in _SUPPRESS_RE.finditer(text):
            if _in_string(text, m.start()):
                continue
            codes = m.group("c1") if m.group("c1") is not None else m.group("c2")
            if codes is None or not codes.strip():
                out[lineno] = None
            else:
                cs = frozenset(c.strip().upper() for c in codes.split(",") if c.strip())
                prev = out.get(lineno, frozenset())
                out[lineno] = None if prev is None else prev | cs
    return out


def _marked_lines(source: str, low: str) -> list[tuple[int, str]]:
    """(number, text) of each line of ``source`` (no \\r in it; ``low`` is
    its lower case, of the same length) that mentions a marker, in order."""
    hits = []
    for marker in ("noqa", "cachelint"):
        i = low.find(marker)
        while i >= 0:
            hits.append(i)
            end = low.find("\n", i)
            if end < 0:
                break
            i = low.find(marker, end)
    hits.sort()
    out = []
    line, counted, last_start = 1, 0, -1
    for pos in hits:
        start = source.rfind("\n", 0, pos) + 1
        if start == last_start:
            continue
        line += source.count("\n", counted, start)
        counted = last_start = start
        end = source.find("\n", pos)
        out.append((line, source[start:] if end < 0 else source[start:end]))
    return out


def _in_string(text: str, pos: int) -> bool:
    quote = None
    i = 0
    while i < pos:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#":
            return False  # an earlier comment start
        i += 1
    return quote is not None
