"""``--add-noqa``: a ``# noqa: CLxxx`` comment for each current finding, as ruff does.

The comment goes on the first line of the finding's span that can end in a
comment: a line whose end is code, not inside a string and not continued with
a backslash (a call written ``REGISTRY.\\`` over two lines gets it on its
second line; suppressions count on any line of the span). A line that already
has ``# noqa: CODES`` gets the new codes merged into it, sorted; anything
else on the line (code, another comment) stays as it is. Files are written as
``--fix`` writes them (:func:`~cachelint.apply.fixer.write_fix`): atomically,
in their encoding, with their line endings, only if unchanged on disk.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections import defaultdict

from ..files import split_lines
from ..model import Finding
from .fixer import FileFix, _read, write_fix

_NOQA = re.compile(r"#\s*noqa:\s*(?P<codes>[A-Za-z0-9_]+(?:\s*,\s*[A-Za-z0-9_]+)*)", re.IGNORECASE)


def commentable_lines(text: str) -> set[int]:
    """Lines whose end is code: they hold a NEWLINE or NL token (or end in a comment)."""
    out: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT):
                out.add(tok.start[0])
    except (tokenize.TokenError, SyntaxError):
        pass  # what was tokenized still stands
    return out


def _with_codes(line: str, codes: list[str]) -> str:
    body = line.rstrip("\r\n")
    ending = line[len(body) :]
    m = _NOQA.search(body)
    if m is not None:
        have = [c.strip().upper() for c in m.group("codes").split(",")]
        merged = sorted(set(have) | set(codes))
        return body[: m.start("codes")] + ", ".join(merged) + body[m.end("codes") :] + ending
    return body.rstrip() + "  # noqa: " + ", ".join(sorted(set(codes))) + ending


def add_noqa(findings: list[Finding], roots: list[str] | None = None) -> tuple[int, list[str]]:
    """Write the comments for ``findings`` (CL000 and findings outside Python
    files are left out: a file that does not parse takes no comment, the lock
    none). Returns the number of findings given a comment, and problems."""
    by_path: dict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        if f.code != "CL000" and f.path.endswith(".py"):
            by_path[f.path].append(f)
    added, errors = 0, []
    for path, fs in sorted(by_path.items()):
        try:
            _, text, _, _ = _read(path)
        except (OSError, SyntaxError, UnicodeDecodeError, LookupError) as e:
            errors.append(f"{path}: cannot read: {e}")
            continue
        ok = commentable_lines(text)
        per_line: dict[int, list[str]] = defaultdict(list)
        done: list[Finding] = []
        for f in fs:
            line = next((n for n in range(f.span.line, max(f.span.end_line, f.span.line) + 1) if n in ok), None)
            if line is None:
                errors.append(
                    f"{path}:{f.span.line}: no line of the finding can take a comment; {f.code} not suppressed"
                )
                continue
            per_line[line].append(f.code)
            done.append(f)
        lines = split_lines(text, True)
        for n, codes in per_line.items():
            lines[n - 1] = _with_codes(lines[n - 1], codes)
        new = "".join(lines)
        err = write_fix(FileFix(path, text, new, done), roots)
        if err:
            errors.append(err)
            continue
        added += len(done)
    return added, errors
