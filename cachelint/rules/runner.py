"""Running the selected rules over one analysis, with suppression comments applied."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from ..facts.timing import format_seconds
from ..gcpause import gc_paused
from ..index.records import FileIndex
from ..model import Finding, Fix
from .parallel import check_all

if TYPE_CHECKING:
    from ..facts.analysis import Analysis


def suppressed(f: Finding, fi: FileIndex | None) -> bool:
    if fi is None or not fi.suppressions:
        return False
    for line in range(f.span.line, f.span.end_line + 1):
        if line in fi.suppressions:
            codes = fi.suppressions[line]
            if codes is None or f.code in codes:
                return True
    return False


Measure = Callable[[list[Finding]], list[Finding]]


def per_step(f: Finding) -> float | None:
    """A finding's time per step: measured where a profile covered it, else estimated (None: neither)."""
    m = f.data.get("measured") or f.data.get("estimate")
    return None if m is None else m["per_step_seconds"]


def run_rules(
    analysis: Analysis, rules, measure: Measure | None = None, jobs: int | None = 1
) -> tuple[list[Finding], list[bool]]:
    """Every rule's findings over the whole program, and whether each is suppressed.

    ``measure`` (``check --profile``) adds what a profile measured to the
    findings it covers, before ``min-cost`` drops what costs less than it
    per step, and again after findings of the same work are merged.

    ``jobs`` above 1 (None: as the load allows): the checks run on two
    cores (see :mod:`cachelint.rules.parallel`), with the same findings in
    the same order.

    With the cyclic GC paused: the analysis builds memos, contexts and
    findings that live for the run, and the collections its allocations
    triggered (about 700 on vLLM 0.33.0) took 0.4 to 0.5 s of its 1.8 to 2.1 s.
    What it built is then frozen out of the GC's reach, as the index is (see
    :func:`gc_paused`): else the first collection after would scan it all.
    """
    with gc_paused(freeze=True):
        findings = check_all(analysis, rules, jobs)
        if measure is not None:
            findings = measure(findings)
        floor = analysis.config.min_time
        if floor is not None:  # `min-cost = "10us"`: what is measured or estimated below it per step is noise
            findings = [f for f in findings if (t := per_step(f)) is None or t >= floor]
        ran = frozenset(r.code for r in rules)
        audits: list[Finding] = []
        for rule_cls in rules:  # rules about the others' findings (unused suppressions)
            if hasattr(rule_cls, "audit"):  # a Rule has it; a bare object with a check() may not
                audits.extend(rule_cls().audit(analysis, findings, ran))
        findings.extend(audits)
        by_path = analysis.program.modules_by_path
        merged, flags = merge_repeats(findings, [suppressed(f, by_path.get(f.path)) for f in findings])
        return (merged if measure is None else measure(merged)), flags


def merge_repeats(findings: list[Finding], flags: list[bool]) -> tuple[list[Finding], list[bool]]:
    """One finding for the same repeated work: findings of one rule, file and
    function whose ``data["group"]`` is equal (the same call, as the rule
    judged it) become one, at the first site, listing every site, with the
    union of their fixes' edits, and the sum of their estimates. Suppressed
    findings are not merged (each keeps its own ``noqa``), nor findings whose
    fixes differ in applicability or of which only some have a fix."""
    groups: dict[tuple, list[int]] = {}
    for i, (f, s) in enumerate(zip(findings, flags)):
        g = f.data.get("group") if not s else None
        if g is not None:
            groups.setdefault((f.code, f.path, f.function, g), []).append(i)
    merged: dict[int, Finding] = {}
    dropped: set[int] = set()
    for members in groups.values():
        if len(members) < 2:
            continue
        group = sorted((findings[i] for i in members), key=lambda f: (f.span.line, f.span.column))
        fixes = [f.fix for f in group]
        if any(x is None for x in fixes) != all(x is None for x in fixes):
            continue
        present = [x for x in fixes if x is not None]
        if len({x.applicability for x in present}) > 1:
            continue
        merged[members[0]] = _merge(group, present)
        dropped.update(members[1:])
    out_f, out_s = [], []
    for i, (f, s) in enumerate(zip(findings, flags)):
        if i in dropped:
            continue
        out_f.append(merged.get(i, f))
        out_s.append(s)
    return out_f, out_s


def _merge(group: list[Finding], fixes: list[Fix]) -> Finding:
    first = group[0]
    sites = [[f.span.line, f.span.column + 1] for f in group]
    fix = None
    if fixes:
        edits = tuple(dict.fromkeys(e for x in fixes for e in x.edits))
        relies = tuple(dict.fromkeys(r for x in fixes for r in x.relies_on))
        fix = replace(fixes[0], edits=edits, relies_on=relies)
    data = dict(first.data)
    data["sites"] = sites
    est = first.data.get("estimate")
    if est:
        n = len(group)
        total = sum(f.data["estimate"]["per_step_seconds"] for f in group if f.data.get("estimate"))
        rank = sum(f.data["estimate"]["rank_seconds"] for f in group if f.data.get("estimate"))
        data["estimate"] = dict(
            est,
            per_step_seconds=float(f"{total:.3g}"),
            rank_seconds=float(f"{rank:.3g}"),
            sites=n,
            text=f"~{format_seconds(total)} per step over {n} sites; each: {est['text']}",
        )
    lines = ", ".join(str(line) for line, _ in sites[1:])
    message = f"{first.message} (the same call also at line{'s' if len(sites) > 2 else ''} {lines})"
    return replace(first, message=message, fix=fix, data=data)
