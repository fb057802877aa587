"""Fix passes: apply the fixes, re-analyse what they changed, until nothing changes.

Like ruff, cachelint fixes until a pass changes nothing: a fix can enable
another (a value hoisted into ``__init__`` becomes a cached attribute that
CL001 then has other readers use). ``--fix`` and ``--diff`` run the same
passes over the same texts; ``--diff`` keeps each rewritten file in memory
instead of writing it, so the diff shows exactly what ``--fix`` writes.

Each pass after the first re-indexes only the files the previous pass
rewrote (from their new text) and reuses every other file's index, then runs
the analysis and the rules again; one analysis is alive at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..index.records import FileIndex
from ..index.walk import index_source
from ..model import Finding
from ..rules.runner import run_rules
from .fixer import FileFix, check_fix, compute_fixes, write_fix

if TYPE_CHECKING:
    from ..facts.analysis import Analysis
    from ..lock.lockfile import Invariant

# fix passes at most (each after the first re-analyses the rewritten files)
MAX_FIX_PASSES = 10


@dataclass
class FixOutcome:
    file_fixes: list[FileFix] = field(default_factory=list)  # one per changed file: first text -> last
    fixed: list[Finding] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # what is left after the last pass
    errors: list[str] = field(default_factory=list)
    lock_written: bool = False


def run_fix_passes(
    analysis: Analysis | list[Analysis],
    findings: list[Finding],
    rules: Sequence[type],
    *,
    unsafe_fixes: bool,
    write: bool,
    roots: list[str],
    reported: Callable[[list[Finding]], list[Finding]],
    progress=None,
    jobs: int | None = None,
) -> FixOutcome:
    """Fix ``findings`` (those of ``analysis``) pass after pass.

    ``write``: write each pass's files (``--fix``); otherwise keep them in
    memory (``--diff``). ``reported`` chooses and sorts the findings to
    report and fix from a pass's raw findings. ``jobs``: cores for rewriting.
    ``analysis`` may come as a one-item list that this function empties, so
    that the caller holds no reference to it: the first pass's analysis is
    then taken apart before the second is built, and a fix run needs the
    memory of one analysis, not two. One handed over directly is left whole.
    """
    owned = isinstance(analysis, list)  # the analysis is ours to take apart
    if isinstance(analysis, list):
        analysis = analysis.pop()
    out = FixOutcome(findings=findings)
    texts: dict[str, str] = {}  # path -> its text after the passes so far
    # --diff: path -> those texts' bytes, as --fix would write them (--fix
    # writes them, and the analysis reads the disk)
    payloads: dict[str, bytes] = {}
    first: dict[str, FileFix] = {}  # path -> its fix, from the text before any pass
    invariants = analysis.invariants

    for n in range(MAX_FIX_PASSES):
        digests = {path: fi.digest for path, fi in analysis.program.modules_by_path.items()}
        if progress is not None:
            progress.stage("Fixing", len({f.path for f in findings if f.fix is not None}))
        file_fixes = compute_fixes(findings, unsafe_fixes, digests, progress, texts, jobs)
        fixed_ids: set = set()
        changed: list[FileFix] = []
        for ff in file_fixes:
            if ff.error:
                out.errors.append(f"{ff.path}: {ff.error}")
                continue
            if ff.path in first:  # read from memory: the file's encoding is the one first read
                ff.encoding, ff.bom = first[ff.path].encoding, first[ff.path].bom
            if ff.new != ff.old:
                if write:
                    err = write_fix(ff, roots=roots)
                else:
                    payload, err = check_fix(ff, roots)
                    if err is None:
                        payloads[ff.path] = payload
                if err:
                    out.errors.append(err)
                    continue
                changed.append(ff)
            fixed_ids.update(id(f) for f in ff.findings)
        fixed_now = [f for f in findings if id(f) in fixed_ids]
        out.fixed.extend(fixed_now)
        out.findings = [f for f in findings if id(f) not in fixed_ids]
        new = _invariants(analysis, rules, fixed_now)
        if new:
            from ..lock.lockfile import merge

            invariants = merge(invariants or [], new)
            if write:
                out.lock_written = _write_lock(analysis, invariants, out.errors) or out.lock_written
        for ff in changed:
            texts[ff.path] = ff.new
            if ff.path in first:
                prev = first[ff.path]
                first[ff.path] = FileFix(ff.path, prev.old, ff.new, prev.findings + ff.findings)
            else:
                first[ff.path] = ff
        if not changed or n + 1 == MAX_FIX_PASSES:
            break
        analysis = _reanalyse(analysis, {ff.path: ff.new for ff in changed}, invariants, payloads, owned)
        owned = True  # every later analysis is built here
        raw, flags = run_rules(analysis, rules, jobs=jobs)
        findings = reported([f for f, s in zip(raw, flags) if not s])
        out.findings = findings
    out.file_fixes = [first[p] for p in sorted(first)]
    return out


def _reanalyse(
    analysis: Analysis,
    new_texts: dict[str, str],
    invariants: list[Invariant] | None,
    payloads: dict[str, bytes],
    dismantle: bool = False,
) -> Analysis:
    """The analysis of the tree with ``new_texts`` replacing some files: those
    indexed again from their new text, every other index reused; every stage
    that reads source text reads ``payloads`` (the rewritten files' bytes).
    ``dismantle``: take the old analysis apart before the new one is built
    (one analysis alive at a time); only for an analysis nobody else holds."""
    from ..facts.analysis import Analysis

    indexes = [
        index_source(new_texts[fi.path], fi.path, fi.module, fi.is_package) if fi.path in new_texts else fi
        for fi in analysis.program.indexes
    ]
    config, lock_path = analysis.config, analysis.lock_path
    if dismantle:
        _dismantle(analysis)
    del analysis
    return Analysis(indexes, config, invariants, lock_path, dict(payloads))


def _dismantle(analysis: Analysis) -> None:
    """Drop what the analysis and its parts hold (their attributes), so that
    reference counting frees them: the analysis is frozen out of the cyclic
    GC's reach for the run, and a collection of the whole heap to find its
    cycles costs seconds. The indexes it shares with the next analysis are
    not touched."""
    shared = {id(analysis.config)}  # the next analysis is built with the same configuration
    parts = [v for k, v in vars(analysis).items() if k != "config"]
    parts += [v for v in vars(analysis.program).values() if hasattr(v, "__dict__")]
    for part in parts:
        if hasattr(part, "__dict__") and not isinstance(part, (type, FileIndex)) and id(part) not in shared:
            vars(part).clear()
    vars(analysis).clear()


def _invariants(analysis: Analysis, rules: Sequence[type], fixed: list[Finding]) -> list[Invariant]:
    """What the applied fixes rely on (each rule's ``lock_invariants``)."""
    new: list = []
    for rule_cls in rules:
        mine = [f for f in fixed if f.code == rule_cls.code]  # type: ignore[attr-defined]
        if mine:
            new.extend(rule_cls().lock_invariants(analysis, mine))
    return new


def _write_lock(analysis: Analysis, invariants: list[Invariant], errors: list[str]) -> bool:
    from ..lock.lockfile import write as write_lock

    if analysis.lock_path is None:
        return False
    path = Path(analysis.lock_path)
    try:
        return write_lock(path, invariants)
    except OSError as e:
        errors.append(f"{path}: cannot write the lock: {e}")
        return False
