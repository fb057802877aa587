"""CL003: an invariant recorded in cachelint.lock no longer holds."""

from __future__ import annotations

import os

from ..facts.invariants import at_place, place_of
from ..model import Finding, Span
from ._shared import LOCK_CATALOG, LOCK_CONFIG, LOCK_FILL, LOCK_RUNNER, LOCK_TEXT
from .base import Example, Rule


class BrokenCacheInvariant(Rule):
    """## What it does
    Re-checks every invariant recorded in ``cachelint.lock``. ``--fix``
    records one for each call it replaced with a cached attribute: the
    attribute, the call it caches (callee and arguments), the *fill* that
    stores it (module and function) with the guard it runs under, and the
    rewritten readers. The invariant is broken when the fill is gone, assigns
    something else, sits under a different guard (stronger, weaker, or no
    longer at construction), or when another function now also assigns the
    attribute. Moving the fill to another function with the same call and
    guard is fine. Each break is reported at the fill's last known place and
    at every reader that still reads the attribute.

    ## Why is this bad?
    The rewritten readers read the attribute instead of calling; they are
    correct only while the fill keeps storing the call's value under its
    guard. vLLM commit 0efd9f867 (Dec 2025) deleted the fill of the
    scheduler-config attribute holding the maximum encoder length; the
    readers of the seed rewrite (vLLM PRs #24866, #24989) silently fell back
    to the batch token budget, vLLM
    0.13.0 shipped allocating the wrong number of cross-attention blocks, and
    nothing failed until the scheduler was repaired by hand.

    ## Example
    ```python
    # config.py: the fill that cachelint.lock records was deleted
    class EngineConfig:
        def __post_init__(self):
            pass

    # runner.py: rewritten by `cachelint --fix`, now reads the default
    class Runner:
        def step(self):
            if self.config.model_config.is_encoder_decoder:
                return self.config.scheduler_config.max_encoder_len
    ```
    Restore the fill (in any function, under the same guard), or revert the
    readers to the call. If the change is intended and the readers are still
    right, ``cachelint lock`` records the new fill.

    ## Fix safety
    There is no automatic fix: whether to restore the fill or revert the
    readers is a decision about the program.

    ## Fix availability
    Never.
    """

    code = "CL003"
    name = "broken-cache-invariant"
    summary = "A cached attribute that rewritten code relies on is no longer filled as the lock records"
    fix_availability = "never"
    default_severity = "error"
    reads = ("program", "hot", "invariant_states", "lock_path")

    VALID = [
        # the fill is intact
        Example(
            files={"config.py": LOCK_CONFIG + LOCK_FILL, "runner.py": LOCK_RUNNER, "cachelint.lock": LOCK_TEXT},
            expensive_calls=LOCK_CATALOG,
        ),
        # the fill moved to another function, same call and guard: still holds
        Example(
            files={
                "config.py": LOCK_CONFIG
                + """
class EngineConfig:
    model_config: ModelConfig
    scheduler_config: SchedulerConfig

    def __post_init__(self):
        fill_limits(self)


def fill_limits(config: EngineConfig):
    if config.model_config.is_encoder_decoder:
        config.scheduler_config.max_encoder_len = REGISTRY.max_len(config.model_config)
""",
                "runner.py": LOCK_RUNNER,
                "cachelint.lock": LOCK_TEXT,
            },
            expensive_calls=LOCK_CATALOG,
        ),
    ]

    INVALID = [
        # the fill was deleted: reported at its last known place and at the reader
        Example(
            files={
                "config.py": LOCK_CONFIG
                + """
class EngineConfig:
    model_config: ModelConfig
    scheduler_config: SchedulerConfig

    def __post_init__(self):
        pass
""",
                "runner.py": LOCK_RUNNER,
                "cachelint.lock": LOCK_TEXT,
            },
            expect=(("config.py", 19), ("runner.py", 10)),
            message_contains=("is gone",),
            expensive_calls=LOCK_CATALOG,
        ),
        # the fill's function itself is gone: reported at the invariant in the lock
        Example(
            files={
                "config.py": LOCK_CONFIG
                + """
class EngineConfig:
    model_config: ModelConfig
    scheduler_config: SchedulerConfig
""",
                "runner.py": LOCK_RUNNER,
                "cachelint.lock": LOCK_TEXT,
            },
            expect=(("cachelint.lock", 3), ("runner.py", 10)),
            message_contains=("is gone",),
            expensive_calls=LOCK_CATALOG,
        ),
        # a second writer appeared
        Example(
            files={
                "config.py": LOCK_CONFIG + LOCK_FILL,
                "runner.py": LOCK_RUNNER
                + """

def shrink(config: EngineConfig):
    config.scheduler_config.max_encoder_len = 16
""",
                "cachelint.lock": LOCK_TEXT,
            },
            expect=(("runner.py", 15), ("runner.py", 10)),
            message_contains=("also assigns",),
            expensive_calls=LOCK_CATALOG,
        ),
    ]

    def check(self, analysis):
        program = analysis.program
        for st in analysis.invariant_states:
            inv = st.invariant
            for problem in st.problems:
                readers = [r for r in st.reads if any(at_place(program, r.function, k) for k in inv.readers)]
                if not readers:
                    # nothing relies on it any more (the rewrites were reverted):
                    # a stale entry, which `cachelint lock --check` reports
                    continue
                names = sorted({str(place_of(r.function)) for r in readers})
                affected = ", ".join(f"`{n}`" for n in names)
                at = self._fill_place(analysis, inv, problem)
                yield Finding(
                    code=self.code,
                    path=at[0],
                    span=at[1],
                    message=f"broken cache invariant: {problem.what}; readers that rely on it: {affected}",
                    function=at[2],
                    data={"attribute": inv.attribute, "callee": inv.callee, "readers": names, "role": "fill"},
                )
                for r in readers:
                    yield Finding(
                        code=self.code,
                        path=r.function.path,
                        span=Span(r.line, r.column, r.end_line, r.end_column),
                        message=(
                            f"reads `{inv.attribute}`, which a rewrite relies on holding `{inv.call_text}`, "
                            f"but {problem.what}"
                        ),
                        function=r.function.qualname,
                        hot_path=analysis.hot.chain(r.function.qualname),
                        data={"attribute": inv.attribute, "callee": inv.callee, "role": "reader"},
                    )

    def _fill_place(self, analysis, inv, problem):
        w = problem.at
        if w is not None:
            return w.function.path, Span(w.line, w.column, w.end_line, w.end_column), w.function.qualname
        for f in analysis.program.functions.values():
            if at_place(analysis.program, f, inv.fill):
                return f.path, Span(f.line, f.column, f.line, f.column), f.qualname
        path = analysis.lock_path or "cachelint.lock"
        rel = os.path.relpath(path)
        return (rel if not rel.startswith("..") else path), Span(inv.line or 1, 0, inv.line or 1, 0), None
