"""CL002: a catalogued expensive call made on a hot path."""

from __future__ import annotations

from ..index import dotted, render
from ..model import Finding, Span
from .base import Example, Rule

_ROOTS = ({"pattern": "*.Runner.execute_model", "kind": "per-step"},)


class ExpensiveCallOnHotPath(Rule):
    """## What it does
    Finds a call from the expensive-call catalog (registry lookups, processor
    construction, ``AutoConfig.from_pretrained``, ``inspect.signature``,
    ``importlib.import_module``, ...) inside a function reached from a hot
    root (per step, per token, per request), and reports the chain of calls
    from the root.
    Catalog entries marked ``cost = "low"`` (process-group and forward-context
    lookups: cheap, but everywhere in model code) are reported only with
    ``min-cost = "low"``.

    ## Why is this bad?
    Work whose result does not change between steps is paid again on every
    step. In vLLM a 10 ms registry lookup on the decode path cost more than
    the decoder's forward pass (PR #24866: 1300 ms to 305 ms).

    ## Example
    ```python
    class Runner:
        def execute_model(self, batch):
            sig = inspect.signature(self.model.forward)
    ```
    Use instead: compute it once in ``__init__`` and read ``self._forward_sig``.

    ## Fix safety
    No fix yet: where an attribute already caches the value, CL001 reports
    the call with a fix instead (and CL002 stays quiet on that call).

    ## Fix availability
    Never (for now).
    """

    code = "CL002"
    name = "expensive-call-on-hot-path"
    summary = "Expensive call on a hot path"
    fix_availability = "never"

    VALID = [
        # the same call outside any hot path
        Example(
            """
import inspect

class Runner:
    def __init__(self, model):
        self.sig = inspect.signature(model.forward)

    def execute_model(self, batch):
        return self.sig
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # calls under `if TYPE_CHECKING` never run
        Example(
            """
import inspect
from typing import TYPE_CHECKING

class Runner:
    def execute_model(self, batch):
        return 1

if TYPE_CHECKING:
    def helper():
        return inspect.signature(helper)
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
    ]

    VALID += [
        # the body of a memoized function runs once per arguments, not per step
        Example(
            """
import functools
import inspect

class Runner:
    def execute_model(self, batch):
        return signature_of(type(self))

@functools.cache
def signature_of(cls):
    return inspect.signature(cls)
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
    ]

    INVALID = [
        Example(
            """
import inspect

class Runner:
    def execute_model(self, batch):
        return self._prepare(batch)

    def _prepare(self, batch):
        return inspect.signature(self.forward)
""",
            expect=(("example.py", 8),),
            message_contains=("inspect.signature", "Runner.execute_model"),
            preset="python",
            hot_roots=_ROOTS,
        ),
    ]

    def check(self, analysis):
        hot = analysis.hot
        p = analysis.program
        covered = analysis.cl001_spans()
        for qn in sorted(hot.chains):
            f = p.functions[qn]
            if f.under_type_checking:
                continue
            ctx = p.context(f)
            for c in f.calls:
                if (f.path, c.line, c.column) in covered:
                    continue
                callee = p.canon(c.func, ctx)
                names = p.callee_names(callee, dotted(c.func))
                entry = analysis.catalog.match(names)
                if entry is None or entry.kind == "declared-pure":
                    continue
                if entry.cost == "low" and analysis.config.min_cost != "low":
                    continue
                chain = hot.chain(qn)
                kind = hot.kinds.get(qn, "hot")
                shown = render(c.func)
                via = " -> ".join(x.rsplit(".", 2)[-2] + "." + x.rsplit(".", 1)[-1] if x.count(".") >= 1 else x for x in chain)
                why = f" ({entry.why})" if entry.why else ""
                yield Finding(
                    code=self.code,
                    path=f.path,
                    span=Span(c.line, c.column, c.end_line, c.end_column),
                    message=f"`{shown}(...)` is {entry.kind} work on a {kind} path{why}; reached via {via}",
                    function=qn,
                    hot_path=chain,
                    data={"catalog": entry.pattern, "kind": entry.kind, "hot_kind": kind},
                )
