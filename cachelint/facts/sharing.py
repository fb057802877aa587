"""Objects a cache site's value lives in or was computed from that something
else may share (:class:`SharedObjects`, a mixin of
:class:`~cachelint.facts.hazards.Hazards`): a holder two objects share (a
``dataclasses.replace`` copy of the anchor, a construction handed a holder
made elsewhere, a class attribute, a dataclass field's default, a parameter's
default value, a module global), and a mutable argument object the holder did
not make, which any other reference to it may change in place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..index.expr import dotted, render
from ..index.scans import scan_hits
from ..semantic.program import CONSTRUCTORS, Value
from ..semantic.values import ConstRoot, GlobalRoot, KwArg, ParamRoot, SelfRoot
from .hazardtext import _short, render_arg

if TYPE_CHECKING:
    from ..semantic.program import Program
    from ..semantic.writes import Writes
    from .results import ResultKinds


# calls that return a new container each time: what they build is the caller's own
FRESH_BUILDERS = frozenset(
    "builtins." + n for n in ("list", "dict", "set", "bytearray", "sorted", "frozenset", "tuple")
) | frozenset(
    {
        "copy.copy",
        "copy.deepcopy",
        "collections.deque",
        "collections.OrderedDict",
        "collections.defaultdict",
        "collections.Counter",
    }
)


class SharedObjects:
    """Holders and argument objects shared with other code (a mixin: ``self``
    is the :class:`~cachelint.facts.hazards.Hazards`)."""

    if TYPE_CHECKING:  # what Hazards provides (checked against it by mypy)
        p: Program
        writes: Writes
        results: ResultKinds

    def _passed_holders(self, site) -> list:
        """Constructions of the anchor's class that hand it a holder made
        elsewhere (``EngineConfig(m, limits=shared)``): two objects built that
        way share it, and each one's fill overwrites the other's."""
        p = self.p
        anchor_type = site.anchor_type
        holder = site.target[1]
        if anchor_type is None or not isinstance(holder, str):
            return []
        classes = [anchor_type, *p.subclasses(anchor_type)]
        keys = {c.rsplit(".", 1)[-1] for c in classes}
        candidates = list(scan_hits(p.functions, p.indexes, lambda scans: _positions(scans, keys)))
        for m in self.writes.module_functions().values():
            candidates += [(m, c) for c in m.calls if c.func[-1] in keys]
        out = []
        for g, c in candidates:
            ctx = p.context(g)
            callee = p.canon(c.func, ctx)
            if callee is None or len(callee) != 1 or not isinstance(callee[0], GlobalRoot):
                continue
            cls = callee[0].qualname
            if cls not in classes:
                continue
            passed: tuple | None = None
            for k, v in c.kwargs:
                if k is None:
                    passed = ("**", v)  # **kwargs: may hold it
                elif k == holder:
                    passed = (k, v)
            index = self._holder_position(cls, holder)
            if passed is None and index is not None and len(c.args) > index:
                passed = (None, c.args[index])
            if passed is None:
                continue
            e = passed[1]
            if passed[0] != "**" and e[0] == "call":
                made = p.canon(e[1], ctx)
                if made is not None and len(made) == 1 and isinstance(made[0], GlobalRoot):
                    if made[0].qualname in p.classes:
                        continue  # `limits=Limits()`: a fresh object made for this construction alone
            out.append((g, c, passed[0]))
        return out

    def _shared_arguments(self, site) -> list:
        """The fill's argument objects (and the object the callee is a method
        of) that may be changed in place through a reference cachelint does
        not follow: a mutable value the object did not make itself."""
        values = [(a.value if isinstance(a, KwArg) else a, "argument") for a in site.args]
        if len(site.callee) > 1:
            values.append((site.callee[:-1], "bound"))
        out = []
        for v, role in values:
            got = self._shared_object(site, v) if v is not None else None
            if got is not None:
                path = tuple(v[1:]) if v[0] == site.anchor else None
                out.append((role, path, render_arg(site, v), *got))
        return out

    def _shared_object(self, site, v: Value) -> tuple | None:
        """(what it is, where it came from) when the object ``v`` denotes is
        mutable (a list, dict or set, a frozen class with such a field, a type
        cachelint cannot show immutable) and came from outside the object
        holding it: a constructor's parameter, a dataclass field, a class
        attribute, a module global, something else's attribute. Whoever else
        holds it, outside the analysed files too, may change it in place.
        None when it is immutable, new (built by the constructor that stores
        it), or of a class of the tree that can be assigned (whose attribute
        writes :meth:`_contents` follows wherever they are)."""
        p = self.p
        root = v[0]
        if not isinstance(root, (SelfRoot, ParamRoot, GlobalRoot)) or not all(isinstance(a, str) for a in v[1:]):
            return None
        glob = None  # (module index, name) of a module global read whole
        if isinstance(root, GlobalRoot):
            if not p.is_module_level_variable(root.qualname):
                return None  # a module, class or function; a name of code outside the tree
            if len(v) == 1:
                mod, _, name = root.qualname.rpartition(".")
                glob = (p.modules[mod], name)
        elif len(v) == 1:
            return None  # the anchor: its attributes are followed
        owner = self.writes.type_of(v[:-1]) if len(v) > 1 else None
        declared: tuple | None = None  # (annotation, module)
        if glob is not None and glob[1] in glob[0].global_annotations:
            declared = (glob[0].global_annotations[glob[1]], glob[0].module)
        elif owner is not None:
            declared = self._declared(owner, v[-1])
        t = self.writes.type_of(v)
        if t is not None and t in p.classes:
            kind, what = self.results.class_kind(t)
            if kind == "immutable" or self.results.assignable(t):
                return None  # an assignable class's attribute writes are followed (`_contents`)
            what = f"a `{what}`"
        elif declared is not None:
            if self.results.annotation_kind(*declared)[0] == "immutable":
                return None
            what = f"a `{render(declared[0])}`"
        else:
            what = "a value cachelint cannot show immutable"
        if glob is not None:
            e = glob[0].globals.get(glob[1])
            if e is not None and e[0] in ("const", "tuple"):
                return None
            return what, f"the module global `{glob[0].module}.{glob[1]}`"
        if owner is None or owner not in p.classes:
            return what, f"an attribute of `{render_arg(site, v[:-1])}`, an object whose type cachelint does not know"
        origin = self._attr_origin(owner, v[-1])
        return (what, origin) if origin is not None else None

    def _declared(self, owner: str, attr: str) -> tuple | None:
        """(annotation, module) a class of the tree declares ``attr`` with: at
        class level, else that of the parameter its constructor stores in it."""
        p = self.p
        for qn in p.mro(owner):
            c = p.classes.get(qn)
            if c is not None and attr in c.fields:
                return c.fields[attr], c.module
        for f, a in self._constructor_binds(owner, attr)[0]:
            e = a.value
            prm = next((q for q in f.params if e == ("name", q.name)), None) if e is not None else None
            if prm is not None and prm.annotation is not None:
                return prm.annotation, f.module
        return None

    def _constructor_binds(self, owner: str, attr: str) -> tuple[list, bool]:
        """The constructors' ``self.attr = e`` of ``owner`` (and its bases),
        and whether one of them runs for every object (not under a condition
        or in a loop)."""
        binds = [
            (f, a)
            for f, a in self.p.self_attr_writers(owner, attr)
            if f.name in CONSTRUCTORS and a.kind in ("assign", "annassign")
        ]
        return binds, any(not a.guard and not a.in_loop for _f, a in binds)

    def _attr_origin(self, owner: str, attr: str) -> str | None:
        """Where the object an instance of ``owner`` holds in ``attr`` came
        from, when not made by its constructor nor immutable."""
        p = self.p
        short = owner.rsplit(".", 1)[-1]
        binds, always = self._constructor_binds(owner, attr)
        for f, a in binds:
            why = self._bound_elsewhere(f, a)
            if why is not None:
                return why
        if always:
            return None
        for qn in p.mro(owner):
            c = p.classes.get(qn)
            if c is None or (attr not in c.fields and attr not in c.class_attrs):
                continue
            val = c.class_attrs.get(attr)
            if p.is_dataclass(qn) and attr in c.fields:
                if not (val is not None and _field_call(val) and _keyword(val, "init") == ("const", False)):
                    return f"the dataclass field `{c.name}.{attr}`, which its constructor takes from the caller"
                factory = _keyword(val, "default_factory")
                if factory is not None and self._fresh_factory(c.module, factory):
                    return None
                val = _keyword(val, "default")
            if val is None:
                continue  # only annotated here
            if val[0] in ("const", "tuple"):
                return None
            return f"the class attribute `{c.name}.{attr}` (`{_short(render(val))}`), one object every instance shares"
        if binds:
            return None
        return f"`{short}.{attr}`, which no constructor of `{short}` binds"

    def _bound_elsewhere(self, f, a) -> str | None:
        """Why the object constructor ``f`` stores with ``a`` (``self.x = e``)
        may be one it did not make: a parameter, a global, another object's
        attribute, the result of a call cachelint cannot see into. None for
        a new object (a literal, a comprehension, a container built by a
        builtin, an instance of a class of the tree) or an immutable value."""
        p = self.p
        e = a.value
        where = f.qualname[len(f.module) + 1 :] if f.module else f.qualname
        if a.elements is not None or e is None:
            return None if a.elements is not None else f"`{render(a.target)} = ...` in `{where}`"
        if e[0] in ("list", "dict", "const", "tuple"):
            return None
        ctx = p.context(f)
        if e[0] == "name" and e[1] in ctx.params and e[1] not in ctx.locals:
            prm = ctx.params[e[1]]
            if prm.annotation is not None:
                if self.results.annotation_kind(prm.annotation, f.module)[0] == "immutable":
                    return None
                t = p.resolve_annotation(prm.annotation, f.module)
                if t is not None and t in p.classes and self.results.assignable(t):
                    return None  # a class of the tree: its attribute writes are followed
            kind = "" if prm.annotation is not None else ", not annotated"
            return f"the object passed as parameter `{prm.name}` of `{where}`{kind}"
        if e[0] == "call":
            callee = p.canon(e[1], ctx)
            if callee is not None and len(callee) == 1 and isinstance(callee[0], GlobalRoot):
                qn = callee[0].qualname
                if qn in p.classes or qn in FRESH_BUILDERS:
                    return None
        v = p.canon(e, ctx)
        if v is not None and isinstance(v[0], ConstRoot):
            return None
        t = self.writes.type_of(v) if v is not None else None
        if t is not None and t in p.classes and self.results.class_kind(t)[0] == "immutable":
            return None
        return f"`{_short(render(a.target) + ' = ' + render(e), 90)}` in `{where}`, an object it did not make"

    def _fresh_factory(self, module: str, factory) -> bool:
        """A dataclass ``default_factory`` that makes a new object each call:
        a class, a builtin container, a lambda returning one."""
        p = self.p
        fi = p.modules.get(module)
        if factory[0] == "def":
            g = p.functions.get(factory[1])
            if g is None or not g.returns:
                return False
            ctx = p.context(g)
            for r in g.returns:
                if r[0] in ("list", "dict", "const", "tuple"):
                    continue
                callee = p.canon(r[1], ctx) if r[0] == "call" else None
                if callee is None or len(callee) != 1 or not isinstance(callee[0], GlobalRoot):
                    return False
                if callee[0].qualname not in p.classes and callee[0].qualname not in FRESH_BUILDERS:
                    return False
            return True
        qn = p.annotation_name(factory, module) if fi is not None else None
        return qn is not None and (qn in p.classes or qn in FRESH_BUILDERS)

    def _shared_holders(self, site) -> list:
        """Holders on the cached attribute's path (``self.limits`` in
        ``self.limits.encoder_len``) that may be one object several
        instances share: a class attribute, a dataclass field's default
        value (or a ``default_factory`` that does not make a new one), a
        parameter's default value, a module global. Each instance's fill
        writes into it, overwriting the others'."""
        p = self.p
        target = site.target
        out = []
        for i in range(1, len(target) - 1):
            attr = target[i]
            owner = self.writes.type_of(target[:i])
            if not isinstance(attr, str) or owner is None or owner not in p.classes:
                continue
            why = self._holder_origin(owner, attr)
            if why is not None:
                out.append((tuple(target[1 : i + 1]), why))
        return out

    def _holder_origin(self, owner: str, attr: str) -> str | None:
        p = self.p
        binds, always = self._constructor_binds(owner, attr)
        for f, a in binds:
            where = f.qualname[len(f.module) + 1 :] if f.module else f.qualname
            ctx = p.context(f)
            e = a.value
            for x in e[1] if e is not None and e[0] == "or" else (e,):
                if x is None:
                    continue
                if x[0] == "name" and x[1] in ctx.params and x[1] not in ctx.locals:
                    d = ctx.params[x[1]].default
                    if d is not None and d[0] != "const":
                        return (
                            f"the default value of parameter `{x[1]}` of `{where}` (`{_short(render(d))}`), "
                            "made once when the function was defined and shared by every call that omits it"
                        )
                    continue
                v = p.canon(x, ctx)
                if v is not None and isinstance(v[0], GlobalRoot) and all(isinstance(k, str) for k in v[1:]):
                    qn = v[0].qualname
                    if p.is_module_level_variable(qn) or (qn in p.classes and len(v) > 1):
                        return f"`{_short(render(x))}` (in `{where}`, line {a.line}), one object every instance shares"
        if always:
            return None
        for qn in p.mro(owner):
            c = p.classes.get(qn)
            if c is None or attr not in c.class_attrs:
                continue
            val = c.class_attrs[attr]
            shown = f"`{c.name}.{attr} = {_short(render(val))}`"
            if p.is_dataclass(qn) and attr in c.fields:
                if _field_call(val):
                    factory = _keyword(val, "default_factory")
                    if factory is not None:
                        if self._fresh_factory(c.module, factory):
                            return None
                        return (
                            f"the dataclass field {shown}, whose `default_factory` may return the same object each time"
                        )
                    val = _keyword(val, "default")
                    if val is None:
                        return None
                if val[0] == "const":
                    return None
                return (
                    f"the dataclass field default {shown}: one object, made when the class was defined, "
                    f"that every instance built without a `{attr}` shares"
                )
            if val[0] == "const":
                return None
            return f"the class attribute {shown}, one object every instance shares unless it assigns its own"
        return None

    def _holder_position(self, cls: str, attr: str) -> int | None:
        """The positional index (after ``self``) a constructor takes ``attr`` at."""
        p = self.p
        init = p.lookup_method(cls, "__init__")
        if init is not None:
            for a in init.assigns:
                if a.target == ("attr", ("name", init.self_name), attr) and a.value and a.value[0] == "name":
                    names = [prm.name for prm in init.params if prm.kind == "pos"]
                    if a.value[1] in names:
                        return names.index(a.value[1]) - 1
            return None
        fields: list = []
        for qn in reversed(p.mro(cls)):
            c = p.classes.get(qn)
            if c is None or not p.is_dataclass(qn):
                continue
            for name in c.fields:
                if name not in fields:
                    fields.append(name)
        return fields.index(attr) if attr in fields else None

    def _replacements(self, site) -> list:
        """``dataclasses.replace(x, ...)`` of an object that may be the anchor:
        the copy is built by the constructor again and shares the holder."""
        p = self.p
        anchor_type = site.anchor_type
        if anchor_type is None or not p.is_dataclass(anchor_type):
            return []
        out = []
        candidates = list(scan_hits(p.functions, p.indexes, lambda scans: list(scans[1].get("replace", ()))))
        for m in self.writes.module_functions().values():
            candidates += [(m, c) for c in m.calls if c.func[-1] == "replace" or c.func == ("name", "replace")]
        for g, c in candidates:
            callee = p.canon(c.func, p.context(g))
            if callee is None or callee != (GlobalRoot("dataclasses.replace"),) or not c.args:
                continue
            types = self.writes.possible_types(p.canon(c.args[0], p.context(g)))
            if types is None:
                out.append((g, c, False))
            elif any(self.writes.related(t, anchor_type) for t in types):
                out.append((g, c, True))
        out.sort(key=lambda x: not x[2])  # those known to copy the anchor first
        return out


def _field_call(e) -> bool:
    """``field(...)``, ``dataclasses.field(...)``, ``attrs.field(...)``."""
    return e[0] == "call" and (dotted(e[1]) or "").rsplit(".", 1)[-1] == "field"


def _keyword(call, name: str):
    return next((v for k, v in call[3] if k == name), None)


def _positions(scans: tuple, keys: set) -> list:
    pairs: set = set()
    for k in keys & scans[1].keys():
        at = scans[1][k]
        pairs.update(zip(at[::2], at[1::2]))
    return [x for pair in sorted(pairs) for x in pair]
