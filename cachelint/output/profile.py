"""Text for ``cachelint profile`` and for what ``check --profile`` adds after the findings."""

from __future__ import annotations

from ..facts.timing import format_seconds
from ..profiling.evidence import CandidateRoot, MissedRepeat
from ..profiling.profile import Profile
from .report import short_name

TOP = 10


def summary_text(profile: Profile, path: str) -> str:
    """What ``cachelint profile`` prints when the workload is done: the steps, where the time went, the repeats."""
    per = "step" if profile.steps else "run"
    lines = []
    if profile.steps:
        shown = ", ".join(short_name(q) for q in profile.step_functions[:3])
        more = f" and {len(profile.step_functions) - 3} more" if len(profile.step_functions) > 3 else ""
        lines.append(f"{profile.steps} steps (calls of {shown}{more})")
    else:
        lines.append("no step ran (no function --step names, or no per-step hot root, was called): figures are per run")
    ran = [f for f in profile.functions if (f.step_calls if profile.steps else f.calls)]
    top = sorted(ran, key=lambda f: -(f.step_total if profile.steps else f.total))[:TOP]
    if top:
        lines.append(f"Most time per {per} (total, own, calls):")
        for f in top:
            total, own, calls = (f.step_total, f.step_own, f.step_calls) if profile.steps else (f.total, f.own, f.calls)
            lines.append(
                f"  {format_seconds(profile.per_step(total)):>9} {format_seconds(profile.per_step(own)):>9}"
                f" {calls / (profile.steps or 1):>8g}  {f.qualname}"
            )
    reps = [r for r in profile.repeats if r.repeated > 0 and not r.varied][:TOP]
    if reps:
        lines.append(f"Repeated identical calls (same arguments, same result), most time per {per} first:")
        for r in reps:
            lines.append(
                f"  {format_seconds(profile.per_step(r.repeated_seconds)):>9}  {r.caller}:{r.line} -> {r.callee}"
                f" ({r.repeated} of {r.calls} calls)"
            )
    elif profile.fingerprints:
        lines.append(f"No repeated identical calls among the {profile.watched} functions fingerprinted.")
    lines.append(f"Wrote {path}; `cachelint check --profile {path} PATHS` ranks the findings by it.")
    return "\n".join(lines) + "\n"


def report_text(missed: list[MissedRepeat], candidates: list[CandidateRoot], profile: Profile) -> str:
    """The text that follows the findings of ``check --profile``."""
    per = "step" if profile.steps else "run"
    lines = []
    if missed:
        lines.append(f"Measured repeated identical calls with no finding ({len(missed)}):")
        for m in missed:
            r = m.repeat
            lines.append(
                f"  {m.path or r.caller}:{r.line}: `{r.callee}` from `{r.caller}`: {r.repeated} of {r.calls}"
                f" calls repeated an earlier one (same arguments, same result), "
                f"{format_seconds(m.per_step_seconds)} per {per}"
            )
            lines.append(f"    = missed by the static pass: {m.missing}: {m.why}")
        lines.append("")
    if candidates:
        lines.append(f"Functions measured on every step that no hot root reaches ({len(candidates)}):")
        for c in candidates:
            lines.append(
                f"  {c.qualname}: {c.calls_per_step:g} call{'s' if c.calls_per_step != 1 else ''} per step, {format_seconds(c.per_step_seconds)} per step"
            )
            lines.append(f"    = to analyse it as hot, add to [tool.cachelint]: {c.config_line}")
        lines.append("")
    return "\n".join(lines) + ("\n" if lines else "")
