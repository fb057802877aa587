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

import builtins
import sys

from ..config import CustomOpRegistrar
from ..files import decode_source, read_bytes, source_digest, split_lines
from ..index.expr import _last_name, dotted
from ..index.records import ClassInfo, FileIndex, FunctionInfo
from .calls import Calls
from .containers import Containers
from .customops import CustomOps
from .elements import Elements
from .hierarchy import Hierarchy
from .idioms import DEFAULT_DECORATORS, CacheDecorators, is_cached_function
from .types import Types, only_member, string_annotation
from .values import (
    ALIAS_KINDS,
    CONSTRUCTORS,
    MODULE_CODE,
    CallRoot,
    ConstRoot,
    GlobalRoot,
    KwArg,
    ParamRoot,
    SelfRoot,
    Value,
)

_BUILTIN_NAMES = frozenset(dir(builtins))
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ()))


def _last(d) -> str | None:
    return _last_name(d)


def _is_overload(f: FunctionInfo) -> bool:
    return any((dotted(d) or "").rpartition(".")[2] == "overload" for d in f.decorators)


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


class Program(Hierarchy, Types, Elements, Containers, CustomOps, Calls):
    """The whole program. Class hierarchies (:mod:`.hierarchy`), types
    (:mod:`.types`), containers (:mod:`.containers`) and call resolution
    (:mod:`.calls`) are mixins of it."""

    def __init__(
        self,
        indexes: list[FileIndex],
        cache_decorators: CacheDecorators | None = None,
        sources: dict[str, bytes] | None = None,
        custom_op_registrars: tuple[CustomOpRegistrar, ...] = (),
        call_methods: tuple[str, ...] = (),
    ) -> None:
        self.indexes = indexes
        # which decorators memoize (configuration and presets: `cache-decorators`)
        self.cache_decorators = cache_decorators or DEFAULT_DECORATORS
        # files whose analysed content is held in memory, not on disk (a
        # fix pass's output under --diff): path -> the bytes --fix would write
        self._overlay = sources or {}
        # functions that register torch custom ops (see .customops)
        self.custom_op_registrars = custom_op_registrars
        self._custom_ops: dict | None = None
        # classes outside the tree whose instances, called, run a method of
        # the subclass (`call-methods`: torch.nn.Module runs `forward`)
        self.call_methods: dict[str, str] = {c: m for c, _, m in (x.rpartition(".") for x in call_methods)}
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
        self._classes_memo: dict = {}  # (function, self class, expr) -> classes (see Elements)
        self._in_progress: set = set()
        self._subclasses: dict | None = None
        self._callees: dict = {}
        self._callee_functions: dict = {}  # canonical callee -> its function (Calls.callee_function)
        self._module_functions: dict = {}
        self._returns_memo: dict = {}
        self._protocol_impls: dict = {}
        self._stores: dict | None = None
        self._is_protocol: dict = {}
        self._opaque_args: set = set()  # (id(call), target): see passes_arguments
        self._bindings: dict = {}
        self._source_lines: dict[str, list[str] | None] = {}

    def source_bytes(self, path: str) -> bytes:
        """The bytes of the file as analysed (raises OSError if unreadable):
        every stage that reads source text past the index reads it here."""
        data = self._overlay.get(path)
        return data if data is not None else read_bytes(path)

    def source_lines(self, path: str) -> list[str] | None:
        """The file's lines (with their ends) as it was indexed, read and
        decoded once per run; None if it cannot be read or decoded, or
        changed since it was indexed (positions would not match)."""
        if path in self._source_lines:
            return self._source_lines[path]
        lines = None
        try:
            source = decode_source(self.source_bytes(path))
        except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
            source = None
        if source is not None:
            fi = self.modules_by_path.get(path)
            if fi is None or not fi.digest or fi.digest == source_digest(source):
                lines = split_lines(source)
        self._source_lines[path] = lines
        return lines

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
        if name in f.iterated:
            # bound by iteration: a `for` rebinds it on each pass; a
            # comprehension (or generator expression) binds its own variable,
            # which inside it shadows the parameter, local, enclosing or
            # module name of that spelling. The index does not say whether a
            # use sits inside the comprehension, so the name has no one value
            # anywhere in the function
            return None
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
                if a.kind in ALIAS_KINDS and not a.in_loop:
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
        """The class of the class object ``root`` stands for (that class or
        one of its subclasses): ``cls``, the first parameter of a classmethod
        (or of ``__new__``); a parameter annotated ``type[C]``; the result of
        a call of a function of the tree annotated to return ``type[C]``
        (``get_backend().update_step_context(ctx)`` calls ``C``'s method)."""
        if isinstance(root, CallRoot):
            fn = self.callee_function(root.callee)
            if fn is None or fn.returns_annotation is None or fn.is_async:
                return None
            return self.class_object_annotation(fn.returns_annotation, fn.module)
        if not isinstance(root, ParamRoot):
            return None
        f = self.functions.get(root.function)
        if f is None or not f.params:
            return None
        own = self.own_class_param(root)
        if own is not None:
            return own
        for q in f.params:
            if q.name == root.name and q.annotation is not None and q.kind in ("pos", "kwonly"):
                return self.class_object_annotation(q.annotation, f.module)
        return None

    def own_class_param(self, root) -> str | None:
        """The class of ``cls``, the first parameter of a classmethod (or of
        ``__new__``): the class its own code runs for, or a subclass of it."""
        if not isinstance(root, ParamRoot):
            return None
        f = self.functions.get(root.function)
        if f is None or f.class_qualname is None or not f.params or f.params[0].name != root.name:
            return None
        if f.name == "__new__" or any(_last(d) == "classmethod" for d in f.decorators):
            return f.class_qualname
        return None

    def class_object_annotation(self, ann, module: str, depth: int = 0) -> str | None:
        """The class of the tree ``ann`` names the class objects of: ``type[C]``,
        ``Type[C]``, either or None (``Optional[type[C]]``, ``type[C] | None``)."""
        if ann is None or depth > 4:
            return None
        parsed = string_annotation(ann)
        if parsed is not None:
            return self.class_object_annotation(parsed, module, depth + 1)
        inner = only_member(ann)
        if inner is not None:
            return self.class_object_annotation(inner, module, depth + 1)
        if ann[0] != "sub":
            return None
        last = (dotted(ann[1]) or "").rsplit(".", 1)[-1]
        if last not in ("type", "Type"):
            return None
        c = self.resolve_annotation(ann[2], module)
        return c if c is not None and c in self.classes else None
