"""Stage 7: report findings as text, JSON or statistics."""

from __future__ import annotations

import json
from collections import Counter

from ..facts.estimate import rank_of
from ..model import Applicability, Finding, HotCoverage
from ..rules import BY_CODE
from ..semantic.callgraph import frequency_rank


def frequency(f: Finding) -> str:
    """How often the finding's site runs: its hot-path kind, or ``once``."""
    return (f.data or {}).get("hot_kind") or "once"


def by_frequency(findings: list[Finding]) -> list[Finding]:
    """Errors first, then by time per step (measured where a profile covered
    the site, else estimated and weighted down for code traced by
    torch.compile), then the most frequently run sites; then by place."""
    return sorted(
        findings,
        key=lambda f: (
            severity(f) != "error",
            -rank_of(f.data),
            frequency_rank(frequency(f)),
            f.path,
            f.span.line,
            f.span.column,
            f.code,
        ),
    )


def _col1(c: int) -> int:
    return c + 1


def finding_to_dict(f: Finding) -> dict:
    fix = None
    if f.fix is not None:
        fix = {
            "applicability": f.fix.applicability.value,
            "replacement": f.fix.replacement,
            "message": f.fix.message,
            "relies_on": list(f.fix.relies_on),
            "edits": [
                {
                    "line": e.span.line,
                    "column": _col1(e.span.column),
                    "end_line": e.span.end_line,
                    "end_column": _col1(e.span.end_column),
                    "replacement": e.replacement,
                    "remove_names": list(e.remove_names),
                    "kind": e.kind.value,
                    "target": e.target,
                    "anchors": [[a.line, _col1(a.column), a.end_line, _col1(a.end_column)] for a in e.anchors],
                }
                for e in f.fix.edits
            ],
        }
    rule = BY_CODE.get(f.code)
    return {
        "code": f.code,
        "name": rule.name if rule else None,
        "severity": rule.default_severity if rule else "warning",
        "path": f.path,
        "line": f.span.line,
        "column": _col1(f.span.column),
        "end_line": f.span.end_line,
        "end_column": _col1(f.span.end_column),
        "message": f.message,
        "function": f.function,
        "hot_path": list(f.hot_path) if f.hot_path else None,
        "fix": fix,
        "notes": list(f.notes),
        "data": f.data,
    }


def to_json(findings: list[Finding]) -> str:
    return json.dumps([finding_to_dict(f) for f in findings], indent=2, sort_keys=False) + "\n"


def short_name(qn: str) -> str:
    """``Class.method`` of a qualified name (``<locals>`` left out), as the text output shows it."""
    parts = qn.replace(".<locals>", "").split(".")
    return ".".join(parts[-2:]) if len(parts) >= 2 else qn


def to_text(
    findings: list[Finding], unsafe_fixes: bool, show_chain: bool = True, frames: bool = False, show_fixes: bool = False
) -> str:
    """ruff-like text, the sites that run most often first (see :func:`by_frequency`);
    with ``show_fixes``, each fix as the diff it would make (:func:`fix_diff`)."""
    lines = []
    sources = SourceLines()
    for f in by_frequency(findings):
        mark = ""
        if f.fix is not None and (f.fix.applicability is Applicability.SAFE or unsafe_fixes):
            mark = "[*] "
        lines.append(f"{f.path}:{f.span.line}:{_col1(f.span.column)}: {f.code} {mark}{f.message}")
        if frames:
            lines.extend(code_frame(f, sources.get(f.path)))
        if show_chain and f.hot_path:
            kind = f.data.get("hot_kind") or "hot"
            lines.append(f"  = hot path ({kind}): " + " -> ".join(short_name(x) for x in f.hot_path))
        if show_chain and f.data and f.data.get("estimate"):
            lines.append(f"  = estimate: {f.data['estimate']['text']}")
        if f.data and f.data.get("measured"):
            lines.append(f"  = measured: {f.data['measured']['text']}")
        if f.fix is not None:
            lines.append(f"  = fix ({f.fix.applicability.value}): {f.fix.message}")
            if show_fixes:
                lines.extend("    " + d for d in fix_diff(f))
        if frames:
            lines.append("")
    return "\n".join(lines) + ("\n" if lines else "")


