"""Joining a profile to the static analysis: what to measure, and what was measured where.

* :func:`defs_for`: from an analysis, where the package's functions are,
  which ones are a step, and which ones get their calls fingerprinted
  (the hot functions and the functions the cost model finds expensive that
  return a value and change no object they are given: :func:`changes_state`);
* :func:`attach`: each finding whose sites the profile covers gets its
  measured time per step (``data["measured"]``), which ranking and
  ``--min-cost`` then read before the estimate;
* :func:`unreported_repeats`: measured repeated identical calls with no
  finding at their site, each with the static capability that missed it;
* :func:`candidate_roots`: functions measured as running on every step
  that no hot root reaches, with the configuration that would add them.

The profile is evidence for ranking and for finding what the static pass
missed. It never makes a fix safe: a finding's fix and applicability are
the same with or without it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from ..facts.analysis import Analysis
from ..facts.state import is_mutator
from ..facts.timing import format_seconds
from ..globs import GlobSet
from ..index.expr import dotted
from ..index.records import FunctionInfo
from ..model import Finding
from ..semantic.callgraph import call_site
from ..semantic.program import Program
from .profile import Profile, Repeat, SiteTime
from .recorder import Defs

# a function counts as run on every step when it ran at least this many times per step
EVERY_STEP = 1.0


def step_functions(analysis: Analysis, patterns: tuple[str, ...] = ()) -> set[str]:
    """The functions whose calls are steps: those ``patterns`` match, else the per-step hot roots."""
    if patterns:
        globs = GlobSet(list(patterns))
        return {q for q in analysis.program.functions if globs.first(q) >= 0}
    return {q for q, r in analysis.hot.roots.items() if r.kind == "per-step"}


def defs_for(analysis: Analysis, steps: set[str], fingerprints: bool = True) -> Defs:
    """What the recorder needs to know of the package (see :class:`~.recorder.Defs`)."""
    p = analysis.program
    files: dict[str, list[tuple[int, str, str]]] = {}
    real: dict[str, str] = {}
    for q, fn in p.functions.items():
        path = real.get(fn.path)
        if path is None:
            path = real[fn.path] = os.path.realpath(fn.path)
        files.setdefault(path, []).append((fn.line, fn.name, q))
    watched: set[str] = set()
    params: dict[str, tuple[str, ...]] = {}
    if fingerprints:
        cost = analysis.cost
        for q, fn in p.functions.items():
            # what a memo could serve: a function that returns a value, not a
            # constructor, not a plain getter (repeating one costs nothing)
            if not fn.returns or fn.name in ("__init__", "__new__") or fn.is_async:
                continue
            if (analysis.hot.is_hot(q) or cost.expensive([q], fn) is not None) and not cost.trivial(fn):
                watched.add(q)
        # nor one that changes an object it is given (``self`` included), itself or
        # through what it calls (a queue drained, a counter moved on): calling it
        # again is not the same call, though it may return an equal value
        memo: dict[str, bool] = {}
        watched = {q for q in watched if not changes_state(p, p.functions[q], memo)}
        for q in watched:
            params[q] = tuple(x.name for x in p.functions[q].params)
    return Defs(files, frozenset(steps), frozenset(watched), params)


def changes_state(p: Program, fn: FunctionInfo, memo: dict[str, bool], depth: int = 0) -> bool:
    """Whether ``fn`` changes an object it was given or reads through ``self``
    or a parameter: assigns one's attribute or item, or calls a mutating
    method of a container held there (``self.items.clear()``), itself or in
    the functions of the tree it calls (down to three calls deep). A new
    object's ``__init__`` changes no existing object and is not followed."""
    hit = memo.get(fn.qualname)
    if hit is not None:
        return hit
    memo[fn.qualname] = False  # recursion: what the rest of the body says
    given = {x.name for x in fn.params}
    out = False
    for a in fn.assigns:
        t = a.target
        if t[0] in ("attr", "sub") and (dotted(t if t[0] == "attr" else t[1]) or "").split(".")[0] in given:
            out = True
            break
    if not out:
        for c in fn.calls:
            f = c.func
            if f[0] == "attr" and is_mutator(f[2]) and (dotted(f[1]) or "").split(".")[0] in given:
                out = True
                break
            if depth < 3:
                for g in p.call_targets(fn, c):
                    if g.name != "__init__" and changes_state(p, g, memo, depth + 1):
                        out = True
                        break
                if out:
                    break
    memo[fn.qualname] = out
    return out


