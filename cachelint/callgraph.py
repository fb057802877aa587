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
guard (lazy init, memo dicts: see :mod:`cachelint.idioms`) and calls in
``except`` handlers (error paths) are not edges.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from .catalog import GlobSet, is_cached_function
from .config import HotRoot
from .idioms import fills_once
from .index import CallSite, FunctionInfo
from .program import Program


@dataclass
class HotPaths:
    chains: dict = field(default_factory=dict)  # qualname -> (root, ..., qualname)
    kinds: dict = field(default_factory=dict)  # qualname -> kind of its root
    roots: dict = field(default_factory=dict)  # root qualname -> HotRoot
    # hot callee qualname -> [(caller FunctionInfo, CallSite)], every resolved hot call
    callers: dict = field(default_factory=dict)

    def chain(self, qualname: str) -> tuple[str, ...] | None:
        return self.chains.get(qualname)


def resolve_call(program: Program, f: FunctionInfo, call: CallSite) -> FunctionInfo | None:
    ctx = program.context(f)
    callee = program.canon(call.func, ctx)
    if callee is None:
        return None
    return program.callee_function(callee)


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


def hot_paths(program: Program, roots: tuple[HotRoot, ...]) -> HotPaths:
    """Hot functions with their chain and kind.

    A function reached from roots of several kinds takes the most frequent
    one (a helper called per layer and per request runs per layer), and the
    shortest chain from a root of that kind: one breadth-first walk per kind,
    most frequent first, over edges resolved once.
    """
    hp = HotPaths()
    matched = match_roots(program, roots)
    hp.roots = matched
    edges: dict[str, list[str]] = {}

    def targets(qn: str) -> list[str]:
        out = edges.get(qn)
        if out is None:
            out = []
            f = program.functions[qn]
            if not f.under_type_checking:
                for call in f.calls:
                    if call.in_handler or (call.guard and fills_once(f, call)):
                        continue  # an error path; or lazy init / memo dict: once per slot, not per call
                    target = resolve_call(program, f, call)
                    if target is None or is_cached_function(target):
                        continue  # @cache / @lru_cache: its body runs once per arguments, not per call
                    hp.callers.setdefault(target.qualname, []).append((f, call))
                    if target.qualname not in out:
                        out.append(target.qualname)
            edges[qn] = out
        return out

    kinds = sorted({r.kind for r in matched.values()}, key=frequency_rank)
    for kind in kinds:
        queue: deque = deque()
        local: dict[str, tuple] = {}  # chains from the roots of this kind
        for qn, r in matched.items():
            if r.kind == kind:
                local[qn] = (qn,)
                queue.append(qn)
        while queue:
            qn = queue.popleft()
            for t in targets(qn):
                if t not in local:
                    local[t] = local[qn] + (t,)
                    queue.append(t)
        for qn, chain in local.items():
            if qn not in hp.chains:
                hp.chains[qn] = chain
                hp.kinds[qn] = kind
    return hp
