"""Stage 7: report findings as text, JSON or statistics."""

from __future__ import annotations

import json
from collections import Counter

from .model import Applicability, Finding
from .rules import BY_CODE


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
        "data": f.data,
    }


def to_json(findings: list[Finding]) -> str:
    return json.dumps([finding_to_dict(f) for f in findings], indent=2, sort_keys=False) + "\n"


def _short(qn: str) -> str:
    parts = qn.replace(".<locals>", "").split(".")
    return ".".join(parts[-2:]) if len(parts) >= 2 else qn


def to_text(findings: list[Finding], unsafe_fixes: bool, show_chain: bool = True) -> str:
    lines = []
    for f in findings:
        mark = ""
        if f.fix is not None and (f.fix.applicability is Applicability.SAFE or unsafe_fixes):
            mark = "[*] "
        lines.append(f"{f.path}:{f.span.line}:{_col1(f.span.column)}: {f.code} {mark}{f.message}")
        if show_chain and f.hot_path:
            kind = f.data.get("hot_kind") or "hot"
            lines.append(f"  = hot path ({kind}): " + " -> ".join(_short(x) for x in f.hot_path))
        if f.fix is not None:
            lines.append(f"  = fix ({f.fix.applicability.value}): {f.fix.message}")
    return "\n".join(lines) + ("\n" if lines else "")


def summary(findings: list[Finding], fixed: int, unsafe_fixes: bool) -> str:
    n = len(findings)
    out = []
    if fixed:
        out.append(f"Found {n + fixed} error{'s' if n + fixed != 1 else ''} ({fixed} fixed, {n} remaining).")
    elif n:
        out.append(f"Found {n} error{'s' if n != 1 else ''}.")
    else:
        out.append("All checks passed!")
    safe = sum(1 for f in findings if f.fix and f.fix.applicability is Applicability.SAFE)
    unsafe = sum(1 for f in findings if f.fix and f.fix.applicability is Applicability.UNSAFE)
    if n:
        if safe or (unsafe and unsafe_fixes):
            k = safe + (unsafe if unsafe_fixes else 0)
            out.append(f"[*] {k} fixable with the `--fix` option.")
        if unsafe and not unsafe_fixes:
            out.append(f"{unsafe} hidden fix{'es' if unsafe != 1 else ''} can be enabled with the `--unsafe-fixes` option.")
    return "\n".join(out) + "\n"


def statistics(findings: list[Finding], unsafe_fixes: bool) -> str:
    counts = Counter(f.code for f in findings)
    fixable = Counter(
        f.code for f in findings if f.fix and (f.fix.applicability is Applicability.SAFE or unsafe_fixes)
    )
    width = max((len(str(c)) for c in counts.values()), default=1)
    lines = []
    for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        rule = BY_CODE.get(code)
        mark = "[*]" if fixable.get(code) else "[ ]"
        lines.append(f"{n:>{width}}\t{code}\t{mark} {rule.name if rule else ''}")
    return "\n".join(lines) + ("\n" if lines else "")