def source_digests(analysis: Analysis) -> tuple[dict[str, str], dict[str, str]]:
    """(qualname -> module, module -> digest of its source): what a profile
    records so that a check can tell whether its lines still match."""
    p = analysis.program
    return {q: fn.module for q, fn in p.functions.items()}, {m: fi.digest for m, fi in p.modules.items()}


def current(profile: Profile, analysis: Analysis) -> tuple[Profile, list[str]]:
    """``profile`` without the measurements of modules whose source changed
    since it was taken (or that are not analysed now), and those modules."""
    p = analysis.program
    stale = sorted(m for m, d in profile.sources.items() if (fi := p.modules.get(m)) is None or fi.digest != d)
    if not stale:
        return profile, []
    gone = set(stale)

    def fresh(qualname: str) -> bool:
        fn = p.functions.get(qualname)
        return fn is not None and fn.module not in gone

    kept = replace(
        profile,
        functions=[f for f in profile.functions if fresh(f.qualname)],
        sites=[s for s in profile.sites if fresh(s.caller)],
        repeats=[r for r in profile.repeats if fresh(r.caller)],
    )
    return kept, stale


# ----- findings ---------------------------------------------------------------------------------


def _sites_by_caller(profile: Profile) -> dict[str, list[SiteTime]]:
    out: dict[str, list[SiteTime]] = {}
    for s in profile.sites:
        out.setdefault(s.caller, []).append(s)
    return out


def _finding_lines(f: Finding) -> list[tuple[int, int]]:
    """The line ranges of a finding's sites: its span, and each merged site's line."""
    ranges = [(f.span.line, f.span.end_line)]
    for line, _col in (f.data or {}).get("sites", [])[1:]:
        ranges.append((line, line))
    return ranges


def measured_for(f: Finding, by_caller: dict[str, list[SiteTime]], profile: Profile) -> dict | None:
    """The measured cost of a finding's sites, or None when the profile saw none of them run.

    In each site's lines the most expensive measured call counts (a call
    nested in another's arguments is inside it or before it, never more);
    the sites of a merged finding add up."""
    if not f.function:
        return None
    sites = by_caller.get(f.function)
    if not sites:
        return None
    step = profile.steps > 0
    total = 0.0
    calls = 0
    matched = 0
    for lo, hi in _finding_lines(f):
        best = None
        for s in sites:
            if lo <= s.line <= hi:
                t = s.step_total if step else s.total
                if best is None or t > best[0]:
                    best = (t, s.step_calls if step else s.calls)
        if best is not None:
            matched += 1
            total += best[0]
            calls += best[1]
    if not matched:
        return None
    per_step = profile.per_step(total)
    per_call = total / calls if calls else 0.0
    per = "step" if step else "run"
    n_calls = calls / profile.steps if step else calls
    text = (
        f"{format_seconds(per_step)} per {per}: {n_calls:g} call{'s' if n_calls != 1 else ''} per {per}"
        f" of {format_seconds(per_call)} each"
        + (f", over {matched} sites" if matched > 1 else "")
        + (f" (profile of {profile.steps} steps)" if step else " (profile with no steps: per run)")
    )
    return {
        "per_step_seconds": float(f"{per_step:.3g}"),
        "per_call_seconds": float(f"{per_call:.3g}"),
        "calls_per_step": float(f"{n_calls:.3g}"),
        "steps": profile.steps,
        "text": text,
    }


def attach(findings: list[Finding], profile: Profile) -> list[Finding]:
    """``findings`` with ``data["measured"]`` where the profile measured their sites."""
    by_caller = _sites_by_caller(profile)
    out = []
    for f in findings:
        m = measured_for(f, by_caller, profile)
        out.append(f if m is None else replace(f, data={**f.data, "measured": m}))
    return out


