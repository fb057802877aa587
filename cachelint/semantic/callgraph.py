"""Stage 3b: the call graph and the hot paths.

Hot roots are qualified-name globs from the configuration (``*.Scheduler.
schedule``, ``*Builder.build``, ...). The hot set is their closure over the call
graph, walked breadth-first from the roots of each kind, most frequent kind
first (per token, per layer, per step, per request, per batch): each hot
function takes the most frequent kind that reaches it, and its shortest chain
from a root of that kind. Edges: module functions and imported
functions, ``self.m()`` through the class and its bases, methods on objects of
known type (``self.kv_cache_manager.allocate_slots()`` when the constructor
binds ``self.kv_cache_manager = KVCacheManager(...)``), closures, and class
construction (an edge to ``__init__``). Calls under ``if TYPE_CHECKING``,
unresolvable dynamic calls, calls into ``functools.cache``/``lru_cache``
functions (whose bodies run once per arguments), calls under a fill-once
guard (lazy init, memo dicts: see :mod:`cachelint.semantic.idioms`) and calls in
``except`` handlers (error paths) are not edges.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from itertools import pairwise

from ..config import HotRoot
from ..globs import GlobSet
from ..index.expr import dotted
from ..index.records import CallSite, FunctionInfo
from ..model import HotCoverage
from .idioms import fills_once
from .program import Program


@dataclass
class HotPaths:
    """The hot functions, each with its chain from a root and its kind."""

    chains: dict = field(default_factory=dict)  # qualname -> (root, ..., qualname)
    kinds: dict = field(default_factory=dict)  # qualname -> kind of its root
    roots: dict = field(default_factory=dict)  # root qualname -> HotRoot
    # caller qualname -> [(call index, callee qualname)], every resolved call
    # that is an edge, for each function the walk reached
    edges: dict = field(default_factory=dict)
    # callee qualname -> [(caller qualname, call index)], in the walk's order
    caller_calls: dict = field(default_factory=dict)
    program: Program | None = None

    def coverage(self, patterns: tuple[HotRoot, ...], declared_empty: bool = False) -> HotCoverage:
        """How many patterns matched, the functions they matched and all they reach."""
        used = {r.pattern for r in self.roots.values()}
        return HotCoverage(
            len(patterns),
            sum(1 for r in patterns if r.pattern in used),
            len(self.roots),
            len(self.chains),
            declared_empty,
        )

    def chain(self, qualname: str) -> tuple[str, ...] | None:
        return self.chains.get(qualname)

    def is_hot(self, qualname: str) -> bool:
        return self.chain(qualname) is not None

    def kind(self, qualname: str, default=None):
        if self.chain(qualname) is None:
            return default
        return self.kinds[qualname]

    def callers(self, qualname: str, limit: int) -> list[tuple[FunctionInfo, CallSite]]:
        """The first ``limit`` resolved hot calls of ``qualname``, as (caller, call)."""
        assert self.program is not None  # set by hot_paths()
        functions = self.program.functions
        out = []
        for caller, i in self.caller_calls.get(qualname, ())[:limit]:
            f = functions[caller]
            out.append((f, f.calls[i]))
        return out


def resolve_call(program: Program, f: FunctionInfo, call: CallSite) -> FunctionInfo | None:
    callee = program.call_callee(f, call)
    if callee is None:
        return None
    return program.callee_function(callee)


def edges_of(program: Program, f: FunctionInfo) -> list[tuple[int, str]]:
    """(call index, callee qualname) of each call of ``f`` that is an edge."""
    out: list = []
    if f.under_type_checking:
        return out
    for i, call in enumerate(f.calls):
        if call.in_handler or (call.guard and fills_once(f, call)):
            continue  # an error path; or lazy init / memo dict: once per slot, not per call
        target = resolve_call(program, f, call)
        if target is None or program.is_cached(target):
            continue  # @cache / @lru_cache: its body runs once per arguments, not per call
        out.append((i, target.qualname))
    return out


def match_roots(program: Program, roots: tuple[HotRoot, ...]) -> dict:
    globs = GlobSet([r.pattern for r in roots])
    found: dict = {}
    for qn in sorted(program.functions):
        i = globs.first(qn)
        if i >= 0:
            found[qn] = roots[i]
    return found


# how often a site runs, most often first: ranking and --statistics use it
FREQUENCY = ("per-token", "per-layer", "per-step", "per-request", "per-batch", "once")


def frequency_rank(kind: str | None) -> int:
    """0 for the most frequent kind; code off every hot path ranks last."""
    try:
        return FREQUENCY.index(kind or "once")
    except ValueError:
        return len(FREQUENCY)


def walk(root_kinds: list[tuple[str, str]], edges_for) -> tuple[dict, dict, dict, dict]:
    """(chains, kinds, edges, caller_calls) from the roots ``[(qualname,
    kind)]`` (sorted by qualname) over ``edges_for(qualname)`` (see
    :func:`edges_of`), each function's edges asked for once.

    A function reached from roots of several kinds takes the most frequent
    one (a helper called per layer and per request runs per layer), and the
    shortest chain from a root of that kind: one breadth-first walk per kind,
    most frequent first.
    """
    chains: dict = {}
    kinds: dict = {}
    edges: dict = {}
    caller_calls: dict = {}
    distinct: dict = {}

    def targets(qn: str) -> list[str]:
        out = distinct.get(qn)
        if out is None:
            es = edges[qn] = edges_for(qn)
            for i, t in es:
                caller_calls.setdefault(t, []).append((qn, i))
            out = distinct[qn] = list(dict.fromkeys(t for _, t in es))
        return out

    for kind in sorted({k for _, k in root_kinds}, key=frequency_rank):
        queue: deque = deque()
        local: dict[str, tuple] = {}  # chains from the roots of this kind
        for qn, k in root_kinds:
            if k == kind:
                local[qn] = (qn,)
                queue.append(qn)
        while queue:
            qn = queue.popleft()
            for t in targets(qn):
                if t not in local:
                    local[t] = local[qn] + (t,)
                    queue.append(t)
        for qn, chain in local.items():
            if qn not in chains:
                chains[qn] = chain
                kinds[qn] = kind
    return chains, kinds, edges, caller_calls


def hot_paths(program: Program, roots: tuple[HotRoot, ...], cold: tuple[str, ...] = ()) -> HotPaths:
    """Hot functions with their chain and kind (see :func:`walk`). ``cold``:
    globs of functions the walk never enters (``cold-functions``: recovery,
    rescaling, error reporting, reached from a hot function only behind a
    guard the call graph does not evaluate); a root stays a root."""
    matched = match_roots(program, roots)
    functions = program.functions
    cold_globs = GlobSet(list(cold)) if cold else None
    memo: dict[str, bool] = {}

    def is_cold(qn: str) -> bool:
        hit = memo.get(qn)
        if hit is None:
            hit = memo[qn] = cold_globs is not None and cold_globs.first(qn) >= 0
        return hit

    def edges_for(qn: str) -> list[tuple[int, str]]:
        es = edges_of(program, functions[qn])
        return [e for e in es if not is_cold(e[1])] if cold_globs is not None else es

    chains, kinds, edges, caller_calls = walk([(qn, r.kind) for qn, r in matched.items()], edges_for)
    return HotPaths(chains, kinds, matched, edges, caller_calls, program)


# ----- what the hot roots matched, and why a function is hot (`cachelint hot-paths`)


@dataclass(frozen=True)
class RootMatch:
    """One hot-root pattern and the functions it made roots, each with how
    many functions it reaches (itself included) over the call graph."""

    pattern: str
    kind: str
    why: str
    functions: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class HotStep:
    """One function of a hot chain, with the call that reaches it from the previous one."""

    qualname: str
    path: str
    line: int  # the call's line in the previous function (the def's line for the root)
    call: str  # the callee as spelled at that call ("" for the root)


def reach(hot: HotPaths, root: str) -> int:
    """How many functions ``root`` reaches over the hot call graph, itself included."""
    seen = {root}
    stack = [root]
    while stack:
        for _, t in hot.edges.get(stack.pop(), ()):
            if t not in seen:
                seen.add(t)
                stack.append(t)
    return len(seen)


def root_matches(hot: HotPaths, patterns: tuple[HotRoot, ...]) -> list[RootMatch]:
    """Each pattern in order with the functions it matched; a function two
    patterns match is a root of the first (whose kind applies)."""
    by_pattern: dict[str, list[str]] = {}
    for qn, r in hot.roots.items():
        by_pattern.setdefault(r.pattern, []).append(qn)
    out = []
    seen: set[str] = set()
    for r in patterns:
        if r.pattern in seen:
            continue
        seen.add(r.pattern)
        qns = sorted(by_pattern.get(r.pattern, ()))
        out.append(RootMatch(r.pattern, r.kind, r.why, tuple((qn, reach(hot, qn)) for qn in qns)))
    return out


def why_hot(hot: HotPaths, qualname: str) -> list[HotStep] | None:
    """The chain from a hot root to ``qualname``, each step with the call that
    takes it there; None when ``qualname`` is not hot."""
    chain = hot.chain(qualname)
    if chain is None or hot.program is None:
        return None
    functions = hot.program.functions
    root = functions[chain[0]]
    steps = [HotStep(root.qualname, root.path, root.line, "")]
    for prev, cur in pairwise(chain):
        f = functions[prev]
        i = next(i for i, t in hot.edges.get(prev, ()) if t == cur)
        call = f.calls[i]
        steps.append(HotStep(cur, f.path, call.line, dotted(call.func) or functions[cur].name))
    return steps
