"""CL011: an attribute store on a hot path runs a costly ``__setattr__`` (a torch module's) on each run."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..facts.timing import format_seconds
from ..fixes.hotcalls import hot_route
from ..index.expr import render
from ..index.records import Assign, FunctionInfo
from ..model import Finding, Span
from ..semantic.program import CONSTRUCTORS
from .base import Example, Rule

if TYPE_CHECKING:
    from ..facts.analysis import Analysis

_ROOTS = ({"pattern": "*.Runner.execute_model", "kind": "per-step"}, {"pattern": "*Layer.forward", "kind": "per-layer"})


class CostlyAttributeStore(Rule):
    """## What it does
    Finds an attribute store (``self.x = value``) that runs on every run of
    a hot function, where the object's class runs a costly ``__setattr__``
    for it: one inherited from a class the catalog prices
    (``torch.nn.Module.__setattr__`` in the python preset), or one of the
    tree whose body reaches a catalogued call.

    ```python
    class MoE(nn.Module):
        def forward(self, x):
            self._selected = self.router(x)
            return self.experts(x, self._selected)
    ```

    Off unless selected (``--select CL011``, ``CL``, ``ALL``): read by hand
    on vLLM 0.33.0 and SGLang 0.5.23, the stores it finds are real, but
    they sit in layer code that CUDA-graph replay skips on decode, so they
    cost time on eager steps only (prefill chunks, ROCm, graphs turned
    off); on an eager deployment each one is paid per layer per step.

    Not reported: a store under a condition (``if self.cache.dtype !=
    x.dtype: self.cache = ...``: it runs only when the value changes), in a
    constructor, in an ``except`` handler, or on an object whose class has
    no costly ``__setattr__``.

    ## Why is this bad?
    ``nn.Module.__setattr__`` looks the name up in the module's parameters,
    buffers and submodules and type-checks the value on every store: about
    1 µs (2.5 µs for a registered buffer) against 8 ns on a plain object,
    measured by ``benchmarks/calibrate_cost.py`` (CPython 3.11, torch 2.13). A store in a
    layer's ``forward`` pays it once per layer per step. vLLM removed such a
    store from its rotary embedding's ``forward`` for this reason ("Remove
    slow setattr in MLA").

    ## Example
    ```python
    class RotaryEmbedding(nn.Module):
        def forward(self, positions, query, key):
            self.cos_sin_cache = self.cos_sin_cache.to(query.device, dtype=query.dtype)
            return apply_rotary(positions, query, key, self.cos_sin_cache)
    ```
    Use instead:
    ```python
    class RotaryEmbedding(nn.Module):
        def forward(self, positions, query, key):
            cache = self.cos_sin_cache
            if cache.device != query.device or cache.dtype != query.dtype:
                self.cos_sin_cache = cache = cache.to(query.device, dtype=query.dtype)
            return apply_rotary(positions, query, key, cache)
    ```
    A value that changes on every call belongs in a local or an argument; a
    value the module need not track (no parameter, buffer or submodule) can
    live on a plain holder object made in ``__init__``.

    ## Fix safety
    No automatic fix: whether the store can be skipped, moved or kept off
    the module depends on who reads the attribute.

    ## Fix availability
    Never.
    """

    code = "CL011"
    name = "costly-attribute-store"
    summary = "An attribute store on a hot path runs a costly `__setattr__` (a torch module's) on each run"
    fix_availability = "never"
    default_severity = "warning"
    reads = ("hot", "program", "cost", "catalog", "bodies", "estimates")
    needs_hot_paths = True
    # off unless selected: on current engines such stores sit in layer code that
    # CUDA-graph replay skips (see the rule's documentation)
    default_enabled = False

    VALID = [
        # a store on a plain object: a dict write
        Example(
            """
class State:
    pass

