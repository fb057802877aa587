"""Stage 3b: the call graph and the hot paths.

Hot roots are qualified-name globs from the configuration (``*.Scheduler.
schedule``, ``*Builder.build``, ...). The hot set is their closure over the call
graph, walked breadth-first from all roots at once so that each hot function
keeps its shortest chain from a root. Edges: module functions and imported
functions, ``self.m()`` through the class and its bases, methods on objects of
known type (``self.kv_cache_manager.allocate_slots()`` when the constructor
binds ``self.kv_cache_manager = KVCacheManager(...)``), closures, and class
construction (an edge to ``__init__``). Calls under ``if TYPE_CHECKING``,
unresolvable dynamic calls, and calls into ``functools.cache``/``lru_cache``
functions (whose bodies run once per arguments) are not edges.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from .catalog import GlobSet, is_cached_function
from .config import HotRoot
from .index import CallSite, FunctionInfo
from .program import Program


@dataclass
class HotPaths:
    chains: dict = field(default_factory=dict)  # qualname -> (root, ..., qualname)
    kinds: dict = field(default_factory=dict)  # qualname -> kind of its root
    roots: dict = field(default_factory=dict)  # root qualname -> HotRoot

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


def hot_paths(program: Program, roots: tuple[HotRoot, ...]) -> HotPaths:
    hp = HotPaths()
    matched = match_roots(program, roots)
    hp.roots = matched
    queue: deque = deque()
    for qn, r in matched.items():
        hp.chains[qn] = (qn,)
        hp.kinds[qn] = r.kind
        queue.append(qn)
    while queue:
        qn = queue.popleft()
        f = program.functions[qn]
        if f.under_type_checking:
            continue
        for call in f.calls:
            target = resolve_call(program, f, call)
            if target is None or target.qualname in hp.chains:
                continue
            if is_cached_function(target):
                continue  # @cache / @lru_cache: its body runs once per arguments, not per call
            hp.chains[target.qualname] = hp.chains[qn] + (target.qualname,)
            hp.kinds[target.qualname] = hp.kinds[qn]
            queue.append(target.qualname)
    return hp
