"""The one cost and purity model: what a call costs per step, and whether it is pure.

Every rule and every fix asks this model, built once per analysis
(:attr:`Analysis.cost <cachelint.facts.analysis.Analysis.cost>`), with one
memo. Two questions:

* :meth:`CostModel.cost`: is a call expensive, how (a :class:`Cost`: its
  kind, its level, the reason, and what decided: the catalog, the body in the
  tree, a config walk, or a catalogued call the body reaches);
* :meth:`CostModel.purity`: is it pure and deterministic (a :class:`Purity`,
  whose :class:`StateRead` names the state an impure call depends on).

The catalog (presets plus configuration) names expensive callees by pattern.
For a function or property *defined in the analysed tree*, the body is the
better witness, and it decides:

* it is expensive when it reaches a catalogued call on each run, directly or
  through other functions of the tree (:meth:`CostModel.reach`);
* or when it *walks a config*: probes several attributes of config objects
  (``getattr(self.hf_text_config, "sliding_window", None)``, ``hasattr``,
  ...), loops over them, or calls functions that do;
* or when it *computes*: it loops, and its time per call, timed from its
  body (:meth:`CostModel.body_seconds`), is at least the ``compute-floor-calls``
  of ``frequency.toml`` (in small Python calls).

:meth:`CostModel.seconds` answers a third question, what one call costs in
seconds: the time measured on real calls of its catalog entry, else of its
kind (``calibration.toml``, written by ``benchmarks/calibrate_cost.py``), or
the body in the tree, timed.

"On each run" is the per-step question every rule asks: a call made only in
an ``except`` handler (the error path) or under a fill-once guard (``if
self._x is None: self._x = ...``, a memo dict; see
:func:`~cachelint.semantic.idioms.fills_once`) is not work the function
repeats, so it makes no body expensive. Calls of ``functools.cache``'d
functions and of constructors' bodies are not followed either, and a body is
followed four calls deep at most.

Catalog entries of kind ``config-derivation`` describe exactly the config-walk
shape ("walks the HF config on each call"), so for them a body in the tree
overrides the name: ``ModelConfig.get_head_size`` is expensive where its body
still derives the value, and not in a release where it became a read of a
precomputed attribute. Other kinds (device queries, I/O, registries) keep the
catalog's word, because their cost lies outside the tree (a driver call, the
filesystem) where no body can be read, unless every implementation in the
tree is visibly cheap (:meth:`CostModel.visibly_cheap`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ..config import CatalogEntry
from ..index.expr import dotted
from ..index.records import FunctionInfo
from ..semantic.idioms import fills_once
from ..semantic.program import CONSTRUCTORS, Program
from ..semantic.values import GlobalRoot
from .catalog import CHEAP_BUILTINS, Catalog
from .purity import MAX_DEPTH, PurityQuestions
from .timing import (
    CONDITIONAL,
    Timing,
    baseline,
    compute_floor,
    cost_table,
    entry_seconds,
    format_seconds,
    kind_seconds,
)

# a body that probes config attributes this many times walks the config
WALK_PROBES = 3
# calls that probe a config attribute
PROBES = frozenset({"getattr", "hasattr"})
BODY_DECIDES = ("config-derivation",)


def _stub(fn: FunctionInfo) -> bool:
    """A body that computes nothing: ``...``, ``pass``, a docstring, ``raise``."""
    return all(c.func == ("name", "NotImplementedError") for c in fn.calls) and not fn.returns and not fn.assigns


class Decided(str, Enum):
    """What decided a call's cost."""

    CATALOG = "catalog"  # a catalog entry, taken at its word
    BODY = "body"  # a config-derivation entry whose body in the tree still derives the value
    CONFIG_WALK = "config-walk"  # no entry: the body in the tree walks a config
    REACH = "reach"  # no entry: the body in the tree reaches a catalogued call on each run
    COMPUTE = "compute"  # no entry: the body in the tree loops, and its time is above the floor