class Runner:
    def __init__(self):
        self.state = State()

    def execute_model(self, batch):
        self.state.last = batch
        return batch
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # the store runs only when the value changes
        Example(
            """
from torch import nn

class DecoderLayer(nn.Module):
    def forward(self, x):
        if self.cache.dtype != x.dtype:
            self.cache = self.cache.to(x.dtype)
        return x + self.cache
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # a store in the constructor, and one in an error handler
        Example(
            """
from torch import nn

class DecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        try:
            return x.relu()
        except RuntimeError:
            self.failed = True
            raise
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # without the python preset nothing prices nn.Module.__setattr__
        Example(
            """
from torch import nn

class DecoderLayer(nn.Module):
    def forward(self, x):
        self.last = x
        return x
""",
            hot_roots=_ROOTS,
        ),
    ]
    INVALID = [
        # a per-layer store on a torch module
        Example(
            """
from torch import nn

class DecoderLayer(nn.Module):
    def forward(self, x):
        self.last = x
        return x
""",
            preset="python",
            hot_roots=_ROOTS,
            expect=(("example.py", 5),),
            message_contains=("torch.nn.Module.__setattr__", "per-layer"),
        ),
        # a module held by a runner: the store is on the module, not on the runner
        Example(
            """
from torch import nn

class Sampler(nn.Module):
    def forward(self, logits):
        return logits

class Runner:
    def __init__(self):
        self.sampler = Sampler()

    def execute_model(self, logits):
        self.sampler.last_logits = logits
        return self.sampler(logits)
""",
            preset="python",
            hot_roots=_ROOTS,
            expect=(("example.py", 12),),
            message_contains=("`self.sampler.last_logits = ...`",),
        ),
    ]

    def check(self, analysis: Analysis) -> list[Finding]:
        out: list[Finding] = []
        p = analysis.program
        for qn in sorted(analysis.hot.chains):
            f = p.functions.get(qn)
            if f is None or f.under_type_checking or f.name in CONSTRUCTORS or not f.assigns:
                continue
            stores = [a for a in f.assigns if a.target[0] == "attr" and not a.guard and a.kind != "del"]
            if not stores:
                continue
            ctx = p.context(f)
            handlers: list[tuple[int, int]] | None = None
            for a in stores:
                setter = self._setter(analysis, p.type_of(p.canon(a.target[1], ctx)))
                if setter is None:
                    continue
                if handlers is None:
                    handlers = _handler_lines(analysis, f)
                if any(lo <= a.line <= hi for lo, hi in handlers):
                    continue
                out.append(self._finding(analysis, f, a, *setter))
        return out

    @staticmethod
    def _setter(analysis: Analysis, cls: str | None) -> tuple[str, float, str] | None:
        """``(name, seconds, why)`` of the costly ``__setattr__`` a store on a
        ``cls`` runs: its own or a base's in the tree when the cost model
        prices its body, else the catalog's entry for a base outside the tree."""
        p = analysis.program
        if cls is None or cls not in p.classes:
            return None
        own = p.lookup_method(cls, "__setattr__")
        if own is not None:
            cost = analysis.cost.cost([own.qualname], own)
            if cost is None:
                return None
            t = analysis.cost.seconds([own.qualname], own)
            return own.qualname, t.seconds, cost.reason
        for base in p.mro(cls)[1:]:
            if base in p.classes:
                continue
            name = f"{base}.__setattr__"
            entry = analysis.catalog.match([name])
            if entry is not None and entry.kind != "declared-pure":
                t = analysis.cost.seconds([name], None)
                return name, t.seconds, entry.why or t.basis
        return None

    def _finding(
        self, analysis: Analysis, f: FunctionInfo, a: Assign, setter: str, seconds: float, why: str
    ) -> Finding:
        hot = analysis.hot
        chain = hot.chain(f.qualname)
        kind = hot.kind(f.qualname, "hot")
        shown = render(a.target)
        basis = f"`{setter}`: {format_seconds(seconds)} per store"
        estimate = analysis.estimates.work(f, seconds, basis, 1.0, a.in_loop)
        note = "no fix: skip the store when the value is unchanged, or keep the value off the module"
        msg = (
            f"`{shown} = ...` runs `{setter}` on each run of `{f.name}` ({why}); "
            f"on a {kind} path, reached via {hot_route(chain)}; {note}"
        )
        return Finding(
            code=self.code,
            path=f.path,
            span=Span(a.line, a.column, a.end_line, a.end_column),
            message=msg,
            function=f.qualname,
            hot_path=chain,
            fix=None,
            notes=(note,),
            data={"setter": setter, "hot_kind": kind, "estimate": estimate.to_data()},
        )


def _handler_lines(analysis: Analysis, f: FunctionInfo) -> list[tuple[int, int]]:
    """The file lines of ``f``'s ``except`` handlers (an error path, not the hot one)."""
    body = analysis.bodies.body(f)
    if body is None:
        return []
    return [
        (body.line_of(n), (n.end_lineno or n.lineno) + body.shift)
        for n in body.code_nodes
        if isinstance(n, ast.ExceptHandler)
    ]
