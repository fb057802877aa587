"""Stage 3a: the whole program: names, classes, symbolic values and types.

The per-file indexes are joined into one :class:`Program` that resolves names
across modules (following imports and re-exports), builds class hierarchies,
and evaluates expressions to *canonical symbolic values* so that different
spellings of the same object compare equal. A value is a tuple
``(root, attr, attr, ...)`` whose root is one of the records of
:mod:`cachelint.semantic.values`:

    SelfRoot(cls)              the instance ``self`` of class ``cls``
    ParamRoot(function, name)  a parameter of a function
    GlobalRoot(qualname)       a module-level object, function, class or module
    ConstRoot(value)           a constant
    CallRoot(callee, args)     the result of a call; keyword arguments are
                               ``KwArg(name, value)`` after the positional ones

Aliases are unfolded: a local assigned once (``model_config =
self.model_config``), an attribute the class binds exactly once and
unconditionally in its constructor (``self.registry = REGISTRY``,
``self.model_config = config.model_config``), and a constructor parameter
stored on ``self`` (``config`` and ``self.config`` are one value). So
``self.registry.lookup(model_config)`` and
``REGISTRY.lookup(self.config.model_config)`` evaluate to the same callee and
the same argument.

Types come from annotations (parameters, dataclass fields, class-level
annotations, return annotations, string annotations included), constructor
calls and constructor bindings. Nothing is imported or executed.
"""

from __future__ import annotations

import ast
import builtins
import sys

from ..files import read_bytes
from ..index.expr import _last_name, conv, dotted
from ..index.records import ClassInfo, FileIndex, FunctionInfo
from .idioms import DEFAULT_DECORATORS, CacheDecorators, is_cached_function
from .values import CallRoot, ConstRoot, GlobalRoot, KwArg, ParamRoot, SelfRoot

Value = tuple
CONSTRUCTORS = ("__init__", "__post_init__")
MODULE_CODE = "<module>"  # the name of the function that stands for a module's top-level code
_BUILTIN_NAMES = frozenset(dir(builtins))
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ()))
_ALIAS_KINDS = ("assign", "annassign", "walrus")
_ANY = object()  # a key that is not a constant: any entry
# overrides followed from a call on an object typed by its base (see call_targets)
MAX_OVERRIDES = 12
# functions that call the functions passed to them
_HIGHER_ORDER = frozenset(
    {
        "builtins.map",
        "builtins.filter",
        "builtins.sorted",
        "builtins.min",
        "builtins.max",
        "functools.reduce",
        "itertools.starmap",
        "itertools.filterfalse",
        "itertools.takewhile",
        "itertools.dropwhile",
        "itertools.groupby",
        "itertools.accumulate",
    }
)
_STORE_METHODS = frozenset({"update", "append", "add", "setdefault"})
# builtins that call a dunder method of their argument
_BUILTIN_DUNDERS = {
    "builtins.len": "__len__",
    "builtins.iter": "__iter__",
    "builtins.next": "__next__",
    "builtins.str": "__str__",
    "builtins.repr": "__repr__",
    "builtins.hash": "__hash__",
    "builtins.bool": "__bool__",
    "builtins.abs": "__abs__",
    "builtins.reversed": "__reversed__",
    "builtins.format": "__format__",
    "builtins.int": "__int__",
    "builtins.float": "__float__",
}


def _last(d) -> str | None:
    return _last_name(d)


def is_stub(f: FunctionInfo) -> bool:
    """A method with no behaviour of its own: ``@abstractmethod``, or a body
    of ``pass``, ``...``, a docstring or ``raise NotImplementedError``."""
    if any(_last(d) == "abstractmethod" for d in f.decorators):
        return True
    if f.returns or f.assigns:
        return False
    return all(_last_name(c.func) == "NotImplementedError" for c in f.calls)


def _is_overload(f: FunctionInfo) -> bool:
    return any((dotted(d) or "").rpartition(".")[2] == "overload" for d in f.decorators)


def _c3_merge(seqs: list[list[str]]) -> list[str] | None:
    out: list[str] = []
    seqs = [s for s in seqs if s]
    while seqs:
        for s in seqs:
            head = s[0]
            if not any(head in t[1:] for t in seqs):
                break
        else:
            return None
        out.append(head)
        seqs = [t[1:] if t[0] == head else t for t in seqs]
        seqs = [t for t in seqs if t]
    return out


# calls whose result is an object of their first argument's class
_COPY_CALLS = frozenset({"copy.copy", "copy.deepcopy", "dataclasses.replace"})


class FunctionContext:
    """Name binding facts of one function body, evaluated lazily."""

    __slots__ = ("_memo", "f", "locals", "module", "params", "parent", "program", "self_class", "self_name")

    def __init__(self, program: Program, f: FunctionInfo, self_class: str | None) -> None:
        self.program = program
        self.f = f
        self.self_class = self_class
        self.module = program.modules_by_path.get(f.path)
        self.self_name = f.self_name
        self.params = {p.name: p for p in f.params}
        locs: dict = {}
        for a in f.assigns:
            if a.target[0] == "name":
                locs.setdefault(a.target[1], []).append(a)
        self.locals = locs
        self._memo: dict = {}
        self.parent = None
        enclosing = f.parent_function
        if enclosing is None and f.class_qualname is not None:
            # methods of a class defined inside a function see that function's names
            c = program.classes.get(f.class_qualname)
            enclosing = c.parent_function if c is not None else None
        if enclosing and enclosing in program.functions:
            pf = program.functions[enclosing]
            self.parent = program.context(pf, pf.class_qualname)

    def is_constructor(self) -> bool:
        return self.f.name in CONSTRUCTORS and self.self_class is not None


