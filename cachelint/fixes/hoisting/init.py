"""Hoist to ``__init__``: a call whose every input is bound once at
construction, evaluated once at the end of the class's own ``__init__``.

See :mod:`cachelint.fixes.hoisting.planner` for what makes it safe.
"""

from __future__ import annotations

from collections import deque

from ...facts.construction import call_text, hands_self, implicit_calls
from ...facts.hazards import content_writers
from ...facts.hazardtext import writer_text
from ...index.expr import dotted, render
from ...index.records import FunctionInfo
from ...model import Applicability, Edit, EditKind, Fix, Span
from ...semantic.callgraph import resolve_call
from ...semantic.program import CONSTRUCTORS
from ...semantic.values import ConstRoot, GlobalRoot
from .inputs import InputAnalysis
from .site import (
    _IMMUTABLE,
    Site,
    _annotation_ok,
    _attr_chains,
    _base_name,
    _builtin_container,
    _call_expr,
    _calls_super_init,
    _class_level,
    _inputs_expr,
    names_in,
)

# methods that build an object's copy (``copy``, ``pickle``) from a state of their own, not ``__init__``
_COPY_PROTOCOL = ("__getstate__", "__setstate__", "__reduce__", "__reduce_ex__", "__copy__", "__deepcopy__")
_MUTABLE_BUILDERS = frozenset({("name", n) for n in ("list", "dict", "set", "bytearray", "sorted")})


def _chain_to_expr(root: str | None, chain: tuple) -> tuple:
    e: tuple = ("name", root or "self")
    for a in chain:
        e = ("attr", e, a)
    return e