class SourceLines:
    """Each reported file's lines, read once (None if it cannot be decoded)."""

    def __init__(self) -> None:
        self._cache: dict[str, list[str] | None] = {}

    def get(self, path: str) -> list[str] | None:
        if path not in self._cache:
            from ..files import read_source, split_lines

            try:
                self._cache[path] = split_lines(read_source(path), False)  # Python's line breaks only
            except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
                self._cache[path] = None
        return self._cache[path]


_CONTROL = {c: "\ufffd" for c in range(32) if c != 9}
_CONTROL.update({127: "\ufffd"})
MAX_FRAME_LINES = 6
MAX_LINE_CHARS = 200  # a longer source line is shown as a window of this many characters
TAB = 4


def _cells(s: str) -> int:
    """Display width: tabs expanded, wide (East Asian) characters count two."""
    import unicodedata

    width = 0
    for ch in s:
        if ch == "\t":
            width += TAB - width % TAB
        elif unicodedata.combining(ch):
            continue
        else:
            width += 2 if unicodedata.east_asian_width(ch) in "WF" else 1
    return width


def _display_line(s: str) -> str:
    # control characters (ANSI escapes in a source string) are never sent to
    # the terminal as they are
    return s.translate(_CONTROL).expandtabs(TAB)


def code_frame(f: Finding, lines: list[str] | None) -> list[str]:
    """ruff-style frame: the finding's lines with one line of context around,
    a gutter of line numbers, and carets under the span."""
    if not lines:
        return []
    first, last = f.span.line, max(f.span.end_line, f.span.line)
    if first < 1 or first > len(lines):
        return []
    last = min(last, len(lines))
    shown = list(range(max(1, first - 1), min(len(lines), last + 1) + 1))
    if last - first + 1 > MAX_FRAME_LINES:
        keep = set(range(first - 1, first + 3)) | set(range(last - 1, last + 2))
        shown = [n for n in shown if n in keep]
    width = len(str(shown[-1]))
    pad = " " * width
    out = [f"{pad} |"]
    prev = None
    for n in shown:
        if prev is not None and n != prev + 1:
            out.append(f"{pad} |" + " ...")
        prev = n
        text = lines[n - 1]
        start = f.span.column if n == first else len(text) - len(text.lstrip())
        end = f.span.end_column if n == last else len(text.rstrip())
        start = min(start, len(text))
        end = min(max(end, start), len(text))
        # a very long line (generated code, a minified table) is shown as a
        # window around where the span starts, cut with an ellipsis
        cut = max(0, start - MAX_LINE_CHARS // 4) if len(text) > MAX_LINE_CHARS else 0
        head = "…" if cut else ""
        window = text[cut : cut + MAX_LINE_CHARS]
        tail = "…" if cut + MAX_LINE_CHARS < len(text.rstrip()) else ""
        out.append(f"{n:>{width}} | {head}{_display_line(window)}{tail}".rstrip())
        if first <= n <= last:
            start, end = start - cut, min(end - cut, len(window))
            lead = _cells(head) + _cells(window[:start])
            marks = max(1, _cells(window[:end]) - _cells(window[:start]))
            label = f" {f.code}" if n == last else ""
            out.append(f"{pad} | " + " " * lead + "^" * marks + label)
    out.append(f"{pad} |")
    return out


def severity(f: Finding) -> str:
    rule = BY_CODE.get(f.code)
    return rule.default_severity if rule else "warning"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def found_line(findings: list[Finding], fixed: int = 0) -> str:
    """``Found 3 findings.``: "errors" only for what is an error (CL000 parse
    errors, CL003 broken invariants), the rest are warnings; with a mix, both counts."""
    n = len(findings)
    total = n + fixed
    errors = sum(1 for f in findings if severity(f) == "error")
    noun = "error" if n and errors == n and not fixed else "finding"
    parts = []
    if fixed:
        parts.append(f"{fixed} fixed, {n} remaining")
    if errors and errors != n:
        parts.append(f"{_count(errors, 'error')}, {_count(n - errors, 'warning')}")
    elif errors and fixed:
        parts.append(f"{_count(errors, 'error')}")
    return f"Found {_count(total, noun)}" + (f" ({'; '.join(parts)})" if parts else "") + "."


def summary(findings: list[Finding], fixed: int, unsafe_fixes: bool, hot: HotCoverage | None = None) -> str:
    n = len(findings)
    out = []
    if fixed or n:
        out.append(found_line(findings, fixed))
    elif hot is not None and hot.vacuous:
        out.append("No function was analysed as hot: nothing was checked for expensive calls on hot paths.")
    else:
        out.append("All checks passed!")
    safe = sum(1 for f in findings if f.fix and f.fix.applicability is Applicability.SAFE)
    unsafe = sum(1 for f in findings if f.fix and f.fix.applicability is Applicability.UNSAFE)
    if n:
        if safe or (unsafe and unsafe_fixes):
            k = safe + (unsafe if unsafe_fixes else 0)
            out.append(f"[*] {k} fixable with the `--fix` option.")
        if unsafe and not unsafe_fixes:
            out.append(
                f"{unsafe} hidden fix{'es' if unsafe != 1 else ''} can be enabled with the `--unsafe-fixes` option."
            )
    return "\n".join(out) + "\n"


def statistics(findings: list[Finding], unsafe_fixes: bool) -> str:
    """Counts per rule, then per how often the sites run (most frequent first).

    ``[*]`` marks a rule only when every one of its findings has a fix
    ``--fix`` would apply; when only some do, ``(k fixable)`` follows its name."""
    counts = Counter(f.code for f in findings)
    fixable = Counter(f.code for f in findings if f.fix and (f.fix.applicability is Applicability.SAFE or unsafe_fixes))
    kinds = Counter((f.code, frequency(f)) for f in findings if f.code != "CL000")
    width = max((len(str(c)) for c in counts.values()), default=1)
    lines = []
    for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        rule = BY_CODE.get(code)
        k = fixable.get(code, 0)
        mark = "[*]" if k == n else "[ ]"
        some = f" ({k} fixable)" if 0 < k < n else ""
        lines.append(f"{n:>{width}}\t{code}\t{mark} {rule.name if rule else ''}{some}")
        for kind in sorted({k for c, k in kinds if c == code}, key=frequency_rank):
            lines.append(f"{kinds[(code, kind)]:>{width}}\t\t    {kind}")
    return "\n".join(lines) + ("\n" if lines else "")


def fix_diff(f: Finding) -> list[str]:
    """The diff one finding's fix makes on its own (computed as ``--fix`` would)."""
    import difflib

    from ..apply.fixer import compute_fixes

    ffs = compute_fixes([f], unsafe_fixes=True)
    if not ffs or ffs[0].error or ffs[0].new == ffs[0].old:
        return [f"(the fix cannot be shown: {ffs[0].error})"] if ffs and ffs[0].error else []
    ff = ffs[0]
    diff = difflib.unified_diff(ff.old.splitlines(), ff.new.splitlines(), lineterm="", n=1)
    return [line for line in diff if not line.startswith(("---", "+++"))]


def fixed_summary(fixed: list[Finding]) -> str:
    """``--fix --show-fixes``: what was fixed, per file and rule (as ruff enumerates it)."""
    if not fixed:
        return ""
    by_path: dict[str, Counter] = {}
    for f in fixed:
        by_path.setdefault(f.path, Counter())[f.code] += 1
    lines = [f"Fixed {len(fixed)} finding{'s' if len(fixed) != 1 else ''}:"]
    for path in sorted(by_path):
        lines.append(f"- {path}:")
        for code, n in sorted(by_path[path].items()):
            rule = BY_CODE.get(code)
            lines.append(f"    {n} × {code} ({rule.name if rule else code})")
    return "\n".join(lines) + "\n"
