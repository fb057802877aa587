"""``cachelint hot-paths``: what the hot-root patterns matched, and why a function is hot."""

from __future__ import annotations

import json

from ..config import HotRoot
from ..model import HotCoverage
from ..semantic.callgraph import HotStep, RootMatch

# functions listed per pattern unless every one is asked for
SHOWN = 10


def roots_text(roots: list[RootMatch], coverage: HotCoverage, presets: tuple[str, ...], files: int, every: bool) -> str:
    lines = []
    for r in roots:
        n = len(r.functions)
        head = f"{r.pattern}  ({r.kind})"
        if not n:
            lines.append(f"{head}: matched nothing")
            continue
        reached = sum(k for _, k in r.functions)
        lines.append(f"{head}: {n} function{'s' if n != 1 else ''}, reaching {reached}")
        shown = r.functions if every else r.functions[:SHOWN]
        width = max(len(qn) for qn, _ in shown)
        for qn, k in shown:
            lines.append(f"    {qn:<{width}}  reaches {k}")
        if len(shown) < n:
            lines.append(f"    ... and {n - len(shown)} more (--all lists them)")
    if lines:
        lines.append("")
    lines.append(
        f"{coverage.patterns} hot-root pattern{'s' if coverage.patterns != 1 else ''} "
        f"(presets: {', '.join(presets) or 'none'}), {coverage.matched} matched; "
        f"{coverage.roots} root function{'s' if coverage.roots != 1 else ''}, "
        f"{coverage.functions} hot function{'s' if coverage.functions != 1 else ''} in {files} files."
    )
    if coverage.functions == 0:
        lines.append(
            "No function is hot: configure `hot-roots` in [tool.cachelint] or use a preset (see docs/engines.md)."
        )
    return "\n".join(lines) + "\n"


def roots_json(roots: list[RootMatch], coverage: HotCoverage, presets: tuple[str, ...], files: int) -> str:
    return (
        json.dumps(
            {
                "files": files,
                "presets": list(presets),
                "patterns": coverage.patterns,
                "matched_patterns": coverage.matched,
                "root_functions": coverage.roots,
                "hot_functions": coverage.functions,
                "roots": [
                    {
                        "pattern": r.pattern,
                        "kind": r.kind,
                        "why": r.why,
                        "functions": [{"qualname": qn, "reaches": k} for qn, k in r.functions],
                    }
                    for r in roots
                ],
            },
            indent=2,
        )
        + "\n"
    )


def why_text(
    qualname: str, steps: list[HotStep] | None, kind: str | None, root: HotRoot | None, cold: str | None = None
) -> str:
    if steps is None:
        if cold is not None:
            return (
                f"{qualname} is not hot: it matches the cold-functions pattern `{cold}`, which the walk never enters.\n"
            )
        return f"{qualname} is not hot: no hot root reaches it.\n"
    lines = [f"{qualname} is hot ({kind}):"]
    first = steps[0]
    assert root is not None
    reason = f"; {root.why}" if root.why else ""
    lines.append(f"    {first.qualname}  ({first.path}:{first.line})")
    lines.append(f"        a root: matches `{root.pattern}` ({root.kind}{reason})")
    for s in steps[1:]:
        lines.append(f"    -> {s.qualname}")
        lines.append(f"        called as `{s.call}(...)` at {s.path}:{s.line}")
    return "\n".join(lines) + "\n"


def why_json(
    qualname: str, steps: list[HotStep] | None, kind: str | None, root: HotRoot | None, cold: str | None = None
) -> str:
    return (
        json.dumps(
            {
                "qualname": qualname,
                "hot": steps is not None,
                "kind": kind,
                "root_pattern": root.pattern if root else None,
                "cold_pattern": cold,
                "chain": [
                    {"qualname": s.qualname, "path": s.path, "line": s.line, "call": s.call or None}
                    for s in steps or ()
                ],
            },
            indent=2,
        )
        + "\n"
    )
