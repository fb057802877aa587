"""Stage 4b: the invariants a lock records, built from cache sites and re-checked.

An invariant is what a CL001 rewrite relies on: "for every object ``X`` of the
anchor's class, once constructed, ``X.<path>.<attr>`` holds ``callee(args)``
when ``guard``". It is built from a :class:`~cachelint.facts.cachesites.CacheSite`
and its rewritten readers (:func:`from_uses`), stored in ``cachelint.lock``
(:mod:`cachelint.lock.lockfile`), and checked against the current code on every run
(:class:`InvariantCheck`): the fill must still exist somewhere (any function:
moving it is fine) assigning the same call under the same guard, nothing new
may assign the attribute, and a new read must sit where the fill's guard holds.

Everything is spelled from the fill's point of view with the anchor renamed
``X`` for comparison (:func:`~cachelint.lock.lockfile.normalise`), so a fill moved
from ``EngineConfig.__post_init__`` (anchor ``self``) to a helper
``fill(config: EngineConfig)`` (anchor ``config``) is the same invariant.
Places are module and qualified name, never line numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..files import decode_source
from ..index.expr import _last_name, dotted, render
from ..index.records import FunctionInfo
from ..index.walk import index_source
from ..lock.lockfile import Invariant, Place, normalise
from ..semantic.access import spell_atom
from ..semantic.guards import Atom, guard_atoms, residual, substitute
from ..semantic.program import CONSTRUCTORS, Program, Value
from ..semantic.values import (
    CallRoot,
    CmpKey,
    ConstRoot,
    GlobalRoot,
    IsNoneKey,
    KwArg,
    OpaqueKey,
    ParamRoot,
    SelfRoot,
    TruthyKey,
)


def place_of(f: FunctionInfo) -> Place:
    qn = f.qualname
    if f.module and qn.startswith(f.module + "."):
        qn = qn[len(f.module) + 1 :]
    return Place(f.module, qn)


def at_place(program: Program, f: FunctionInfo, place: Place) -> bool:
    """``f`` is the function a lock place names."""
    pf = place_of(f)
    if pf == place:
        return True
    # code moves between modules more often than it is renamed: match the
    # qualified name alone when the recorded module no longer has it
    return pf.function == place.function and f"{place.module}.{place.function}" not in program.functions


def value_text(v, anchor_root, anchor_name: str) -> str:
    """A canonical value spelled relative to an anchor (stable across runs)."""
    if v is None:
        return "?"
    root = v[0]
    if root == anchor_root:
        head = anchor_name
    elif isinstance(root, SelfRoot):
        head = f"<{root.cls.rsplit('.', 1)[-1]} instance>"
    elif isinstance(root, ParamRoot):
        head = root.name
    elif isinstance(root, GlobalRoot):
        head = root.qualname
    elif isinstance(root, ConstRoot):
        head = repr(root.value)
    elif isinstance(root, CallRoot):
        callee = value_text(root.callee, anchor_root, anchor_name)
        args = ", ".join(
            f"{a.name}={value_text(a.value, anchor_root, anchor_name)}"
            if isinstance(a, KwArg)
            else value_text(a, anchor_root, anchor_name)
            for a in root.args
        )
        head = f"{callee}({args})"
    else:
        head = "?"
    return head + "".join(f".{a}" if isinstance(a, str) else "[?]" for a in v[1:])


def atom_text(atom: Atom, anchor_root, anchor_name: str) -> str:
    key = atom.key
    if isinstance(key, TruthyKey):
        s = value_text(key.value, anchor_root, anchor_name)
    elif isinstance(key, IsNoneKey):
        s = value_text(key.value, anchor_root, anchor_name) + " is None"
    elif isinstance(key, CmpKey):
        s = f"{value_text(key.left, anchor_root, anchor_name)} {key.op} {value_text(key.right, anchor_root, anchor_name)}"
    elif isinstance(key, OpaqueKey):
        s = render(key.expr)
    else:
        s = atom.text
    if atom.positive:
        return s
    return f"not {s}" if " " not in s else f"not ({s})"


def _anchor_name(root) -> str:
    if isinstance(root, SelfRoot):
        return "self"
    if isinstance(root, ParamRoot):
        return root.name
    return "X"


def class_matches(program: Program, t: str | None, qn: str) -> bool:
    """``t`` is ``qn`` or a subclass; by short name when ``qn`` is not in this
    tree any more (a class moved between modules keeps its invariants)."""
    if t is None:
        return False
    if qn in program.classes:
        return program.is_subclass(t, qn)
    short = qn.rsplit(".", 1)[-1]
    return any(m.rsplit(".", 1)[-1] == short for m in program.mro(t))


def callee_matches(names: list[str], callee: str) -> bool:
    if callee in names:
        return True
    tail = ".".join(callee.split(".")[-2:])
    return any(n == tail or n.endswith("." + tail) for n in names)


@dataclass
class Writer:
    """One assignment of the locked attribute found in the current code."""

    function: FunctionInfo
    line: int
    column: int
    end_line: int
    end_column: int
    is_fill: bool  # assigns the locked call with the locked arguments
    value_text: str
    guard: tuple  # normalised guard texts
    guard_display: tuple  # as spelled at the fill
    atoms: list
    anchor_root: tuple | None
    at_construction: bool
    is_default: bool  # the holder's own constructor setting its default


@dataclass
class Read:
    function: FunctionInfo
    line: int
    column: int
    end_line: int
    end_column: int
    value: Value
    guard: tuple


@dataclass
class Problem:
    """What changed about an invariant (CL003)."""

    invariant: Invariant
    what: str
    at: Writer | None  # where to report besides the readers (None: the fill's last known place)


@dataclass
class UnsafeRead:
    invariant: Invariant
    read: Read
    residual: list  # texts
    related: bool  # the read could be tied to the fill's anchor


@dataclass
class InvariantState:
    invariant: Invariant
    writers: list = field(default_factory=list)
    reads: list = field(default_factory=list)
    good_fills: list = field(default_factory=list)
    problems: list = field(default_factory=list)
    unsafe_reads: list = field(default_factory=list)


class InvariantCheck:
    def __init__(self, program: Program, invariants: list[Invariant]) -> None:
        self.program = program
        self.invariants = invariants
        self._reads: dict | None = None

    # ----- the current code -----------------------------------------------------------
    def reads(self) -> dict:
        """Reads of the locked attribute names: attr -> [(FunctionInfo, read tuple)].

        The whole-program index does not keep attribute reads (too many); files
        are indexed again with the names watched. A guarded fill's name is
        looked for everywhere (any new read may be a CL004). An unconditional
        fill has no unsafe readers, so its name (often a common one such as
        ``tp_size``) is looked for only where its readers and fill are.
        """
        if self._reads is not None:
            return self._reads
        p = self.program
        everywhere = frozenset(inv.attr for inv in self.invariants if inv.guard)
        near = frozenset(inv.attr for inv in self.invariants if not inv.guard)
        out: dict = {n: [] for n in everywhere | near}
        near_places = {pl for inv in self.invariants if not inv.guard for pl in (*inv.readers, inv.fill)}
        near_functions = {pl.function for pl in near_places}
        near_modules = {pl.module for pl in near_places}
        if near_places:
            near_modules |= {f.module for f in p.functions.values() if place_of(f).function in near_functions}
        for fi in p.indexes:
            if fi.error:
                continue
            names = everywhere | near if fi.module in near_modules else everywhere
            if not names:
                continue
            try:
                data = p.source_bytes(fi.path)
            except OSError:
                continue
            names = frozenset(n for n in names if n.encode() in data)
            if not names:
                continue
            try:
                source = decode_source(data)
            except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
                continue
            watched = index_source(source, fi.path, fi.module, fi.is_package, watch=names)
            for qn, expr, line, col, end_line, end_col, guard, *_where in watched.reads:
                f = p.functions.get(qn)
                if f is None or f.path != fi.path:
                    continue
                out.setdefault(expr[2], []).append((f, (expr, line, col, end_line, end_col, guard)))
        self._reads = out
        return out

    def known_reads(self, inv: Invariant, reads: list, readers, fill: Place) -> tuple:
        """Reads to record as already there (only a guarded fill has unsafe readers)."""
        if not inv.guard:
            return ()
        return tuple(sorted({place_of(r.function) for r in reads} - set(readers) - {fill}))

    def writers_of(self, inv: Invariant) -> list[Writer]:
        p = self.program
        out = []
        n_path = len(inv.path_attrs)
        for f, a in p.writers(inv.attr):
            if f.under_type_checking or a.kind in ("del",):
                continue
            ctx = p.context(f)
            tgt = p.canon(a.target, ctx)
            if tgt is None or len(tgt) < 2:
                continue
            if not class_matches(p, p.type_of(tgt[:-1]), inv.holder):
                continue
            anchor_root = tgt[0]
            name = _anchor_name(anchor_root)
            is_default = (
                n_path > 1
                and f.name in CONSTRUCTORS
                and f.class_qualname is not None
                and class_matches(p, f.class_qualname, inv.holder)
                and a.target[1] == ("name", f.self_name)
            )
            value = a.value
            is_fill = False
            atoms = guard_atoms(a.guard, ctx, p)
            if value and value[0] == "call" and not is_default:
                callee = p.canon(value[1], ctx)
                names = p.callee_names(callee, dotted(value[1]))
                if callee_matches(names, inv.callee) and len(tgt) - 1 == n_path:
                    args = [value_text(p.canon(x, ctx), anchor_root, "X") for x in value[2]]
                    args += [f"{k}={value_text(p.canon(v, ctx), anchor_root, 'X')}" for k, v in value[3]]
                    want = [normalise(x, inv.anchor_name) for x in inv.arguments]
                    anchor_ok = isinstance(anchor_root, (SelfRoot, ParamRoot)) and class_matches(
                        p, p.type_of((anchor_root,)), inv.anchor
                    )
                    is_fill = args == want and anchor_ok
            at_construction = self._at_construction(f, anchor_root)
            out.append(
                Writer(
                    function=f,
                    line=a.line,
                    column=a.column,
                    end_line=a.end_line,
                    end_column=a.end_column,
                    is_fill=is_fill,
                    value_text=render(value) if value else "?",
                    # normalised from the display text, as the lock's guard is:
                    # an opaque condition is spelled as written, anchor included
                    guard=tuple(normalise(atom_text(x, anchor_root, name), name) for x in atoms),
                    guard_display=tuple(atom_text(x, anchor_root, name) for x in atoms),
                    atoms=atoms,
                    anchor_root=anchor_root,
                    at_construction=at_construction,
                    is_default=is_default,
                )
            )
        return out

    def _at_construction(self, f: FunctionInfo, anchor_root, depth: int = 0) -> bool:
        """The fill runs whenever an anchor object is constructed: it is in the
        constructor, or in a function every constructor run calls (without a
        condition) on the object being built."""
        p = self.program
        if isinstance(anchor_root, SelfRoot):
            if (
                f.name in CONSTRUCTORS
                and f.class_qualname is not None
                and p.is_subclass(anchor_root.cls, f.class_qualname)
            ):
                return True
            anchor_type: str | None = anchor_root.cls
        elif isinstance(anchor_root, ParamRoot):
            anchor_type = p.type_of((anchor_root,))
        else:
            return False
        if depth > 2 or anchor_type is None:
            return False
        for g in p.functions.values():
            if g is f or g.class_qualname is None or not p.is_subclass(anchor_type, g.class_qualname):
                continue
            if g.name not in CONSTRUCTORS and depth == 0 and not g.self_name:
                continue
            for c in g.calls:
                if c.guard or _last_name(c.func) != f.name:
                    continue
                ctx = p.context(g)
                callee = p.canon(c.func, ctx)
                if callee is None or p.callee_function(callee) is not f:
                    continue
                if isinstance(anchor_root, ParamRoot):
                    passes_self = any(p.canon(a, ctx) == (SelfRoot(g.class_qualname),) for a in c.args) or any(
                        p.canon(v, ctx) == (SelfRoot(g.class_qualname),) for _, v in c.kwargs
                    )
                    if not passes_self:
                        continue
                if g.name in CONSTRUCTORS or self._at_construction(g, (SelfRoot(g.class_qualname),), depth + 1):
                    return True
        return False

    def reads_of(self, inv: Invariant) -> list[Read]:
        p = self.program
        out = []
        for f, (expr, line, col, end_line, end_col, guard) in self.reads().get(inv.attr, []):
            ctx = p.context(f)
            v = p.canon(expr, ctx)
            if v is None or len(v) < 2 or not class_matches(p, p.type_of(v[:-1]), inv.holder):
                continue
            out.append(Read(f, line, col, end_line, end_col, v, guard))
        return out

    # ----- checking ---------------------------------------------------------------------
    def state(self, inv: Invariant) -> InvariantState:
        st = InvariantState(inv)
        st.writers = self.writers_of(inv)
        st.reads = self.reads_of(inv)
        locked_guard = tuple(normalise(g, inv.anchor_name) for g in inv.guard)
        fills = [w for w in st.writers if w.is_fill]
        st.good_fills = [
            w for w in fills if set(w.guard) == set(locked_guard) and (w.at_construction or not inv.at_construction)
        ]
        known = set(inv.known_writers) | {inv.fill}
        if not st.good_fills:
            st.problems.append(self._describe_break(inv, fills, st.writers, locked_guard))
        else:
            good = {id(w) for w in st.good_fills}
            for w in st.writers:
                if id(w) in good or w.is_default:
                    continue
                if any(self._at(w.function, k) for k in known):
                    continue
                st.problems.append(
                    Problem(
                        inv,
                        f"`{place_of(w.function)}` now also assigns `{inv.attribute}` = `{_short(w.value_text)}` "
                        f"(line {w.line}), so it no longer always holds `{inv.call_text}`",
                        w,
                    )
                )
            st.unsafe_reads = self._unsafe_reads(inv, st)
        return st

    def _describe_break(self, inv: Invariant, fills, writers, locked_guard) -> Problem:
        shown = " and ".join(f"`{g}`" for g in inv.guard) or "no condition"
        if fills:
            w = next((w for w in fills if self._at(w.function, inv.fill)), fills[0])
            added = [d for g, d in zip(w.guard, w.guard_display) if g not in locked_guard]
            removed = [d for g, d in zip(locked_guard, inv.guard) if g not in w.guard]
            parts = []
            if added:
                parts.append(
                    "now also requires " + " and ".join(f"`{x}`" for x in added) + " (readers may see the default)"
                )
            if removed:
                parts.append("no longer requires " + " and ".join(f"`{x}`" for x in removed))
            if inv.at_construction and not w.at_construction:
                parts.append("no longer runs when the object is constructed")
            where = place_of(w.function)
            return Problem(
                inv,
                f"the fill of `{inv.attribute}` (`{where}`, line {w.line}) sits under a different guard: "
                + "; ".join(parts or ["changed"])
                + f"; the lock records {shown}",
                w,
            )
        in_fill_fn = [w for w in writers if self._at(w.function, inv.fill) and not w.is_default]
        if in_fill_fn:
            w = in_fill_fn[0]
            return Problem(
                inv,
                f"`{inv.fill}` now assigns `{inv.attribute}` = `{_short(w.value_text)}`, not `{inv.call_text}`",
                w,
            )
        others = [w for w in writers if not w.is_fill]
        tail = ""
        if others:
            tail = "; it now only holds " + ", ".join(
                f"`{_short(w.value_text)}` (from `{place_of(w.function)}`)" for w in others[:3]
            )
        return Problem(inv, f"the fill of `{inv.attribute}` = `{inv.call_text}` in `{inv.fill}` is gone{tail}", None)

    def _at(self, f: FunctionInfo, place: Place) -> bool:
        return at_place(self.program, f, place)

    def _unsafe_reads(self, inv: Invariant, st: InvariantState) -> list[UnsafeRead]:
        p = self.program
        skip = set(inv.readers) | set(inv.known_reads) | {inv.fill}
        fill = st.good_fills[0]
        out = []
        n = len(inv.path_attrs)
        for r in st.reads:
            if any(self._at(r.function, k) for k in skip):
                continue
            if any(w.function is r.function for w in st.writers):
                continue  # the fill's own function, or a writer reading back
            ctx = p.context(r.function)
            x = r.value[: len(r.value) - n] if len(r.value) > n else None
            related = (
                x is not None
                and tuple(r.value[len(x) :]) == inv.path_attrs
                and class_matches(p, p.type_of(x), inv.anchor)
            )
            if not fill.atoms:
                continue  # unconditional fill: every read is covered
            if not related:
                out.append(UnsafeRead(inv, r, list(fill.guard_display), False))
                continue
            required = [substitute(a, fill.anchor_root, x, p) for a in fill.atoms]
            left = residual(required, guard_atoms(r.guard, ctx, p))
            if not left:
                continue
            texts = []
            for a in left:
                t = spell_atom(a, ctx, p, r.line, r.guard)
                texts.append(t if t is not None else atom_text(a, None, ""))
            out.append(UnsafeRead(inv, r, texts, True))
        return out

    def in_scope(self, inv: Invariant) -> bool:
        """The analysed files include the invariant's fill side: its module, or
        the class it fills or runs on. Checking a few files (``cachelint check
        pkg/runner.py``) must not report every fill outside them as gone."""
        p = self.program
        if inv.fill.module in p.modules:
            return True
        shorts = {inv.anchor.rsplit(".", 1)[-1], inv.holder.rsplit(".", 1)[-1]}
        return (
            inv.anchor in p.classes
            or inv.holder in p.classes
            or any(qn.rsplit(".", 1)[-1] in shorts for qn in p.classes)
        )

    def states(self) -> list[InvariantState]:
        return [self.state(inv) for inv in self.invariants if self.in_scope(inv)]

    # ----- rebuilding ------------------------------------------------------------------
    def rebuild(self, inv: Invariant) -> tuple[Invariant | None, str | None]:
        """The invariant as the code now has it, keeping its readers.

        Returns (None, None) when no reader relies on it any more (drop it) and
        (inv, reason) when it cannot be rebuilt (its fill is gone).
        """
        writers = self.writers_of(inv)
        reads = self.reads_of(inv)
        readers = tuple(sorted({k for k in inv.readers if any(self._at(r.function, k) for r in reads)}))
        if not readers:
            return None, None
        fills = [w for w in writers if w.is_fill]
        if not fills:
            return inv, f"`{inv.attribute}`: the fill `{inv.call_text}` is gone; restore it or revert the readers"
        locked_guard = tuple(normalise(g, inv.anchor_name) for g in inv.guard)
        fills.sort(key=lambda w: (set(w.guard) != set(locked_guard), not self._at(w.function, inv.fill)))
        w = fills[0]
        fill_place = place_of(w.function)
        name = _anchor_name(w.anchor_root)
        if w.guard and not inv.guard:
            # newly guarded: its reads are now looked for everywhere
            reads = InvariantCheck(self.program, [replace(inv, guard=w.guard_display)]).reads_of(inv)
        new = replace(
            inv,
            target=".".join((name,) + inv.path_attrs),
            arguments=tuple(_rename(a, inv.anchor_name, name) for a in inv.arguments),
            guard=w.guard_display,
            fill=fill_place,
            at_construction=w.at_construction,
            readers=readers,
            known_reads=self.known_reads(replace(inv, guard=w.guard_display), reads, readers, fill_place),
            known_writers=tuple(
                sorted({place_of(x.function) for x in writers if x is not w and not x.is_default} - {fill_place})
            ),
        )
        return new, None


def _rename(text: str, old: str, new: str) -> str:
    return normalise(text, old).replace("X", new) if old != new else text


def _short(text: str, limit: int = 70) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ----- building invariants from fixed CL001 findings ------------------------------------
def from_uses(program: Program, uses: list) -> list[Invariant]:
    """One invariant per cache site, with the functions of ``uses`` as readers.

    Every other read and assignment of the attribute found now is recorded as
    known, so later checks report only what is new.
    """
    by_site: dict = {}
    for u in uses:
        by_site.setdefault(id(u.site), (u.site, []))[1].append(u)
    base = []
    for site, us in by_site.values():
        root = site.anchor
        name = _anchor_name(root)
        base.append(
            Invariant(
                attribute=site.owner,
                holder=site.holder_type or "",
                anchor=site.anchor_type or "",
                target=value_text(site.target, root, name),
                callee=site.callee_names[0] if site.callee_names else render(site.call.func),
                arguments=tuple(
                    f"{a.name}={value_text(a.value, root, name)}" if isinstance(a, KwArg) else value_text(a, root, name)
                    for a in site.args
                ),
                guard=tuple(atom_text(a, root, name) for a in site.atoms),
                fill=place_of(site.function),
                at_construction=site.in_constructor,
                readers=tuple(sorted({place_of(u.function) for u in us})),
            )
        )
    check = InvariantCheck(program, base)
    out = []
    for inv in base:
        reads = check.reads_of(inv)
        writers = check.writers_of(inv)
        out.append(
            replace(
                inv,
                known_reads=check.known_reads(inv, reads, inv.readers, inv.fill),
                known_writers=tuple(sorted({place_of(w.function) for w in writers if not w.is_default} - {inv.fill})),
            )
        )
    return out
