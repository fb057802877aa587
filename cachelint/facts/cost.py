"""What a call costs: the catalog, or, for code in the analysed tree, its body.

The catalog (presets plus configuration) names expensive callees by pattern.
For a function or property *defined in the analysed tree*, the body is the
better witness, and it decides:

* it is expensive when it reaches a catalogued call (directly or through
  other functions of the tree), which is :meth:`CacheAnalysis.expensive`,
  generalised here to look at the body even when the name is catalogued;
* or when it *walks a config*: probes several attributes of config objects
  (``getattr(self.hf_text_config, "sliding_window", None)``, ``hasattr``,
  ...), loops over them, or calls functions that do.

Catalog entries of kind ``config-derivation`` describe exactly that shape
("walks the HF config on each call"), so for them a body in the tree
overrides the name: ``ModelConfig.get_head_size`` is reported where its body
still derives the value, and not in a release where it became a read of a
precomputed attribute. Other kinds (device queries, I/O, registries) keep the
catalog's word, because their cost lies outside the tree (a driver call, the
filesystem) where no body can be read.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config import CatalogEntry
from ..index.expr import dotted
from ..index.records import FunctionInfo
from ..semantic.idioms import fills_once, is_cached_function
from ..semantic.program import CONSTRUCTORS, Program
from .cachesites import CacheAnalysis
from .catalog import Catalog

# a body that probes config attributes this many times walks the config
WALK_PROBES = 3
# calls that probe a config attribute (cachelint.incremental.cache reads them too)
PROBES = frozenset({"getattr", "hasattr"})
BODY_DECIDES = ("config-derivation",)
_CHEAP_BUILTINS = frozenset(
    [
        "isinstance",
        "issubclass",
        "len",
        "int",
        "str",
        "bool",
        "float",
        "tuple",
        "getattr",
        "hasattr",
        "min",
        "max",
        "abs",
        "divmod",
        "round",
        "super",
        "NotImplementedError",
        "RuntimeError",
        "ValueError",
        "TypeError",
        "KeyError",
        "AssertionError",
    ]
)


def _stub(fn: FunctionInfo) -> bool:
    """A body that computes nothing: ``...``, ``pass``, a docstring, ``raise``."""
    return all(c.func == ("name", "NotImplementedError") for c in fn.calls) and not fn.returns and not fn.assigns


@dataclass(frozen=True)
class Cost:
    kind: str
    why: str
    pure: bool
    pure_reason: str
    cost: str = "high"  # high | low (catalog `cost`)
    pattern: str | None = None  # the catalog entry, if any
    inferred: bool = False  # decided from the body in the tree


class CostModel:
    def __init__(self, program: Program, catalog: Catalog, cache_analysis: CacheAnalysis) -> None:
        self.program = program
        self.catalog = catalog
        self.ca = cache_analysis
        self._walk_memo: dict[str, str | None] = {}

    def call_cost(self, names: list[str], fn: FunctionInfo | None) -> Cost | None:
        """The cost of calling ``fn`` (known by ``names``), or None if cheap."""
        entry: CatalogEntry | None = self.catalog.match(names)
        if entry is not None and entry.kind == "declared-pure":
            entry = None
        in_tree = fn is not None and not is_cached_function(fn) and fn.name not in CONSTRUCTORS
        if entry is not None:
            if entry.kind in BODY_DECIDES and in_tree:
                why = self.body_cost(fn)
                if why is None:
                    return None  # the tree's own body shows it is cheap
                pure, pure_reason = self.ca.purity(names, fn)
                return Cost(entry.kind, why, pure, pure_reason, entry.cost, entry.pattern, True)
            if in_tree and entry.cost != "low" and self.visibly_cheap(fn):
                return None  # every implementation in the tree is cheap (e.g. it became @cache'd)
            pure = entry.pure
            reason = "declared pure in the catalog" if pure else f"{entry.kind}: {entry.why or entry.pattern}"
            return Cost(entry.kind, entry.why, pure, reason, entry.cost, entry.pattern)
        if not in_tree:
            return None
        why = self.walks_config(fn)
        if why is None:
            return None
        pure, pure_reason = self.ca.purity(names, fn)
        return Cost("config-derivation", why, pure, pure_reason, "high", None, True)

    def property_cost(self, fn: FunctionInfo) -> Cost | None:
        """The cost of reading property ``fn``: its getter runs on every read.

        A catalog entry or a config walk decides as for a call (``call_cost``);
        otherwise the getter is expensive when its body reaches a catalogued
        call, directly or through functions of the tree, outside a fill-once
        guard (a getter over a lazily filled slot computes once) and outside
        ``except`` handlers. The entry reached gives the kind and the cost
        level (a getter that looks up a process group is ``low``).
        """
        if is_cached_function(fn) or _stub(fn):
            return None
        cost = self.call_cost([fn.qualname], fn)
        if cost is not None:
            return cost
        reach = self._reach(fn, 0)
        if reach is None:
            return None
        entry, why = reach
        pure, pure_reason = self.ca.purity([fn.qualname], fn)
        return Cost(entry.kind, why, pure, pure_reason, entry.cost, entry.pattern, True)

    def _reach(self, fn: FunctionInfo, depth: int) -> tuple[CatalogEntry, str] | None:
        """The first catalogued call ``fn``'s body makes on each run, and how."""
        key = ("reach", fn.qualname)
        memo = self._walk_memo
        if key in memo:
            return memo[key]  # type: ignore[return-value]
        memo[key] = None  # recursion guard
        p = self.program
        result = None
        for c in fn.calls:
            if c.in_handler or fills_once(fn, c):
                continue
            callee = p.call_callee(fn, c)
            names = p.callee_names(callee, dotted(c.func))
            target = p.callee_function(callee) if callee is not None else None
            if target is not None and (is_cached_function(target) or target is fn):
                continue
            entry = self.catalog.match(names)
            if entry is not None and entry.kind != "declared-pure":
                if entry.kind in BODY_DECIDES and target is not None and self.body_cost(target) is None:
                    continue  # a catalogued derivation whose body in the tree is a plain read
                shown = names[0] if names else dotted(c.func) or "..."
                result = (
                    entry,
                    f"`{fn.qualname}` calls `{shown}`" + (f": {entry.why}" if entry.why else f" ({entry.kind})"),
                )
                break
            if target is not None and depth < 3 and target.name not in CONSTRUCTORS:
                inner = self._reach(target, depth + 1)
                if inner is not None:
                    result = (inner[0], f"`{fn.qualname}` calls {inner[1]}")
                    break
        memo[key] = result  # type: ignore[assignment]
        return result

    def implementations(self, fn: FunctionInfo) -> list[FunctionInfo]:
        """``fn`` and every override of it in subclasses of its class."""
        out = [fn]
        p = self.program
        if fn.class_qualname:
            for sub in p.subclasses(fn.class_qualname):
                c = p.classes.get(sub)
                if c is not None and fn.name in c.methods:
                    g = p.functions.get(c.methods[fn.name])
                    if g is not None and g not in out:
                        out.append(g)
        return out

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

    def _all_cheap(self, impls: list[FunctionInfo], depth: int) -> bool:
        """Every real implementation is cheap. Stubs (``...``, ``pass``, ``raise
        NotImplementedError``) show nothing: alone they prove nothing, and
        beside overrides they are the abstract base the overrides replace."""
        real = [g for g in impls if not _stub(g)]
        return bool(real) and all(self._body_cheap(g, depth) for g in real)

    def _body_cheap(self, fn: FunctionInfo, depth: int) -> bool:
        if is_cached_function(fn):
            return True
        if depth > 3:
            return False
        p = self.program
        ctx = p.context(fn)
        first = fn.params[0].name if fn.params and fn.class_qualname else None
        for c in fn.calls:
            f0 = c.func
            if f0[0] == "name" and f0[1] in _CHEAP_BUILTINS:
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
                    if callee is not None and len(callee) == 1 and callee[0][0] == "g" and callee[0][1] in p.classes:
                        continue  # a small value object of the tree (its __init__ is checked below if any)
                    return False
                targets = [g]
            targets = [g for g in targets if g is not fn and not is_cached_function(g)]
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
        """Why ``fn``'s body is expensive (reaches a catalogued call or walks a config)."""
        why = self.ca.expensive([], fn)
        if why is not None:
            return why
        return self.walks_config(fn)

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
        for c in fn.calls:
            if c.func[0] == "name" and c.func[1] in PROBES and c.args:
                target = dotted(c.args[0]) or ""
                if "config" in target.lower():
                    probes.append(target)
                    continue
            if depth < 3:
                callee = p.call_callee(fn, c)
                g = p.callee_function(callee) if callee is not None else None
                if g is not None and g is not fn and not is_cached_function(g) and g.name not in CONSTRUCTORS:
                    inner = self.walks_config(g, depth + 1)
                    if inner is not None:
                        result = f"`{fn.qualname}` calls `{g.qualname}`: {inner}"
                        break
        if result is None and len(probes) >= WALK_PROBES:
            shown = ", ".join(f"`{t}`" for t in dict.fromkeys(probes))
            result = f"`{fn.qualname}` probes {len(probes)} config attributes ({shown}) on each call"
            if loops:
                result += ", in a loop"
        memo[fn.qualname] = result
        return result