@dataclass(frozen=True, slots=True)
class Reach:
    """The first catalogued call a body makes on each run: the entry, and the
    chain of (caller, callee as shown) from the body to it."""

    entry: CatalogEntry
    steps: tuple[tuple[str, str], ...]

    def why(self) -> str:
        head = " calls ".join(f"`{caller}`" for caller, _ in self.steps)
        e = self.entry
        return f"{head} calls `{self.steps[-1][1]}`" + (f": {e.why}" if e.why else f" ({e.kind})")


@dataclass(frozen=True)
class Cost:
    kind: str
    why: str
    pure: bool
    pure_reason: str
    cost: str = "high"  # high | low (catalog `cost`)
    pattern: str | None = None  # the catalog entry, if any
    inferred: bool = False  # decided from the body in the tree
    decided: Decided = Decided.CATALOG
    total: bool = False  # the catalog entry says the call never raises
    varies: bool = False  # the catalog entry says its value depends on where or when it is called

    @property
    def reason(self) -> str:
        """``why``, never empty: a catalog entry without a ``why`` is named."""
        return self.why or f"`{self.pattern}` ({self.kind}) is in the expensive-call catalog"


def _entry_seconds(entry: CatalogEntry) -> tuple[float, str]:
    """What one call of a catalog entry costs, and where that comes from: the
    entry's own ``time`` (``"entry"``), else the time measured on real calls
    of that entry (``"measured"``, ``[entries]`` of ``calibration.toml``),
    else its kind's calibrated time (``"kind"``)."""
    if entry.seconds is not None:
        return entry.seconds, "entry"
    measured = entry_seconds(entry.pattern)
    if measured is not None:
        return measured, "measured"
    return kind_seconds(entry.kind)[0], "kind"


def _entry_timing(entry: CatalogEntry, shown: str) -> Timing:
    """:func:`_entry_seconds` with its reason, for a call shown as ``shown``."""
    t, source = _entry_seconds(entry)
    if source == "entry":
        return Timing(t, f"`{shown}`: {format_seconds(t)} per call, as its catalog entry says")
    if source == "measured":
        return Timing(
            t,
            f"`{shown}`: {format_seconds(t)} per call, measured on real calls of its catalog entry"
            f" `{entry.pattern}` (calibration)",
        )
    return Timing(t, f"`{shown}`, kind {entry.kind}: {format_seconds(t)} per call, calibrated")