# ----- what the static pass missed ----------------------------------------------------------------


@dataclass(frozen=True)
class MissedRepeat:
    """A measured repeat with no finding at its site, and why the static pass did not report it."""

    repeat: Repeat
    path: str | None
    per_step_seconds: float
    missing: str  # hot root not configured | unresolved call | unknown cost | not reported
    why: str


def _diagnose(analysis: Analysis, r: Repeat) -> tuple[str, str]:
    p = analysis.program
    hot = analysis.hot
    caller = p.functions.get(r.caller)
    if caller is None:
        return "unknown function", f"`{r.caller}` is not a function of the analysed source"
    if not hot.is_hot(r.caller):
        return "hot root not configured", f"no hot root reaches `{r.caller}`"
    callee = p.functions.get(r.callee)
    if callee is not None:
        at_line = {t for i, t in hot.edges.get(r.caller, ()) if call_site(caller, i).line == r.line}
        if r.callee not in at_line:
            return "unresolved call", f"the call graph does not resolve the call at line {r.line} to `{r.callee}`"
        why = analysis.cost.expensive([r.callee], callee)
        if why is None:
            return "unknown cost", f"the cost model does not find `{r.callee}` expensive"
        return "not reported", f"`{r.callee}` is expensive ({why}) but no rule reported the call"
    tail = r.callee.rpartition(".")[2]
    names = [dotted(c.func) or "" for c in caller.calls if c.line == r.line]
    if not any(x.rpartition(".")[2] == tail for x in names):
        return "unresolved call", f"no call at line {r.line} is known to reach `{r.callee}`"
    return "unknown cost", f"the cost model does not find `{r.callee}` expensive"


def unreported_repeats(
    analysis: Analysis, profile: Profile, findings: list[Finding], limit: int = 20
) -> list[MissedRepeat]:
    """The measured repeats (most time first) at sites no finding covers."""
    covered: dict[str, list[tuple[int, int]]] = {}
    for f in findings:
        if f.function:
            covered.setdefault(f.function, []).extend(_finding_lines(f))
    out = []
    for r in profile.repeats:
        if r.repeated <= 0 or r.varied:
            continue
        if any(lo <= r.line <= hi for lo, hi in covered.get(r.caller, ())):
            continue
        missing, why = _diagnose(analysis, r)
        fn = analysis.program.functions.get(r.caller)
        out.append(MissedRepeat(r, fn.path if fn else None, profile.per_step(r.repeated_seconds), missing, why))
        if len(out) >= limit:
            break
    return out


@dataclass(frozen=True)
class CandidateRoot:
    qualname: str
    path: str | None
    calls_per_step: float
    per_step_seconds: float

    @property
    def config_line(self) -> str:
        return f'extend-hot-roots = [{{ pattern = "{self.qualname}", kind = "per-step" }}]'


def candidate_roots(analysis: Analysis, profile: Profile, limit: int = 10) -> list[CandidateRoot]:
    """Functions measured as running on every step that no hot root reaches, most time first.

    Only the outermost of them: a function that a listed candidate calls
    (directly or not, as measured) would be hot with it, so it is left out."""
    if not profile.steps:
        return []
    p = analysis.program
    hot = analysis.hot
    callees: dict[str, set[str]] = {}
    for site in profile.sites:
        if site.step_calls:
            callees.setdefault(site.caller, set()).add(site.callee)
    covered: set[str] = set()
    out = []
    for ft in sorted(profile.functions, key=lambda x: -x.step_total):
        q = ft.qualname
        if ft.step_calls / profile.steps < EVERY_STEP or hot.is_hot(q) or q in covered:
            continue
        fn = p.functions.get(q)
        out.append(
            CandidateRoot(q, fn.path if fn else None, ft.step_calls / profile.steps, profile.per_step(ft.step_total))
        )
        if len(out) >= limit:
            break
        todo = [q]
        while todo:  # what it calls, as measured, is covered by it
            for c in callees.get(todo.pop(), ()):
                if c not in covered:
                    covered.add(c)
                    todo.append(c)
    return out
