"""Module state a function reads, what changes it, and what a call changes.

:meth:`CostModel.purity <cachelint.facts.cost.CostModel.purity>` says whether
a call's value follows from its arguments and the state its body reads: a
body that only reads is pure. Whether *moving or caching* a pure call keeps
the program's meaning depends on that state too: a registry dict that a
plugin fills after start-up, a "current config" global set around each
engine's construction, a flag a context manager sets during graph capture,
``os.environ``. A value computed once (``functools.cache``, an attribute set
in ``__init__``) or earlier (a local before a loop) freezes what that state
was then. For the few functions a fix is planned for, this module answers:

* :meth:`ProcessState.reads`: the module state a function reads, through
  the functions of the tree it calls (:data:`~cachelint.facts.purity.MAX_DEPTH`
  calls deep, like purity): module variables and attributes of module-level
  objects, class attributes, ``os.environ``, attributes of a module that
  defines ``__getattr__`` (each read runs it: vLLM's ``envs``), and the
  module-level functions and classes it names (state only when code rebinds
  the name itself: ``setattr(shapes, "fmt", ...)``). The body is
  parsed again (:mod:`.bodies`), so reads in conditions and subscripts count;
* :meth:`ProcessState.changes`: the statements of the tree that rebind such
  a value (``global X`` then ``X = ...``; ``mod.X = ...``; ``setattr(mod,
  "X", v)``; ``globals()["X"] = v``, ``vars(mod)["X"] = v``,
  ``mod.__dict__[...]``, their ``update``: with a computed name, any name of
  that module or object) or change it in
  place (``X[k] = v``, ``X.append(...)``, ``obj.attr = v``, ``cls._table[k] = v``
  in a classmethod). The module-level code of the module that defines a
  variable is its initialisation, not a change;
* :meth:`ProcessState.dependence`: the first read of state that some code
  changes (or of the environment), as a :class:`~.purity.Purity` whose
  ``state`` names the state and what changes it;
* :meth:`ProcessState.effects`: what a function changes that its callers can
  see (its parameters' and its object's attributes and items, module state),
  through the functions it calls, each at the statement or call of the
  function that makes it.

Values are the program's canonical values
(:meth:`~cachelint.semantic.program.Program.canon`), so ``_SAMPLERS`` read in
one module and changed through ``registry._SAMPLERS`` in another compare
equal. What a call cachelint cannot resolve changes is not known: such calls
change nothing here (the planner names them where it must).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..index.expr import dotted
from ..index.records import FunctionInfo
from ..index.scans import scan_hits
from ..semantic.program import CONSTRUCTORS, Program
from ..semantic.values import GlobalRoot, ParamRoot, SelfRoot
from .bodies import Bodies
from .purity import MAX_DEPTH, Purity, StateKind, StateRead

# methods of the builtin containers that change the object in place
CONTAINER_MUTATORS = frozenset(
    [
        "append",
        "extend",
        "insert",
        "remove",
        "pop",
        "popitem",
        "clear",
        "update",
        "setdefault",
        "add",
        "discard",
        "sort",
        "reverse",
        "appendleft",
        "extendleft",
        "popleft",
        "difference_update",
        "intersection_update",
        "symmetric_difference_update",
        "__setitem__",
        "__delitem__",
    ]
)


# methods of the builtin containers that read the object and change nothing
CONTAINER_READERS = frozenset(
    [
        "get",
        "keys",
        "values",
        "items",
        "copy",
        "count",
        "index",
        "issubset",
        "issuperset",
        "isdisjoint",
        "__getitem__",
        "__contains__",
    ]
)


# builtin containers that change in place, as a module variable's value
# (``{}``, ``dict()``, ``defaultdict(list)``) or annotation (``dict``, ``list[int]``)
MUTABLE_CONTAINERS = frozenset(
    [
        "dict",
        "list",
        "set",
        "defaultdict",
        "OrderedDict",
        "deque",
        "Counter",
        "WeakValueDictionary",
        "WeakKeyDictionary",
    ]
)
_MUTABLE_ANNOTATIONS = MUTABLE_CONTAINERS | frozenset(
    ["Dict", "List", "Set", "DefaultDict", "Deque", "MutableMapping", "MutableSequence", "MutableSet"]
)


def is_mutator(method: str) -> bool:
    """A method that changes its object in place: a container mutator, or
    torch's in-place convention (``copy_``, ``fill_``, ``add_``)."""
    return method in CONTAINER_MUTATORS or (method.endswith("_") and not method.startswith("_") and len(method) > 1)


def flat(v: tuple) -> tuple:
    """A canonical value as a path, comparable by prefix: a global's dotted name is split."""
    root = v[0]
    head: tuple = ("g", *root.qualname.split(".")) if isinstance(root, GlobalRoot) else (root,)
    return head + tuple(v[1:])


