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

from ..index.expr import dotted, render
from ..index.records import CallSite, FunctionInfo
from ..index.scans import function_imports, scan_hits, use_keys
from ..semantic.access import spell, spell_atom
from ..semantic.guards import Atom, guard_atoms, residual, substitute
from ..semantic.idioms import is_property
from ..semantic.program import CONSTRUCTORS, Program, Value
from ..semantic.values import CallRoot, GlobalRoot, KwArg, ParamRoot, SelfRoot
from ..semantic.writes import Writes
from .catalog import Catalog
from .construction import hands_self
from .cost import CostModel
from .hazards import MAX_SHOWN, MUTATING_METHODS, Hazards, summarise, writer_text


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


def render_value_short(v: Value) -> str:
    root = v[0]
    if isinstance(root, SelfRoot):
        head = "self"
    elif isinstance(root, ParamRoot):
        head = root.name
    elif isinstance(root, GlobalRoot):
        head = root.qualname.rsplit(".", 1)[-1]
    else:
        head = "?"
    return ".".join([head] + [a for a in v[1:] if isinstance(a, str)])


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


class CacheAnalysis:
    def __init__(self, program: Program, catalog: Catalog, cost: CostModel, writes: Writes | None = None) -> None:
        self.program = program
        self.catalog = catalog
        self.cost = cost
        self.sites: list[CacheSite] = []
        self.by_name: dict[str, list[CacheSite]] = {}
        self._uses: list[Use] | None = None
        self.hazards = Hazards(program, writes)

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
        purity = self.cost.purity(names, fn)
        pure, why = purity.pure, purity.reason
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
        else:
            if not site.in_constructor:
                reasons.append(
                    f"`{site.owner}` is filled in `{site.function.qualname}`, not when the object is constructed: "
                    "read before that runs, it holds whatever it held before"
                )
            if g.name in CONSTRUCTORS and xt == g.class_qualname and g is not site.function:
                if not self._after_super_init(site, g, c):
                    reasons.append("this read runs while the object is being constructed, possibly before the fill")
            reasons += self._hazard_reasons(site, hz, g, c, ctx, x, xt, replacement)
        if replacement is None:
            notes.append(f"no access path to `{site.owner}` is in scope here")
        return Use(site, g, c, x, replacement, left, texts, reasons, notes)

    # ----- what else the rewrite relies on (see facts.hazards) -----------------------------
    def _hazard_reasons(self, site: CacheSite, hz, g: FunctionInfo, c: CallSite, ctx, x, xt, replacement) -> list:
        p = self.program
        writes = self.hazards.writes
        out: list[str] = []

        def at_use(path: tuple) -> str:
            v = x
            for a in path:
                v = p._attr(v, a, 0)
            text = spell(v, ctx, p, c.line, c.guard)
            if text is None:
                text = render_value_short((site.anchor, *path))
            return text

        reached = self.hazards.reached_before_fill(site, g)
        if reached is not None:
            ctor, call, chain = reached
            via = f" (through {' -> '.join(f'`{q}`' for q in chain[:-1])})" if len(chain) > 1 else ""
            out.append(
                f"`{g.qualname}` may run while the object is being built, before the fill: "
                f"`{ctor.qualname}` calls `{render(call.func)}` (line {call.line}){via} before it assigns "
                f"`{site.attr}` (line {site.call.line})"
            )
        elif g.self_name is not None:
            # a call made before the fill that hands the object to code cachelint cannot resolve
            handed = next(((f, c) for f, c in hz.pre_fill_calls if hands_self(p, f, c)), None)
            if handed is not None:
                ctor, call = handed
                out.append(
                    f"`{g.qualname}` may run while the object is being built, before the fill: "
                    f"`{ctor.qualname}` hands the object to `{render(call.func)}(...)` (line {call.line}), "
                    f"which cachelint cannot resolve, before it assigns `{site.attr}` (line {site.call.line})"
                )
        # writers with a computed name: one reason each, naming what they may rebind
        dynamic: dict = {}
        for dep in hz.dependencies:
            named = at_use(dep.path)
            static = []
            for w, reach in dep.writers:
                if w.attr is None:
                    dynamic.setdefault(id(w), (w, reach, []))[2].append(f"`{named}`")
                else:
                    static.append((w, reach))
            if not static:
                continue
            sure = all(r.sure for _, r in static)
            verb = "is" if sure else "may be"
            listed = summarise(static, lambda item: writer_text(item[0], item[1], writes))
            if dep.role == "attribute":
                out.append(f"`{site.owner}` {'is also' if sure else 'may also be'} assigned {listed}")
            elif dep.role == "holder":
                out.append(f"the holder `{named}` {verb} rebound {listed}, which replaces the object the fill wrote")
            elif dep.role == "guard":
                out.append(f"the fill's guard reads `{named}`, which {verb} assigned {listed} after construction")
            elif dep.role == "callee":
                out.append(f"the callee's object `{named}` {verb} rebound {listed} after construction")
            else:
                out.append(f"the fill's argument `{named}` {verb} assigned {listed} after construction")
        for cont in hz.contents:
            named = at_use(cont.path) if cont.path is not None else cont.text
            short = cont.cls.rsplit(".", 1)[-1]
            static = []
            for w, reach in cont.writers:
                if w.attr is None:
                    dynamic.setdefault(id(w), (w, reach, []))[2].append(f"attributes of `{named}`")
                else:
                    static.append((w, reach))
            if not static:
                continue

            def one(item, short=short):
                w, reach = item
                verb = "is" if reach.sure else "may be"
                return f"`{short}.{w.attr}` {verb} assigned {writer_text(w, reach, writes)}"

            if cont.role == "argument":
                head = f"the fill's argument `{named}` is a `{short}` that is changed after construction: "
            else:
                head = f"the callee is a method of `{named}`, a `{short}` that is changed after construction: "
            out.append(head + summarise(static, one))
        for cls, text in hz.skips_fill:
            if xt is not None and (p.is_subclass(cls, xt) or p.is_subclass(xt, cls)):
                out.append(text)
        anchor_short = (site.anchor_type or "").rsplit(".", 1)[-1]
        for rg, rc, sure in hz.shared_holder[:MAX_SHOWN]:
            holder = at_use(tuple(site.target[1:-1]))
            arg = render(rc.args[0])
            builds = "builds" if sure else f"may build (cachelint cannot tell the type of `{arg}`)"
            out.append(
                f"`{_short(render(('call', rc.func, rc.args, rc.kwargs)))}` in `{rg.qualname}` (line {rc.line}) "
                f"{builds} another `{anchor_short}` that shares `{holder}` with this one; its "
                f"`{site.function.name}` stores `{site.attr}` into the shared object again, from the copy's values"
            )
        if len(hz.shared_holder) > MAX_SHOWN:
            out.append(f"and {len(hz.shared_holder) - MAX_SHOWN} more `dataclasses.replace` calls")
        for rg, rc, how in hz.passed_holder[:MAX_SHOWN]:
            holder = site.target[1]
            given = "through `**` arguments, which may hold it" if how == "**" else "made elsewhere"
            out.append(
                f"`{_short(render(('call', rc.func, rc.args, rc.kwargs)))}` in `{rg.qualname}` (line {rc.line}) "
                f"hands the new `{anchor_short}` a `{holder}` {given}, which it then shares with whatever else "
                f"holds that object; each `{anchor_short}` built around it stores its own `{site.attr}` into it"
            )
        if len(hz.passed_holder) > MAX_SHOWN:
            out.append(f"and {len(hz.passed_holder) - MAX_SHOWN} more constructions handed a `{site.target[1]}`")
        for path, m in hz.properties:
            what = "a property" if is_property(m) else "a method"
            out.append(
                f"`{at_use(path)}` is {what} (`{m.qualname}`), computed on each read from inputs cachelint does not "
                "follow: a change to them after construction changes the call, not the attribute"
            )
        out += self._result_reasons(hz, g, c, replacement)
        out += hz.placement
        for w, reach, names in list(dynamic.values())[:MAX_SHOWN]:
            why = f" ({reach.why})" if reach.why else ""
            what = " or ".join(names) if len(names) <= 2 else f"any of {len(names)} attributes this read relies on"
            if w.how == "unindexed":
                out.append(
                    f"{w.where} calls `setattr` where cachelint does not index calls (not indexed: in a lambda or "
                    f"a class body), with a name and an object it cannot see, so it may rebind {what}"
                )
                continue
            out.append(
                f"{w.where} (line {w.line}: `{w.text}`) sets attributes named at run time on "
                f"`{render(w.receiver)}`{why}, so it may rebind {what}"
            )
        if len(dynamic) > MAX_SHOWN:
            out.append(f"and {len(dynamic) - MAX_SHOWN} more writers with names computed at run time")
        return out

    def _right_after_fill(self, site: CacheSite, hz, g: FunctionInfo, c: CallSite, x) -> bool:
        """The read follows the fill in the fill's own function, on the object
        it filled, on every path through the fill (the fill's guard is a
        prefix of the read's, neither in a loop nor a handler), and between
        them runs no call but the same pure callee and no write that could
        touch what the invariant depends on: whatever other writers exist,
        none can run in between."""
        fill = site.call
        if g is not site.function or fill.in_loop or fill.in_handler or c.in_loop or c.in_handler:
            return False
        if hz.placement or g.is_async:  # a fill an exception may skip; an `await` lets other code run
            return False
        if (c.line, c.column) <= (fill.end_line, fill.end_column) or x != (site.anchor,):
            return False
        if tuple(c.guard[: len(fill.guard)]) != tuple(fill.guard):
            return False
        start, end = (fill.end_line, fill.end_column), (c.line, c.column)
        for other in g.calls:
            if other is c or not (start < (other.line, other.column) < end):
                continue
            if self.program.call_callee(g, other) == site.callee and other.func == fill.func:
                continue  # the same pure call again (another use)
            return False
        watched = {dep.path[-1] for dep in hz.dependencies} | {site.attr}
        watched |= {a for dep in hz.dependencies for a in dep.path}
        names = {n for cond, _ in fill.guard for n in _names(cond)}
        for a in g.assigns:
            if not (start < (a.line, a.column) < end):
                continue
            t = a.target
            if t[0] == "name" and t[1] in names:
                return False
            if t[0] == "attr" and t[2] in watched:
                return False
            if t[0] == "sub" and t[1][0] in ("attr", "call"):  # __dict__[k] = v, vars(x)[k] = v
                return False
        return True

    def _result_reasons(self, hz, g: FunctionInfo, c: CallSite, replacement) -> list:
        out: list[str] = []
        kind, what = hz.result
        callee = render(c.func)
        if kind != "immutable":
            shared = (
                f"reading `{replacement}` shares one object among all readers"
                if replacement
                else "the attribute is one shared object"
            )
            mutation = _mutation(g, c)
            if mutation is not None:
                tail = f", and this function changes it in place (`{mutation[0]}`, line {mutation[1]})"
            else:
                tail = ", which a reader may change in place"
            if kind == "mutable":
                out.append(f"`{callee}` returns a new `{what}` on each call; {shared}{tail}")
            else:
                out.append(
                    f"cachelint cannot tell that `{callee}` returns a value nobody changes in place "
                    f"(it has no return annotation it can read); {shared}{tail}"
                )
        return out

    def _find_anchor(self, site: CacheSite, ctx) -> Value | None:
        p = self.program
        if ctx.self_name and ctx.self_class and site.anchor_type and p.is_subclass(ctx.self_class, site.anchor_type):
            return (SelfRoot(ctx.self_class),)
        return None

    def _after_super_init(self, site: CacheSite, g: FunctionInfo, c: CallSite) -> bool:
        """In a subclass constructor, after ``super().__init__()`` ran the base's fill."""
        base = site.function.class_qualname
        if not site.in_constructor or base is None or g.class_qualname is None:
            return False
        if g.class_qualname == base or not self.program.is_subclass(g.class_qualname, base):
            return False
        for sc in g.calls:
            f = sc.func
            if (
                sc.line < c.line
                and not sc.guard
                and f[0] == "attr"
                and f[2] in CONSTRUCTORS
                and f[1][0] == "call"
                and f[1][1] == ("name", "super")
            ):
                return True
        return False

    def _atom_text(self, atom: Atom, ctx, c: CallSite, site: CacheSite, x) -> str:
        text = spell_atom(atom, ctx, self.program, c.line, c.guard)
        if text is not None:
            return text
        t = atom.text
        return (t if atom.positive else f"not {t}") + f" (in {site.function.qualname})"


