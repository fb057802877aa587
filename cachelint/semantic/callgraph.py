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
from dataclasses import dataclass, field, replace
from itertools import pairwise

from ..config import HotRoot
from ..globs import GlobSet
from ..index.expr import UNKNOWN, _last_name, dotted
from ..index.records import CallSite, FunctionInfo
from ..model import HotCoverage
from .idioms import clears_its_flag, fills_once, never_runs
from .program import Program
from .values import GlobalRoot, ParamRoot


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
            out.append((f, call_site(f, i)))
        return out


def resolve_call(program: Program, f: FunctionInfo, call: CallSite) -> FunctionInfo | None:
    """The function ``call`` dispatches to, when cachelint knows it (one)."""
    return program.call_function(f, call)


def edges_of(program: Program, f: FunctionInfo) -> list[tuple[int, str]]:
    """(call index, callee qualname) of each call of ``f`` that is an edge.

    A call may have several: the function it dispatches to and the
    overrides it may reach (see :meth:`Program.call_targets`). The calls the
    syntax makes (``x[i]``, ``for``, ``with``, ``in``) are numbered after
    ``f.calls``: index ``len(f.calls) + j`` is ``f.implicit_calls[j]``; see
    :func:`call_site` for negative numbers.
    A lambda is not a target: the functions its body calls are."""
    out: list = []
    if f.under_type_checking:
        return out
    n = len(f.calls)
    for i, call in enumerate(f.calls + f.implicit_calls):
        if call.in_handler or (
            call.guard and (never_runs(call) or (i < n and (fills_once(f, call) or clears_its_flag(program, f, call))))
        ):
            continue  # an error path; `if TYPE_CHECKING:`; lazy init / memo dict / one-shot flag: once per slot
        direct = program.call_targets(f, call)
        for target in _through_lambdas(program, direct, 0):
            if program.is_cached(target):
                continue  # @cache / @lru_cache: its body runs once per arguments, not per call
            # a call whose arguments are not the target's (map(f, xs), partial, through a lambda)
            # is numbered -1 - i: call_site() then hides its arguments
            matched = target in direct and program.passes_arguments(call, target)
            out.append((i if matched else -1 - i, target.qualname))
    return out


def is_lambda(f: FunctionInfo) -> bool:
    return f.name.startswith("<lambda")


def _through_lambdas(program: Program, targets: list[FunctionInfo], depth: int) -> list[FunctionInfo]:
    """``targets`` with each lambda replaced by what its body calls: a lambda
    is never a hot function itself (its body is an expression that no
    rewrite could hoist from), but what it calls runs where it is called."""
    if not any(is_lambda(t) for t in targets):
        return targets
    out: list[FunctionInfo] = []
    for t in targets:
        if not is_lambda(t):
            out.append(t)
        elif depth < 3:
            for call in t.calls + t.implicit_calls:
                if not call.in_handler:
                    out.extend(_through_lambdas(program, program.call_targets(t, call), depth + 1))
    return out


def call_site(f: FunctionInfo, i: int) -> CallSite:
    """The call numbered ``i`` by :func:`edges_of`; for a negative number, the
    call ``-1 - i`` with its arguments hidden (``**`` of an unknown value):
    they are not the callee's, and no reader may take them as its parameters."""
    n = len(f.calls)
    if i < 0:
        c = call_site(f, -1 - i)
        return replace(c, args=(), kwargs=((None, UNKNOWN),))
    return f.calls[i] if i < n else f.implicit_calls[i - n]


def call_graph(program: Program, external: bool = True) -> dict[str, list[str]]:
    """Every function's (and every module's top-level code's) callees, as
    ``{caller: [callee, ...]}`` of qualified names; nested functions are
    named ``outer.<locals>.inner``, a module's code by the module's name.
    Every call counts here, error paths and lazy fills included. With
    ``external``, calls of names outside the tree (``builtins.len``,
    ``os.path.join``) are listed by their qualified name.

    Unlike the hot-path walk, the export follows functions passed as
    arguments: a call of a parameter (``def run(fn): fn()``) reaches what
    the resolved calls of ``run`` pass for it, rounds until nothing new."""
    out: dict[str, dict[str, None]] = {}
    callers: list[FunctionInfo] = []
    for fi in program.indexes:
        if fi.error is not None or not fi.module:
            continue
        mf = program.module_function(fi.module)
        if mf is not None and fi.module not in out:
            callers.append(mf)
            out[fi.module] = {}
    for qn in program.functions:
        if qn not in out:
            callers.append(program.functions[qn])
            out[qn] = {}
    passed: dict[tuple[str, str], list] = {}  # (function, parameter) -> [(caller, argument expr)]
    param_calls: list = []  # (caller, ParamRoot) of calls of a parameter
    bound: set = set()
    for f in callers:
        targets = out[f.qualname]
        n = len(f.calls)
        for i, call in enumerate(f.calls + f.implicit_calls):
            found = program.call_targets(f, call)
            for t in found:
                targets[t.qualname] = None
                if program.passes_arguments(call, t):
                    _pass_arguments(program, f, call, t, passed, bound)
            callee = program.call_callee(f, call)
            if not found and callee is not None and len(callee) == 1 and isinstance(callee[0], ParamRoot):
                param_calls.append((f, callee[0]))
            elif external and i < n:
                name = program.external_name(callee)
                if name is not None:
                    targets[name] = None
    for _ in range(6):  # what a parameter receives can be another function's parameter
        grew = False
        for f, root in param_calls:
            for g in _received(program, root, passed, 0):
                if g.qualname not in out[f.qualname]:
                    out[f.qualname][g.qualname] = None
                    grew = True
        if not grew:
            break
    return {k: list(v) for k, v in out.items()}