def related(a: tuple, b: tuple) -> bool:
    """One value is part of the other (a change to either reaches the other)."""
    fa, fb = flat(a), flat(b)
    n = min(len(fa), len(fb))
    return fa[:n] == fb[:n]


def show(v: tuple) -> str:
    """A canonical value as readable text (for messages)."""
    root = v[0]
    if isinstance(root, GlobalRoot):
        head = root.qualname
    elif isinstance(root, ParamRoot):
        head = root.name
    elif isinstance(root, SelfRoot):
        head = "self"
    else:
        head = "..."
    return ".".join([head, *(str(x) for x in v[1:])])


@dataclass(frozen=True)
class StateUse:
    """A read of module state: its value, as written, through which functions."""

    value: tuple
    shown: str  # the chain as the source reads it (``envs.VLLM_X``)
    environ: bool
    via: tuple[str, ...]  # qualnames from the function asked to the one whose body reads it
    getattr_of: str | None = None  # the module ``__getattr__`` the read runs
    inner: str | None = None  # what that ``__getattr__`` reads
    code: bool = False  # a function or class of the tree: only a rebinding of the name changes it


@dataclass(frozen=True)
class Change:
    """A statement of the tree that rebinds or changes a value in place."""

    value: tuple
    where: str  # the function's qualname, or the module for module-level code
    line: int
    text: str  # the statement's source (first line)
    rebinds: bool
    fills: bool = False  # ``if X is None: X = ...``: sets the value once, when unset


@dataclass(frozen=True)
class InsideChange:
    """A statement that changes, in place, an object reached through an
    attribute of some name (``x.blocks.append(...)``, ``x.blocks[i] = v``,
    ``x.blocks.n = v`` change what ``.blocks`` holds)."""

    function: FunctionInfo
    line: int
    text: str
    in_loop: bool
    type: str | None  # the class of the object changed, when cachelint knows it
    below: tuple = ()  # the attributes (``"[]"``: an item) from that object to what changes


@dataclass(frozen=True)
class Effect:
    """A change a function makes that its callers can see, in its own terms
    (its parameters, its object, module state), at the statement (or the
    call, for a change made by a function it calls) of its body."""

    value: tuple
    line: int
    column: int
    text: str  # the source of that statement's first line
    via: str = ""  # the function whose body makes the change, when not this one


_FRESH_CALLS = frozenset(["list", "dict", "set", "tuple", "frozenset", "sorted", "copy", "deepcopy"])


def _fresh(e) -> bool:
    """A returned expression that builds a new object (a literal, a display,
    a builtin container's constructor)."""
    if e[0] == "?":
        return True
    return e[0] == "call" and (dotted(e[1]) or "").split(".")[-1] in _FRESH_CALLS


def _positions(scans, names) -> list:
    """The flat call positions a file's scans list under any of ``names``."""
    out: list = []
    for n in names:
        out.extend(scans[1].get(n, ()))
    return out


# the guard of a module's own top-level rebinding of its variable (not its
# initialisation: the first binding)
_REBIND = ((("rebind",), True),)


def _fills_when_unset(guard, name: str) -> bool:
    """The guard holds only while global ``name`` is unset (``X is None``, ``not X``)."""
    for cond, positive in guard:
        if cond[0] == "cmp" and cond[1] == ("is",) and cond[2] == ("name", name) and cond[3] == (("const", None),):
            if positive:
                return True
        if cond[0] == "not" and cond[1] == ("name", name) and positive:
            return True
        if cond == ("name", name) and not positive:
            return True
    return False


def _plain_property(g: FunctionInfo) -> bool:
    """``@property`` (its getter runs on each read), not ``cached_property``."""
    return any((dotted(d) or "").split(".")[-1] == "property" for d in g.decorators)


def _chain_expr(parts: tuple[str, ...]) -> tuple:
    e: tuple = ("name", parts[0])
    for a in parts[1:]:
        e = ("attr", e, a)
    return e


def _class_of_self(e, self_name: str) -> bool:
    """``e`` is ``type(self)`` or ``self.__class__``."""
    me = ("name", self_name)
    if e[0] == "call" and e[1] == ("name", "type") and list(e[2]) == [me] and not e[3]:
        return True
    return e[0] == "attr" and e[1] == me and e[2] == "__class__"


def _is_classmethod(f: FunctionInfo) -> bool:
    return any((dotted(d) or "").split(".")[-1] == "classmethod" for d in f.decorators)


# methods of a namespace dict (``globals()``, ``vars(m)``, ``m.__dict__``) that rebind names in it
_NAMESPACE_WRITERS = frozenset(["update", "setdefault", "__setitem__", "pop", "popitem", "clear", "__delitem__"])
_SETATTR = frozenset(["setattr", "delattr"])


