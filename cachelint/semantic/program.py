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

from ..index.expr import conv, dotted
from ..index.records import ClassInfo, FileIndex, FunctionInfo
from .values import CallRoot, ConstRoot, GlobalRoot, KwArg, ParamRoot, SelfRoot

Value = tuple
CONSTRUCTORS = ("__init__", "__post_init__")
_BUILTIN_NAMES = frozenset(dir(builtins))
_ALIAS_KINDS = ("assign", "annassign", "walrus")
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
    def __init__(self, indexes: list[FileIndex]) -> None:
        self.indexes = indexes
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
                self.functions.setdefault(f.qualname, f)
            for c in fi.classes:
                self.classes.setdefault(c.qualname, c)
            for local in fi.module_imports:
                self.imported_modules.add(fi.imports[local])
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

    # ----- names -------------------------------------------------------------
    def context(self, f: FunctionInfo, self_class: str | None = None) -> FunctionContext:
        if self_class is None:
            self_class = f.class_qualname
        key = (f.qualname, self_class)
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
        m = self._mro.get(class_qn)
        if m is not None:
            return m
        self._mro[class_qn] = [class_qn]  # cycle guard
        out = [class_qn]
        c = self.classes.get(class_qn)
        if c is not None:
            for b in self.class_bases(c):
                for x in self.mro(b):
                    if x not in out:
                        out.append(x)
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
            return None
        if k == "or":
            members = [m for m in ann[1] if m != ("const", None) and m != ("name", "None")]
            if len(members) == 1:
                return self.resolve_annotation(members[0], module, depth + 1)
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
                if val is not None and val[0] == "call":
                    callee = self._module_value(val[1], mod)
                    if callee is not None and len(callee) == 1 and isinstance(callee[0], GlobalRoot):
                        cq = callee[0].qualname
                        if cq in self.classes:
                            return cq
                        fn = self.functions.get(cq)
                        if fn is not None:
                            return self.resolve_annotation(fn.returns_annotation, fn.module)
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
                fn = self.callee_function(callee)
                if fn is not None:
                    return self.resolve_annotation(fn.returns_annotation, fn.module)
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
                return self.resolve_annotation(c.fields[attr], c.module)
            if attr in c.methods:
                m = self.functions.get(c.methods[attr])
                if m is not None and any((dotted(d) or "").endswith("property") for d in m.decorators):
                    return self.resolve_annotation(m.returns_annotation, m.module)
                return None
        for f, a in self.self_attr_writers(class_qn, attr):
            if a.kind == "annassign":
                pass
            ctx = self.context(f, class_qn)
            if a.value and a.value[0] == "name" and a.value[1] in ctx.params:
                p = ctx.params[a.value[1]]
                t = self.resolve_annotation(p.annotation, f.module)
                if t:
                    return t
            v = self.canon(a.value, ctx)
            if v is not None and v != (SelfRoot(class_qn), attr):
                t = self.type_of(v, depth + 1)
                if t:
                    return t
        return None

    def callee_function(self, callee: Value) -> FunctionInfo | None:
        """The in-tree function a canonical callee value calls, if known."""
        if callee is None:
            return None
        if len(callee) == 1 and isinstance(callee[0], GlobalRoot):
            qn = callee[0].qualname
            f = self.functions.get(qn)
            if f is not None:
                return f
            if qn in self.classes:
                return self.lookup_method(qn, "__init__")
            return None
        if len(callee) >= 2:
            t = self.type_of(callee[:-1])
            if t is not None and t in self.classes:
                return self.lookup_method(t, callee[-1])
        return None

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
