"""Stage 4: cache sites, the invariants they establish, and their readers.

Every assignment ``<obj>.<attr> = <call>(...)`` is a *candidate invariant*:
"after this statement, ``<obj>.<attr>`` holds ``<call>(...)``", valid under
the guard the statement sits in. The invariant is generalised over its
*anchor*, the root object of the target (``self`` of the class that fills it,
or a typed parameter): the fill in ``EngineConfig.__post_init__``

    if self.model.is_encoder_decoder and not self.model.pooling:
        self.limits.encoder_len = REGISTRY.encoder_len(self.model)

says that for every ``X: EngineConfig`` (once constructed),
``X.limits.encoder_len == REGISTRY.encoder_len(X.model)`` when
``X.model.is_encoder_decoder and not X.model.pooling``.

A *use* is a call elsewhere with the same callee and arguments that unify with
the invariant's for some ``X`` of the anchor's type found at the use site.
Only candidates whose callee is worth caching are kept (a function defined in
the tree, or a catalog entry; never a class constructor, a builtin or an
already-cached function) and that the cost model finds expensive on each run
(:meth:`~cachelint.facts.cost.CostModel.expensive`), which is what keeps
``self.buf = torch.zeros(n)`` and friends out of the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..index.expr import dotted
from ..index.records import CallSite, FunctionInfo
from ..index.scans import function_imports, scan_hits, use_keys
from ..semantic.access import spell
from ..semantic.guards import guard_atoms, residual, substitute
from ..semantic.program import CONSTRUCTORS, Program, Value
from ..semantic.values import CallRoot, GlobalRoot, KwArg, ParamRoot, SelfRoot
from ..semantic.writes import Writes
from .bodies import Bodies
from .catalog import Catalog
from .cost import CostModel
from .hazards import Hazards
from .reasons import UseReasons, render_value_short
from .state import ProcessState


@dataclass
class CacheSite:
    function: FunctionInfo
    call: CallSite
    target: Value
    anchor: tuple  # the root element of `target`
    anchor_type: str | None
    attr: str
    holder_type: str | None
    callee: Value
    callee_names: list
    args: tuple  # canonical values, then KwArg(name, value)
    atoms: list  # guard atoms at the fill
    in_constructor: bool
    pure: bool
    pure_reason: str
    cost: str = ""  # why recomputing it is expensive

    @property
    def owner(self) -> str:
        """The cached attribute as ``Owner.attr``, e.g. ``Limits.encoder_len``."""
        t = self.holder_type.rsplit(".", 1)[-1] if self.holder_type else render_value_short(self.target[:-1])
        return f"{t}.{self.attr}"

    @property
    def where(self) -> str:
        return self.function.qualname


@dataclass
class Use:
    site: CacheSite
    function: FunctionInfo
    call: CallSite
    anchor_value: Value | None
    replacement: str | None
    residual: list  # Atom
    residual_text: list  # str
    reasons: list  # why the fix is unsafe
    notes: list = field(default_factory=list)


def _call_names(call: CallSite) -> str | None:
    return dotted(call.func)


def _fills(scans: tuple) -> tuple:
    return scans[0]


def _named(scans: tuple, by_name: dict) -> list:
    """The flat positions of a file's calls named by a key of ``by_name``, in order."""
    keys = scans[1]
    hit = by_name.keys() & keys.keys()
    if not hit:
        return []
    if len(hit) == 1:
        return keys[next(iter(hit))]
    pairs: set = set()
    for k in hit:
        at = keys[k]
        pairs.update(zip(at[::2], at[1::2]))
    return [x for pair in sorted(pairs) for x in pair]


def _callee_key(callee: Value) -> str:
    """The name a callee is known by after aliases: ``probe``, ``max_len``."""
    last = callee[-1]
    if isinstance(last, str):
        return last
    if isinstance(last, GlobalRoot):
        return last.qualname.rsplit(".", 1)[-1]
    return ""


def _mentions(v, root) -> bool:
    if v is None:
        return False
    if v[0] == root:
        return True
    call = v[0]
    if isinstance(call, CallRoot):
        return _mentions(call.callee, root) or any(
            _mentions(a.value if isinstance(a, KwArg) else a, root) for a in call.args
        )
    return False