def _pass_arguments(
    program: Program, f: FunctionInfo, call: CallSite, g: FunctionInfo, passed: dict, seen: set
) -> None:
    """Record which expression ``call`` passes for each parameter of ``g``."""
    key = (id(call), g.qualname)
    if key in seen:
        return
    seen.add(key)
    params = g.params
    offset = 0
    if g.class_qualname is not None and params and not any(_last_name(d) == "staticmethod" for d in g.decorators):
        callee = program.call_callee(f, call)
        unbound = (
            callee is not None
            and len(callee) == 2
            and isinstance(callee[0], GlobalRoot)
            and callee[0].qualname in program.classes
            and not any(_last_name(d) == "classmethod" for d in g.decorators)
        )
        offset = 0 if unbound else 1
    positional = [p for p in params if p.kind == "pos"]
    for j, a in enumerate(call.args):
        if j + offset < len(positional) and a[0] != "?":
            passed.setdefault((g.qualname, positional[j + offset].name), []).append((f, a))
    for name, a in call.kwargs:
        if name is not None:
            passed.setdefault((g.qualname, name), []).append((f, a))


def _received(program: Program, root: ParamRoot, passed: dict, depth: int) -> list[FunctionInfo]:
    out: list[FunctionInfo] = []
    if depth > 4:
        return out
    for caller, e in passed.get((root.function, root.name), ()):
        v = program.canon(e, program.context(caller))
        if v is None:
            continue
        if len(v) == 1 and isinstance(v[0], ParamRoot):
            out.extend(_received(program, v[0], passed, depth + 1))
            continue
        fn = program.callee_function(v)
        if fn is not None:
            out.append(fn)
    return out


def match_roots(program: Program, roots: tuple[HotRoot, ...]) -> dict:
    """The functions the hot-root patterns match: by qualified name, or (a
    root with ``decorator``) by one of their decorators (:func:`decorator_names`).
    A function two patterns match takes the first one's kind."""
    by_name = [r for r in roots if not r.decorator]
    by_decorator = [r for r in roots if r.decorator]
    globs = GlobSet([r.pattern for r in by_name])
    deco_globs = GlobSet([r.pattern for r in by_decorator]) if by_decorator else None
    found: dict = {}
    for qn in sorted(program.functions):
        i = globs.first(qn)
        if i >= 0:
            found[qn] = by_name[i]
            continue
        if deco_globs is not None:
            f = program.functions[qn]
            if f.decorators:
                for names in decorator_names(program, f):
                    hits = [j for j in (deco_globs.first(n) for n in names) if j >= 0]
                    if hits:
                        found[qn] = by_decorator[min(hits)]
                        break
    return found


def decorator_names(program: Program, f: FunctionInfo) -> list[list[str]]:
    """For each decorator of ``f``, the names it is known by: as spelled
    (``router.post``), as resolved, and, for a method of an object built from
    an imported class (``app = FastAPI()`` in the module or an enclosing
    function), the class's name with the method (``fastapi.FastAPI.post``)."""
    ctx = program.context(f)
    module = program.modules_by_path.get(f.path)
    out = []
    for d in f.decorators:
        func = d[1] if d[0] == "call" else d
        spelled = dotted(func)
        names = list(program.callee_names(program.canon(func, ctx), spelled))
        if func[0] == "attr" and func[1][0] == "name" and module is not None:
            cls = _constructed_class(program, f, ctx, module, func[1][1])
            if cls is not None:
                names.append(f"{cls}.{func[2]}")
        out.append(names)
    return out


def _constructed_class(program: Program, f: FunctionInfo, ctx, module, name: str) -> str | None:
    """The qualified name of the class whose call binds ``name`` (``x =
    Cls(...)``) where ``f`` is defined: in an enclosing function (every
    binding before ``f``'s line a call of that one class), or a module global."""
    values = None
    c = ctx.parent  # a decorator is evaluated in the scope around the function
    while c is not None and values is None:
        assigns = c.locals.get(name)
        if assigns:
            values = [a.value for a in assigns if a.line < f.line]
        c = c.parent
    if values is None:
        values = [module.globals.get(name)]
    classes = {_class_called(program, module, v) for v in values}
    if len(classes) != 1:
        return None
    return classes.pop()


def _class_called(program: Program, module, value) -> str | None:
    if not value or value[0] != "call":
        return None
    spelled = dotted(value[1])
    if spelled is None:
        return None
    head, _, rest = spelled.partition(".")
    target = module.imports.get(head) or program.resolve_name(module.module, head)
    if target is None:
        return None
    return f"{target}.{rest}" if rest else target


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