def _namespace(e) -> bool:
    """``e`` is a namespace dict: ``globals()``, ``vars(x)``, ``x.__dict__``."""
    if e[0] == "call" and not e[3]:
        return (e[1] == ("name", "globals") and not e[2]) or (e[1] == ("name", "vars") and len(e[2]) == 1)
    return e[0] == "attr" and e[2] == "__dict__"


def _literal(e) -> str | None:
    return e[1] if e is not None and e[0] == "const" and isinstance(e[1], str) else None


def _name_write(c) -> tuple | None:
    """The target a call rebinds a name through, as an item of a namespace
    dict (``("sub", <namespace>, <name or ("?",)>)``): ``setattr(x, "n", v)``,
    ``globals().update(...)``, ``vars(m).setdefault("n", v)``; None for other calls."""
    func, args = c.func, c.args
    if func[0] == "name" and func[1] in _SETATTR and len(args) >= 2 and args[0] != ("?",):
        return ("sub", ("call", ("name", "vars"), (args[0],), ()), args[1])
    if func[0] == "attr" and func[2] in _NAMESPACE_WRITERS and _namespace(func[1]):
        key = args[0] if func[2] in ("setdefault", "__setitem__", "pop", "__delitem__") and args else ("?",)
        return ("sub", func[1], key)
    return None


def _key(e) -> str | None:
    """The name a change is indexed by: the last name of what it changes."""
    k = e[0]
    if k == "name":
        return e[1]
    if k == "attr":
        return e[2]
    if k == "sub":
        return _key(e[1])
    return None


