"""What a finding costs per engine step: an estimate, with its evidence.

Estimated time per step = time per call x calls per run of the function x
runs of the function per step:

* time per call: :meth:`CostModel.seconds <cachelint.facts.cost.CostModel.seconds>`
  (a catalogued kind's calibrated time, or the body in the tree, timed);
* calls per run: 1, or the loop count (``frequency.toml``, ``[loop]``) for a call
  inside a loop, or what a rule says is repeated (two reads where one would do);
* runs per step: the hot kind of the function (per token, per layer, per
  step, per request; ``[frequency]``, overridable with
  ``[tool.cachelint.frequency]``).

Code reached from the hot roots only through a region compiled by
``torch.compile`` (:mod:`cachelint.semantic.compiled`) runs in Python per
step only in eager mode: its estimate says so, and its rank is weighted down
(``traced-weight``). The estimate ranks findings; it never makes a fix safe.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import pairwise

from ..config import Config
from ..index.expr import dotted
from ..index.records import CallSite, FunctionInfo
from ..semantic.callgraph import HotPaths, call_site
from ..semantic.program import Program
from .bodies import Bodies
from .cost import CostModel
from .repeats import run_share
from .timing import Timing, baseline, cost_table, format_seconds


@dataclass(frozen=True, slots=True)
class Estimate:
    """One finding's estimated cost per step and the evidence for it."""

    per_call: float  # seconds per call
    basis: str  # why a call costs that much
    calls_per_run: float  # calls per run of the function
    frequency: str  # the hot kind (per-token, per-layer, per-step, ..., once)
    runs_per_step: float  # runs of the function per step, for that kind
    traced: bool = False  # reached only through a torch.compile'd region
    weight: float = 1.0  # rank weight (traced code ranks lower)
    loop: bool = False  # the calls per run come from a loop
    count_basis: str = ""  # how the calls per run were counted, when not plainly
    # the share of the root's runs that reach the function: its chain's calls
    # under branches, each taken on half the runs (1: every call on the chain
    # runs whenever its caller does)
    reach: float = 1.0
    branches: int = 0  # the calls under branches on the chain

    @property
    def per_step(self) -> float:
        return self.per_call * self.calls_per_run * self.runs_per_step * self.reach

    @property
    def rank(self) -> float:
        """What ranking sorts by: the time per step, weighted down when traced."""
        return self.per_step * self.weight

    def describe(self) -> str:
        """``~38 µs per step: 1.2 µs per call (...) x 32 runs per step (per-layer)``."""
        if self.runs_per_step == 0:
            return f"no time per step: the site runs {self.frequency} ({self.basis})"
        parts = [f"~{format_seconds(self.per_step)} per step: {format_seconds(self.per_call)} per call ({self.basis})"]
        if self.count_basis:
            parts.append(f"x {self.calls_per_run:g} per run ({self.count_basis})")
        elif self.calls_per_run != 1:
            why = "in a loop, counted as" if self.loop else "repeated"
            parts.append(f"x {self.calls_per_run:g} per run ({why} {self.calls_per_run:g})")
        runs = "run" if self.runs_per_step == 1 else "runs"
        parts.append(f"x {self.runs_per_step:g} {runs} per step ({self.frequency})")
        if self.reach != 1:
            calls = "a call" if self.branches == 1 else f"{self.branches} calls"
            parts.append(f"x {self.reach:g} (reached through {calls} under a branch, each taken half the time)")
        text = " ".join(parts)
        if self.traced:
            text += "; reached only through code compiled by torch.compile: it runs per step only in eager mode"
        return text

    def to_data(self) -> dict:
        """The estimate in a finding's JSON data."""
        return {
            "per_step_seconds": _sig(self.per_step),
            "per_call_seconds": _sig(self.per_call),
            "calls_per_run": self.calls_per_run,
            "frequency": self.frequency,
            "runs_per_step": self.runs_per_step,
            "reach": self.reach,
            "traced": self.traced,
            "rank_seconds": _sig(self.rank),
            "basis": self.basis,
            "text": self.describe(),
        }


def _sig(x: float) -> float:
    return float(f"{x:.3g}")


def rank_of(data: dict | None) -> float:
    """The rank of a finding from its data: the time per step a profile
    measured at its sites, else its estimate's rank (0 when it has neither)."""
    measured = (data or {}).get("measured")
    if measured:
        return float(measured["per_step_seconds"])
    est = (data or {}).get("estimate")
    return float(est["rank_seconds"]) if est else 0.0