class CostModel(PurityQuestions):
    """Cost and purity of calls, for one program and catalog, memoized."""

    def __init__(self, program: Program, catalog: Catalog) -> None:
        self.program = program
        self.catalog = catalog
        # one memo: (question, qualname, depth) -> answer. The depth is part of
        # the key, so an answer never depends on the order of the questions
        # (a body first met deep in a chain is followed less far), and needs
        # no recursion guard (each nested question is one level deeper).
        self._memo: dict = {}
        self._walk_memo: dict = {}  # walks_config and visibly_cheap (keyed apart from the rest)

    # ----- cost ---------------------------------------------------------------------------
    def cost(self, names: list[str], fn: FunctionInfo | None, through_calls: bool = True) -> Cost | None:
        """What calling ``fn`` (known by ``names``) costs on each run, or None if cheap.

        In order: a catalog entry (unless the body in the tree shows the call
        cheap), a config walk in the body, and (``through_calls``) a catalogued
        call the body reaches on each run (:meth:`reach`)."""
        entry: CatalogEntry | None = self.catalog.match(names)
        if entry is not None and entry.kind == "declared-pure":
            entry = None
        # the body in the tree that may decide (a cached function's or a constructor's does not)
        body = fn if fn is not None and not self.program.is_cached(fn) and fn.name not in CONSTRUCTORS else None
        if entry is not None:
            if entry.kind in BODY_DECIDES and body is not None:
                why = self.body_cost(body)
                if why is None:
                    return None  # the tree's own body shows it is cheap
                pure = self.call_purity(names, body)
                return Cost(entry.kind, why, pure.pure, pure.reason, entry.cost, entry.pattern, True, Decided.BODY)
            if body is not None and entry.cost != "low" and body.class_qualname and self.visibly_cheap(body):
                return None  # every implementation of the method in the tree is cheap (e.g. it became @cache'd)
            pure_ok = entry.pure
            reason = "declared pure in the catalog" if pure_ok else f"{entry.kind}: {entry.why or entry.pattern}"
            return Cost(
                entry.kind,
                entry.why,
                pure_ok,
                reason,
                entry.cost,
                entry.pattern,
                total=entry.total,
                varies=entry.varies,
            )
        if body is None:
            return None
        why = self.walks_config(body)
        if why is not None:
            pure = self.call_purity(names, body)
            return Cost("config-derivation", why, pure.pure, pure.reason, "high", None, True, Decided.CONFIG_WALK)
        reach = self.reach(body)
        if reach is None:
            why = self.computes(body)
            if why is None:
                return None
            pure = self.call_purity(names, body)
            return Cost("computation", why, pure.pure, pure.reason, "high", None, True, Decided.COMPUTE)
        if not through_calls:
            return None
        pure = self.call_purity(names, body)
        e = reach.entry
        return Cost(e.kind, reach.why(), pure.pure, pure.reason, e.cost, e.pattern, True, Decided.REACH)

    def computes(self, fn: FunctionInfo) -> str | None:
        """Why ``fn``'s body is expensive work in itself: it loops, its time per
        call (:meth:`body_seconds`) is at least the floor (``compute-floor-calls``), and it is
        pure (the same inputs give the same value, so a repeat is waste); or None."""
        if _stub(fn) or not (any(a.kind == "for" for a in fn.assigns) or any(c.in_loop for c in fn.calls)):
            return None
        t = self.body_seconds(fn)
        if t < compute_floor():
            return None
        if not self.purity([fn.qualname], fn).pure:
            return None  # a result that may differ with the same inputs is no repeated work
        return f"`{fn.qualname}` loops on each call: ~{format_seconds(t)} per call, timed from its body"

    def call_cost(self, names: list[str], fn: FunctionInfo | None) -> Cost | None:
        """The cost of the call itself: a catalog entry or a config walk, not a
        catalogued call the body reaches (CL002 reports that one where it is made)."""
        return self.cost(names, fn, through_calls=False)

    def property_cost(self, fn: FunctionInfo) -> Cost | None:
        """The cost of reading property ``fn``: its getter runs on every read."""
        if self.program.is_cached(fn) or _stub(fn):
            return None
        return self.cost([fn.qualname], fn)

    def reach(self, fn: FunctionInfo, depth: int = 0) -> Reach | None:
        """The first catalogued call ``fn``'s body makes on each run, and how.

        Not counted: calls in ``except`` handlers or under a fill-once guard,
        calls of cached functions or of ``fn`` itself, a ``config-derivation``
        entry whose body in the tree is a plain read. Functions of the tree are
        followed (not constructors) down to :data:`MAX_DEPTH`."""
        key = ("reach", fn.qualname, depth)
        memo = self._memo
        if key in memo:
            return memo[key]
        p = self.program
        result = None
        for c in fn.calls:
            if c.in_handler or fills_once(fn, c):
                continue
            callee = p.call_callee(fn, c)
            names = p.callee_names(callee, dotted(c.func))
            target = p.callee_function(callee) if callee is not None else None
            if target is not None and (self.program.is_cached(target) or target is fn):
                continue
            entry = self.catalog.match(names)
            if entry is not None and entry.kind != "declared-pure":
                if entry.kind in BODY_DECIDES and target is not None and self.body_cost(target) is None:
                    continue  # a catalogued derivation whose body in the tree is a plain read
                shown = names[0] if names else dotted(c.func) or "..."
                result = Reach(entry, ((fn.qualname, shown),))
                break
            if target is not None and depth < MAX_DEPTH and target.name not in CONSTRUCTORS:
                inner = self.reach(target, depth + 1)
                if inner is not None:
                    result = Reach(inner.entry, ((fn.qualname, target.qualname),) + inner.steps)
                    break
        memo[key] = result
        return result

    def expensive(self, names: list[str], fn: FunctionInfo | None) -> str | None:
        """Why calling ``fn`` is expensive on each run (:meth:`cost`), or None."""
        cost = self.cost(names, fn)
        return None if cost is None else cost.reason

    # ----- time per call --------------------------------------------------------------------
    def seconds(self, names: list[str], fn: FunctionInfo | None) -> Timing:
        """What one call of ``fn`` (known by ``names``) costs, in seconds.

        A catalog entry: its ``time``, else the time measured on real calls of
        that entry (``[entries]`` of ``calibration.toml``), else its kind's
        calibrated time, except a ``config-derivation`` entry whose body is in
        the tree, which is timed by that body (a measurement timed the body of
        the vLLM release it was made on, not necessarily this one). A function of the tree: its body
        (:meth:`body_seconds`). A memoized function: a dict lookup. A call
        cachelint cannot resolve: an ordinary small Python call."""
        entry = self.catalog.match(names)
        if entry is not None and entry.kind == "declared-pure":
            entry = None
        body = fn if fn is not None and not self.program.is_cached(fn) else None
        shown = names[0] if names else (fn.qualname if fn is not None else "?")
        if entry is not None and not (entry.kind in BODY_DECIDES and body is not None):
            return _entry_timing(entry, shown)
        if fn is not None and body is None:
            t = baseline("python-call") + baseline("dict-lookup")
            return Timing(t, f"`{fn.qualname}` is memoized: a lookup per call")
        if body is not None:
            t = self.body_seconds(body)
            derives = (entry is not None and entry.kind in BODY_DECIDES) or self.walks_config(body) is not None
            if derives:
                # a body that derives a config value calls into config classes the
                # tree does not hold (transformers'): at least what such calls cost
                floor, _ = kind_seconds("config-derivation")
                if floor > t:
                    return Timing(
                        floor,
                        f"`{body.qualname}` derives a config value: {format_seconds(floor)} per call,"
                        " the calibrated cost of config derivation",
                    )
            return Timing(t, f"the body of `{body.qualname}`, followed {MAX_DEPTH} calls deep")
        return Timing(baseline("python-call"), f"`{shown}` is not resolved: counted as a small Python call")

    def body_seconds(self, fn: FunctionInfo, depth: int = 0) -> float:
        """One run of ``fn``'s body: a call's overhead, its assignments, and each
        call it makes on each run (not in ``except`` handlers or under a
        fill-once guard), times the loop count when in a loop, and half of
        it under a condition (:data:`CONDITIONAL`); followed
        :data:`MAX_DEPTH` calls deep, an ordinary call below that."""
        key = ("sec", fn.qualname, depth)
        memo = self._memo
        hit = memo.get(key)
        if hit is not None:
            return hit
        call = baseline("python-call")
        if depth > MAX_DEPTH:
            return call
        memo[key] = call  # recursion: the call itself
        loop = float(cost_table()["loop"]["iterations"])
        total = call + baseline("attribute") * len(fn.assigns)
        for c in fn.calls:
            if c.in_handler or fills_once(fn, c):
                continue
            t = self._call_seconds(fn, c, depth)
            if c.guard:
                t *= CONDITIONAL  # under a condition, or past an early return: not every run
            total += t * loop if c.in_loop else t
        memo[key] = total
        return total

    def _call_seconds(self, fn: FunctionInfo, c, depth: int) -> float:
        f0 = c.func
        if f0[0] == "name" and f0[1] in CHEAP_BUILTINS:
            return baseline("attribute")
        p = self.program
        callee = p.call_callee(fn, c)
        names = p.callee_names(callee, dotted(f0))
        target = p.callee_function(callee) if callee is not None else None
        entry = self.catalog.match(names)
        if entry is not None and entry.kind != "declared-pure":
            if not (entry.kind in BODY_DECIDES and target is not None and not p.is_cached(target)):
                return _entry_seconds(entry)[0]
        if target is None:
            return baseline("python-call")
        if p.is_cached(target):
            return baseline("python-call") + baseline("dict-lookup")
        if target is fn:
            return baseline("python-call")
        return self.body_seconds(target, depth + 1)

    def implementations(self, fn: FunctionInfo) -> list[FunctionInfo]:
        """``fn`` and every override of it (see ``Program.dispatch``)."""
        return self.program.dispatch(fn)

    def visibly_cheap(self, fn: FunctionInfo, depth: int = 0) -> bool:
        """Every implementation of ``fn`` in the tree only calls cached
        functions, cheap builtins and (recursively) visibly cheap functions of
        the tree. A call cachelint cannot see into (a C extension, a driver
        binding) makes it not visibly cheap: the catalog then keeps its word."""
        key = ("cheap", fn.qualname)
        memo = self._walk_memo
        if key in memo:
            return bool(memo[key])
        memo[key] = None  # recursion: not proven
        ok = self._all_cheap(self.implementations(fn), depth)
        memo[key] = "yes" if ok else None
        return ok

    def trivial(self, fn: FunctionInfo) -> bool:
        """Every real implementation of ``fn`` is a plain getter: no loop, and
        no call but cheap builtins (``return self._n``, ``return len(self.x) > 0``).
        Calling it twice costs no more than reading an attribute twice."""
        real = [g for g in self.implementations(fn) if not _stub(g)]
        return bool(real) and all(
            not any(a.kind == "for" for a in g.assigns)
            and all(c.func[0] == "name" and c.func[1] in CHEAP_BUILTINS for c in g.calls)
            for g in real
        )

    def _all_cheap(self, impls: list[FunctionInfo], depth: int) -> bool:
        """Every real implementation is cheap. Stubs (``...``, ``pass``, ``raise
        NotImplementedError``) show nothing: alone they prove nothing, and
        beside overrides they are the abstract base the overrides replace."""
        real = [g for g in impls if not _stub(g)]
        return bool(real) and all(self._body_cheap(g, depth) for g in real)

    def _body_cheap(self, fn: FunctionInfo, depth: int) -> bool:
        if self.program.is_cached(fn):
            return True
        if depth > MAX_DEPTH:
            return False
        p = self.program
        ctx = p.context(fn)
        first = fn.params[0].name if fn.params and fn.class_qualname else None
        for c in fn.calls:
            f0 = c.func
            if f0[0] == "name" and f0[1] in CHEAP_BUILTINS:
                continue
            targets: list[FunctionInfo] = []
            if f0[0] == "attr" and f0[1][0] == "call" and f0[1][1] == ("name", "super") and fn.class_qualname:
                mro = p.mro(fn.class_qualname)[1:]
                g = next(
                    (
                        p.functions.get(p.classes[k].methods[f0[2]])
                        for k in mro
                        if k in p.classes and f0[2] in p.classes[k].methods
                    ),
                    None,
                )
                if g is None:
                    return False
                targets = [g]
            elif f0[0] == "attr" and f0[1] == ("name", first) and fn.class_qualname:
                g = p.lookup_method(fn.class_qualname, f0[2])
                if g is None:
                    return False
                targets = self.implementations(g)
            elif (
                f0[0] == "attr"
                and f0[1][0] == "name"
                and (g := self._local_method(fn, ctx, first, f0[1][1], f0[2])) is not None
            ):
                targets = self.implementations(g)
            else:
                callee = p.canon(f0, ctx)
                names = p.callee_names(callee, dotted(f0))
                e = self.catalog.match(names)
                if e is not None and e.kind != "declared-pure":
                    return False
                g = p.callee_function(callee) if callee is not None else None
                if g is None:
                    if (
                        callee is not None
                        and len(callee) == 1
                        and isinstance(callee[0], GlobalRoot)
                        and callee[0].qualname in p.classes
                    ):
                        continue  # a small value object of the tree (its __init__ is checked below if any)
                    return False
                targets = [g]
            targets = [g for g in targets if g is not fn and not self.program.is_cached(g)]
            if targets and not self._all_cheap(targets, depth + 1):
                return False
        return True

    def _local_method(self, fn: FunctionInfo, ctx, first: str | None, local: str, meth: str) -> FunctionInfo | None:
        """``x.meth`` where ``x = cls.m(...)`` / ``self.m(...)``: typed by m's return annotation."""
        p = self.program
        assigns = ctx.locals.get(local)
        if not assigns or len(assigns) != 1 or not fn.class_qualname:
            return None
        v = assigns[0].value
        if v[0] != "call" or v[1][0] != "attr" or v[1][1] != ("name", first):
            return None
        m = p.lookup_method(fn.class_qualname, v[1][2])
        if m is None:
            return None
        t = p.resolve_annotation(m.returns_annotation, m.module)
        return p.lookup_method(t, meth) if t in p.classes else None

    def body_cost(self, fn: FunctionInfo) -> str | None:
        """Why ``fn``'s body is expensive on each run (reaches a catalogued call
        or walks a config), or None."""
        reach = self.reach(fn)
        if reach is not None:
            return reach.why()
        return self.walks_config(fn)

    def _config_object(self, fn: FunctionInfo, e) -> str | None:
        """How a probe's first argument is shown when it is a config object:
        its spelling names a config (``self.hf_config``), or its class does
        (``self`` in a method of ``KernelConfig``); else None."""
        target = dotted(e) or ""
        if "config" in target.lower():
            return target
        if e[0] not in ("name", "attr"):
            return None
        p = self.program
        v = p.canon(e, p.context(fn, fn.class_qualname))
        t = p.type_of(v) if v is not None else None
        if t is not None and "config" in t.rpartition(".")[2].lower():
            return target
        return None

    def walks_config(self, fn: FunctionInfo, depth: int = 0) -> str | None:
        """Why ``fn`` walks a config on each call, from its body alone, or None."""
        memo = self._walk_memo
        if fn.qualname in memo:
            return memo[fn.qualname]
        memo[fn.qualname] = None  # recursion guard
        p = self.program
        probes: list[str] = []
        loops = any(a.kind == "for" for a in fn.assigns)
        result = None
        walk = None
        for c in fn.calls:
            if c.func[0] == "name" and c.func[1] in PROBES and c.args:
                target = self._config_object(fn, c.args[0])
                if target is not None:
                    probes.append(target)
                    if c.in_loop and len(c.args) > 1 and c.args[1][0] != "const" and walk is None:
                        walk = target  # getattr(config, name) over names: every attribute it lists
                    continue
            if depth < MAX_DEPTH:
                callee = p.call_callee(fn, c)
                g = p.callee_function(callee) if callee is not None else None
                if g is not None and g is not fn and not self.program.is_cached(g) and g.name not in CONSTRUCTORS:
                    inner = self.walks_config(g, depth + 1)
                    if inner is not None:
                        result = f"`{fn.qualname}` calls `{g.qualname}`: {inner}"
                        break
        if result is None and walk is not None:
            result = f"`{fn.qualname}` reads the attributes of `{walk}` one by one by name, in a loop, on each call"
        if result is None and len(probes) >= WALK_PROBES:
            shown = ", ".join(f"`{t}`" for t in dict.fromkeys(probes))
            result = f"`{fn.qualname}` probes {len(probes)} config attributes ({shown}) on each call"
            if loops:
                result += ", in a loop"
        memo[fn.qualname] = result
        return result