class ProcessState:
    """Module state and changes, for one program; memoized per run."""

    def __init__(self, program: Program, bodies: Bodies) -> None:
        self.p = program
        self.bodies = bodies
        self._candidates: dict | None = None
        # attribute name -> [(function, changed expr, expr ending at that attribute, attributes below, line, in_loop)]
        self._inside: dict = {}
        self._reads: dict = {}
        self._effects: dict = {}

    # ----- values ------------------------------------------------------------------------
    def value(self, f: FunctionInfo | None, e, module: str | None = None) -> tuple | None:
        """The canonical value of expression ``e`` in ``f`` (module-level code of
        ``module`` when ``f`` is None); a classmethod's first parameter is its class."""
        p = self.p
        if e is None:
            return None
        k = e[0]
        if k == "sub":
            home = self._module_object(f, e, module)
            if home is not None:
                return home
            return self.value(f, e[1], module)
        if k == "call" and e[1] == ("name", "globals") and not e[2]:
            home_module = f.module if f is not None else module
            return None if home_module is None else (GlobalRoot(home_module),)
        if k == "call" and e[1] == ("name", "type") and len(e[2]) == 1:
            # `type(c).scale = 10`: the class of `c`, when its type is known
            of = self.value(f, e[2][0], module)
            t = p.type_of(of) if of else None
            if t is not None and t in p.classes:
                return (GlobalRoot(t),)
        if f is not None and f.class_qualname and f.self_name and _class_of_self(e, f.self_name):
            return (GlobalRoot(f.class_qualname),)  # `type(self)`, `self.__class__`: the class (or a subclass)
        if k == "attr":
            base = self.value(f, e[1], module)
            return None if base is None else p.attr_value(base, e[2])
        if k == "name" and f is not None and f.class_qualname and f.params and _is_classmethod(f):
            if e[1] == f.params[0].name:
                return (GlobalRoot(f.class_qualname),)
        if f is None:
            if k != "name" or module is None:
                return None
            qn = p.resolve_name(module, e[1])
            return None if qn is None else (GlobalRoot(qn),)
        return p.canon(e, p.context(f))

    def _module_object(self, f: FunctionInfo | None, e, module: str | None) -> tuple | None:
        """``sys.modules[__name__]`` (this module) or ``sys.modules["pkg.mod"]``
        (a module of the tree): that module, whose attributes are its variables."""
        base = self.value(f, e[1], module)
        if base != (GlobalRoot("sys.modules"),):
            return None
        key = e[2]
        if key == ("name", "__name__"):
            name = f.module if f is not None else module
        elif key[0] == "const" and isinstance(key[1], str):
            name = key[1]
        else:
            return None
        return (GlobalRoot(name),) if name in self.p.modules else None

    def changed(self, f: FunctionInfo | None, target, module: str | None = None) -> tuple | None:
        """What an assignment to ``target`` (or an in-place change of it) changes:
        None for a local name (a rebinding no one else sees)."""
        if target[0] == "name":
            if f is None and module is not None:  # module-level code binds the module's variable
                qn = self.p.resolve_name(module, target[1])
                return None if qn is None else (GlobalRoot(qn),)
            if f is None or target[1] not in f.global_names:
                return None
            qn = self.p.resolve_name(f.module, target[1])
            return None if qn is None else (GlobalRoot(qn),)
        if target[0] == "sub" and _namespace(target[1]):
            return self._namespace_item(f, target[1], target[2], module)
        if target[0] in ("attr", "sub"):
            return self.value(f, target, module)
        return None

    def _namespace_item(self, f: FunctionInfo | None, ns, key, module: str | None) -> tuple | None:
        """What rebinding item ``key`` of namespace dict ``ns`` changes: the
        module's (or object's) name ``key``; with a computed key, any name of it."""
        if ns[0] == "call" and ns[1] == ("name", "globals"):
            mod = f.module if f is not None else module
            base: tuple | None = (GlobalRoot(mod),) if mod else None
        else:
            base = self.value(f, ns[2][0] if ns[0] == "call" else ns[1], module)
        if base is None:
            return None
        name = _literal(key)
        return base if name is None else self.p.attr_value(base, name)

    def _line(self, path: str, line: int) -> str:
        lines = self.bodies.lines(path) or []
        text = lines[line - 1].strip() if 0 < line <= len(lines) else "..."
        return text if len(text) <= 70 else text[:67] + "..."

    # ----- changes --------------------------------------------------------------------------
    def _index(self) -> dict:
        """Name -> statements that may change something by that name (built once)."""
        if self._candidates is not None:
            return self._candidates
        out: dict = {}
        p = self.p
        for f in p.functions.values():
            if f.under_type_checking:
                continue
            me = ("name", f.self_name) if f.self_name else None
            for a in f.assigns:
                t = a.target
                if t[0] == "name" and t[1] not in f.global_names:
                    continue
                if t[0] == "attr" and t[1] == me:
                    continue  # `self.x = v`: the object's own attribute, neither module state nor inside one
                if a.kind in ("def", "import"):
                    continue
                if t[0] == "sub" and _namespace(t[1]):
                    out.setdefault(_literal(t[2]) or "*", []).append((f, None, t, a.line, True, a.guard))
                    continue
                key = _key(t)
                if key is not None:
                    out.setdefault(key, []).append((f, None, t, a.line, t[0] == "name", a.guard))
                if t[0] in ("attr", "sub"):
                    self._note_inside(f, t, a.line, a.in_loop, t[0] == "attr")

        def mutators(scans) -> list:
            flat_: list = []
            for k, at in scans[1].items():
                if k and is_mutator(k):
                    flat_.extend(at)
            return flat_

        def name_writers(scans) -> list:
            return _positions(scans, _SETATTR | _NAMESPACE_WRITERS)

        for f, c in scan_hits(p.functions, p.indexes, name_writers):
            nt = _name_write(c)
            if nt is not None and not f.under_type_checking:
                out.setdefault(_literal(nt[2]) or "*", []).append((f, None, nt, c.line, True, c.guard))
        for f, c in scan_hits(p.functions, p.indexes, mutators):
            if f.under_type_checking or c.func[0] != "attr" or _namespace(c.func[1]):
                continue
            key = _key(c.func[1])
            if key is not None:
                out.setdefault(key, []).append((f, None, ("sub", c.func[1], ("?",)), c.line, False, c.guard))
            self._note_inside(f, c.func[1], c.line, c.in_loop, False)
        for fi in p.indexes:
            first: dict = {}
            for a in fi.module_assigns:
                if a.target[0] == "name" and a.kind not in ("def", "import", "del"):
                    first.setdefault(a.target[1], a.line)
                    first[a.target[1]] = min(first[a.target[1]], a.line)
            for a in fi.module_assigns:
                if a.target[0] == "name" and a.target[1] in first:
                    # a top-level rebinding after the first binding (`SCALE = 2`,
                    # `SCALE += 1`, `for SCALE in ...`): it changes the variable
                    # for the functions the module defined and ran before
                    if a.kind in ("augassign", "for") or a.line > first[a.target[1]]:
                        out.setdefault(a.target[1], []).append((None, fi, a.target, a.line, True, _REBIND))
                elif a.target[0] == "sub" and _namespace(a.target[1]):
                    out.setdefault(_literal(a.target[2]) or "*", []).append((None, fi, a.target, a.line, True, ()))
                elif a.target[0] in ("attr", "sub"):
                    key = _key(a.target)
                    if key is not None:
                        out.setdefault(key, []).append((None, fi, a.target, a.line, False, ()))
            for c in fi.module_calls:
                nt = _name_write(c)
                if nt is not None:
                    out.setdefault(_literal(nt[2]) or "*", []).append((None, fi, nt, c.line, True, ()))
                elif c.func[0] == "attr" and is_mutator(c.func[2]):
                    key = _key(c.func[1])
                    if key is not None:
                        out.setdefault(key, []).append((None, fi, ("sub", c.func[1], ("?",)), c.line, False, ()))
        self._candidates = out
        return out

    def _note_inside(self, f: FunctionInfo, e, line: int, in_loop: bool, skip_first: bool) -> None:
        """Record that ``f`` changes something inside the value of each
        attribute along ``e`` (an assignment target, or the receiver of an
        in-place method): ``self.a.b = v`` changes what ``.a`` holds (not what
        ``.b`` holds: that is a rebinding, ``skip_first``), ``self.a[k] = v``
        and ``self.a.append(v)`` change what ``.a`` holds. Each record keeps
        the attributes below the one it is filed under (``("b",)``; ``"[]"``
        for an item; empty for the object itself)."""
        full = e
        below: list = []
        first = True
        while e[0] in ("attr", "sub"):
            if e[0] == "attr" and not (first and skip_first):
                self._inside.setdefault(e[2], []).append((f, full, e, tuple(reversed(below)), line, in_loop))
            below.append(e[2] if e[0] == "attr" else "[]")
            first = False
            e = e[1]

    def changed_inside(self, attr: str) -> list[InsideChange]:
        """Statements outside ``__init__``-time binding that change in place an
        object held by an attribute named ``attr`` (its items, its attributes,
        a mutating method), in program order."""
        self._index()
        out = []
        for f, full, e, below, line, in_loop in self._inside.get(attr, ()):
            v = self.value(f, e)
            t = self.p.type_of(v) if v is not None else None
            if v is not None and self._fresh_between(v, full, e, f):
                continue  # the change is to a new value a property returns, not to what `.attr` holds
            out.append(InsideChange(f, line, self._line(f.path, line), in_loop, t, below))
        return out

    def _fresh_between(self, v: tuple, full, e, f: FunctionInfo) -> bool:
        """Some attribute read between ``e`` (value ``v``) and ``full`` is a
        property of the tree whose getter returns a new object on each read."""
        steps = []
        cur = full
        while cur is not e and cur[0] in ("attr", "sub"):
            steps.append(cur)
            cur = cur[1]
        if any(step[0] != "attr" for step in steps):
            return False
        return self.fresh_along(v, tuple(step[2] for step in reversed(steps)))

    def fresh_along(self, v: tuple, attrs: tuple) -> bool:
        """Reading ``attrs`` one after another from value ``v`` passes through a
        property of the tree whose getter returns a new object on each read:
        what is reached there is not held by ``v``."""
        p = self.p
        base = v
        for attr in attrs:
            t = p.type_of(base)
            g = p.lookup_method(t, attr) if t in p.classes else None
            if g is not None and _plain_property(g) and g.returns and all(_fresh(r) for r in g.returns):
                return True
            base = base + (attr,)
        return False

    def is_state(self, v: tuple) -> bool:
        """``v`` is module state: a module variable (or an attribute of one) or a class attribute."""
        root = v[0]
        if not isinstance(root, GlobalRoot):
            return False
        qn = root.qualname
        return self.p.is_module_level_variable(qn) or self._class_attribute(qn)

    def _defining_module(self, v: tuple) -> str | None:
        root = v[0]
        if not isinstance(root, GlobalRoot):
            return None
        parts = root.qualname.split(".")
        for i in range(len(parts), 0, -1):
            m = ".".join(parts[:i])
            if m in self.p.modules:
                return m
        return None

    def changes(self, v: tuple, names: tuple[str, ...] = ()) -> list[Change]:
        """Statements of the tree that change value ``v`` (or a part of it, or
        rebind what holds it), looked up by the names of ``v`` and ``names``."""
        index = self._index()
        keys = set(names)
        root = v[0]
        if isinstance(root, GlobalRoot):
            keys.update(root.qualname.split(".")[-1:])
        keys.update(str(x) for x in v[1:])
        keys.add("*")  # a write whose name is computed (`globals()[k] = v`, `setattr(m, k, v)`)
        home = self._defining_module(v)
        out: list[Change] = []
        seen: set = set()
        for key in sorted(keys):
            for f, fi, target, line, rebinds, guard in index.get(key, ()):
                module = fi.module if fi is not None else None
                if f is None and module == home and guard is not _REBIND:
                    continue  # the defining module's own top level: initialisation
                w = self.changed(f, target, module)
                if w is None or not related(w, v):
                    continue
                where = f.qualname if f is not None else (module or "?")
                if (where, line) in seen:
                    continue
                seen.add((where, line))
                path = f.path if f is not None else fi.path
                fill = rebinds and target[0] == "name" and _fills_when_unset(guard, target[1])
                out.append(Change(w, where, line, self._line(path, line), rebinds and len(w) == 1, fill))
        out.extend(self._method_changes(v, seen))
        out.sort(key=lambda c: (c.where, c.line))
        return out

    def _method_changes(self, v: tuple, seen: set) -> list[Change]:
        """Calls of methods of the tree that change their object, made on the
        module-level object ``v`` holds (or is part of): ``REGISTRY.register(...)``."""
        p = self.p
        root = v[0]
        if not isinstance(root, GlobalRoot) or not p.is_module_level_variable(root.qualname):
            return []
        t = p.type_of((root,))
        if t is None or t not in p.classes:
            return []
        changers: dict[str, list] = {}
        for k in p.mro(t):
            ci = p.classes.get(k)
            if ci is None:
                continue
            for name, qn in ci.methods.items():
                g = p.functions.get(qn)
                if name in changers or g is None or g.self_name is None or g.name in CONSTRUCTORS:
                    continue
                mine = [e for e in self.effects(g) if isinstance(e.value[0], SelfRoot)]
                if mine:
                    changers[name] = mine
        if not changers:
            return []
        home = self._defining_module(v)
        out: list[Change] = []

        def consider(f, fi, c) -> None:
            if c.func[0] != "attr" or c.func[2] not in changers:
                return
            module = fi.module if fi is not None else None
            if f is None and module == home:
                return
            base = self.value(f, c.func[1], module)
            if base is None or not related(base, (root,)):
                return
            for e in changers[c.func[2]]:
                if related(base + tuple(e.value[1:]), v):
                    where = f.qualname if f is not None else (module or "?")
                    if (where, c.line) not in seen:
                        seen.add((where, c.line))
                        path = f.path if f is not None else fi.path
                        out.append(Change(base + tuple(e.value[1:]), where, c.line, self._line(path, c.line), False))
                    return

        for f, c in scan_hits(p.functions, p.indexes, lambda scans: _positions(scans, changers)):
            if not f.under_type_checking:
                consider(f, None, c)
        for fi in p.indexes:
            for c in fi.module_calls:
                consider(None, fi, c)
        return out

    # ----- reads ------------------------------------------------------------------------------
    def reads(self, fn: FunctionInfo, depth: int = 0) -> tuple[StateUse, ...]:
        """The module state ``fn`` reads, its own first, then through the
        functions of the tree it calls (not cached functions, not constructors)."""
        key = (fn.qualname, depth)
        hit = self._reads.get(key)
        if hit is not None:
            return hit
        self._reads[key] = ()  # recursion guard
        out: list[StateUse] = []
        body = self.bodies.body(fn)
        if body is not None:
            for parts, _line in body.free_reads():
                out.extend(self._classify(fn, parts, depth))
        if depth < MAX_DEPTH:
            p = self.p
            for c in fn.calls:
                if c.in_handler:
                    continue
                callee = p.call_callee(fn, c)
                g0 = p.callee_function(callee) if callee is not None else None
                if g0 is None or g0 is fn or p.is_cached(g0) or g0.name in CONSTRUCTORS:
                    continue
                for g in p.dispatch(g0):  # what an override reads, the call reads
                    if g is fn or p.is_cached(g):
                        continue
                    for u in self.reads(g, depth + 1):
                        out.append(replace(u, via=(fn.qualname, *u.via)))
        seen: set = set()
        uniq = []
        for u in out:
            if (u.value, u.via) not in seen:
                seen.add((u.value, u.via))
                uniq.append(u)
        result = tuple(uniq)
        self._reads[key] = result
        return result

    def _classify(self, fn: FunctionInfo, parts: tuple[str, ...], depth: int) -> list[StateUse]:
        p = self.p
        v = self.value(fn, _chain_expr(parts))
        if v is None:
            return []
        shown = ".".join(parts)
        root = v[0]
        if not isinstance(root, GlobalRoot):
            return []
        f = flat(v)
        if f[1:3] == ("os", "environ") or f[1:3] == ("os", "getenv"):
            return [StateUse(v, shown, True, (fn.qualname,))]
        qn = root.qualname
        if len(v) == 1 and qn in p.modules:
            return []  # code, not state
        if len(v) == 1 and (qn in p.functions or qn in p.classes):
            # code, unless something rebinds the name (`setattr(shapes, "fmt", ...)`)
            return [StateUse(v, shown, False, (fn.qualname,), code=True)]
        mod, _, name = qn.rpartition(".")
        fi = p.modules.get(mod)
        if fi is not None and name not in fi.defs and name not in fi.globals and name not in fi.imports:
            getter = p.functions.get(f"{mod}.__getattr__")
            if getter is not None and depth < MAX_DEPTH:
                # each read runs the module's __getattr__: what it reads, read here
                return [
                    StateUse(u.value, shown, u.environ, (fn.qualname,), getter.qualname, u.inner or u.shown)
                    for u in self.reads(getter, depth + 1)
                ]
            return []
        owner = qn.rpartition(".")[0] if len(v) == 1 else qn
        if owner in p.functions and (len(v) > 1 or qn not in p.functions):
            return [StateUse(v, shown, False, (fn.qualname,))]  # a function's attribute (`m13.offset`): state
        mro = self._class_attribute_mro(qn)
        if mro:
            # `Sub.scale` reads the attribute where the MRO finds it: a write on
            # any class from `Sub` up to its definer (`Base.scale = 10`,
            # `cls.scale = v`) changes what the read sees
            return [StateUse((GlobalRoot(k),) + tuple(v[1:]), shown, False, (fn.qualname,)) for k in mro]
        if p.is_module_level_variable(qn) or self._class_attribute(qn) or len(v) > 1:
            if len(v) > 1 and not (p.is_module_level_variable(qn) or self._class_attribute(qn)):
                return []  # an attribute of an external name (torch.version.cuda)
            return [StateUse(v, shown, False, (fn.qualname,))]
        return []

    def _class_attribute_mro(self, qn: str) -> list[str]:
        """For ``Owner.name`` with ``Owner`` a class of the tree whose MRO
        defines ``name`` as a class attribute: ``Owner.name`` and the same
        attribute of each class of the MRO up to the definer; else empty."""
        owner, _, name = qn.rpartition(".")
        if owner not in self.p.classes:
            return []
        out = []
        for k in self.p.mro(owner):
            ci = self.p.classes.get(k)
            if ci is None:
                return []
            if name in ci.methods:
                return []
            out.append(f"{k}.{name}")
            if name in ci.class_attrs or name in ci.fields:
                return out if len(out) > 1 else []  # defined on the owner itself: as before
        return []

    def _class_attribute(self, qn: str) -> bool:
        owner, _, name = qn.rpartition(".")
        ci = self.p.classes.get(owner)
        return ci is not None and (name in ci.class_attrs or name in ci.fields) and name not in ci.methods

    def mutable_container(self, qn: str) -> str | None:
        """The kind of builtin container (``dict``, ``list``, ``set``, ...) that
        module variable ``qn`` is bound to, by its value (``{}``, ``[]``,
        ``defaultdict(list)``) or its annotation (``OVERRIDES: dict = load()``);
        None for anything else (a constant, a tuple, a ``frozenset``, an object)."""
        p = self.p
        if not p.is_module_level_variable(qn):
            return None
        mod, _, name = qn.rpartition(".")
        fi = p.modules[mod]
        ann = fi.global_annotations.get(name)
        if ann is not None:
            a = dotted(ann[1] if ann[0] == "sub" else ann) or ""
            if a.rpartition(".")[2] in _MUTABLE_ANNOTATIONS:
                return {"Dict": "dict", "List": "list", "Set": "set"}.get(a.rpartition(".")[2], a.rpartition(".")[2])
        v = fi.globals.get(name)
        if v is None:
            return None
        if v[0] in ("dict", "list"):
            return v[0]
        if v[0] == "call":
            last = (dotted(v[1]) or "").rpartition(".")[2]
            if last in MUTABLE_CONTAINERS:
                return last
        return None

    def dependence(self, fn: FunctionInfo) -> Purity | None:
        """The first state ``fn`` (or an override a call of it may run instead,
        see ``Program.dispatch``) reads that the environment holds, that some
        code of the tree changes, or that is a public module-level mutable
        container (``OVERRIDES: dict = {}``, which code outside the analysed
        files may change in place: a private one, ``_TABLE``, changed by no
        code of the tree, is a constant table), as a non-pure :class:`Purity`
        naming both; None when every state it reads is left alone."""
        for g in self.p.dispatch(fn):
            dep = self._dependence(g)
            if dep is not None and g is not fn:
                reason = f"`{fn.qualname}` may run the override `{g.qualname}`: {dep.reason}"
                return Purity(False, reason, dep.state, (fn.qualname, *dep.via))
            if dep is not None:
                return dep
        return None

    def _dependence(self, fn: FunctionInfo) -> Purity | None:
        for u in self.reads(fn):
            text = f"`{u.shown}`"
            if u.getattr_of:
                text += f", which runs `{u.getattr_of}` on each read and so reads `{u.inner}`"
            chain = " calls ".join(f"`{q}`" for q in u.via) + (", which" if len(u.via) > 1 else "")
            if u.environ:
                reason = f"{chain} reads {text}, from the environment, which can change at run time"
                return Purity(False, reason, StateRead(StateKind.ENVIRON, u.shown), u.via)
            # a lazy getter's own fill (`if _x is None: _x = make()`) sets the
            # value before any read of its own: not a change its reads can see
            ch = [c for c in self.changes(u.value, tuple(u.shown.split("."))) if not (c.fills and c.where == u.via[-1])]
            if u.code:  # a function or class: changed by rebinding its name, not by writes to its attributes
                ch = [c for c in ch if len(flat(c.value)) <= len(flat(u.value))]
            if ch:
                c = ch[0]
                how = "rebinds" if c.rebinds else "changes in place"
                what = f"`{c.where}` {how} (line {c.line}: `{c.text}`)"
                reason = f"{chain} reads {text}, which {what}"
                return Purity(False, reason, StateRead(StateKind.MUTABLE, u.shown, what), u.via)
            root = u.value[0]
            if (
                len(u.value) == 1
                and isinstance(root, GlobalRoot)
                and not root.qualname.rpartition(".")[2].startswith("_")
            ):
                kind = self.mutable_container(root.qualname)
                if kind is not None:
                    what = f"may change: code outside the analysed files may change a public module {kind} in place"
                    reason = f"{chain} reads the module {kind} {text}, which {what}"
                    return Purity(False, reason, StateRead(StateKind.MUTABLE, u.shown, what), u.via)
        return None

    # ----- effects -------------------------------------------------------------------------------
    def effects(self, fn: FunctionInfo, depth: int = 0) -> tuple[Effect, ...]:
        """What ``fn`` changes, at each statement (or call) of its body.

        Its own assignments to attributes and items, augmented assignments,
        ``del``, rebinding of ``global`` names, in-place method calls
        (:func:`is_mutator`) on any value; and, for each call of a function of
        the tree (:data:`MAX_DEPTH` deep), what that function changes in its
        parameters, its object and module state, in ``fn``'s terms."""
        key = (fn.qualname, depth)
        hit = self._effects.get(key)
        if hit is not None:
            return hit
        self._effects[key] = ()  # recursion guard
        out: list[Effect] = []
        for a in fn.assigns:
            if a.kind in ("def", "import"):
                continue
            w = self.changed(fn, a.target)
            if w is not None:
                out.append(Effect(w, a.line, a.column, self._line(fn.path, a.line)))
        p = self.p
        for c in fn.calls:
            if c.is_read:
                continue
            if c.func[0] == "attr" and is_mutator(c.func[2]):
                w = self.value(fn, c.func[1])
                if w is not None:
                    out.append(Effect(w, c.line, c.column, self._line(fn.path, c.line)))
                continue
            if c.func[0] == "name" and c.func[1] in ("setattr", "delattr") and c.args:
                # `setattr(obj, "name", v)` rebinds `obj.name`; a computed name, any attribute of `obj`
                w = self.value(fn, c.args[0])
                if w is not None:
                    name = c.args[1] if len(c.args) > 1 else None
                    if name is not None and name[0] == "const" and isinstance(name[1], str):
                        w = self.p.attr_value(w, name[1])
                    out.append(Effect(w, c.line, c.column, self._line(fn.path, c.line)))
                continue
            if depth >= MAX_DEPTH:
                continue
            callee = p.call_callee(fn, c)
            g0 = p.callee_function(callee) if callee is not None else None
            if g0 is None or g0 is fn:
                continue
            for g in p.dispatch(g0):  # an override's change is the call's change
                for e in self.effects(g, depth + 1):
                    w = self._map(fn, c, g, e.value)
                    if w is not None:
                        out.append(Effect(w, c.line, c.column, self._line(fn.path, c.line), e.via or g.qualname))
        result = tuple(out)
        self._effects[key] = result
        return result

    def _map(self, fn: FunctionInfo, c, g: FunctionInfo, v: tuple) -> tuple | None:
        """A value in callee ``g``'s terms, as ``fn`` (making call ``c``) sees it."""
        root = v[0]
        if isinstance(root, GlobalRoot):
            return v
        if isinstance(root, SelfRoot):
            if g.name in CONSTRUCTORS:
                return None  # the new object: nobody had it before
            if c.func[0] != "attr":
                return None
            base = self.value(fn, c.func[1])
            return None if base is None else base + tuple(v[1:])
        if isinstance(root, ParamRoot) and root.function == g.qualname:
            arg = _argument(g, c, root.name)
            if arg is None:
                return None
            base = self.value(fn, arg)
            return None if base is None else base + tuple(v[1:])
        if isinstance(root, ParamRoot) and _encloses(root.function, g.qualname) and _within(fn.qualname, root.function):
            # a nested function or lambda changing a variable it captured
            # (`def bump(): ids.append(7)`): the caller's own variable
            return v
        return None


def _argument(g: FunctionInfo, c, name: str):
    """The expression call ``c`` passes for parameter ``name`` of ``g``, or None."""
    for kw, v in c.kwargs:
        if kw == name:
            return v
    positional = [q for q in g.params if q.kind == "pos"]
    if g.self_name is not None and positional and positional[0].name == g.self_name:
        if c.func[0] != "attr":
            return None
        positional = positional[1:]
    for i, q in enumerate(positional):
        if q.name == name and i < len(c.args):
            a = c.args[i]
            return None if a == ("?",) else a
    return None


def _encloses(outer: str, inner: str) -> bool:
    """Function ``inner`` is defined inside function ``outer`` (at any depth)."""
    return inner.startswith(outer + ".<locals>.")


def _within(qualname: str, outer: str) -> bool:
    """``qualname`` is function ``outer`` or one defined inside it."""
    return qualname == outer or _encloses(outer, qualname)
