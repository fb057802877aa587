"""Reading a cachelint JSON report back into the edits of one file, for the
codemod commands run by LibCST's driver."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from cachelint.model import Applicability, Edit, EditKind, Span

_REPORT_CACHE: dict[tuple[str, int, int], list[Any]] = {}


def _read_report(path: str) -> list[Any]:
    real = os.path.realpath(path)
    st = os.stat(real)
    key = (real, st.st_mtime_ns, st.st_size)
    if key not in _REPORT_CACHE:
        with open(real, encoding="utf-8") as fp:
            data = json.load(fp)
        if isinstance(data, dict) and isinstance(data.get("findings"), list):
            data = data["findings"]
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON list of findings")
        _REPORT_CACHE.clear()
        _REPORT_CACHE[key] = data
    return _REPORT_CACHE[key]


def _same_file(candidates: Iterable[str], target: str) -> bool:
    target_real = os.path.realpath(target)
    for cand in candidates:
        if os.path.realpath(cand) == target_real:
            return True
        try:
            if os.path.samefile(cand, target):
                return True
        except OSError:
            continue
    return False


def load_edits(findings: str, filename: str, *, unsafe_fixes: bool = False) -> list[Edit]:
    """Edits of a cachelint JSON report that apply to ``filename``.

    The report is a JSON list of findings ``{"path": ..., "fix": null | {
    "applicability": "safe" | "unsafe", "edits": [{"line", "column", "end_line",
    "end_column", "replacement", "remove_names"}]}}`` with 1-based lines and
    1-based columns (converted here to the 0-based columns of :class:`Span`).
    A relative ``path`` is tried against the working directory and against the
    report's directory. Fixes not marked ``"safe"`` are skipped unless
    ``unsafe_fixes``. Edits keep the report's order.
    """
    report_dir = os.path.dirname(os.path.abspath(findings))
    edits: list[Edit] = []
    for finding in _read_report(findings):
        if not isinstance(finding, dict):
            continue
        fix = finding.get("fix")
        path = finding.get("path")
        if not fix or not isinstance(path, str):
            continue
        # anything not explicitly "safe" counts as unsafe
        safe = fix.get("applicability") == Applicability.SAFE.value
        if not safe and not unsafe_fixes:
            continue
        candidates = [path] if os.path.isabs(path) else [path, os.path.join(report_dir, path)]
        if not _same_file(candidates, filename):
            continue
        for raw in fix.get("edits") or ():
            edits.append(
                Edit(
                    span=Span(
                        line=int(raw["line"]),
                        column=int(raw["column"]) - 1,
                        end_line=int(raw["end_line"]),
                        end_column=int(raw["end_column"]) - 1,
                    ),
                    replacement=str(raw["replacement"]),
                    remove_names=tuple(raw.get("remove_names") or ()),
                    kind=EditKind(raw.get("kind") or EditKind.REPLACE.value),
                    target=str(raw.get("target") or ""),
                    anchors=tuple(
                        Span(int(a[0]), int(a[1]) - 1, int(a[2]), int(a[3]) - 1) for a in raw.get("anchors") or ()
                    ),
                )
            )
    return edits