class Program:
    def __init__(
        self,
        indexes: list[FileIndex],
        cache_decorators: CacheDecorators | None = None,
        sources: dict[str, bytes] | None = None,
    ) -> None:
        self.indexes = indexes
        # which decorators memoize (configuration and presets: `cache-decorators`)
        self.cache_decorators = cache_decorators or DEFAULT_DECORATORS
        # files whose analysed content is held in memory, not on disk (a
        # fix pass's output under --diff): path -> the bytes --fix would write
        self._overlay = sources or {}
        self.modules: dict[str, FileIndex] = {}
        self.modules_by_path: dict[str, FileIndex] = {}
        self.functions: dict[str, FunctionInfo] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.imported_modules: set[str] = set()
        for fi in indexes:
            self.modules_by_path[fi.path] = fi
            if fi.module and fi.module not in self.modules:
                self.modules[fi.module] = fi
            for f in fi.functions:
                old = self.functions.setdefault(f.qualname, f)
                if old is not f and _is_overload(old) and not _is_overload(f):
                    self.functions[f.qualname] = f  # the implementation behind @overload stubs
            for c in fi.classes:
                self.classes.setdefault(c.qualname, c)
            for local in fi.module_imports:
                self.imported_modules.add(fi.imports[local])
        self._add_namespace_aliases(indexes)
        self._contexts: dict = {}
        self._mro: dict = {}
        self._writers: dict | None = None
        self._self_attr_memo: dict = {}
        self._self_writers_memo: dict = {}
        self._self_writers_index: dict | None = None
        self._type_memo: dict = {}
        self._in_progress: set = set()
        self._subclasses: dict | None = None
        self._callees: dict = {}
        self._module_functions: dict = {}
        self._returns_memo: dict = {}
        self._protocol_impls: dict = {}
        self._stores: dict | None = None
        self._is_protocol: dict = {}
        self._opaque_args: set = set()  # (id(call), target): see passes_arguments
        self._bindings: dict = {}

    def source_bytes(self, path: str) -> bytes:
        """The bytes of the file as analysed (raises OSError if unreadable):
        every stage that reads source text past the index reads it here."""
        data = self._overlay.get(path)
        return data if data is not None else read_bytes(path)

    def _add_namespace_aliases(self, indexes: list[FileIndex]) -> None:
        """Also know a module of a namespace directory (no ``__init__.py``) by
        its name relative to that directory: code that puts such a directory
        on ``sys.path`` imports ``interface`` for
        ``vllm.third_party.fmha_sm100.cute.interface``. Only names that one
        module alone would take, that no module of the tree has, and that do
        not start with a standard-library module's name."""
        packages = {fi.module for fi in indexes if fi.is_package and fi.module}
        claims: dict[str, list[FileIndex]] = {}
        for fi in indexes:
            parts = fi.module.split(".") if fi.module else []
            for i in range(len(parts) - 1, 0, -1):
                if ".".join(parts[:i]) not in packages:
                    claims.setdefault(".".join(parts[i:]), []).append(fi)
                    break
        for alias, fis in claims.items():
            if len(fis) == 1 and alias not in self.modules and alias.split(".")[0] not in _STDLIB:
                self.modules[alias] = fis[0]

    def is_cached(self, f: FunctionInfo) -> bool:
        """Whether a memoizing decorator wraps ``f``: its body runs once per
        arguments, not per call (see :mod:`cachelint.semantic.idioms`)."""
        return is_cached_function(f, self.cache_decorators)

    # ----- names -------------------------------------------------------------
    def context(self, f: FunctionInfo, self_class: str | None = None) -> FunctionContext:
        if self_class is None:
            self_class = f.class_qualname
        key = (f.qualname, self_class if f.name != MODULE_CODE else MODULE_CODE)
        ctx = self._contexts.get(key)
        if ctx is None:
            ctx = FunctionContext(self, f, self_class)
            self._contexts[key] = ctx
        return ctx

    def resolve_name(self, module: str, name: str, depth: int = 0) -> str | None:
        """The qualified name a module-level ``name`` of ``module`` refers to."""
        fi = self.modules.get(module)
        if fi is None or depth > 12:
            return None
        if name in fi.defs:
            return fi.defs[name]
        if name in fi.imports:
            return self.resolve_qualified(fi.imports[name], depth + 1)
        if name in fi.globals or name in fi.global_annotations:
            return f"{module}.{name}" if module else name
        for star in fi.star_imports:
            r = self.resolve_name(star, name, depth + 1)
            if r is not None:
                return r
        if name in _BUILTIN_NAMES:
            return f"builtins.{name}"
        return None

    def resolve_qualified(self, qn: str, depth: int = 0) -> str:
        """Follow re-exports to the defining qualified name."""
        if qn in self.modules or qn in self.functions or qn in self.classes or depth > 12:
            return qn
        mod, _, name = qn.rpartition(".")
        if mod in self.modules:
            r = self.resolve_name(mod, name, depth + 1)
            if r is not None:
                return r
        elif mod and depth < 12:
            base = self.resolve_qualified(mod, depth + 1)
            if base != mod:
                return self.resolve_qualified(f"{base}.{name}", depth + 1)
        return qn

    def is_module_level_variable(self, qn: str) -> bool:
        mod, _, name = qn.rpartition(".")
        fi = self.modules.get(mod)
        return fi is not None and (name in fi.globals or name in fi.global_annotations) and name not in fi.defs

    # ----- classes -------------------------------------------------------------
    def class_bases(self, c: ClassInfo) -> list[str]:
        out = []
        for b in c.bases:
            qn = None
            if c.parent_function and b[0] == "name" and c.parent_function in self.functions:
                ctx = self.context(self.functions[c.parent_function])
                v = self.canon(b, ctx)
                if v is not None and len(v) == 1 and isinstance(v[0], GlobalRoot):
                    qn = v[0].qualname
            else:
                d = dotted(b)
                if d is not None:
                    head, _, rest = d.partition(".")
                    r = self.resolve_name(c.module, head)
                    if r is not None:
                        qn = self.resolve_qualified(f"{r}.{rest}" if rest else r)
            if qn is None and b[0] == "sub":  # Generic[T], Base[int]
                d = dotted(b[1])
                if d is not None:
                    head, _, rest = d.partition(".")
                    r = self.resolve_name(c.module, head)
                    if r is not None:
                        qn = self.resolve_qualified(f"{r}.{rest}" if rest else r)
            if qn is not None:
                out.append(qn)
        return out

    def mro(self, class_qn: str) -> list[str]:
        """The method resolution order (C3, as Python computes it; the bases
        outside the tree are kept, without their own bases)."""
        m = self._mro.get(class_qn)
        if m is not None:
            return m
        self._mro[class_qn] = [class_qn]  # cycle guard
        c = self.classes.get(class_qn)
        out = [class_qn]
        if c is not None:
            bases = self.class_bases(c)
            seqs = [list(self.mro(b)) for b in bases] + [list(bases)]
            merged = _c3_merge(seqs)
            if merged is None:  # no consistent order (Python would refuse the class): depth first
                merged = []
                for b in bases:
                    for x in self.mro(b):
                        if x not in merged:
                            merged.append(x)
            out.extend(x for x in merged if x != class_qn)
        self._mro[class_qn] = out
        return out

    def is_subclass(self, a: str, b: str) -> bool:
        return b in self.mro(a)

    def subclasses(self, class_qn: str) -> list[str]:
        if self._subclasses is None:
            subs: dict = {}
            for qn in self.classes:
                for base in self.mro(qn)[1:]:
                    subs.setdefault(base, []).append(qn)
            self._subclasses = subs
        return self._subclasses.get(class_qn, [])

    def lookup_method(self, class_qn: str, name: str) -> FunctionInfo | None:
        for qn in self.mro(class_qn):
            c = self.classes.get(qn)
            if c is not None and name in c.methods:
                return self.functions.get(c.methods[name])
        return None

    def constructors(self, class_qn: str) -> list[FunctionInfo]:
        out = []
        for qn in self.mro(class_qn):
            c = self.classes.get(qn)
            if c is None:
                continue
            for n in CONSTRUCTORS:
                if n in c.methods and c.methods[n] in self.functions:
                    out.append(self.functions[c.methods[n]])
        return out

    def is_dataclass(self, class_qn: str) -> bool:
        c = self.classes.get(class_qn)
        if c is None:
            return False
        for d in c.decorators:
            d0 = d[1] if d[0] == "call" else d
            name = dotted(d0) or ""
            if name.split(".")[-1] in ("dataclass", "config", "define", "frozen", "attrs"):
                return True
        return False

    # ----- attribute writers ------------------------------------------------------
    def writers(self, attr: str) -> list:
        """Every ``<expr>.attr = ...`` in the program: (function, Assign)."""
        if self._writers is None:
            w: dict = {}
            for f in self.functions.values():
                for a in f.assigns:
                    if a.target[0] == "attr":
                        w.setdefault(a.target[2], []).append((f, a))
            self._writers = w
        return self._writers.get(attr, [])

    def self_attr_writers(self, class_qn: str, attr: str) -> list:
        """Writers of ``self.attr`` in the methods of ``class_qn``'s MRO."""
        key = (class_qn, attr)
        out = self._self_writers_memo.get(key)
        if out is None:
            by_class = self._self_writers_by_class().get(attr)
            hits = []
            if by_class:
                for qn in self.mro(class_qn):
                    hits.extend(by_class.get(qn, ()))
            hits.sort(key=lambda h: h[0])  # program order, as a scan of writers() gives
            out = [(f, a) for _, f, a in hits]
            self._self_writers_memo[key] = out
        return list(out)

    def _self_writers_by_class(self) -> dict:
        """attr -> class qualname -> [(order, method, Assign)] for ``self.attr = ...``."""
        if self._self_writers_index is None:
            idx: dict = {}
            n = 0
            for f in self.functions.values():
                sn = f.self_name
                if f.class_qualname is None or not sn:
                    continue
                me = ("name", sn)
                for a in f.assigns:
                    t = a.target
                    if t[0] == "attr" and t[1] == me:
                        idx.setdefault(t[2], {}).setdefault(f.class_qualname, []).append((n, f, a))
                        n += 1
            self._self_writers_index = idx
        return self._self_writers_index

    def self_attr_value(self, class_qn: str, attr: str, depth: int) -> Value:
        """Canonical value of ``self.attr`` on an instance of ``class_qn``."""
        key = (class_qn, attr)
        if key in self._self_attr_memo:
            return self._self_attr_memo[key]
        opaque = (SelfRoot(class_qn), attr)
        if key in self._in_progress or depth > 8:
            return opaque
        self._in_progress.add(key)
        try:
            ws = self.self_attr_writers(class_qn, attr)
            result = opaque
            if len(ws) == 1:
                f, a = ws[0]
                if f.name in CONSTRUCTORS and not a.guard and not a.in_loop and a.kind in ("assign", "annassign"):
                    ctx = self.context(f, class_qn)
                    v = self.canon(a.value, ctx, depth + 1)
                    if v is not None and not isinstance(v[0], CallRoot):
                        result = v
        finally:
            self._in_progress.discard(key)
        self._self_attr_memo[key] = result
        return result

    def param_self_alias(self, ctx: FunctionContext, name: str) -> str | None:
        """In a constructor: the attribute that stores parameter ``name``."""
        if not ctx.is_constructor() or ctx.self_class is None:  # a constructor has a class: for the type checker
            return None
        best = None
        for a in ctx.f.assigns:
            if (
                a.kind in ("assign", "annassign")
                and a.value == ("name", name)
                and a.target[0] == "attr"
                and a.target[1] == ("name", ctx.self_name)
                and not a.guard
            ):
                ws = self.self_attr_writers(ctx.self_class, a.target[2])
                if len(ws) == 1 and (best is None or a.line < best[0]):
                    best = (a.line, a.target[2])
        return best[1] if best else None

    # ----- symbolic evaluation -------------------------------------------------
    def call_callee(self, f: FunctionInfo, c) -> Value | None:
        """``canon(c.func)`` in the context of ``f``, the function making call
        ``c``; once per call: the hot-path walk, CL002, the cost walks and the
        cache-site scans ask it of the same calls."""
        hit = self._callees.get(id(c))
        if hit is not None and hit[0] is c and hit[1] is f:
            return hit[2]
        v = self.canon(c.func, self.context(f))
        self._callees[id(c)] = (c, f, v)  # holding c: its id is not reused
        return v

    def canon(self, e, ctx: FunctionContext | None, depth: int = 0) -> Value | None:
        if depth > 14 or e is None:
            return None
        k = e[0]
        if k == "name":
            return self._canon_name(e[1], ctx, depth)
        if k == "attr":
            base = self.canon(e[1], ctx, depth + 1)
            if base is None:
                return None
            return self._attr(base, e[2], depth)
        if k == "const":
            return (ConstRoot(e[1]),)
        if k == "call":
            callee = self.canon(e[1], ctx, depth + 1)
            if callee is None:
                return None
            args = tuple(self.canon(a, ctx, depth + 1) for a in e[2])
            kwargs = tuple((n, self.canon(v, ctx, depth + 1)) for n, v in e[3])
            if any(a is None for a in args) or any(v is None for _, v in kwargs):
                return None
            return (CallRoot(callee, args + tuple(KwArg(n, v) for n, v in kwargs)),)
        if k == "def":
            return (GlobalRoot(e[1]),)
        return None

    def attr_value(self, base: Value, attr: str) -> Value:
        """The canonical value of attribute ``attr`` of canonical value ``base``."""
        return self._attr(base, attr, 0)

    def _attr(self, base: Value, attr: str, depth: int) -> Value:
        root = base[0]
        if len(base) == 1 and isinstance(root, SelfRoot):
            return self.self_attr_value(root.cls, attr, depth + 1)
        if len(base) == 1 and isinstance(root, GlobalRoot) and not self.is_module_level_variable(root.qualname):
            # a namespace: module, class, or external name
            return (GlobalRoot(self.resolve_qualified(f"{root.qualname}.{attr}")),)
        return base + (attr,)

    def _canon_name(self, name: str, ctx: FunctionContext | None, depth: int) -> Value | None:
        if ctx is None:
            return None
        memo = ctx._memo
        if name in memo:
            return memo[name]
        memo[name] = None  # recursion guard
        v = self._canon_name_uncached(name, ctx, depth)
        memo[name] = v
        return v

    def _canon_name_uncached(self, name: str, ctx: FunctionContext, depth: int) -> Value | None:
        f = ctx.f
        if name in f.global_names:
            return self._module_name(name, ctx)
        local = ctx.locals.get(name)
        if name in ctx.params:
            if local:  # parameter rebound in the body
                return None
            if name == ctx.self_name and ctx.self_class:
                return (SelfRoot(ctx.self_class),)
            alias = self.param_self_alias(ctx, name)
            if alias is not None and ctx.self_class is not None:  # an alias is only found in a class
                return (SelfRoot(ctx.self_class), alias)
            return (ParamRoot(f.qualname, name),)
        if local:
            if len(local) == 1:
                a = local[0]
                if a.kind in _ALIAS_KINDS and not a.in_loop:
                    return self.canon(a.value, ctx, depth + 1)
                if a.kind == "def":
                    return (GlobalRoot(a.value[1]),)
                if a.kind == "import" and not a.in_loop:
                    return (GlobalRoot(self.resolve_qualified(a.value[1])),)
            return None
        if ctx.parent is not None:
            return self._canon_name(name, ctx.parent, depth + 1)
        return self._module_name(name, ctx)

    def _module_name(self, name: str, ctx: FunctionContext) -> Value | None:
        fi = ctx.module
        if fi is None:
            return None
        qn = self.resolve_name(fi.module, name)
        if qn is None:
            return None
        return (GlobalRoot(qn),)

    # ----- types -----------------------------------------------------------------
    def resolve_annotation(self, ann, module: str, depth: int = 0) -> str | None:
        if ann is None or depth > 6:
            return None
        k = ann[0]
        if k == "const" and isinstance(ann[1], str):
            try:
                node = ast.parse(ann[1], mode="eval").body
            except SyntaxError:
                return None
            return self.resolve_annotation(conv(node), module, depth + 1)
        if k in ("name", "attr"):
            d = dotted(ann)
            if d is None:
                return None
            head, _, rest = d.partition(".")
            r = self.resolve_name(module, head)
            if r is None:
                return None
            qn = self.resolve_qualified(f"{r}.{rest}" if rest else r)
            if qn.startswith("builtins.") or qn in self.modules:
                return None
            if qn not in self.classes and self.is_module_level_variable(qn):
                return self._annotation_alias(qn, depth)
            return qn
        if k == "sub":
            base = dotted(ann[1]) or ""
            last = base.split(".")[-1]
            if last == "Optional":
                return self.resolve_annotation(ann[2], module, depth + 1)
            if last == "Union" and ann[2][0] == "tuple":
                members = [m for m in ann[2][1] if m != ("const", None) and m != ("name", "None")]
                if len(members) == 1:
                    return self.resolve_annotation(members[0], module, depth + 1)
            if last in ("Final", "ClassVar", "Annotated"):
                inner = ann[2][1][0] if ann[2][0] == "tuple" else ann[2]
                return self.resolve_annotation(inner, module, depth + 1)
            # a generic class of the tree with its type arguments: Box[Layer] is a Box
            g = self.resolve_annotation(ann[1], module, depth + 1) if ann[1][0] in ("name", "attr") else None
            return g if g is not None and g in self.classes else None
        if k == "or":
            members = [m for m in ann[1] if m != ("const", None) and m != ("name", "None")]
            if len(members) == 1:
                return self.resolve_annotation(members[0], module, depth + 1)
        return None

    def _annotation_alias(self, qn: str, depth: int) -> str | None:
        """The class a module variable used as an annotation stands for: a
        ``TypeVar`` bound (or its only constraint), or a type alias ``A = C``."""
        mod, _, name = qn.rpartition(".")
        fi = self.modules.get(mod)
        e = fi.globals.get(name) if fi is not None else None
        if e is None:
            return None
        if e[0] in ("name", "attr", "sub"):
            return self.resolve_annotation(e, mod, depth + 1)
        if e[0] == "call" and (dotted(e[1]) or "").rpartition(".")[2] == "TypeVar":
            for k, b in e[3]:
                if k == "bound":
                    return self.resolve_annotation(b, mod, depth + 1)
            if len(e[2]) == 2:  # TypeVar("T", C): one constraint
                return self.resolve_annotation(e[2][1], mod, depth + 1)
        return None

    def type_of(self, v: Value | None, depth: int = 0) -> str | None:
        """Class qualified name of the object ``v`` denotes, when known."""
        if v is None or depth > 8:
            return None
        if v in self._type_memo:
            return self._type_memo[v]
        self._type_memo[v] = None
        t = self._type_of(v, depth)
        self._type_memo[v] = t
        return t

    def _type_of(self, v: Value, depth: int) -> str | None:
        root = v[0]
        if len(v) == 1:
            if isinstance(root, SelfRoot):
                return root.cls
            if isinstance(root, ParamRoot):
                f = self.functions.get(root.function)
                if f is None:
                    return None
                for p in f.params:
                    if p.name == root.name:
                        t = self.resolve_annotation(p.annotation, f.module)
                        if t is None and p.default is not None and p.default[0] == "name":
                            dv = self.canon(p.default, self.context(f))
                            t = self.type_of(dv, depth + 1) if dv is not None else None
                        return t
                return None
            if isinstance(root, GlobalRoot):
                qn = root.qualname
                mod, _, name = qn.rpartition(".")
                fi = self.modules.get(mod)
                if fi is None:
                    return None
                if name in fi.global_annotations:
                    t = self.resolve_annotation(fi.global_annotations[name], mod)
                    if t:
                        return t
                val = fi.globals.get(name)
                g = self.global_value(qn) if val is not None and val[0] != "call" else None
                if g is not None and g != v:
                    return self.type_of(g, depth + 1)
                if val is not None and val[0] == "call":
                    callee = self._module_value(val[1], mod)
                    if callee is not None and len(callee) == 1 and isinstance(callee[0], GlobalRoot):
                        cq = callee[0].qualname
                        if cq in self.classes:
                            return cq
                        fn = self.functions.get(cq)
                        if fn is not None:
                            return self.return_type(fn, depth + 1)
                return None
            if isinstance(root, CallRoot):
                callee = root.callee
                if len(callee) == 1 and isinstance(callee[0], GlobalRoot):
                    cq = callee[0].qualname
                    if cq in self.classes:
                        return cq
                    if cq in _COPY_CALLS:  # copy.copy(x), dataclasses.replace(x, ...): x's class
                        first = next((a for a in root.args if not isinstance(a, KwArg)), None)
                        return self.type_of(first, depth + 1) if first is not None else None
                cls = self.cls_param_class(callee[0]) if len(callee) == 1 else None
                if cls is not None:  # cls(...) in a classmethod
                    return cls
                fn = self.callee_function(callee)
                if fn is not None:
                    if fn.name == "__init__" and fn.class_qualname is not None and callee[-1] != "__init__":
                        # a class constructed through an alias: `make = Cls; make()`
                        return fn.class_qualname
                    return self.return_type(fn, depth + 1)
                return None
            return None
        owner = self.type_of(v[:-1], depth + 1)
        if owner is None:
            return None
        return self.attr_type(owner, v[-1], depth + 1)

    def _module_value(self, e, module: str) -> Value | None:
        d = dotted(e)
        if d is None:
            return None
        head, _, rest = d.partition(".")
        r = self.resolve_name(module, head)
        if r is None:
            return None
        return (GlobalRoot(self.resolve_qualified(f"{r}.{rest}" if rest else r)),)

    def attr_type(self, class_qn: str, attr: str, depth: int = 0) -> str | None:
        for qn in self.mro(class_qn):
            c = self.classes.get(qn)
            if c is None:
                continue
            if attr in c.fields:
                g = self.generic_argument(class_qn, c.fields[attr], c.module)
                return g if g is not None else self.resolve_annotation(c.fields[attr], c.module)
            if attr in c.methods:
                m = self.functions.get(c.methods[attr])
                if m is not None and any((dotted(d) or "").endswith("property") for d in m.decorators):
                    return self.return_type(m, depth + 1)
                return None
        for f, a in self.self_attr_writers(class_qn, attr):
            if a.kind == "annassign":
                pass
            ctx = self.context(f, class_qn)
            if a.value and a.value[0] == "name" and a.value[1] in ctx.params:
                p = ctx.params[a.value[1]]
                t = self.generic_argument(class_qn, p.annotation, f.module) if p.annotation else None
                t = t or self.resolve_annotation(p.annotation, f.module)
                if t:
                    return t
            v = self.canon(a.value, ctx)
            if v is not None and v != (SelfRoot(class_qn), attr):
                t = self.type_of(v, depth + 1)
                if t:
                    return t
        return None

    def typevar(self, ann, module: str) -> str | None:
        """The qualified name of the ``TypeVar`` an annotation names, if it is one."""
        if ann is None or ann[0] != "name":
            return None
        qn = self.resolve_name(module, ann[1])
        if qn is None or qn in self.classes:
            return None
        mod, _, name = qn.rpartition(".")
        fi = self.modules.get(mod)
        e = fi.globals.get(name) if fi is not None else None
        return qn if e is not None and e[0] == "call" and (dotted(e[1]) or "").rpartition(".")[2] == "TypeVar" else None

    def type_parameters(self, class_qn: str) -> list[str]:
        """The TypeVars of a generic class, in order (from ``Generic[T]``, ``Base[T]`` among its bases)."""
        c = self.classes.get(class_qn)
        out: list[str] = []
        if c is None:
            return out
        for b in c.bases:
            if b[0] != "sub":
                continue
            for a in b[2][1] if b[2][0] == "tuple" else (b[2],):
                tv = self.typevar(a, c.module)
                if tv is not None and tv not in out:
                    out.append(tv)
        return out

    def generic_argument(self, class_qn: str, ann, module: str) -> str | None:
        """For an annotation that is a TypeVar of a generic base: the class
        that ``class_qn`` (or a class between it and that base) binds it to,
        ``class P(Base[Info])`` binding ``Base``'s ``T`` to ``Info``, through
        intermediate generic bases (``class B(Base[U])``, ``class P(B[Info])``)."""
        tv = self.typevar(ann, module)
        if tv is None:
            return None
        return self.type_bindings(class_qn).get(tv)

    def type_bindings(self, class_qn: str) -> dict:
        """TypeVar -> class, as ``class_qn`` and its bases bind them (most derived first)."""
        hit = self._bindings.get(class_qn)
        if hit is not None:
            return hit
        subst: dict = {}
        for qn in self.mro(class_qn):
            c = self.classes.get(qn)
            if c is None:
                continue
            for b in c.bases:
                if b[0] != "sub" or b[1][0] not in ("name", "attr"):
                    continue
                head = self.resolve_annotation(b[1], c.module)
                if head is None or head not in self.classes:
                    continue
                params = self.type_parameters(head)
                args = b[2][1] if b[2][0] == "tuple" else (b[2],)
                for p, a in zip(params, args):
                    inner = self.typevar(a, c.module)
                    if inner is not None:
                        val = subst.get(inner)
                    else:
                        val = self.resolve_annotation(a, c.module)
                        val = val if val is not None and val in self.classes else None
                    if val is not None:
                        subst.setdefault(p, val)
        self._bindings[class_qn] = subst
        return subst

    def callee_function(self, callee: Value | None, depth: int = 0) -> FunctionInfo | None:
        """The in-tree function a canonical callee value calls, if known: the
        one function the call dispatches to on the type cachelint knows (see
        :meth:`callee_targets` for the overrides it may also reach)."""
        if callee is None or depth > 6:
            return None
        root = callee[0]
        if len(callee) == 1:
            if isinstance(root, GlobalRoot):
                qn = root.qualname
                f = self.functions.get(qn)
                if f is not None:
                    return f
                if qn in self.classes:
                    return self.lookup_method(qn, "__init__")
                v = self.global_value(qn)
                if v is not None:  # a module variable bound once: `handler = impl`, `p = partial(f, x)`
                    return self.callee_function(v, depth + 1)
                owner, _, attr = qn.rpartition(".")
                if owner in self.classes:  # Sub.method, inherited from a base
                    return self.lookup_method(owner, attr)
                return None
            if isinstance(root, CallRoot):
                fn = self.returned_function(root, depth + 1)
                if fn is not None:
                    return fn
            cls = self.cls_param_class(root)
            if cls is not None:  # cls(...) in a classmethod constructs an instance
                return self.lookup_method(cls, "__init__")
            t = self.type_of(callee)
            if t is not None and t in self.classes:  # calling an instance runs its __call__
                return self.lookup_method(t, "__call__")
            return None
        base = callee[:-1]
        if len(base) == 1:
            cls = self.cls_param_class(base[0])
            if cls is not None:  # cls.method() in a classmethod
                return self.lookup_method(cls, callee[-1])
        t = self.type_of(base)
        if t is not None and t in self.classes:
            m = self.lookup_method(t, callee[-1])
            if m is not None:
                return m
            # a callable stored in an attribute: `self.fn = helper`, then `self.fn()`
            a = self.attr_callable(t, callee[-1], depth + 1)
            if a is not None:
                return a
        if len(base) == 1 and isinstance(root, SelfRoot):
            return None
        v = self.canon_attr_value(callee)
        if v is not None and v != callee:
            return self.callee_function(v, depth + 1)
        return None

    def canon_attr_value(self, v: Value) -> Value | None:
        """``obj.attr`` unfolded when ``obj`` is a module variable bound once to a known value."""
        if len(v) >= 2 and isinstance(v[0], GlobalRoot):
            g = self.global_value(v[0].qualname)
            if g is not None:
                out = g
                for a in v[1:]:
                    out = self._attr(out, a, 0)
                return out
        return None

    def global_value(self, qn: str) -> Value | None:
        """The value of a module-level variable bound once, at module level, to an expression cachelint evaluates."""
        mod, _, name = qn.rpartition(".")
        fi = self.modules.get(mod)
        if fi is None or name in fi.defs or name not in fi.globals:
            return None
        e = fi.globals[name]
        if e is None:
            return None
        mf = self.module_function(mod)
        if mf is None:
            return None
        key = ("global", qn)
        if key in self._in_progress:
            return None
        self._in_progress.add(key)
        try:
            return self.canon(e, self.context(mf))
        finally:
            self._in_progress.discard(key)

    def cls_param_class(self, root) -> str | None:
        """The class of ``cls``, the first parameter of a classmethod (or of ``__new__``)."""
        if not isinstance(root, ParamRoot):
            return None
        f = self.functions.get(root.function)
        if f is None or f.class_qualname is None or not f.params or f.params[0].name != root.name:
            return None
        if f.name == "__new__" or any(_last(d) == "classmethod" for d in f.decorators):
            return f.class_qualname
        return None

    def attr_callable(self, class_qn: str, attr: str, depth: int) -> FunctionInfo | None:
        """The function stored in ``self.attr`` by every writer of the class, when they all store the same one."""
        ws = self.self_attr_writers(class_qn, attr)
        found = None
        for f, a in ws:
            if a.kind not in ("assign", "annassign"):
                return None
            v = self.canon(a.value, self.context(f, class_qn))
            fn = self.callee_function(v, depth + 1) if v is not None and v != (SelfRoot(class_qn), attr) else None
            if fn is None or (found is not None and fn is not found):
                return None
            found = fn
        return found

    def returned_function(self, root: CallRoot, depth: int) -> FunctionInfo | None:
        """What calling the result of a call runs: the function a
        ``functools.partial`` wraps, or the one function a factory returns."""
        callee = root.callee
        if len(callee) == 1 and isinstance(callee[0], GlobalRoot) and callee[0].qualname == "functools.partial":
            if root.args and not isinstance(root.args[0], KwArg):
                return self.callee_function(root.args[0], depth + 1)
            return None
        fn = self.callee_function(callee, depth + 1)
        if fn is None or fn.is_async or not fn.returns:
            return None
        found = None
        ctx = self.context(fn)
        for r in fn.returns:
            v = self.canon(r, ctx)
            g = self.callee_function(v, depth + 1) if v is not None and v[0] != CallRoot(callee, root.args) else None
            if g is None or (
                v is not None and len(v) == 1 and isinstance(v[0], GlobalRoot) and v[0].qualname in self.classes
            ):
                return None  # a class is returned, not a function to call
            if found is not None and g is not found:
                return None
            found = g
        return found

    def return_type(self, fn: FunctionInfo, depth: int = 0) -> str | None:
        """The class ``fn`` returns an instance of: its annotation, or the one
        class all its ``return`` statements agree on."""
        t = self.resolve_annotation(fn.returns_annotation, fn.module)
        if t is not None or fn.returns_annotation is not None or depth > 6:
            return t
        hit = self._returns_memo.get(fn.qualname, 0)
        if hit != 0:
            return hit
        self._returns_memo[fn.qualname] = None  # recursion guard
        out = None
        if fn.returns and not fn.is_async:
            ctx = self.context(fn)
            for r in fn.returns:
                v = self.canon(r, ctx)
                rt = self.type_of(v, depth + 1) if v is not None else None
                if rt is None or (out is not None and rt != out):
                    out = None
                    break
                out = rt
        self._returns_memo[fn.qualname] = out
        return out

    def overrides(self, class_qn: str, name: str) -> list[FunctionInfo]:
        """Methods ``name`` that subclasses of ``class_qn`` define, and, for a
        ``typing.Protocol``, those of the classes that implement it."""
        key = (class_qn, name)
        hit = self._protocol_impls.get(key)
        if hit is not None:
            return hit
        out: list[FunctionInfo] = []
        seen: set = set()
        subs = list(self.subclasses(class_qn))
        if self.is_protocol(class_qn):
            subs.extend(self.implementations(class_qn))
        for sub in subs:
            c = self.classes.get(sub)
            if c is not None and name in c.methods:
                f = self.functions.get(c.methods[name])
                if f is not None and f.qualname not in seen:
                    seen.add(f.qualname)
                    out.append(f)
        self._protocol_impls[key] = out
        return out

    def is_protocol(self, class_qn: str) -> bool:
        hit = self._is_protocol.get(class_qn)
        if hit is None:
            c = self.classes.get(class_qn)
            # a syntactic test first: class_bases resolves names, and most classes name no Protocol
            hit = (
                c is not None
                and any((_last_name(b[1] if b[0] == "sub" else b) or "") == "Protocol" for b in c.bases)
                and any(b.rpartition(".")[2] == "Protocol" for b in self.class_bases(c))
            )
            self._is_protocol[class_qn] = hit
        return hit

    def implementations(self, protocol_qn: str) -> list[str]:
        """In-tree classes (not protocols) that define every method the protocol declares."""
        key = ("impl", protocol_qn)
        hit = self._protocol_impls.get(key)
        if hit is not None:
            return hit
        c = self.classes[protocol_qn]
        wanted = {m for m in c.methods if not m.startswith("__")}
        out = []
        if wanted:
            for qn, k in self.classes.items():
                if qn == protocol_qn or self.is_protocol(qn) or not wanted.issubset(k.methods):
                    continue
                out.append(qn)
        self._protocol_impls[key] = out
        return out

    def exact_class(self, v: Value) -> bool:
        """Is ``v`` known to be an instance of exactly the class ``type_of`` gives
        (it was just constructed), not of a subclass?"""
        if len(v) != 1:
            return False
        root = v[0]
        if isinstance(root, GlobalRoot):
            g = self.global_value(root.qualname)
            return g is not None and self.exact_class(g)
        return (
            isinstance(root, CallRoot)
            and len(root.callee) == 1
            and isinstance(root.callee[0], GlobalRoot)
            and root.callee[0].qualname in self.classes
        )

    def module_function(self, module: str) -> FunctionInfo | None:
        """A function standing for ``module``'s top-level code (its calls and
        assignments), named as the module, for the call graph."""
        f = self._module_functions.get(module)
        if f is None:
            fi = self.modules.get(module)
            if fi is None:
                return None
            f = FunctionInfo(
                qualname=module,
                name=MODULE_CODE,
                module=module,
                path=fi.path,
                class_qualname=None,
                parent_function=None,
                line=1,
                end_line=max(fi.n_lines, 1),
                column=0,
                params=[],
                decorators=[],
                is_async=False,
                assigns=fi.module_assigns,
                calls=fi.module_calls,
                implicit_calls=fi.module_implicit_calls,
            )
            self._module_functions[module] = f
        return f

    def call_function(self, f: FunctionInfo, call) -> FunctionInfo | None:
        """The in-tree function that call ``call`` of ``f`` runs, when known
        (``super().m()`` included)."""
        func = call.func
        if func[0] == "attr" and func[1][0] == "call" and func[1][1] == ("name", "super"):
            return self.super_method(f, func[1], func[2])
        callee = self.call_callee(f, call)
        return self.callee_function(callee) if callee is not None else None

    def super_method(self, f: FunctionInfo, sup, name: str) -> FunctionInfo | None:
        """``super().name`` (or ``super(C, self).name``) in a method of ``f``'s class."""
        cls = f.class_qualname
        if sup[2]:
            v = self.canon(sup[2][0], self.context(f))
            cls = v[0].qualname if v is not None and len(v) == 1 and isinstance(v[0], GlobalRoot) else None
        if cls is None:
            return None
        for qn in self.mro(cls)[1:]:
            c = self.classes.get(qn)
            if c is not None and name in c.methods:
                return self.functions.get(c.methods[name])
        return None

    def call_targets(self, f: FunctionInfo, call) -> list[FunctionInfo]:
        """Every in-tree function call ``call`` of ``f`` may run: the one it
        dispatches to, the overrides in subclasses (and protocol
        implementations) when the receiver may be of a subclass, the dunder
        method a builtin calls (``len(x)``: ``__len__``), and a module's
        ``__getattr__`` (PEP 562) for a name the module does not define."""
        func = call.func
        if func[0] == "attr" and func[1][0] == "call" and func[1][1] == ("name", "super"):
            m = self.super_method(f, func[1], func[2])
            return [m] if m is not None else []
        callee = self.call_callee(f, call)
        if callee is None:
            if func[0] == "sub":  # handlers["a"](), table[i]()
                return self.element_functions(func, self.context(f))
            return []
        out: list[FunctionInfo] = []
        fn = self.callee_function(callee)
        if fn is not None:
            out.append(fn)
            if self._is_partial(callee):
                self._opaque_args.add((id(call), fn.qualname))
        root = callee[0]
        if len(callee) >= 2:
            base = callee[:-1]
            t = self.cls_param_class(root) if len(base) == 1 else None
            on_self = t is not None or (len(base) == 1 and isinstance(root, SelfRoot))
            if t is None:
                t = self.type_of(base)
                if t is not None and self.exact_class(base):
                    t = None
            # Overrides: on self or cls (a base class's template method calling
            # its hooks: the subclass's is what runs on its instances), on a
            # typing.Protocol (its implementations), and where the declared
            # type has no such method (only subclasses define it), at most
            # MAX_OVERRIDES of them there. On an object typed by a base class
            # that defines the method, even abstractly, the implementation is
            # chosen by configuration (`current_platform`, a model's
            # processor): following every subclass's would report each one's
            # work under callers that never run it, so the walk does not.
            if (
                t is not None
                and t in self.classes
                and (fn is None or fn.class_qualname is not None)
                and (
                    on_self
                    or ((fn is None or self.is_protocol(t)) and len(self.overrides(t, callee[-1])) <= MAX_OVERRIDES)
                )
            ):
                for o in self.overrides(t, callee[-1]):
                    if o is not fn:
                        out.append(o)
            if fn is None and t is not None and t in self.classes:
                # a callable attribute a subclass stores: `self.child()` in a base, `self.child = self.f` in each subclass
                for sub in self.subclasses(t):
                    a = self.attr_callable(sub, callee[-1], 1)
                    if a is not None and a not in out:
                        out.append(a)
        elif isinstance(root, GlobalRoot) and root.qualname in _HIGHER_ORDER:
            # map(f, xs), sorted(xs, key=f), functools.reduce(f, xs): the builtin calls f
            ctx = self.context(f)
            for a in list(call.args) + [v for _, v in call.kwargs]:
                v = self.canon(a, ctx)
                g = self.callee_function(v) if v is not None and len(v) == 1 else None
                if g is not None and g not in out:
                    out.append(g)
                    self._opaque_args.add((id(call), g.qualname))
        elif isinstance(root, GlobalRoot):
            qn = root.qualname
            dunder = _BUILTIN_DUNDERS.get(qn)
            if dunder is not None and call.args:
                v = self.canon(call.args[0], self.context(f))
                t = self.type_of(v) if v is not None else None
                if t is not None and t in self.classes:
                    m = self.lookup_method(t, dunder)
                    if m is not None:
                        out.append(m)
            elif fn is None:
                g = self.module_getattr(qn)
                if g is not None:
                    out.append(g)
                    self._opaque_args.add((id(call), g.qualname))
        return out

    def passes_arguments(self, call, target: FunctionInfo) -> bool:
        """Do ``call``'s arguments go to ``target``'s parameters, as written?
        Not when the call reaches it through ``functools.partial``, a builtin
        that calls its function argument (``map(f, xs)``), or a module
        ``__getattr__`` (asked after :meth:`call_targets` of the call)."""
        return (id(call), target.qualname) not in self._opaque_args

    def _is_partial(self, callee: Value) -> bool:
        v: Value | None = callee
        if len(callee) == 1 and isinstance(callee[0], GlobalRoot):
            v = self.global_value(callee[0].qualname)
        if v is None or len(v) != 1 or not isinstance(v[0], CallRoot):
            return False
        c = v[0].callee
        return len(c) == 1 and isinstance(c[0], GlobalRoot) and c[0].qualname == "functools.partial"

    # ----- containers of callables: dicts, lists, registries --------------------------
    def element_functions(self, sub, ctx: FunctionContext) -> list[FunctionInfo]:
        """The functions ``container[key]`` may be, for a container cachelint
        sees whole: a dict or list literal bound once (locally or at module
        level, or returned by a function), with what is stored into it
        (``d[k] = f``, ``d.update({...})``, ``l.append(f)``); a constant key
        selects its entries, any other key all of them."""
        out: list[FunctionInfo] = []
        seen: set = set()
        for e, ectx in self.elements(sub[1], sub[2], ctx, 0) or ():
            if e[0] == "sub":
                cands = self.element_functions(e, ectx)
            else:
                v = self.canon(e, ectx)
                fn = self.callee_function(v) if v is not None else None
                cands = [fn] if fn is not None else []
            for fn in cands:
                if fn.qualname not in seen:
                    seen.add(fn.qualname)
                    out.append(fn)
        return out

    def elements(self, container, key, ctx: FunctionContext, depth: int) -> list | None:
        """``(expr, context)`` of each value ``container[key]`` may hold, or None when unknown."""
        if depth > 4:
            return None
        found = self.container(container, ctx, depth)
        if found is None:
            return None
        literals, where = found
        kc = key[1] if key[0] == "const" else _ANY
        if key[0] == "sub" or (kc is _ANY and key[0] not in ("name", "attr", "call")):
            return None  # a slice, or a key cachelint cannot read
        stores = self.container_stores(where)
        # an unconditional `c[k] = v` where the container is bound replaces the literal's entry
        strong = [st for st in stores if kc is not _ANY and st[0] is not None and st[0] == ("const", kc) and st[3]]
        if strong:
            last = max(strong, key=lambda st: st[4])
            stores = [st for st in stores if not st[3] or st[0] != ("const", kc) or st is last]
        out: list = []
        for lit, lctx in literals:
            if lit[0] == "dict":
                for k, v in zip(lit[1], lit[2]):
                    if strong and k == ("const", kc):
                        continue
                    if kc is _ANY or k[0] != "const" or k[1] == kc:
                        out.append((v, lctx))
            elif lit[0] in ("list", "tuple"):
                elts = lit[1]
                if isinstance(kc, int) and not isinstance(kc, bool) and -len(elts) <= kc < len(elts):
                    out.append((elts[kc], lctx))
                elif kc is _ANY:
                    out.extend((x, lctx) for x in elts)
        for k, v, sctx, _, _ in stores:
            if kc is _ANY or k is None or k[0] != "const" or k[1] == kc:
                out.append((v, sctx))
        return out

    def container(self, e, ctx: FunctionContext, depth: int):
        """([(literal, context)], identity) of the container ``e`` names, or None."""
        k = e[0]
        if k in ("dict", "list", "tuple"):
            return [(e, ctx)], None
        if k == "sub":  # nested: d["a"]["b"]
            inner = self.elements(e[1], e[2], ctx, depth + 1)
            if not inner:
                return None
            found = [(x, c) for x, c in inner if x[0] in ("dict", "list", "tuple")]
            return (found, None) if len(found) == len(inner) else None
        if k == "call":  # a function returning a literal
            callee = self.canon(e[1], ctx)
            fn = self.callee_function(callee) if callee is not None else None
            if fn is None or not fn.returns:
                return None
            fctx = self.context(fn)
            lits: list = []
            for r in fn.returns:
                got = self.container(r, fctx, depth + 1)
                if got is None:
                    return None
                lits.extend(got[0])
                lits.extend((v, c) for kk, v, c, _, _ in self.container_stores(got[1]) if kk is None)
            return lits, None
        if k != "name":
            return None
        name = e[1]
        c: FunctionContext | None = ctx
        while c is not None:
            if name in c.f.global_names:
                break
            local = c.locals.get(name)
            if local is not None or name in c.params:
                if local is None or name in c.params or len(local) != 1:
                    return None
                a = local[0]
                if a.kind not in _ALIAS_KINDS or a.in_loop:
                    return None
                got = self.container(a.value, c, depth + 1)
                if got is None:
                    return None
                if got[1] is not None:
                    return got
                if c.f.name == MODULE_CODE:
                    return got[0], ("global", f"{c.f.module}.{name}")
                return got[0], ("local", c.f.qualname, name)
            c = c.parent
        fi = ctx.module
        if fi is None:
            return None
        qn = self.resolve_name(fi.module, name)
        if qn is None or not self.is_module_level_variable(qn):
            return None
        mod, _, gname = qn.rpartition(".")
        gfi = self.modules[mod]
        val = gfi.globals.get(gname)
        mf = self.module_function(mod)
        if val is None or mf is None:
            return None
        got = self.container(val, self.context(mf), depth + 1)
        if got is None:
            return None
        return got[0], ("global", qn) if got[1] is None else got[1]

    def container_stores(self, where) -> list:
        """(key or None, value, context, strong, line) stored into a container
        by ``c[k] = v``, ``c.update({...})``, ``c.append(v)``,
        ``c.setdefault(k, v)``; strong: an unconditional store (no guard, no
        loop) in the scope that binds the container, which replaces the entry."""
        if where is None:
            return []
        if self._stores is None:
            self._stores = {}
        # scanned per module, on first need: the module of a global, or of
        # the function binding a local (stores from other modules are not seen)
        mod = where[1].rpartition(".")[0] if where[0] == "global" else self.functions[where[1]].module
        if mod not in self._stores:
            self._stores[mod] = self._scan_stores(mod)
        return self._stores[mod].get(where, [])

    def _scan_stores(self, module: str) -> dict:
        out: dict = {}
        fi = self.modules.get(module)
        if fi is None:
            return out

        def where_of(name: str, f: FunctionInfo):
            ctx = self.context(f)
            c: FunctionContext | None = ctx
            while c is not None and name not in c.f.global_names:
                if name in c.locals or name in c.params:
                    return (
                        ("local", c.f.qualname, name) if c.f.name != MODULE_CODE else ("global", f"{c.f.module}.{name}")
                    )
                c = c.parent
            qn = self.resolve_name(f.module, name)
            return ("global", qn) if qn is not None else None

        def owns(w, f: FunctionInfo) -> bool:
            if w[0] == "local":
                return w[1] == f.qualname
            return f.name == MODULE_CODE and w[1] == f"{f.module}.{w[1].rpartition('.')[2]}"

        fns = [self.functions.get(f.qualname) for f in fi.functions] + [self.module_function(module)]
        for f in fns:
            if f is None:
                continue
            for a in f.assigns:
                t = a.target
                if t[0] == "sub" and t[1][0] == "name" and a.kind in ("assign", "annassign"):
                    w = where_of(t[1][1], f)
                    if w is not None:
                        out.setdefault(w, []).append(
                            (t[2], a.value, self.context(f), owns(w, f) and not a.guard and not a.in_loop, a.line)
                        )
            for call in f.calls:
                fn = call.func
                if fn[0] != "attr" or fn[1][0] != "name" or fn[2] not in _STORE_METHODS:
                    continue
                w = None
                if fn[2] == "update" and call.args and call.args[0][0] == "dict":
                    w = where_of(fn[1][1], f)
                    if w is not None:
                        d = call.args[0]
                        for k, v in zip(d[1], d[2]):
                            out.setdefault(w, []).append(
                                (k, v, self.context(f), owns(w, f) and not call.guard and not call.in_loop, call.line)
                            )
                elif fn[2] in ("append", "add") and len(call.args) == 1:
                    w = where_of(fn[1][1], f)
                    if w is not None:
                        out.setdefault(w, []).append((None, call.args[0], self.context(f), False, call.line))
                elif fn[2] == "setdefault" and len(call.args) == 2:
                    w = where_of(fn[1][1], f)
                    if w is not None:
                        out.setdefault(w, []).append((call.args[0], call.args[1], self.context(f), False, call.line))
        return out

    def module_getattr(self, qn: str) -> FunctionInfo | None:
        """The module ``__getattr__`` (PEP 562) that supplies ``qn``, a name its module does not bind."""
        mod, _, name = qn.rpartition(".")
        while mod:
            fi = self.modules.get(mod)
            if fi is not None:
                if name in fi.defs or name in fi.globals or name in fi.imports or f"{mod}.{name}" in self.modules:
                    return None
                g = fi.defs.get("__getattr__")
                return self.functions.get(g) if g is not None else None
            mod, _, name = mod.rpartition(".")
        return None

    def external_name(self, callee: Value | None) -> str | None:
        """The qualified name of a callee outside the tree (``builtins.len``, ``os.path.join``)."""
        if callee is None or len(callee) != 1 or not isinstance(callee[0], GlobalRoot):
            return None
        qn = callee[0].qualname
        if qn in self.functions or qn in self.classes or qn in self.modules:
            return None
        top = qn.split(".", 1)[0]
        if self.is_module_level_variable(qn) or (top in self.modules and qn.startswith(top + ".")):
            return None  # a variable of the tree, or a name in-tree resolution did not find
        return qn

    def callee_names(self, callee: Value | None, spelled: str | None) -> list[str]:
        """Names a catalog pattern may match: resolved qualname, Type.method, spelling."""
        out = []
        if callee is not None:
            if len(callee) == 1 and isinstance(callee[0], GlobalRoot):
                out.append(callee[0].qualname)
            elif len(callee) >= 2:
                t = self.type_of(callee[:-1])
                if t is not None:
                    fn = self.lookup_method(t, callee[-1]) if t in self.classes else None
                    out.append(fn.qualname if fn is not None else f"{t}.{callee[-1]}")
                base = callee[:-1]
                if len(base) >= 1 and isinstance(base[0], GlobalRoot):
                    out.append(".".join((base[0].qualname,) + tuple(base[1:])) + "." + callee[-1])
        if spelled:
            out.append(spelled)
        return out
