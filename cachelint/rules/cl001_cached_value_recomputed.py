"""CL001: an expensive call whose value an attribute already caches."""

from __future__ import annotations

from ..facts.invariants import from_uses
from ..index.expr import render
from ..model import Applicability, Edit, Finding, Fix, Span
from .base import Example, Rule

_CATALOG = ({"pattern": "*.Registry.max_len", "pure": True, "kind": "registry", "why": "builds a processor"},)

_DEFS = """
class Registry:
    def max_len(self, model_config):
        ...

REGISTRY = Registry()


class ModelConfig:
    is_encoder_decoder: bool
    pooler_config: object


class SchedulerConfig:
    max_encoder_len: int = 0


class EngineConfig:
    model_config: ModelConfig
    scheduler_config: SchedulerConfig

    def __post_init__(self):
        if self.model_config.is_encoder_decoder:
            self.scheduler_config.max_encoder_len = REGISTRY.max_len(self.model_config)
"""


class CachedValueRecomputed(Rule):
    """## What it does
    Finds a call whose result an attribute already stores, made anywhere but
    in the statement that stores it. The storing statement (the *fill*) is an
    assignment ``<obj>.<attr> = <call>(...)``; a later call with the same
    callee on the same argument objects (after following aliases such as
    ``self.model_config = vllm_config.model_config`` and
    ``self.registry = REGISTRY``) recomputes it. Only callees
    that are expensive on each call are considered, decided as for CL002: an
    entry of the expensive-call catalog (unless the callee's body in the tree
    shows it cheap, e.g. a ``config-derivation`` helper that became a plain
    attribute read), or a function of the analysed tree whose body walks a
    config or reaches a catalogued call outside ``except`` handlers and
    fill-once guards.

    ## Why is this bad?
    vLLM's cross-attention builder asked the multimodal registry for the
    maximum encoder length on every decode step (about 10 ms: it builds the
    multimodal processor and runs the feature extractor on dummy audio),
    although the engine config's construction had already stored that value
    in a scheduler-config attribute. Reading the attribute took Whisper
    latency from 1300 ms to 305 ms (vLLM PRs #24866, #24989).

    ## Example
    ```python
    class EngineConfig:
        def __post_init__(self):
            if self.model_config.is_encoder_decoder:
                self.scheduler_config.max_encoder_len = REGISTRY.max_len(self.model_config)

    class Runner:
        def __init__(self, config: EngineConfig):
            self.config = config

        def step(self):
            if self.config.model_config.is_encoder_decoder:
                n = REGISTRY.max_len(self.config.model_config)
    ```
    Use instead:
    ```python
        def step(self):
            if self.config.model_config.is_encoder_decoder:
                n = self.config.scheduler_config.max_encoder_len
    ```

    ## Fix safety
    The attribute equals the call only under the guard that fills it. The fix
    is safe when that guard is implied where the call is made, the callee is
    known to be pure and deterministic (catalog, or inferred from its body),
    the fill runs when the object is constructed, and nothing else assigns the
    attribute. Otherwise it is unsafe, and the message names what is not
    proven: for the vLLM seed sites the fill's guard includes
    ``not model_config.pooler_config``, which no reader implies, so all four
    rewrites are unsafe, exactly as the upstream reviewers argued. For other
    models the attribute holds ``max_num_batched_tokens``.

    ## Fix availability
    Sometimes: when an access path to the attribute is in scope at the call
    (``self.scheduler_config``, a parameter, a local bound earlier). The fix
    replaces the call with the shortest such path and removes imports it
    leaves unused.
    """

    code = "CL001"
    name = "cached-value-recomputed"
    summary = "Expensive call recomputes a value an attribute already caches"
    fix_availability = "sometimes"

    VALID = [
        # reading the cached attribute is what we want
        Example(
            _DEFS
            + """
class Runner:
    def __init__(self, config: EngineConfig):
        self.config = config

    def step(self):
        return self.config.scheduler_config.max_encoder_len
""",
            expensive_calls=_CATALOG,
        ),
        # a different argument object: not the cached value
        Example(
            _DEFS
            + """
class Runner:
    def __init__(self, config: EngineConfig, draft: ModelConfig):
        self.config = config
        self.draft = draft

    def step(self):
        return REGISTRY.max_len(self.draft)
""",
            expensive_calls=_CATALOG,
        ),
        # a cheap callee (not in the catalog, reaches nothing expensive)
        Example(
            """
class Config:
    size: int

    def __post_init__(self):
        self.double = double(self.size)


def double(n):
    return 2 * n


class User:
    def __init__(self, config: Config):
        self.config = config

    def step(self):
        return double(self.config.size)
""",
        ),
        # a constructor makes a new object each time: not a cached value
        Example(
            """
import inspect

class Buffers:
    def __init__(self, n: int):
        self.n = n
        self.table = Table(self.n)

    def reset(self):
        self.other = Table(self.n)


class Table:
    def __init__(self, n):
        self.sig = inspect.signature(print)
""",
            preset="python",
        ),
    ]

    INVALID = [
        # guard implied at the use site: safe fix
        Example(
            files={
                "example.py": _DEFS
                + """
class Runner:
    def __init__(self, config: EngineConfig):
        self.config = config
        self.scheduler_config = config.scheduler_config

    def step(self):
        if self.config.model_config.is_encoder_decoder:
            return REGISTRY.max_len(self.config.model_config)
        return 0
""",
            },
            expect=(("example.py", 32),),
            applicability=("safe",),
            fixed={
                "example.py": _DEFS
                + """
class Runner:
    def __init__(self, config: EngineConfig):
        self.config = config
        self.scheduler_config = config.scheduler_config

    def step(self):
        if self.config.model_config.is_encoder_decoder:
            return self.scheduler_config.max_encoder_len
        return 0
""",
            },
            expensive_calls=_CATALOG,
        ),
        # no guard at the use site: unsafe fix naming the residual condition
        Example(
            files={
                "example.py": _DEFS
                + """
def max_encoder_len(config: EngineConfig) -> int:
    return REGISTRY.max_len(config.model_config)
""",
            },
            expect=(("example.py", 26),),
            applicability=("unsafe",),
            message_contains=("config.model_config.is_encoder_decoder",),
            fixed={
                "example.py": _DEFS
                + """
def max_encoder_len(config: EngineConfig) -> int:
    return config.scheduler_config.max_encoder_len
""",
            },
            expensive_calls=_CATALOG,
        ),
    ]

    reads = ("cache_analysis", "hot", "removable_names")

    def check(self, analysis):
        ca = analysis.cache_analysis
        for use in ca.uses():
            yield self._finding(analysis, use)

    def lock_invariants(self, analysis, fixed):
        """The invariant each rewritten read relies on: its fill, guard and callee."""
        spans = {(f.path, f.span.line, f.span.column) for f in fixed}
        uses = [u for u in analysis.cache_analysis.uses() if (u.function.path, u.call.line, u.call.column) in spans]
        return from_uses(analysis.program, uses)

    def _finding(self, analysis, use) -> Finding:
        site, g, c = use.site, use.function, use.call
        call_text = render(("call", c.func, c.args, c.kwargs))
        if len(call_text) > 90:
            call_text = render(c.func) + "(...)"
        message = f"`{call_text}` recomputes `{site.owner}`, which `{site.function.qualname}` already stores"
        fix = None
        relies_on = [
            f"fill: `{site.function.qualname}` assigns `{site.owner}` = `{render(('call', site.call.func, site.call.args, site.call.kwargs))}`"
        ]
        if site.atoms:
            relies_on.append("fill guard: " + " and ".join(f"`{a.negated_text()}`" for a in site.atoms))
        else:
            relies_on.append("fill guard: none (unconditional)")
        relies_on.append(f"callee: {site.pure_reason}" if site.pure else "callee: not proven pure")
        if use.replacement is not None:
            applicability = Applicability.UNSAFE if use.reasons else Applicability.SAFE
            span = Span(c.line, c.column, c.end_line, c.end_column)
            edit = Edit(span, use.replacement, analysis.removable_names(g, c))
            fix = Fix(
                applicability=applicability,
                edits=(edit,),
                message=f"Read `{use.replacement}`",
                relies_on=tuple(relies_on),
            )
            if use.reasons:
                message += f"; reading `{use.replacement}` is unsafe: " + "; ".join(use.reasons)
        else:
            message += "; " + "; ".join(use.notes)
        return Finding(
            code=self.code,
            path=g.path,
            span=Span(c.line, c.column, c.end_line, c.end_column),
            message=message,
            function=g.qualname,
            hot_path=analysis.hot.chain(g.qualname),
            fix=fix,
            notes=tuple(use.reasons),
            data={
                "cached_attribute": site.owner,
                "fill": {"function": site.function.qualname, "path": site.function.path, "line": site.call.line},
                "callee": site.callee_names[0] if site.callee_names else None,
                "residual_guard": list(use.residual_text),
                "cost": site.cost,
                "hot_kind": analysis.hot.kind(g.qualname),
            },
        )