class InitHoists(InputAnalysis):
    """The hoist-to-``__init__`` fix and its safety checks."""

    # hoist to __init__ ----------------------------------------------------------------
    def _hoist_init(self, s: Site, names: dict) -> Fix | None:
        p = self.p
        f, c = s.function, s.call
        cls = f.class_qualname
        if cls is None or f.self_name is None or f.name in CONSTRUCTORS or f.parent_function:
            return None
        ci = p.classes.get(cls)
        if ci is None or "__init__" not in ci.methods:
            s.notes.append(f"`{cls.rsplit('.', 1)[-1]}` defines no `__init__` to hoist the call into")
            return None
        init = p.functions.get(ci.methods["__init__"])
        if init is None or init.self_name != f.self_name:
            return None
        if self.hot.is_hot(init.qualname):
            s.notes.append(f"`{init.qualname}` itself runs on a hot path ({self.hot.kind(init.qualname)})")
            return None
        if not ci.qualname.startswith(ci.module + ".") or "<locals>" in ci.qualname:
            return None
        ctx = p.context(f)
        used: list[str] = []
        names_in(_call_expr(c), used)
        fi = p.modules_by_path.get(f.path)
        for n in used:
            if n == f.self_name:
                continue
            if n == "?" or n in ctx.locals or n in ctx.params or fi is None or p.resolve_name(fi.module, n) is None:
                return None  # reads something of this call only (a local, a parameter)
        text = self.call_text(f, c)
        if text is None:
            return None
        reasons: list[str] = []
        relies: list[str] = []
        if not s.cost.pure:
            reasons.append(f"the callee is not known to be pure ({s.cost.pure_reason})")
        else:
            relies.append(f"callee: {s.cost.pure_reason}")
        chains: list = []
        _attr_chains(_inputs_expr(c), f.self_name, chains)
        self._check_conditions(s, reasons)
        weak: list[str] = []
        self._check_chains(cls, chains, reasons, relies, weak)
        self._check_changed_inside(s, cls, chains, reasons)
        self._check_globals(f, used, reasons)
        self._check_module_inputs(s, reasons)
        self._check_callee_reads(s, reasons)
        self._check_constructed(s, cls, reasons)
        self._check_shared_inputs(s, cls, reasons)
        self._check_object_inputs(s, reasons)
        self._check_callee_state(s, reasons, "computed once at construction, the value would not follow it")
        if self.mutated_at(f, c):
            reasons.append("this use changes the value in place, and every run would now share one object")
        if init.returns:
            # every `return` in a constructor returns None: any of them skips the appended statement
            reasons.append(f"`{init.qualname}` can return early, before the appended statement")
        implicit = implicit_calls(p, self.a.bodies, init)
        via = self._init_reaches(init, f, implicit)
        if via is not None:
            reasons.append(
                f"`{init.qualname}` reaches `{f.name}`{via}, which would read the attribute before it is set"
            )
        else:
            handed = next((c for c in [*init.calls, *implicit] if hands_self(self.p, init, c)), None)
            if handed is not None:
                reasons.append(
                    f"`{init.qualname}` hands the object to `{call_text(handed)}` (line {handed.line}), which "
                    f"cachelint cannot resolve: it may call `{f.name}` before the attribute is set"
                )
        for sub in p.subclasses(cls):
            sc = p.classes.get(sub)
            if sc is not None and "__init__" in sc.methods:
                si = p.functions.get(sc.methods["__init__"])
                if si is not None and not _calls_super_init(si):
                    reasons.append(f"subclass `{sub}` has an `__init__` that does not call `super().__init__()`")
        per_class = names.setdefault(cls, {})
        attr = per_class.get(text)
        if attr is None:
            attr = self._fresh_attr(cls, "_" + _base_name(c), set(per_class.values()))
            per_class[text] = attr
        unassignable = self._unassignable(cls, attr)
        if unassignable is not None:
            reasons.append(unassignable)
        if not reasons:
            reasons.extend(weak[:1])
        target = init.qualname[len(init.module) + 1 :]
        edits = (
            Edit(Span(c.line, c.column, c.end_line, c.end_column), f"{f.self_name}.{attr}"),
            Edit(
                Span(init.line, 0, init.line, 0),
                f"{f.self_name}.{attr} = {text}",
                kind=EditKind.APPEND_TO_FUNCTION,
                target=target,
            ),
        )
        return Fix(
            Applicability.UNSAFE if reasons else Applicability.SAFE,
            edits,
            message=f"Hoist to `__init__`: compute `{f.self_name}.{attr}` once at the end of `{target}` and read it here"
            + (f" (unsafe: {'; '.join(reasons)})" if reasons else ""),
            relies_on=tuple(relies + ["inputs: bound once at construction"]),
        )

    def _check_chains(self, cls: str, chains: list, reasons: list, relies: list, weak: list) -> None:
        """Every ``self.a.b`` input must be bound once at construction and never reassigned."""
        p = self.p
        seen: set = set()
        for chain in chains:
            if not chain or chain in seen:
                continue
            seen.add(chain)
            first = chain[0]
            m = p.lookup_method(cls, first)
            if m is not None:
                deco = [(dotted(d[1] if d[0] == "call" else d) or "").split(".")[-1] for d in m.decorators]
                if "property" in deco:
                    reasons.append(f"`self.{first}` is a property, recomputed on each read")
                elif any(d not in ("staticmethod", "classmethod") for d in deco):
                    # a cached_property (or another descriptor): evaluated at the end of
                    # `__init__`, it reads (and may keep) what the object holds then
                    shown = next(d for d in deco if d not in ("staticmethod", "classmethod"))
                    reasons.append(
                        f"`self.{first}` is made by `@{shown}`: read at the end of `__init__` it would see (and "
                        "may keep) the object's attributes as they are then, not as they are at the first call"
                    )
                continue  # a method: the bound method of this instance
            classes = [cls, *p.subclasses(cls)]
            writers: list = []
            for k in classes:
                for w, a in p.self_attr_writers(k, first):
                    if (w.qualname, a.line) not in [(x.qualname, y.line) for x, y in writers]:
                        writers.append((w, a))
            outside = [(w, a) for w, a in writers if w.name not in CONSTRUCTORS]
            other = self._other_writer(cls, first, writers)
            if outside:
                w, a = outside[0]
                reasons.append(f"`self.{first}` is also assigned in `{w.qualname}` (line {a.line})")
            elif other is not None and other[1]:
                reasons.append(other[0])
            elif other is not None:
                weak.append(other[0])  # named only when nothing surer makes the fix unsafe
            elif not writers:
                if not _class_level(p, cls, first):
                    reasons.append(f"`self.{first}` is not bound in the constructor")
                else:
                    on_class = self._class_object_writer(cls, first)
                    if on_class is not None:
                        reasons.append(on_class)
            else:
                own = set(p.mro(cls))
                mine = [a for w, a in writers if w.class_qualname in own]
                later = [w for w, a in writers if w.class_qualname not in own]
                if len(mine) > 1 or any(a.guard or a.in_loop for a in mine):
                    reasons.append(f"`self.{first}` is bound more than once, or conditionally, at construction")
                if later:
                    reasons.append(
                        f"subclass constructor `{later[0].qualname}` rebinds `self.{first}`, possibly after the hoisted value is computed"
                    )
            for attr in chain[1:]:
                ws = [(w, a) for w, a in p.writers(attr) if w.name not in CONSTRUCTORS]
                if ws:
                    w, a = ws[0]
                    reasons.append(f"`.{attr}` is assigned outside a constructor (`{w.qualname}`, line {a.line})")
                    break
        if chains and not reasons:
            relies.append(
                "inputs: " + ", ".join(f"`self.{'.'.join(ch)}`" for ch in sorted(seen)) + " bound once at construction"
            )

    def _class_object_writer(self, cls: str, attr: str) -> str | None:
        """A write of ``attr`` on a class object of ``cls``'s family
        (``Runner.BLOCK = 32``, ``cls.BLOCK = ...`` in a classmethod,
        ``type(self).BLOCK = ...``, ``setattr(Runner, "BLOCK", v)``, a
        ``setattr`` with a computed name), anywhere: ``self.BLOCK`` reads the
        class attribute, and the hoisted value would not follow the change."""
        p, writes = self.p, self.a.writes
        for w in writes.of(attr):
            target = self._class_object(w)
            if target is None or not (p.is_subclass(cls, target) or p.is_subclass(target, cls)):
                continue
            how = " (a `setattr` with a name computed at run time)" if w.dynamic else ""
            return (
                f"`self.{attr}` reads a class attribute, and `{w.text}` in {w.where} (line {w.line}){how} "
                f"rebinds it on the class `{target.rsplit('.', 1)[-1]}`"
            )
        return None

    def _class_object(self, w) -> str | None:
        """The class of the tree whose class object write ``w`` is made on, if any."""
        p = self.p
        recv = w.receiver
        if recv[0] == "attr" and recv[2] == "__class__":
            recv = ("call", ("name", "type"), (recv[1],), ())
        ctx = p.context(w.function)
        if recv[0] == "call" and recv[1] == ("name", "type") and len(recv[2]) == 1:
            v = p.canon(recv[2][0], ctx)
            t = self.a.writes.type_of(v) if v is not None else None
            return t if t in p.classes else None
        v = p.canon(recv, ctx)
        if v is None or len(v) != 1:
            return None
        if isinstance(v[0], GlobalRoot) and v[0].qualname in p.classes:
            return v[0].qualname
        t = p.cls_param_class(v[0])
        return t if t in p.classes else None

    def _other_writer(self, cls: str, attr: str, seen: list) -> tuple[str, bool] | None:
        """A write of ``attr`` other than ``self.attr`` in the class family
        (``seen``) that may reach an object of ``cls``: through another
        receiver (``runner.n = 5``), or a ``setattr`` (``__dict__`` store)
        whose name is computed at run time. The reason, and whether the
        write surely reaches such an object (a named write on a receiver of
        that type) rather than only may; a sure one first, or None."""
        writes = self.a.writes
        known = {(w.qualname, a.line) for w, a in seen}
        maybe = None
        for w in writes.of(attr):
            if (w.function.qualname, w.line) in known:
                continue
            reach = writes.reaches(w, cls)
            if reach is None:
                continue
            how = " (a `setattr` with a name computed at run time)" if w.dynamic else ""
            why = f": {reach.why}" if reach.why else ""
            reason = f"`{w.text}` in {w.where} (line {w.line}){how} may rebind `self.{attr}`{why}"
            if reach.sure and not w.dynamic:
                return reason, True
            maybe = maybe or (reason, False)
        return maybe

    def _unassignable(self, cls: str, attr: str) -> str | None:
        """Why ``self.<attr> = ...`` at the end of the constructor may fail or
        run other code: every class of the MRO declares ``__slots__`` (no
        instance ``__dict__``), the class is a frozen dataclass or a tuple,
        or a class of the MRO defines ``__setattr__``."""
        p = self.p
        short = cls.rsplit(".", 1)[-1]
        if self.a.writes.is_frozen(cls):
            return f"`{short}` is frozen: assigning `self.{attr}` raises"
        mro = [k for k in p.mro(cls) if k in p.classes]
        for k in mro:
            ci = p.classes[k]
            if "__setattr__" in ci.methods:
                return f"`{k.rsplit('.', 1)[-1]}` defines `__setattr__`, which would run for `self.{attr}`"
            if any((dotted(b) or "").rsplit(".", 1)[-1] in ("NamedTuple", "tuple") for b in ci.bases):
                return f"`{k.rsplit('.', 1)[-1]}` is a tuple: assigning `self.{attr}` raises"
        for k in [*mro, *(x for x in p.subclasses(cls) if x in p.classes)]:
            ci = p.classes[k]
            for m in _COPY_PROTOCOL:
                if m in ci.methods:
                    return (
                        f"`{k.rsplit('.', 1)[-1]}` defines `{m}`: a copy or an unpickled object is built without "
                        f"`__init__`, from the state that method keeps, and may lack `self.{attr}`"
                    )
        # a class without `__slots__` gives its instances a `__dict__`; when every
        # class of the tree in the MRO has them, nothing shows that one exists
        if mro and all(
            "__slots__" in p.classes[k].class_attrs and "__dict__" not in render(p.classes[k].class_attrs["__slots__"])
            for k in mro
        ):
            return f"`{mro[0].rsplit('.', 1)[-1]}` declares `__slots__` without `{attr}`: assigning it raises"
        return None

    def _check_shared_inputs(self, s: Site, cls: str, reasons: list) -> None:
        """An input ``self.a`` (or ``self.a.b``) the callee reads as a whole
        object (an argument, or the receiver of a method cachelint cannot see
        into) bound to a list or dict, or to an object made elsewhere (a
        parameter, another object's attribute) of a type that may change in
        place or that cachelint cannot resolve: whoever else holds a
        reference to that object may change it, and cachelint does not
        follow references. (Objects of classes of the tree are followed:
        their attribute writes count wherever they are.)"""
        p, f, c = self.p, s.function, s.call
        parts = [] if c.is_read else [*c.args, *(v for _kw, v in c.kwargs)]
        if c.func[0] == "attr" and (s.callee is None or p.callee_function(s.callee) is None):
            parts.append(c.func[1])
        for part in parts:
            bits = (dotted(part) or "").split(".")
            if len(bits) < 2 or bits[0] != f.self_name or p.lookup_method(cls, bits[1]) is not None:
                continue
            # the object read whole: ``self.a`` as the constructor binds it, or
            # ``self.a.b`` as any statement of the tree binds a ``.b``
            binds = p.self_attr_writers(cls, bits[1]) if len(bits) == 2 else p.writers(bits[-1])
            for w, a in binds:
                if len(bits) == 2 and w.name not in CONSTRUCTORS:
                    continue  # reported as another writer
                origin = self._shared_origin(w, a.value)
                if origin is not None:
                    reasons.append(
                        f"`{render(part)}` holds {origin}, which code holding the same object may change in place "
                        "(no statement of the tree shows it); computed once at construction, the value would not follow"
                    )
                    return

    def _check_object_inputs(self, s: Site, reasons: list) -> None:
        """An input the callee reads as a whole object of a mutable class of
        the tree (an argument; the receiver of a method): no statement
        anywhere may change what the callee reads of it (any attribute; for
        a method of the tree, those its implementations read) after the
        object is built, on a receiver that may be that object. Computed
        once at construction, the value would not follow such a change.
        The analysis is CL001's for its fill arguments (``content_writers``)."""
        p, f, c = self.p, s.function, s.call
        if c.is_read or c.is_import:
            return
        writes = self.a.writes
        parts: list = [(x, None) for x in (*c.args, *(v for _kw, v in c.kwargs))]
        if c.func[0] == "attr":
            _recv, reads = self._receiver_reads(s)
            g = p.callee_function(s.callee) if s.callee is not None else None
            parts.append((c.func[1], reads if g is not None and g.self_name is not None else None))
        ctx = p.context(f)
        for part, names in parts:
            v = self.a.state.value(f, part) or p.canon(part, ctx)
            if v is None or isinstance(v[0], ConstRoot):
                continue
            t = writes.type_of(v)
            if t is None or t not in p.classes or writes.is_frozen(t):
                continue
            found = content_writers(p, writes, t, names)
            if found:
                w, reach = found[0]
                reasons.append(
                    f"`{render(part)}` is a `{t.rsplit('.', 1)[-1]}` whose attributes the callee reads, and one "
                    f"is changed {writer_text(w, reach, writes)} after construction; computed once at "
                    "construction, the value would not follow"
                )
                return

    def _shared_origin(self, init: FunctionInfo, e) -> str | None:
        """What the object ``e`` (bound in ``init``) is, when it may be shared
        and changed in place through another reference; None when it is
        fresh, a constant, of an immutable type, or of a class of the tree
        (whose attribute writes are followed wherever they are)."""
        p = self.p
        if _builtin_container(e):
            if e[0] in ("list", "dict") or (e[0] == "call" and e[1] in _MUTABLE_BUILDERS):
                # fresh, but whoever reads the attribute gets the same object
                # and may keep it; cachelint does not follow such references
                return f"a `{e[0] if e[0] != 'call' else e[1][1]}`"
            return None
        if e[0] == "call":
            callee = p.canon(e[1], p.context(init))
            if callee is not None and len(callee) == 1 and isinstance(callee[0], GlobalRoot):
                if callee[0].qualname in p.classes:
                    return None  # a new object of a class of the tree
        short = init.qualname[len(init.module) + 1 :]
        param = next((q for q in init.params if e == ("name", q.name)), None)
        if param is not None and e[1] not in p.context(init).locals:
            if _annotation_ok(param.annotation, _IMMUTABLE):
                return None
            t = p.resolve_annotation(param.annotation, init.module) if param.annotation is not None else None
            if t is not None and t in p.classes:
                return None
            kind = f"a `{render(param.annotation)}`" if param.annotation is not None else "not annotated"
            return f"the object passed as parameter `{param.name}` of `{short}` ({kind})"
        v = p.canon(e, p.context(init))
        if v is not None and len(v) == 1 and isinstance(v[0], ConstRoot):
            return None
        t = p.type_of(v) if v is not None else None
        if t is not None and t in p.classes:
            return None
        return f"`{render(e)}`, an object `{short}` did not make, of a type cachelint cannot show immutable"

    def _check_conditions(self, s: Site, reasons: list) -> None:
        """The call runs only under conditions of its function (an ``if``
        branch, past an early return, the right of ``and``, a ``try`` whose
        handler catches its errors): at the end of ``__init__`` it would run
        for every object, unconditionally (and raise where it did not run)."""
        f, c = s.function, s.call
        if s.cost.pure and s.cost.total:
            return  # a pure call that never raises may run where it did not
        # a body proven total still reads what the conditions check (`x is not None and f(x)`)
        raises = self._may_raise(s)
        if raises is not None:
            reasons.append(
                f"`{self._shown(s)}` may raise ({raises}), and `__init__` would raise where `{f.name}` did "
                "(or where it never ran)"
            )
        body = self.a.bodies.body(f)
        node = body.find(c.line, c.column, c.end_line, c.end_column) if body is not None else None
        if node is None:
            if c.guard:
                shown = " and ".join(render(g) if pos else f"not ({render(g)})" for g, pos in c.guard)
                reasons.append(
                    f"in `{f.name}` the call runs only when `{shown}`; at the end of `__init__` it would run for every object, unconditionally"
                )
            return
        conds = body.conditions(node)
        if conds:
            reasons.append(
                f"in `{f.name}` the call runs "
                + "; and ".join(x.describe() for x in conds)
                + "; at the end of `__init__` it would run for every object, unconditionally"
            )

    def _may_raise(self, s: Site) -> str | None:
        """Why the call may raise, or None when it is proven not to: the
        catalog declares it ``total``, or its body in the tree is total
        (:mod:`cachelint.facts.totality`)."""
        if s.cost.total:
            return None
        fn = self.p.callee_function(s.callee) if s.callee is not None else None
        names = self.p.callee_names(s.callee, dotted(s.call.func))
        return self.totality.call_may_raise(names, fn)

    def _shown(self, s: Site) -> str:
        d = dotted(s.call.func) or "..."
        return d if s.call.is_read else f"{d}(...)"

    def _check_changed_inside(self, s: Site, cls: str, chains: list, reasons: list) -> None:
        """An input ``self.a`` (or ``self.a.b``) whose object some code outside
        a constructor changes in place (``self.a.append(...)``, ``self.a[k] = v``,
        ``self.a.n = v``): no statement rebinds the attribute, yet its value
        changes, and the hoisted value would not follow."""
        f = s.function
        p = self.p
        state = self.a.state
        seen: set = set()
        # the receiver of a method or property of the tree: only the attributes
        # its body reads of that object are inputs (``_check_callee_reads``)
        receiver, reads = self._receiver_reads(s)
        for chain in chains:
            for i in range(1, len(chain) + 1):
                attr = chain[i - 1]
                if attr in seen or p.lookup_method(cls, attr) is not None:
                    continue
                seen.add(attr)
                want = p.type_of(self.a.state.value(f, _chain_to_expr(f.self_name, chain[:i])))
                for ch in state.changed_inside(attr):
                    if ch.function.name in CONSTRUCTORS:
                        continue
                    if chain[:i] == receiver and ch.below and ch.below[0] not in reads:
                        continue  # an attribute the callee does not read
                    if (
                        want is not None
                        and ch.type is not None
                        and not (p.is_subclass(want, ch.type) or p.is_subclass(ch.type, want))
                    ):
                        continue  # another kind of object's attribute of that name
                    reasons.append(
                        f"`{ch.text}` in `{ch.function.qualname}` (line {ch.line}) changes `self.{'.'.join(chain[:i])}` in place"
                        + (", in the loop that makes the call" if ch.function is f and ch.in_loop else "")
                    )
                    return

    def _receiver_reads(self, s: Site) -> tuple[tuple | None, set]:
        """``self.a.b`` as ``("a", "b")`` when the site calls (or reads) a method
        (or property) of the tree on it, with what its implementations read of it."""
        f, c = s.function, s.call
        recv = c.func[1] if c.func[0] == "attr" else None
        d = dotted(recv) if recv is not None else None
        if d is None or not d.startswith(f"{f.self_name}."):
            return None, set()
        g = self.p.callee_function(s.callee) if s.callee is not None else None
        if g is None or g.self_name is None:
            return None, set()
        reads: set = set()
        for impl in self.a.cost.implementations(g):
            reads |= self._self_reads(impl)
        return tuple(d.split(".")[1:]), reads

    def _check_module_inputs(self, s: Site, reasons: list) -> None:
        """An argument that is module state (a module variable, a module-level
        object's attribute, a class attribute) which code of the tree changes."""
        f, c = s.function, s.call
        if c.is_read:
            return
        state = self.a.state
        for part in (*c.args, *(v for _kw, v in c.kwargs)):
            d = dotted(part)
            if d is None or d.split(".")[0] == f.self_name:
                continue
            v = state.value(f, part)
            if v is None or not isinstance(v[0], GlobalRoot) or not state.is_state(v):
                continue
            ch = state.changes(v, tuple(d.split(".")))
            if ch:
                reasons.append(
                    f"argument `{d}` is module state that `{ch[0].where}` changes (line {ch[0].line}: `{ch[0].text}`)"
                )
                return

    def _check_callee_state(self, s: Site, reasons: list, consequence: str) -> None:
        """The callee (a function of the tree) reads module state that other
        code changes, or the environment: its value depends on when it runs."""
        g = self.p.callee_function(s.callee) if s.callee is not None else None
        if g is None:
            return
        dep = self.a.state.dependence(g)
        if dep is not None:
            reasons.append(f"{dep.reason}; {consequence}")

    def _check_constructed(self, s: Site, cls: str, reasons: list) -> None:
        """A method (or property) of the object itself, called at the end of
        the base ``__init__``: every implementation a subclass object
        dispatches to must find the attributes it reads assigned by then.
        Not so when a subclass constructor assigns one after calling
        ``super().__init__()`` (the override reads it too early, or the base
        getter reads the value the subclass then replaces), or when the
        constructor assigns it only under a condition."""
        p = self.p
        f, c = s.function, s.call
        recv = c.func[1] if c.func[0] == "attr" else None
        if recv != ("name", f.self_name):
            return
        g = p.callee_function(s.callee) if s.callee is not None else None
        if g is None or g.self_name is None:
            return
        for k in [cls, *p.subclasses(cls)]:
            impl = p.lookup_method(k, g.name)
            if impl is None:
                continue
            late = self._assigned_after_super(k, cls)
            reads = sorted(self._self_reads(impl))
            for attr in reads:
                if attr in late:
                    init_qn, line = late[attr]
                    if impl.class_qualname == cls:
                        reasons.append(
                            f"`{impl.qualname}` reads `self.{attr}`, which subclass constructor `{init_qn}` assigns "
                            f"after `super().__init__()` (line {line}): the hoisted value would hold the base class's `{attr}`"
                        )
                    else:
                        reasons.append(
                            f"override `{impl.qualname}` reads `self.{attr}`, which `{init_qn}` assigns only after "
                            f"`super().__init__()` (line {line}): at the end of `{cls.rsplit('.', 1)[-1]}.__init__` it is not set yet"
                        )
                    return
            for attr in reads:
                ws = [(w, a) for w, a in p.self_attr_writers(k, attr) if w.name in CONSTRUCTORS]
                if ws and all(a.guard or a.in_loop for _w, a in ws):
                    w, a = ws[0]
                    why = (
                        " and ".join(render(g0) if pos else f"not ({render(g0)})" for g0, pos in a.guard)
                        if a.guard
                        else "a loop runs"
                    )
                    reasons.append(
                        f"`{impl.qualname}` reads `self.{attr}`, which `{w.qualname}` assigns only when `{why}` "
                        f"(line {a.line}): at the end of `__init__` it may not exist"
                    )
                    return

    def _assigned_after_super(self, k: str, cls: str) -> dict:
        """Attributes the constructors of ``k`` and of its bases below ``cls``
        assign after their ``super().__init__()`` call: attr -> (constructor, line)."""
        p = self.p
        out: dict = {}
        for x in p.mro(k):
            if x == cls:
                break
            ci = p.classes.get(x)
            init = p.functions.get(ci.methods["__init__"]) if ci is not None and "__init__" in ci.methods else None
            if init is None or init.self_name is None:
                continue
            supers = [c.line for c in init.calls if c.func[0] == "attr" and c.func[2] == "__init__"]
            if not supers:
                continue
            me = ("name", init.self_name)
            for a in init.assigns:
                if a.target[0] == "attr" and a.target[1] == me and a.line > supers[0]:
                    out.setdefault(a.target[2], (init.qualname, a.line))
        return out

    def _self_reads(
        self, g: FunctionInfo, depth: int = 0, seen: set | None = None, name: str | None = None, cls: str | None = None
    ) -> set:
        """The attributes of its own object that method ``g`` reads, following
        the methods and properties of that object it calls or reads in turn,
        and the functions of the tree it passes the object to (``helper(self)``).
        ``name`` and ``cls``: the parameter of ``g`` holding the object, and
        the object's class, when ``g`` is such a function."""
        p = self.p
        seen = set() if seen is None else seen
        me = name or g.self_name
        cls = cls or g.class_qualname
        if me is None or (g.qualname, me) in seen:
            return set()
        seen.add((g.qualname, me))
        chains: list = []
        passed: list = []
        for c in g.calls:
            _attr_chains(_call_expr(c), me, chains)
            if ("name", me) in c.args:
                passed.append(c)
        for r in g.returns:
            _attr_chains(r, me, chains)
        for a in g.assigns:
            _attr_chains(a.value, me, chains)
        body = self.a.bodies.body(g)
        if body is not None:  # reads in conditions and operators too, which the index does not keep
            chains.extend(parts[1:] for parts, _line in body.reads_of(me))
        out: set = set()
        for attr in dict.fromkeys(ch[0] for ch in chains if ch):
            m = p.lookup_method(cls, attr) if cls else None
            if m is None:
                out.add(attr)
            elif depth < 3 and not p.is_cached(m):
                out |= self._self_reads(m, depth + 1, seen)
        for c in passed if depth < 3 else ():
            callee = p.call_callee(g, c)
            h = p.callee_function(callee) if callee is not None else None
            if h is None or p.is_cached(h):
                continue
            params = [q.name for q in h.params if q.kind == "pos"]
            if h.self_name is not None and c.func[0] == "attr":
                params = params[1:]
            for q, a in zip(params, c.args):
                if a == ("name", me):
                    out |= self._self_reads(h, depth + 1, seen, name=q, cls=cls)
        return out

    def _check_callee_reads(self, s: Site, reasons: list) -> None:
        """An in-tree method's (or property getter's) own inputs: the attributes
        of its object it reads, through the methods and properties it uses."""
        p = self.p
        g = p.callee_function(s.callee) if s.callee is not None else None
        if g is None or g.self_name is None:
            return
        for impl in self.a.cost.implementations(g):
            for attr in sorted(self._self_reads(impl)):
                ws = [(w, a) for w, a in p.writers(attr) if w.name not in CONSTRUCTORS]
                if ws:
                    w, a = ws[0]
                    reasons.append(
                        f"`{impl.qualname}` reads `.{attr}`, which `{w.qualname}` assigns (line {a.line}), "
                        "outside a constructor: at the end of `__init__` it may not be set yet, and later it may change"
                    )
                    return

    def _check_globals(self, f: FunctionInfo, used: list, reasons: list) -> None:
        p = self.p
        fi = p.modules_by_path.get(f.path)
        if fi is None:
            return
        for n in dict.fromkeys(used):
            if n in fi.globals and fi.globals[n] is None and n not in fi.defs:
                reasons.append(f"module variable `{n}` is rebound")
            elif n in fi.globals and n not in fi.defs:
                for g in p.functions.values():
                    if (
                        g.module == fi.module
                        and n in g.global_names
                        and any(a.target == ("name", n) for a in g.assigns)
                    ):
                        reasons.append(f"module variable `{n}` is assigned in `{g.qualname}`")
                        break

    def _init_reaches(self, init: FunctionInfo, f: FunctionInfo, implicit: list) -> str | None:
        """Whether the constructor (its calls, and the code it runs
        implicitly: ``f"{self}"``'s ``__str__``, a property getter, ``__new__``)
        reaches ``f``: None if not, else how (`` (through `format(self)`,
        line 8)`` for an implicit start, else empty)."""
        p = self.p
        seen = {init.qualname}
        queue: deque = deque()
        for c in implicit:
            if c.target is not None and c.target.qualname not in seen:
                how = f" (through `{c.text}`, line {c.line})"
                if c.target.qualname == f.qualname:
                    return how
                seen.add(c.target.qualname)
                queue.append((c.target, how))
        queue.appendleft((init, ""))
        while queue:
            g, how = queue.popleft()
            for call in g.calls:
                t = resolve_call(p, g, call)
                if t is None:
                    continue
                if t.qualname == f.qualname or (t.name == f.name and t.class_qualname is not None):
                    return how
                if t.qualname not in seen and t.class_qualname is not None and len(seen) < 200:
                    seen.add(t.qualname)
                    queue.append((t, how))
        return None

    def _fresh_attr(self, cls: str, base: str, taken: set) -> str:
        p = self.p
        classes = [*p.mro(cls), *p.subclasses(cls)]

        def used(name: str) -> bool:
            if name in taken:
                return True
            for k in classes:
                ci = p.classes.get(k)
                if ci is not None and (name in ci.methods or name in ci.class_attrs or name in ci.fields):
                    return True
                if p.self_attr_writers(k, name):
                    return True
            return False

        name, i = base, 2
        while used(name):
            name, i = f"{base}_{i}", i + 1
        return name
