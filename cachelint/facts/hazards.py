"""Stage 4a: what a cache site's value depends on, and what may change it.

A CL001 rewrite replaces ``callee(args)`` with a read of the attribute a fill
stored from the same call. The read equals the call only if the fill ran and,
between the fill and the read, nothing changed

* the attribute itself: another writer, however spelled (an assignment in a
  function or in module code, ``setattr`` with a literal or computed name,
  ``__dict__``/``vars()`` stores, ``object.__setattr__``, an in-place change
  such as ``.append``), on a receiver that may be the holder (its type is
  related, or unknown: see :mod:`cachelint.semantic.writes`);
* the holder on the attribute's path (``self.limits`` in
  ``self.limits.encoder_len``): rebinding it replaces the filled object;
* the fill's arguments: the attributes on their path from the anchor
  (``self.model``), and, for an argument object of a class of the tree that is
  not immutable, any attribute of that object; the object the callee is a
  method of counts as an argument. An argument object that is mutable (a
  ``list``, a frozen class holding one, a type cachelint cannot show
  immutable) and that the object did not make (a parameter, a dataclass
  field, a class attribute, a module global) may be changed in place through
  any other reference to it, which cachelint does not follow;
* the state the fill's guard reads, inside calls and conditions cachelint
  cannot evaluate too: flipping ``is_encoder_decoder`` after construction
  makes a reader take a branch whose fill never ran. Outside the object
  (a module variable, a class attribute read through the class, the
  environment) it is :mod:`.guardstate`'s.

A write to a class object (``Config.flag = v``, ``cls.flag = v``,
``type(self).flag = v``) changes what an instance without its own attribute
of that name reads: it counts for a holder, an argument or a guard unless
every construction gives the instance its own (a dataclass field, an
unconditional ``self.flag = ...`` in a constructor); never for the cached
attribute, which the fill gives the instance.

A dependency that is a property or other method runs code on each read, with
inputs this module does not follow. Writes made while the object is being
built do not count when they come first: in the fill's own constructor
before the fill, in a base class's constructor, in a subclass's constructor
before its ``super()`` call, and in the constructor of another object on the
path (``Limits.__init__``).

The fill did not run, or not for every object: in a subclass whose
constructor does not call the one that fills (or a dataclass subclass whose
generated ``__init__`` replaces it); in ``__post_init__`` of a class that is
not a dataclass; in a loop, an ``except`` handler, a ``try`` whose ``except``
goes on, or a ``with suppress(...)``; and for a read a call made during
construction, before the fill, reaches. A holder two objects share gets each
one's fill: ``dataclasses.replace`` of the anchor runs its constructor again
on a shallow copy, a construction handed a holder made elsewhere shares
it, and so does every instance of a holder bound to a class attribute, a
dataclass field's default, a parameter's default value or a module global. A callee that returns a mutable object (or one whose type is not known)
hands each caller a fresh object; the attribute is one shared object.

:class:`SiteHazards` holds these facts for one cache site, computed once by
:class:`Hazards`, whose mixins answer one question each: what runs before the
fill (:mod:`.construction`), objects made without it (:mod:`.bypass`), fills
that may be skipped (:mod:`.fillskips`), reads that run code
(:mod:`.attraccess`), holders and argument objects other code may share
(:mod:`.sharing`). The messages are spelled at each reader (``config.model``,
not ``self.model``) by :mod:`cachelint.facts.cachesites`, with the helpers of
:mod:`.hazardtext`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..index.expr import dotted, subexpressions
from ..semantic.program import CONSTRUCTORS, Program, Value
from ..semantic.values import CallRoot, CmpKey, ConstRoot, IsNoneKey, KwArg, OpaqueKey, SelfRoot, TruthyKey
from ..semantic.writes import IN_PLACE_METHODS, AttrWrite, Reach, Writes
from .attraccess import AttributeAccess
from .bodies import Bodies
from .bypass import Bypasses
from .construction import ConstructionOrder, super_calls
from .cost import CostModel
from .fillskips import FillSkips
from .guardstate import GuardState
from .hazardtext import render_arg
from .results import ResultKinds
from .sharing import SharedObjects
from .state import ProcessState
from .totality import Totality

# methods that change a list, dict or set in place (`ids.append(x)`)
MUTATING_METHODS = IN_PLACE_METHODS


@dataclass
class Dependency:
    """An attribute the invariant depends on, as a path from the anchor."""

    path: tuple  # ("model",), ("spec", "is_encoder_decoder"), ("limits",)
    owner: str | None  # the class of the object the last attribute is on
    role: str  # "attribute" (the cached one), "holder", "argument", "guard", "callee"
    writers: list = field(default_factory=list)  # [(AttrWrite, why)]


@dataclass
class Contents:
    """An argument object the callee reads: any attribute of it."""

    path: tuple | None  # from the anchor; None when the argument is not reached from it
    text: str  # the argument as the fill spells it
    cls: str
    role: str = "argument"  # or "bound": the object the callee is a method of
    writers: list = field(default_factory=list)  # [(AttrWrite, why)]


@dataclass
class SiteHazards:
    """The facts of :mod:`cachelint.facts.hazards` for one cache site."""

    dependencies: list = field(default_factory=list)  # Dependency, with writers
    contents: list = field(default_factory=list)  # Contents, with writers
    skips_fill: list = field(default_factory=list)  # (class, text): objects of class made without the fill
    shared_holder: list = field(default_factory=list)  # (function, call, sure) of dataclasses.replace
    result: tuple = ("immutable", "")  # ("immutable"|"mutable"|"unknown", type text)
    # a writer of the cached attribute right after the fill: the attribute is
    # not the call's value, so there is no finding at all
    overwritten: bool = False
    pre_fill_calls: list = field(default_factory=list)  # calls the fill's constructor makes before the fill
    # (path, role, class, what it is): properties and descriptors, computed on each read
    properties: list = field(default_factory=list)
    access_hooks: list = field(default_factory=list)  # (class, text): __getattribute__ and friends
    passed_holder: list = field(default_factory=list)  # (function, call, how): constructions handed a holder
    # holders several objects may share: (path from the anchor, where it is bound)
    shared_holder_bindings: list = field(default_factory=list)
    # argument objects that may be changed in place through a reference cachelint
    # does not follow: (role, path from the anchor or None, text, what it is, where it came from)
    shared_args: list = field(default_factory=list)
    placement: list = field(default_factory=list)  # reasons about where the fill statement sits
    # the object handed out before a fill that may raise: whoever holds it may read it unfilled
    escapes: list = field(default_factory=list)
    guard_state: list = field(default_factory=list)  # reasons the guard's state outside the object may change


class Hazards(ConstructionOrder, Bypasses, FillSkips, AttributeAccess, SharedObjects):
    """Computes :class:`SiteHazards` per cache site, once."""

    def __init__(
        self,
        program: Program,
        writes: Writes | None = None,
        bodies: Bodies | None = None,
        cost: CostModel | None = None,
        state: ProcessState | None = None,
    ) -> None:
        self.p = program
        self.writes = writes if writes is not None else Writes(program)
        self.bodies = bodies if bodies is not None else Bodies(program)
        state = state if state is not None else ProcessState(program, self.bodies)
        self.guard_state = GuardState(program, cost, state, self.writes)
        self.results = ResultKinds(program, self.writes)
        self._memo: dict = {}
        self._reach: dict = {}
        self._totality = Totality(program, self.bodies, cost.catalog) if cost is not None else None

    def of(self, site) -> SiteHazards:
        key = id(site)
        hit = self._memo.get(key)
        if hit is not None and hit[0] is site:
            return hit[1]
        h = self._compute(site)
        self._memo[key] = (site, h)
        return h

    # ----- the dependencies -----------------------------------------------------------
    def _compute(self, site) -> SiteHazards:
        h = SiteHazards()
        anchor = site.anchor
        deps: dict[tuple, Dependency] = {}

        def add_path(v: Value | None, role: str) -> None:
            if v is None or v[0] != anchor:
                return
            for i in range(1, len(v)):
                if not isinstance(v[i], str):
                    return
                path = tuple(v[1 : i + 1])
                if path not in deps:
                    deps[path] = Dependency(path, self.writes.type_of(v[:i]), role)

        def add_value(v: Value | None, role: str, depth: int = 0) -> None:
            """Every value rooted at the anchor inside ``v``, calls' arguments included."""
            if v is None or depth > 4:
                return
            root = v[0]
            if root == anchor:
                add_path(v, role)
            elif isinstance(root, CallRoot):
                add_value(root.callee, role, depth + 1)
                for a in root.args:
                    add_value(a.value if isinstance(a, KwArg) else a, role, depth + 1)

        target = site.target
        deps[tuple(target[1:])] = Dependency(tuple(target[1:]), site.holder_type, "attribute")
        for i in range(1, len(target) - 1):
            add_path(target[: i + 1], "holder")
        add_path(site.callee[:-1] if len(site.callee) > 1 else None, "callee")
        for a in site.args:
            add_path(a.value if isinstance(a, KwArg) else a, "argument")
        ctx = self.p.context(site.function)
        for atom in site.atoms:
            key = atom.key
            if isinstance(key, (TruthyKey, IsNoneKey)):
                add_value(key.value, "guard")
            elif isinstance(key, CmpKey):
                add_value(key.left, "guard")
                add_value(key.right, "guard")
            elif isinstance(key, OpaqueKey):  # what cachelint cannot evaluate may still read the anchor
                for e in subexpressions(key.expr):
                    add_value(self.p.canon(e, ctx), "guard")

        # `obj.__class__ = Other` gives the object another class's properties
        # and descriptors: a writer of every attribute of it
        retyping = [w for w in self.writes.of("__class__") if w.attr == "__class__"]
        for dep in deps.values():
            for w in self.writes.of(dep.path[-1]) + retyping:
                if dep.role == "attribute" and self._is_fill(site, w):
                    continue
                why = self.writes.reaches(w, dep.owner)
                if why is None and dep.role != "attribute":
                    # the fill gives the cached attribute an instance value of its
                    # own, which a write to the class never changes; a holder, an
                    # argument or a guard may be a class attribute read through it
                    why = self._through_class(w, dep.owner, dep.path[-1])
                if why is None or self._at_construction(site, w, dep):
                    continue
                if dep.role == "attribute" and why.sure and not why.why and w.assign is not None:
                    if self._same_fill_other_branch(site, w):
                        continue
                    if w.function is site.function or w.how == "augassign":
                        # changed right after the fill (`self.vocab_size += extra`):
                        # the attribute is not the call's value, so no finding
                        h.overwritten = True
                h_w = (w, why)
                dep.writers.append(h_w)
        h.dependencies = [d for d in deps.values() if d.writers]
        h.properties = self._properties(site, deps)
        h.access_hooks = self._access_hooks(site, deps)
        h.guard_state = self.guard_state.reasons(site)

        for a in site.args:
            v = a.value if isinstance(a, KwArg) else a
            self._contents(site, v, h, "argument")
        if len(site.callee) > 1:  # `self.budget()`, `REGISTRY.lookup(m)`: the object is read too
            self._contents(site, site.callee[:-1], h, "bound")
        h.shared_args = self._shared_arguments(site)
        h.skips_fill = self._skipping_subclasses(site)
        if len(target) > 2 and site.in_constructor:
            h.shared_holder = self._replacements(site)
            h.passed_holder = self._passed_holders(site)
            h.shared_holder_bindings = self._shared_holders(site)
        h.result = self.result_kind(site)
        h.pre_fill_calls = self._pre_fill_calls(site)
        if site.call.in_handler:
            h.placement.append("the fill runs only in an `except` handler")
        elif site.call.in_loop:
            h.placement.append("the fill sits in a loop body, which may run no iteration")
        h.placement += self._skippers(site)
        h.escapes = self._escapes(site)
        f = site.function
        if site.in_constructor and f.name == "__post_init__" and f.class_qualname is not None:
            if not any(self.p.is_dataclass(qn) for qn in self.p.mro(f.class_qualname)):
                h.placement.append(
                    f"`{f.class_qualname}` is not a dataclass, so nothing calls `__post_init__` when it is constructed"
                )
        return h

    def _through_class(self, w: AttrWrite, cls: str | None, attr: str) -> Reach | None:
        """A write to the class object (``Config.flag = v``, ``cls.flag = v``,
        ``type(self).flag = v``) reaches an instance of ``cls`` when the
        instance may have no ``attr`` of its own: its reads then see the
        class's value (see :meth:`Writes.reaches_through_class`)."""
        if w.attr is None or self._instance_owned(cls, attr):
            return None
        return self.writes.reaches_through_class(w, cls)

    def _instance_owned(self, cls: str | None, attr: str) -> bool:
        """Every construction of a ``cls`` gives it an ``attr`` of its own, which
        hides the class's: a field of a dataclass (not a ``ClassVar``, an
        ``InitVar`` or ``field(init=False)``), or an assignment to ``self.attr``
        in a constructor of its class or a base, under no condition and in no loop."""
        p = self.p
        if cls is None or cls not in p.classes:
            return False
        for qn in p.mro(cls):
            c = p.classes.get(qn)
            if c is None or attr not in c.fields or not p.is_dataclass(qn):
                continue
            ann = dotted(c.fields[attr][1] if c.fields[attr][0] == "sub" else c.fields[attr]) or ""
            default = c.class_attrs.get(attr)
            init_false = default is not None and default[0] == "call" and any(k == "init" for k, _ in default[3])
            return ann.rsplit(".", 1)[-1] not in ("ClassVar", "InitVar") and not init_false
        for f, a in p.self_attr_writers(cls, attr):
            if f.name in CONSTRUCTORS and not a.guard and not a.in_loop and a.kind in ("assign", "annassign"):
                return True
        return False

    def _is_fill(self, site, w: AttrWrite) -> bool:
        return (
            w.function is site.function
            and w.assign is not None
            and site.call.stmt_line <= w.line <= site.call.end_line
            and w.how in ("assign", "annassign")
        )

    def _same_fill_other_branch(self, site, w: AttrWrite) -> bool:
        """Another branch of the same fill storing the same call (``if a:
        self.x = f(m) else: self.x = f(m)``)."""
        if w.function is not site.function:
            return False
        return any(
            c.assigned_to is not None and c.line == w.line and c.func == site.call.func and c.args == site.call.args
            for c in w.function.calls
        )

    def _at_construction(self, site, w: AttrWrite, dep: Dependency) -> bool:
        """``w`` writes the object being built, before the fill can have run
        (see the module docstring)."""
        p = self.p
        f = w.function
        if f.name not in CONSTRUCTORS or f.class_qualname is None:
            return False
        if self.writes.receiver_value(w) != (SelfRoot(f.class_qualname),):
            return False
        if len(dep.path) > 1 or not isinstance(site.anchor, SelfRoot) or not site.in_constructor:
            return True  # another object's own construction, done before the anchor gets it
        fill_fn = site.function
        fill_cls = fill_fn.class_qualname or ""
        if f is fill_fn:
            return w.line < site.call.line
        if f.class_qualname == fill_cls:
            return fill_fn.name == "__post_init__" and f.name == "__init__"
        if p.is_subclass(fill_cls, f.class_qualname):  # a base class's constructor
            if fill_fn.name == "__post_init__" and f.name == "__init__":
                return True
            return any(ln < site.call.line for ln in super_calls(fill_fn, f.name))
        if p.is_subclass(f.class_qualname, fill_cls):  # a subclass's constructor: before its super() call
            return any(ln > w.line for ln in super_calls(f, fill_fn.name))
        return False

    def _contents(self, site, v: Value | None, h: SiteHazards, role: str) -> None:
        """An argument object of a mutable class of the tree: writes of its
        attributes after its construction."""
        if v is None or isinstance(v[0], ConstRoot):
            return
        cls = self.writes.type_of(v)
        if cls is None or cls not in self.p.classes or self.results.class_kind(cls)[0] == "immutable":
            return
        c = Contents(tuple(v[1:]) if v[0] == site.anchor else None, render_arg(site, v), cls, role)
        whole = v[0] == site.anchor and len(v) == 1
        c.writers = content_writers(
            self.p, self.writes, cls, skip=lambda w: whole and self._is_fill(site, w), through=self._through_class
        )
        if c.writers:
            h.contents.append(c)

    # ----- the result ----------------------------------------------------------------
    def result_kind(self, site) -> tuple:
        """("immutable" | "mutable" | "unknown", what the callee returns)."""
        return self.results.of_callee(site.callee)