def _short(text: str, limit: int = 70) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _names(e) -> set:
    """The plain names an indexed expression mentions."""
    out: set = set()
    stack = [e]
    while stack:
        x = stack.pop()
        if not isinstance(x, tuple) or not x:
            continue
        if x[0] == "name" and len(x) == 2 and isinstance(x[1], str):
            out.add(x[1])
            continue
        stack.extend(y for y in x[1:] if isinstance(y, tuple))
    return out


def _mutation(g: FunctionInfo, c: CallSite) -> tuple | None:
    """(text, line) of the first in-place change ``g`` makes, after ``c``, to
    the local ``c``'s value is assigned to (``ids.append(x)``, ``ids[0] = x``)."""
    t = c.assigned_to
    if t is None or t[0] != "name":
        return None
    local = t
    for x in g.calls:
        f = x.func
        if x.line >= c.line and f[0] == "attr" and f[1] == local and f[2] in MUTATING_METHODS:
            return f"{t[1]}.{f[2]}(...)", x.line
    for a in g.assigns:
        tg = a.target
        if a.line > c.line and tg[0] in ("sub", "attr") and tg[1] == local:
            return f"{render(tg)} = ...", a.line
        if a.line > c.line and tg == local and a.kind == "augassign":
            return f"{t[1]} += ...", a.line
    return None


def _rank(u: Use) -> tuple:
    return (len(u.reasons), len(u.residual), u.replacement is None)
