"""CL004: a new read of a locked attribute where the fill's guard is not known to hold."""

from __future__ import annotations

from ..model import Finding, Span
from ._shared import LOCK_CATALOG, LOCK_CONFIG, LOCK_FILL, LOCK_RUNNER, LOCK_TEXT
from .base import Example, Rule


class UnsafeReader(Rule):
    """## What it does
    Finds reads of an attribute recorded in ``cachelint.lock`` that were not
    there when the lock was written (the lock lists the rewritten readers and
    every other read it saw), in a place whose guard does not imply the guard
    the attribute is filled under. The read's object is tied to the fill's
    (the same ``EngineConfig`` reached through aliases), the fill's guard is
    restated for it, and what the read's own conditions do not imply is
    named. A read whose object cannot be tied to the fill's is reported too:
    nothing proves the fill ran for it.

    ## Why is this bad?
    Outside the fill's guard the attribute holds its default, not the cached
    call's value. The seed fill stores the encoder length only for
    encoder-decoder models that are not pooling models; a new reader in code
    that also runs for decoder-only models gets ``max_num_batched_tokens``
    instead, silently. The lock exists so that new code cannot quietly depend
    on the invariant outside the condition where it holds.

    ## Example
    ```python
    class Runner:
        def budget(self):
            # the fill runs only when model_config.is_encoder_decoder
            return self.config.scheduler_config.max_encoder_len
    ```
    Use instead:
    ```python
        def budget(self):
            if self.config.model_config.is_encoder_decoder:
                return self.config.scheduler_config.max_encoder_len
            return REGISTRY.max_len(self.config.model_config)
    ```
    If the read is right as it is (the code only runs where the guard holds
    for reasons cachelint cannot see), ``cachelint lock`` records it as known.

    ## Fix safety
    There is no automatic fix: adding the guard or calling instead is a
    decision about the program.

    ## Fix availability
    Never.
    """

    code = "CL004"
    name = "unsafe-cached-attribute-reader"
    summary = "New read of a locked cached attribute where the fill's guard is not known to hold"
    fix_availability = "never"
    default_severity = "warning"
    reads = ("hot", "invariant_states")

    VALID = [
        # the new reader checks the fill's guard
        Example(
            files={
                "config.py": LOCK_CONFIG + LOCK_FILL,
                "runner.py": LOCK_RUNNER
                + """

def encoder_budget(config: EngineConfig):
    if not config.model_config.is_encoder_decoder:
        return 0
    return config.scheduler_config.max_encoder_len
""",
                "cachelint.lock": LOCK_TEXT,
            },
            expensive_calls=LOCK_CATALOG,
        ),
        # reads the lock already knows are not reported again
        Example(
            files={
                "config.py": LOCK_CONFIG + LOCK_FILL,
                "runner.py": LOCK_RUNNER
                + """

def encoder_budget(config: EngineConfig):
    return config.scheduler_config.max_encoder_len
""",
                "cachelint.lock": LOCK_TEXT.replace(
                    "known_reads = []", 'known_reads = [\n    { module = "runner", function = "encoder_budget" },\n]'
                ),
            },
            expensive_calls=LOCK_CATALOG,
        ),
    ]

    INVALID = [
        # a new reader without the guard
        Example(
            files={
                "config.py": LOCK_CONFIG + LOCK_FILL,
                "runner.py": LOCK_RUNNER
                + """

def encoder_budget(config: EngineConfig):
    return config.scheduler_config.max_encoder_len
""",
                "cachelint.lock": LOCK_TEXT,
            },
            expect=(("runner.py", 15),),
            message_contains=("`config.model_config.is_encoder_decoder`",),
            expensive_calls=LOCK_CATALOG,
        ),
    ]

    def check(self, analysis):
        for st in analysis.invariant_states:
            inv = st.invariant
            for u in st.unsafe_reads:
                r = u.read
                cond = " and ".join(f"`{t}`" for t in u.residual)
                if u.related:
                    why = f"the fill in `{inv.fill}` stores it only when {cond}, which is not implied here"
                else:
                    why = (
                        f"this object cannot be tied to the `{inv.anchor.rsplit('.', 1)[-1]}` whose fill "
                        f"(`{inv.fill}`) stores it, and only when {cond}"
                    )
                yield Finding(
                    code=self.code,
                    path=r.function.path,
                    span=Span(r.line, r.column, r.end_line, r.end_column),
                    message=(
                        f"new read of `{inv.attribute}`, which holds `{inv.call_text}` only under its fill's guard: "
                        f"{why}; guard the read, or record it with `cachelint lock`"
                    ),
                    function=r.function.qualname,
                    hot_path=analysis.hot.chain(r.function.qualname),
                    notes=tuple(u.residual),
                    data={"attribute": inv.attribute, "callee": inv.callee, "residual_guard": list(u.residual)},
                )