def content_writers(p: Program, writes: Writes, cls: str, names=None, skip=None, through=None) -> list:
    """[(AttrWrite, Reach)]: the writes, after its construction, of an
    attribute of an object of class ``cls`` (of ``names``, default any the
    tree gives its instances), wherever they are, on a receiver that may be
    that object: what may change an argument object a value was computed
    from. Writes in the object's own constructor do not count, nor those
    ``skip`` says. ``through(w, cls, name)`` may place a write that
    ``writes.reaches`` does not (a write on the class object)."""
    out: list = []
    seen: set = set()
    for name in sorted(attribute_names(p, cls) if names is None else names):
        for w in writes.of(name):
            if id(w) in seen or (w.attr is not None and w.attr != name):
                continue
            seen.add(id(w))
            why = writes.reaches(w, cls)
            if why is None and through is not None:
                why = through(w, cls, name)
            if why is None:
                continue
            f = w.function
            if (
                f.name in CONSTRUCTORS
                and f.class_qualname is not None
                and writes.receiver_value(w) == (SelfRoot(f.class_qualname),)
            ):
                continue  # the object's own construction
            if skip is not None and skip(w):
                continue
            out.append((w, why))
    return out


def attribute_names(p: Program, cls: str) -> set:
    """The attributes the tree gives objects of ``cls``: fields, class
    attributes, and ``self.x`` assigned in a method of a class of its MRO."""
    out: set = set()
    for qn in p.mro(cls):
        c = p.classes.get(qn)
        if c is None:
            continue
        out.update(c.fields)
        out.update(c.class_attrs)
        for mqn in c.methods.values():
            m = p.functions.get(mqn)
            if m is None or not m.self_name:
                continue
            me = ("name", m.self_name)
            out.update(a.target[2] for a in m.assigns if a.target[0] == "attr" and a.target[1] == me)
    return out