class CacheAnalysis(UseReasons):
    def __init__(
        self,
        program: Program,
        catalog: Catalog,
        cost: CostModel,
        writes: Writes | None = None,
        bodies: Bodies | None = None,
        state: ProcessState | None = None,
    ) -> None:
        self.program = program
        self.catalog = catalog
        self.cost = cost
        self.state = state
        self._dependence: dict[int, str | None] = {}  # id(site) -> why its callee's state may change
        self.sites: list[CacheSite] = []
        self.by_name: dict[str, list[CacheSite]] = {}
        self._uses: list[Use] | None = None
        self.hazards = Hazards(program, writes, bodies, cost, state)

    # ----- cache sites ---------------------------------------------------------------
    def collect(self) -> None:
        p = self.program
        # each call alone, keyed by fills_site (see index.scans)
        for f, c in scan_hits(p.functions, p.indexes, _fills):
            site = self._site(f, c)
            if site is not None:
                self.sites.append(site)
                self.by_name.setdefault(_callee_key(site.callee), []).append(site)

    def _site(self, f: FunctionInfo, c: CallSite) -> CacheSite | None:
        p = self.program
        # the callee's tests first: most fills construct an object or call
        # something neither in the tree nor in the catalog (9,400 of 12,300 on
        # vLLM 0.33.0), and their target and arguments need not be resolved then
        callee = p.call_callee(f, c)
        if callee is None:
            return None
        names = p.callee_names(callee, dotted(c.func))
        fn = p.callee_function(callee)
        entry = self.catalog.match(names)
        if len(callee) == 1 and isinstance(callee[0], GlobalRoot):
            qn = callee[0].qualname
            if qn in p.classes:
                return None  # construction: a new object each time, not a cached value
            if qn.startswith("builtins.") and entry is None:
                return None
        if fn is None and entry is None:
            return None
        if fn is not None and (p.is_cached(fn) or fn.name in CONSTRUCTORS):
            return None
        ctx = p.context(f)
        target = p.canon(c.assigned_to, ctx)
        if target is None or len(target) < 2:
            return None
        anchor = target[0]
        if not isinstance(anchor, (SelfRoot, ParamRoot)):
            return None
        anchor_type = p.type_of((anchor,))
        if anchor_type is None:
            return None
        if isinstance(callee[0], ParamRoot) or (isinstance(callee[0], SelfRoot) and callee[0] != anchor):
            return None
        args = tuple(p.canon(a, ctx) for a in c.args) + tuple(KwArg(n, p.canon(v, ctx)) for n, v in c.kwargs)
        if any(a is None or (isinstance(a, KwArg) and (a.name is None or a.value is None)) for a in args):
            return None
        # every argument must be nameable from the anchor or be global/constant
        for a in args:
            assert a is not None  # ruled out above
            v = a.value if isinstance(a, KwArg) else a
            if isinstance(v[0], (ParamRoot, SelfRoot)) and v[0] != anchor:
                return None
            if isinstance(v[0], CallRoot):
                return None
        expensive = self.cost.expensive(names, fn)
        if expensive is None:
            return None  # cheap to recompute: a candidate, never a finding
        purity = self.cost.call_purity(names, fn, callee=callee)  # every override the receiver may run
        # inferred not pure: the reason names the state (and the override) a body depends on
        pure, why = purity.pure, purity.detail() if purity.via else purity.reason
        in_constructor = (
            isinstance(anchor, SelfRoot)
            and f.name in CONSTRUCTORS
            and p.is_subclass(anchor_type, f.class_qualname or "")
        )
        if not pure and not in_constructor:
            # e.g. `self.final_memory = self.current_memory_usage()` in __exit__:
            # a snapshot of something that changes, not a cache
            return None
        holder = target[:-1]
        return CacheSite(
            function=f,
            call=c,
            target=target,
            anchor=anchor,
            anchor_type=anchor_type,
            attr=target[-1],
            holder_type=p.type_of(holder),
            callee=callee,
            callee_names=names,
            args=args,
            atoms=guard_atoms(c.guard, ctx, p),
            in_constructor=in_constructor,
            pure=pure,
            pure_reason=why,
            cost=expensive,
        )

    def state_dependence(self, site: CacheSite) -> str | None:
        """Why the module state a pure callee reads may change between the fill
        and a later read, or None. A callee inferred pure from its body gives
        the same value on each call only while that state stays the same, and
        the fill computed it once: state that code of the tree changes, the
        environment, or a public module-level container (code outside the
        analysed files may change it in place) makes the value the attribute
        holds stale (:meth:`ProcessState.dependence`, through every override
        the call may run). A callee the catalog or the configuration declares
        pure is taken at its word. Asked once per site with a use."""
        key = id(site)
        if key in self._dependence:
            return self._dependence[key]
        why = None
        names = site.callee_names
        entry = self.catalog.match(names)
        declared = (entry is not None and entry.kind != "declared-pure") or self.catalog.pure(names)
        fn = self.program.callee_function(site.callee)
        if site.pure and self.state is not None and not declared and fn is not None:
            dep = self.state.dependence(fn)
            if dep is not None:
                why = dep.reason
        self._dependence[key] = why
        return why

    # ----- uses -------------------------------------------------------------------------
    def uses(self) -> list[Use]:
        """Every call that recomputes a cache site's value (computed once)."""
        if self._uses is None:
            self._uses = self._find_uses()
        return self._uses

    def _find_uses(self) -> list[Use]:
        out: list[Use] = []
        p = self.program
        by_name = self.by_name
        if not by_name:
            return out
        last = None
        # each call alone, keyed by use_keys (see index.scans):
        # only the calls a key of some site names
        for g, c in scan_hits(p.functions, p.indexes, lambda scans: _named(scans, by_name)):
            if g is not last:
                last, ctx, local_imports = g, None, None
                fi = p.modules_by_path.get(g.path)
            d = c.func
            cands = by_name.get(d[2] if d[0] == "attr" else d[1] if d[0] == "name" else "")
            if not cands and d[0] == "name":
                if local_imports is None:
                    local_imports = function_imports(g.assigns)
                keys = use_keys(d, local_imports, fi.imports if fi is not None else {})
                if len(keys) > 1:
                    cands = by_name.get(keys[1])
            if not cands:
                continue
            if ctx is None:
                ctx = p.context(g)
            callee = p.call_callee(g, c)
            if callee is None:
                continue
            args = tuple(p.canon(a, ctx) for a in c.args) + tuple(KwArg(n, p.canon(v, ctx)) for n, v in c.kwargs)
            best = None
            for site in cands:
                if site.function is g and site.call is c:
                    continue  # the fill itself
                u = self._unify(site, g, c, ctx, callee, args)
                if u is not None and (best is None or _rank(u) < _rank(best)):
                    best = u
            if best is not None:
                out.append(best)
        return out

    def _unify(self, site: CacheSite, g: FunctionInfo, c: CallSite, ctx, callee, args) -> Use | None:
        p = self.program
        if len(args) != len(site.args):
            return None
        pairs = [(site.callee, callee)]
        for sa, ua in zip(site.args, args):
            if ua is None:
                return None
            if isinstance(sa, KwArg):
                if not isinstance(ua, KwArg) or ua.name != sa.name:
                    return None
                pairs.append((sa.value, ua.value))
            else:
                if isinstance(ua, KwArg):
                    return None
                pairs.append((sa, ua))
        anchor = site.anchor
        x = None
        for sv, uv in pairs:
            if uv is None:
                return None
            if not _mentions(sv, anchor):
                if sv != uv:
                    return None
                continue
            if sv[0] != anchor:
                return None  # anchor inside a nested call: not unified
            suffix = sv[1:]
            if len(uv) < len(suffix) + 1:
                return None
            prefix = uv[: len(uv) - len(suffix)] if suffix else uv
            if suffix and uv[len(uv) - len(suffix) :] != suffix:
                # the use may spell the value through an alias that folds differently
                return None
            if x is None:
                x = prefix
            elif x != prefix:
                return None
        if x is None:
            # nothing in the call names the anchor (e.g. `self.tp_size =
            # get_world_size()`): the attribute is a snapshot of global state,
            # meaningful to read only on the object that took it
            x = self._find_anchor(site, ctx)
            if x is None:
                return None
        xt = p.type_of(x)
        if xt is None or site.anchor_type is None or not p.is_subclass(xt, site.anchor_type):
            return None
        # the use must not be the fill of the same attribute (e.g. another branch)
        target_at_use = x
        for a in site.target[1:]:
            target_at_use = p._attr(target_at_use, a, 0)
        if c.assigned_to is not None and p.canon(c.assigned_to, ctx) == target_at_use:
            return None
        # inside the fill's own function, only reads after the fill qualify
        if g is site.function and c.line <= site.call.line:
            return None
        reasons: list[str] = []
        notes: list[str] = []
        # guards
        use_atoms = guard_atoms(c.guard, ctx, p)
        required = [substitute(a, anchor, x, p) for a in site.atoms]
        left = residual(required, use_atoms)
        texts = [self._atom_text(a, ctx, c, site, x) for a in left]
        if left:
            reasons.append(
                "the fill runs only when " + " and ".join(f"`{t}`" for t in texts) + ", which is not implied here"
            )
        if not site.pure:
            reasons.append(site.pure_reason)
        hz = self.hazards.of(site)
        if hz.overwritten:
            # changed right after the fill (`self.vocab_size += extra`):
            # the attribute is not the call's value, so this is no finding
            return None
        replacement = spell(target_at_use, ctx, p, c.line, c.guard)
        if self._right_after_fill(site, hz, g, c, x):
            # nothing but the same pure call runs between the fill and this read
            reasons += self._result_reasons(hz, g, c, replacement)
            reasons += hz.placement
            reasons += self._access_reasons(site, hz, xt, None)
        else:
            if not site.in_constructor:
                reasons.append(
                    f"`{site.owner}` is filled in `{site.function.qualname}`, not when the object is constructed: "
                    "read before that runs, it holds whatever it held before"
                )
            if g.name in CONSTRUCTORS and xt == g.class_qualname and g is not site.function:
                if not self._after_super_init(site, g, c):
                    reasons.append("this read runs while the object is being constructed, possibly before the fill")
            changes = self.state_dependence(site)
            if changes is not None:
                reasons.append(changes)
            reasons += self._hazard_reasons(site, hz, g, c, ctx, x, xt, replacement)
        if replacement is None:
            notes.append(f"no access path to `{site.owner}` is in scope here")
        return Use(site, g, c, x, replacement, left, texts, reasons, notes)


def _rank(u: Use) -> tuple:
    return (len(u.reasons), len(u.residual), u.replacement is None)
