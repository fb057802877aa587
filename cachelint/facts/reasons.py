"""Why a CL001 rewrite at one use is unsafe, spelled at that use.

:class:`~cachelint.facts.hazards.Hazards` lists, once per cache site, what
may change its value; :class:`UseReasons` (a mixin of
:class:`~cachelint.facts.cachesites.CacheAnalysis`) turns those facts into
the reasons a finding's fix names at one reader: the writer with its line,
the dropped condition spelled with the reader's names (``config.model``, not
``self.model``), the copy or construction that shares the holder, the call
made before the fill, a mutable result, and the fill's guard atoms left
unproven.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..index.expr import guard_extends, render
from ..index.records import CallSite, FunctionInfo
from ..semantic.access import spell, spell_atom
from ..semantic.guards import Atom
from ..semantic.program import CONSTRUCTORS, Program, Value
from ..semantic.values import GlobalRoot, ParamRoot, SelfRoot
from .construction import call_text, hands_self
from .hazards import MUTATING_METHODS, Hazards
from .hazardtext import MAX_SHOWN, summarise, writer_text

if TYPE_CHECKING:
    from .cachesites import CacheSite


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


class UseReasons:
    """The unsafe reasons of a CL001 use (a mixin: ``self`` is the :class:`CacheAnalysis`)."""

    if TYPE_CHECKING:  # what CacheAnalysis provides (checked against it by mypy)
        program: Program
        hazards: Hazards

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
                f"`{ctor.qualname}` calls `{call_text(call)}` (line {call.line}){via} before it assigns "
                f"`{site.attr}` (line {site.call.line})"
            )
        elif g.self_name is not None:
            # a call made before the fill that hands the object to code cachelint cannot resolve
            handed = next(((f, c) for f, c in hz.pre_fill_calls if hands_self(p, f, c)), None)
            if handed is not None:
                ctor, call = handed
                out.append(
                    f"`{g.qualname}` may run while the object is being built, before the fill: "
                    f"`{ctor.qualname}` hands the object to `{call_text(call)}` (line {call.line}), "
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
        for role, path, text, what, origin in hz.shared_args:
            named = at_use(path) if path is not None else text
            subject = f"the fill's argument `{named}`" if role == "argument" else f"the callee's object `{named}`"
            out.append(
                f"{subject} is {what} made outside the object ({origin}): code holding another reference to "
                "it, here or outside the analysed files, may change it in place, which cachelint does not follow"
            )
        for cls, text in hz.skips_fill:
            if xt is not None and (p.is_subclass(cls, xt) or p.is_subclass(xt, cls)):
                out.append(text)
        out += hz.escapes
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
        for path, origin in hz.shared_holder_bindings:
            out.append(
                f"the holder `{at_use(path)}` is bound to {origin}: each `{anchor_short}` built around it stores "
                f"its own `{site.attr}` into that one object, overwriting the value of the others"
            )
        out += self._access_reasons(site, hz, xt, at_use)
        out += hz.guard_state
        out += self._result_reasons(hz, g, c, replacement)
        out += hz.placement
        for w, reach, names in list(dynamic.values())[:MAX_SHOWN]:
            why = f" ({reach.why})" if reach.why else ""
            what = " or ".join(names) if len(names) <= 2 else f"any of {len(names)} attributes this read relies on"
            if w.how == "value":
                name = w.source[1]
                taken = (
                    f"assigns `{name}`, replacing every attribute of an object cachelint cannot see"
                    if w.source[3]
                    else f"takes `{name}` as a value rather than calling it"
                )
                out.append(
                    f"{w.where} (line {w.line}: `{w.text}`) {taken}: whatever uses it may set any attribute "
                    f"of any object, which cachelint cannot follow, so it may rebind {what}"
                )
                continue
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

    def _access_reasons(self, site: CacheSite, hz, xt, at_use) -> list:
        """Properties, descriptors and ``__getattribute__``-like methods that
        run when the read (or the fill's store) runs, on a class the reader's
        object (typed ``xt``) may have: its own, a base or a subclass. Without
        ``at_use`` (a read right after the fill), only those of the cached
        attribute and the hooks: the fill's arguments are read twice in a row."""
        p = self.program
        out: list[str] = []

        def related(cls: str) -> bool:
            return xt is None or p.is_subclass(xt, cls) or p.is_subclass(cls, xt)

        for path, role, cls, what in hz.properties:
            if not related(cls) or (at_use is None and role != "attribute"):
                continue
            if role == "attribute":
                may = "may be" if not what.startswith(("is ", "may ")) else ""
                verb = f"{may} " if may else ""
                out.append(
                    f"`{site.owner}` {verb}{what}: storing it and reading it run that code, so the read need not "
                    "give what the fill's call returned"
                )
                continue
            verb = "" if what.startswith(("is ", "may ")) else ("may be " if "subclass" in what else "is ")
            out.append(
                f"`{at_use(path)}` {verb}{what}, computed on each read from inputs cachelint does not "
                "follow: a change to them after construction changes the call, not the attribute"
            )
        for cls, text in hz.access_hooks:
            if related(cls):
                out.append(text)
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
        if not guard_extends(c.guard, fill.guard):
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