class Estimator:
    """Estimates for sites of one analysis (built once, as ``Analysis.estimates``)."""

    def __init__(
        self,
        program: Program,
        hot: HotPaths,
        cost: CostModel,
        config: Config,
        traced: frozenset[str],
        bodies: Bodies | None = None,
    ) -> None:
        self.program = program
        self.hot = hot
        self.cost = cost
        self.traced = traced
        self.bodies = bodies
        self._edges: dict[tuple[str, str], float] = {}
        table = cost_table()
        self.runs = {k: float(v["runs"]) for k, v in table["frequency"].items()}
        self.runs.update(dict(config.frequency))
        self.loop = float(table["loop"]["iterations"])
        self.traced_weight = float(table["loop"]["traced-weight"])

    def site(self, f: FunctionInfo, c: CallSite, repeats: float | None = None, count_basis: str = "") -> Estimate:
        """The estimate for call ``c`` of ``f``: ``repeats`` is the number of
        calls per run a fix saves (default: 1, or the loop count in a loop),
        ``count_basis`` how it was counted (for the text)."""
        timing = self.call_timing(f, c)
        calls = repeats if repeats is not None else (self.loop if c.in_loop else 1.0)
        est = self._in(f, timing.seconds, timing.basis, calls, repeats is None and c.in_loop)
        return replace(est, count_basis=count_basis) if count_basis else est

    def call_timing(self, f: FunctionInfo, c: CallSite) -> Timing:
        """What one run of call ``c`` (made in ``f``) costs, by what it calls."""
        p = self.program
        callee = p.call_callee(f, c)
        names = p.callee_names(callee, dotted(c.func))
        target = p.callee_function(callee) if callee is not None else None
        return self.cost.seconds(names, target)

    def lookup(self, f: FunctionInfo, repeats: float) -> Estimate:
        """The estimate for ``repeats`` extra subscripts of one table in ``f``."""
        t = baseline("dict-lookup")
        return self._in(f, t, f"a dict subscript: {format_seconds(t)}, calibrated", repeats, False)

    def work(self, f: FunctionInfo, seconds: float, basis: str, calls: float = 1.0, loop: bool = False) -> Estimate:
        """The estimate for work of ``seconds`` in one run of ``f`` that is no
        single call (a comprehension rebuilt), made ``calls`` times per run."""
        return self._in(f, seconds, basis, calls, loop)

    def _in(self, f: FunctionInfo, seconds: float, basis: str, calls: float, loop: bool) -> Estimate:
        """An estimate for work in ``f``: how often ``f`` runs per step, and whether it is traced."""
        kind = self.hot.kind(f.qualname) or "once"
        traced = f.qualname in self.traced
        reach, branches = self.reach(f)
        return Estimate(
            seconds,
            basis,
            calls,
            kind,
            self.runs.get(kind, 1.0),
            traced,
            self.traced_weight if traced else 1.0,
            loop,
            reach=reach,
            branches=branches,
        )

    def reach(self, f: FunctionInfo) -> tuple[float, int]:
        """The share of its hot root's runs in which ``f`` runs, along the chain
        that makes it hot, and the calls under branches on that chain: each
        call of the chain counts with the share of its caller's runs that
        reach it (one half per branch around it, :func:`repeats.run_share`),
        the most reached of the caller's calls of the callee when there are
        several. A call whose statement cannot be found again counts whole."""
        chain = self.hot.chain(f.qualname)
        if self.bodies is None or not chain or len(chain) < 2:
            return 1.0, 0
        share, branches = 1.0, 0
        for caller, callee in pairwise(chain):
            s = self._edge_share(caller, callee)
            if s < 1:
                branches += 1
                share *= s
        return share, branches

    def _edge_share(self, caller: str, callee: str) -> float:
        key = (caller, callee)
        hit = self._edges.get(key)
        if hit is not None:
            return hit
        share = 1.0
        fn = self.program.functions.get(caller)
        calls = [i for c, i in self.hot.caller_calls.get(callee, ()) if c == caller]
        body = self.bodies.body(fn) if fn is not None and calls and self.bodies is not None else None
        if fn is not None and body is not None:
            best = 0.0
            for i in calls:
                c = call_site(fn, i)
                node = body.find(c.line, c.column, c.end_line, c.end_column)
                if node is None:
                    best = 1.0
                    break
                best = max(best, run_share(body, node))
            share = best
        self._edges[key] = share
        return share
