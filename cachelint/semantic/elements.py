"""The classes a value may have where one class is not known: each member of
a union annotation, and the elements of an iterable a loop or a
comprehension takes (``for m in self.managers: m.step()``).

The call graph asks it of a call it could not resolve otherwise
(:meth:`cachelint.semantic.calls.Calls.call_targets`): the classes found
give the call its edges. Nothing here names a value: a loop variable stays
unknown to the symbolic evaluation (it changes on each iteration), only its
classes are known.

A mixin of :class:`cachelint.semantic.program.Program`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..index.expr import UNKNOWN, dotted
from ..index.records import FunctionInfo
from .types import only_member, string_annotation, type_arguments
from .values import ALIAS_KINDS, CallRoot, GlobalRoot, ParamRoot, Value

if TYPE_CHECKING:
    from ..index.records import ClassInfo, FileIndex
    from .program import FunctionContext

# generic classes whose iteration gives their first type argument
_SEQUENCES = frozenset(
    {
        "list",
        "List",
        "Sequence",
        "MutableSequence",
        "Iterable",
        "Iterator",
        "Collection",
        "Reversible",
        "set",
        "Set",
        "MutableSet",
        "AbstractSet",
        "frozenset",
        "FrozenSet",
        "deque",
        "Deque",
        "KeysView",
        "ValuesView",
        "Generator",
        "AsyncIterator",
        "AsyncIterable",
        "AsyncGenerator",
    }
)
# mappings: iteration gives the keys (the first argument), ``values()`` the second
_MAPPINGS = frozenset({"dict", "Dict", "Mapping", "MutableMapping", "OrderedDict", "defaultdict", "DefaultDict"})
# builtins that give the elements of their one argument, in some order
_SAME_ELEMENTS = frozenset({"list", "tuple", "sorted", "reversed", "set", "frozenset", "iter"})

_MAX_DEPTH = 6

Classes = tuple[str, ...]


def _union(parts) -> Classes:
    out: list[str] = []
    for p in parts:
        for c in p:
            if c not in out:
                out.append(c)
    return tuple(out)


def _capitalised(func) -> bool:
    """``func`` is spelled as a class: its last name starts with a capital (``nn.ModuleDict``)."""
    last = func[2] if func[0] == "attr" else func[1] if func[0] == "name" else ""
    return isinstance(last, str) and last[:1].isupper()


def _is_none(e) -> bool:
    return e == ("const", None) or e == ("name", "None")


class Elements:
    """Methods of the program (a mixin: ``self`` is the program)."""

    if TYPE_CHECKING:  # what the program provides (checked against it by mypy)
        _classes_memo: dict
        classes: dict[str, ClassInfo]
        functions: dict[str, FunctionInfo]
        modules: dict[str, FileIndex]

        def attr_type(self, class_qn: str, attr: str, depth: int = 0) -> str | None: ...
        def callee_function(self, callee: Value | None, depth: int = 0) -> FunctionInfo | None: ...
        def canon(self, e, ctx: FunctionContext | None, depth: int = 0) -> Value | None: ...
        def context(self, f: FunctionInfo, self_class: str | None = None) -> FunctionContext: ...
        def is_module_level_variable(self, qn: str) -> bool: ...
        def module_function(self, module: str) -> FunctionInfo | None: ...
        def mro(self, class_qn: str) -> list[str]: ...
        def annotation_name(self, ann, module: str) -> str | None: ...
        def resolve_annotation(self, ann, module: str, depth: int = 0) -> str | None: ...
        def value_annotation(self, v: Value) -> tuple | None: ...
        def callable_return(self, ann, module: str, depth: int = 0) -> tuple | None: ...
        def alias_value(self, ann, module: str) -> tuple | None: ...
        def self_attr_writers(self, class_qn: str, attr: str) -> list: ...
        def type_of(self, v: Value | None, depth: int = 0) -> str | None: ...

    # ----- annotations ----------------------------------------------------------------
    def annotation_classes(self, ann, module: str, depth: int = 0) -> Classes:
        """The in-tree classes a value annotated ``ann`` may be: the one it
        names, or each member of a union (``A | B``, ``Union[A, B]``, an
        alias of one); the rest of a union (``None``, builtins, external
        classes) adds none."""
        if ann is None or depth > _MAX_DEPTH:
            return ()
        t = self.resolve_annotation(ann, module)
        if t is not None:
            return (t,) if t in self.classes else ()
        k = ann[0]
        parsed = string_annotation(ann)
        if parsed is not None:
            return self.annotation_classes(parsed, module, depth + 1)
        if k == "or":
            return _union(self.annotation_classes(m, module, depth + 1) for m in ann[1] if not _is_none(m))
        if k == "sub":
            last = (dotted(ann[1]) or "").rpartition(".")[2]
            if last in ("Union", "Optional"):
                args = type_arguments(ann)
                return _union(self.annotation_classes(m, module, depth + 1) for m in args if not _is_none(m))
            return ()
        if k in ("name", "attr"):  # an alias: `AnyTokenizer = Union[A, B]`
            alias = self.alias_value(ann, module)
            if alias is not None:
                return self.annotation_classes(alias[0], alias[1], depth + 1)
        return ()

    def annotation_elements(self, ann, module: str, depth: int = 0, items: bool = False) -> Classes:
        """The in-tree classes of the elements iterating a value annotated
        ``ann`` gives; with ``items``, of what subscripting it gives (a
        mapping's values, not its keys)."""
        if ann is None or depth > _MAX_DEPTH:
            return ()
        k = ann[0]
        parsed = string_annotation(ann)
        if parsed is not None:
            return self.annotation_elements(parsed, module, depth + 1, items)
        if k == "or":
            return _union(self.annotation_elements(m, module, depth + 1, items) for m in ann[1] if not _is_none(m))
        if k in ("name", "attr"):
            alias = self.alias_value(ann, module)
            return self.annotation_elements(alias[0], alias[1], depth + 1, items) if alias is not None else ()
        if k != "sub":
            return ()
        last = (dotted(ann[1]) or "").rpartition(".")[2]
        args = type_arguments(ann)
        if last in ("Union", "Optional"):
            return _union(self.annotation_elements(m, module, depth + 1, items) for m in args if not _is_none(m))
        if last in ("Final", "ClassVar", "Annotated"):
            return self.annotation_elements(args[0], module, depth + 1, items)
        if last in _MAPPINGS and items:
            return self.annotation_classes(args[1], module, depth + 1) if len(args) == 2 else ()
        if last in _SEQUENCES or last in _MAPPINGS:
            return self.annotation_classes(args[0], module, depth + 1)
        if last in ("tuple", "Tuple"):
            return _union(self.annotation_classes(m, module, depth + 1) for m in args if m != ("const", Ellipsis))
        return ()

    def _mapping_values(self, ann, module: str, depth: int = 0) -> Classes:
        """The classes of a mapping's values, from its annotation (``dict[K, V]``: V)."""
        if ann is None or depth > _MAX_DEPTH:
            return ()
        k = ann[0]
        if k == "or":
            return _union(self._mapping_values(m, module, depth + 1) for m in ann[1] if not _is_none(m))
        if k in ("name", "attr"):
            alias = self.alias_value(ann, module)
            return self._mapping_values(alias[0], alias[1], depth + 1) if alias is not None else ()
        if k != "sub":
            return ()
        last = (dotted(ann[1]) or "").rpartition(".")[2]
        args = type_arguments(ann)
        if last == "Optional":
            return self._mapping_values(args[0], module, depth + 1)
        if last in _MAPPINGS and len(args) == 2:
            return self.annotation_classes(args[1], module, depth + 1)
        return ()

    # ----- expressions ----------------------------------------------------------------
    def expr_classes(self, e, ctx: FunctionContext, depth: int = 0) -> Classes:
        """The in-tree classes the value of expression ``e`` (in ``ctx``) may
        have: its type when cachelint knows one, else each member of a union
        annotation, the classes of a loop variable's iterable's elements, or
        what a call returns."""
        if e is None or depth > _MAX_DEPTH:
            return ()
        key = (ctx.f.qualname, ctx.self_class, e)
        memo = self._classes_memo
        if key in memo:
            return memo[key]
        memo[key] = ()  # recursion guard
        out = self._expr_classes(e, ctx, depth)
        memo[key] = out
        return out

    def _expr_classes(self, e, ctx: FunctionContext, depth: int) -> Classes:
        v = self.canon(e, ctx)
        if v is not None:
            t = self.type_of(v)
            if t is not None:
                return (t,) if t in self.classes else ()
            return self._value_classes(v, depth)
        k = e[0]
        if k == "name":
            return self.local_classes(ctx, e[1], depth + 1)
        if k == "sub":
            return self.iterable_elements(e[1], ctx, depth + 1, items=True)
        if k == "attr":
            return _union(self.attr_classes(c, e[2], depth + 1) for c in self.expr_classes(e[1], ctx, depth + 1))
        if k == "call":
            made = self._made_by_factory(e[1], ctx)
            if made:
                return made
            callee = self.canon(e[1], ctx)
            if callee is None or self.callee_function(callee) is None:
                called = self._callable_results(e[1], ctx, depth + 1)
                if called or callee is None:
                    return called
            if len(callee) == 1 and isinstance(callee[0], GlobalRoot) and callee[0].qualname in self.classes:
                return (callee[0].qualname,)
            fn = self.callee_function(callee)
            return self.returned_classes(fn) if fn is not None else ()
        return ()

    # ----- callables -----------------------------------------------------------------
    def _callable_results(self, func, ctx: FunctionContext, depth: int) -> Classes:
        """The classes calling ``func`` returns, from annotations: ``func``
        annotated ``Callable[..., R]`` (``Optional`` of one, or an alias), or
        an element of a mapping or sequence annotated to hold such callables
        (``groups: dict[str, Callable[[], Group | None]]``, ``groups[name]()``):
        the members of ``R``."""
        if depth > _MAX_DEPTH:
            return ()
        if func[0] == "sub":
            found = self.annotation_of(func[1], ctx)
            if found is None:
                return ()
            found = self._element_annotation(found[0], found[1], 0)
        else:
            found = self.annotation_of(func, ctx)
        if found is None:
            return ()
        ret = self.callable_return(found[0], found[1])
        return self.annotation_classes(ret[0], ret[1], depth + 1) if ret is not None else ()

    def annotation_of(self, e, ctx: FunctionContext) -> tuple | None:
        """``(annotation, module)`` declared for the value of ``e``: a
        parameter's, a module variable's, an attribute's (a class-level
        annotation or an annotated assignment in the class), or a local's
        annotated assignment; None when nothing declares one."""
        if e[0] == "name":
            local = ctx.locals.get(e[1], ())
            if len(local) == 1 and local[0].annotation is not None and e[1] not in ctx.params:
                return local[0].annotation, ctx.f.module
        v = self.canon(e, ctx)
        return self.value_annotation(v) if v is not None else None

    def _element_annotation(self, ann, module: str, depth: int) -> tuple | None:
        """``(annotation, module)`` of what subscripting a value annotated ``ann``
        gives: a mapping's values, a sequence's elements."""
        if ann is None or depth > _MAX_DEPTH:
            return None
        parsed = string_annotation(ann)
        if parsed is not None:
            return self._element_annotation(parsed, module, depth + 1)
        inner = only_member(ann)
        if inner is not None:
            return self._element_annotation(inner, module, depth + 1)
        if ann[0] in ("name", "attr"):
            alias = self.alias_value(ann, module)
            return self._element_annotation(alias[0], alias[1], depth + 1) if alias is not None else None
        if ann[0] != "sub":
            return None
        last = (dotted(ann[1]) or "").rpartition(".")[2]
        args = type_arguments(ann)
        if last in ("Final", "ClassVar", "Annotated") and args:
            return self._element_annotation(args[0], module, depth + 1)
        if last in _MAPPINGS and len(args) == 2:
            return args[1], module
        if last in _SEQUENCES and len(args) == 1:
            return args[0], module
        return None

    def _made_by_factory(self, func, ctx: FunctionContext) -> Classes:
        """The classes ``func(...)`` constructs when ``func`` is what a
        function returning classes returned: ``Impl = pick_class(v);
        Impl(...)``, or ``pick_class(v)(...)``."""
        made = func
        if func[0] == "name":
            local = ctx.locals.get(func[1], ())
            if len(local) != 1 or local[0].kind not in ALIAS_KINDS or func[1] in ctx.params:
                return ()
            made = local[0].value
        if made[0] != "call":
            return ()
        callee = self.canon(made[1], ctx)
        fn = self.callee_function(callee) if callee is not None else None
        if fn is None or not fn.returns:
            return ()
        fctx = self.context(fn, fn.class_qualname)
        out: list[str] = []
        for r in fn.returns:
            v = self.canon(r, fctx)
            if v is None or len(v) != 1 or not isinstance(v[0], GlobalRoot) or v[0].qualname not in self.classes:
                return ()
            if v[0].qualname not in out:
                out.append(v[0].qualname)
        return tuple(out)

    def _value_classes(self, v: Value, depth: int) -> Classes:
        """Classes of a canonical value whose one type is unknown: a union-annotated parameter or attribute."""
        root = v[0]
        if len(v) == 1:
            if isinstance(root, ParamRoot):
                ann, module = self._param_annotation(root)
                return self.annotation_classes(ann, module) if module is not None else ()
            if isinstance(root, CallRoot):
                fn = self.callee_function(root.callee)
                if fn is not None:
                    return self.returned_classes(fn)
                found = self.value_annotation(root.callee)  # a value annotated `Callable[..., R]`
                ret = self.callable_return(found[0], found[1]) if found is not None else None
                return self.annotation_classes(ret[0], ret[1], depth + 1) if ret is not None else ()
            return ()
        if depth > _MAX_DEPTH:
            return ()
        owner = self.type_of(v[:-1])
        owners = (owner,) if owner is not None else self._value_classes(v[:-1], depth + 1)
        return _union(self.attr_classes(o, v[-1], depth + 1) for o in owners if o in self.classes)

    def _param_annotation(self, root: ParamRoot) -> tuple:
        """``(annotation, module)`` of the parameter ``root`` names; ``(None,
        None)`` when its function or the parameter is not known."""
        f = self.functions.get(root.function)
        p = next((p for p in f.params if p.name == root.name), None) if f is not None else None
        return (p.annotation, f.module) if p is not None and f is not None else (None, None)

    def attr_classes(self, class_qn: str, attr: str, depth: int = 0) -> Classes:
        """The classes attribute ``attr`` of a ``class_qn`` may hold: its
        type, its annotation's members, else what each writer in the class
        stores (``self.batch = InputBatch(...)``, whose arguments need not
        have symbolic values for the class to be known)."""
        t = self.attr_type(class_qn, attr)
        if t is not None:
            return (t,) if t in self.classes else ()
        for qn in self.mro(class_qn):
            c = self.classes.get(qn)
            if c is not None and attr in c.fields:
                return self.annotation_classes(c.fields[attr], c.module, depth + 1)
        if depth > _MAX_DEPTH:
            return ()
        parts: list[Classes] = []
        for f, a in self.self_attr_writers(class_qn, attr):
            if a.kind not in ALIAS_KINDS:
                return ()
            ctx = self.context(f, class_qn)
            if a.annotation is not None:
                parts.append(self.annotation_classes(a.annotation, f.module, depth + 1))
            else:
                parts.append(self.expr_classes(a.value, ctx, depth + 1))
        return _union(parts)

    def returned_classes(self, fn: FunctionInfo) -> Classes:
        ann = fn.returns_annotation
        if ann is not None:
            return self.annotation_classes(ann, fn.module)
        t = self.type_of((CallRoot((GlobalRoot(fn.qualname),), ()),))
        return (t,) if t is not None and t in self.classes else ()

    # ----- iteration ------------------------------------------------------------------
    def local_classes(self, ctx: FunctionContext, name: str, depth: int = 0) -> Classes:
        """The classes of local ``name`` where it has no one value (bound in
        a loop, or more than once): each value assigned to it, and the
        elements of what a ``for`` or a comprehension binds it from. None
        when some binding is of another kind (``+=``, ``with``, an unpacking
        cachelint cannot pair) or the name is a parameter."""
        if name in ctx.params:
            return ()
        local = ctx.locals.get(name, ())
        if not local:
            return self.iterated_classes(ctx, name, depth)
        parts: list[Classes] = []
        for a in local:
            if a.kind in ALIAS_KINDS:
                parts.append(self.expr_classes(a.value, ctx, depth + 1))
            elif a.kind not in ("for", "unpack"):
                return ()
        if name in ctx.f.iterated:  # a `for`, or a comprehension whose variable shadows the local
            sources = ctx.f.iterated.get(name)
            if not sources or UNKNOWN in sources:
                return ()
            parts.extend(self.iterable_elements(s, ctx, depth + 1) for s in sources)
        return _union(parts)

    def iterated_classes(self, ctx: FunctionContext, name: str, depth: int = 0) -> Classes:
        """The classes of loop variable ``name``: the elements of each
        iterable a ``for`` or a comprehension of the function binds it from.
        None when the name is also bound otherwise (an assignment, a parameter)."""
        f = ctx.f
        sources = f.iterated.get(name)
        if not sources:
            return ()
        if name in ctx.params or any(a.kind not in ("for", "unpack") for a in ctx.locals.get(name, ())):
            return ()
        return _union(self.iterable_elements(s, ctx, depth + 1) for s in sources if s != UNKNOWN)

    def iterable_elements(self, e, ctx: FunctionContext, depth: int = 0, items: bool = False) -> Classes:
        """The in-tree classes of the elements iterating expression ``e`` (in
        ``ctx``) gives; with ``items``, of what subscripting it gives (a
        mapping's values)."""
        if e is None or depth > _MAX_DEPTH:
            return ()
        k = e[0]
        if k in ("list", "tuple"):
            return _union(self.expr_classes(x, ctx, depth + 1) for x in e[1])
        if k == "call" and not e[3] and len(e[2]) == 1 and e[1][0] == "name" and e[1][1] in _SAME_ELEMENTS:
            if self.canon(e[1], ctx) == (GlobalRoot(f"builtins.{e[1][1]}"),):
                return self.iterable_elements(e[2][0], ctx, depth + 1)
        if k == "call" and not e[2] and not e[3] and e[1][0] == "attr" and e[1][2] == "values":
            return self._values_of(e[1][1], ctx, depth + 1)
        if k == "name":
            local = ctx.locals.get(e[1], ())
            if len(local) == 1 and local[0].kind in ("assign", "annassign"):
                a = local[0]
                found = self._assigned_elements(a, ctx, depth + 1, items)
                if found or a.value[0] not in ("name", "attr"):
                    return found
                return self.iterable_elements(a.value, ctx, depth + 1, items)  # an alias: `q = self.running`
        v = self.canon(e, ctx)
        return self._value_elements(v, depth + 1, items) if v is not None else ()

    def _assigned_elements(self, a, ctx: FunctionContext, depth: int, items: bool = False) -> Classes:
        if a.elements is not None:
            return self.expr_classes(a.elements, ctx, depth + 1)
        v = a.value
        if v[0] == "call" and len(v[2]) == 1 and not v[3] and v[2][0][0] in ("list", "tuple", "dict"):
            # a class outside the tree that holds what it is given: `nn.ModuleList([a, b])`
            callee = self.canon(v[1], ctx)
            if callee is not None and self.callee_function(callee) is None and _capitalised(v[1]):
                v = v[2][0]
        if v[0] in ("list", "tuple"):
            return _union(self.expr_classes(x, ctx, depth + 1) for x in v[1])
        if v[0] == "dict":
            return _union(self.expr_classes(x, ctx, depth + 1) for x in (v[2] if items else v[1]))
        return ()

    def _value_elements(self, v: Value, depth: int, items: bool = False) -> Classes:
        root = v[0]
        if len(v) == 1:
            if isinstance(root, ParamRoot):
                ann, module = self._param_annotation(root)
                return self.annotation_elements(ann, module, 0, items) if module is not None else ()
            if isinstance(root, CallRoot):
                fn = self.callee_function(root.callee)
                return self.annotation_elements(fn.returns_annotation, fn.module, 0, items) if fn is not None else ()
            if isinstance(root, GlobalRoot):
                mod, _, name = root.qualname.rpartition(".")
                fi = self.modules.get(mod)
                if fi is None:
                    return ()
                if name in fi.global_annotations:
                    return self.annotation_elements(fi.global_annotations[name], mod, 0, items)
                g = fi.globals.get(name)
                if g is not None and g[0] in ("list", "tuple"):
                    mf = self.module_function(mod)
                    return _union(self.expr_classes(x, self.context(mf), depth + 1) for x in g[1]) if mf else ()
            return ()
        if depth > _MAX_DEPTH:
            return ()
        # the owner's one type, else the classes it may have (a factory's annotated
        # return: `self.coordinator = get_coordinator(...)`), as _value_classes does
        owner = self.type_of(v[:-1])
        owners = (owner,) if owner is not None else self._value_classes(v[:-1], depth + 1)
        out: list[Classes] = []
        for o in owners:
            if o not in self.classes:
                continue
            for ann, module, a, ctx in self._attr_sources(o, v[-1]):
                if ann is not None:
                    out.append(self.annotation_elements(ann, module, 0, items))
                elif a is not None and ctx is not None:
                    out.append(self._assigned_elements(a, ctx, depth + 1, items))
        return _union(out)

    def _attr_sources(self, owner: str, attr: str) -> list:
        """What says what attribute ``attr`` of a ``owner`` holds: its class-level
        annotation ``(annotation, module, None, None)``, else each writer in
        the class, as its annotation (``self.q: deque[R] = deque()``), the
        annotation of the parameter it stores, or ``(None, None, assignment,
        context)``."""
        for qn in self.mro(owner):
            c = self.classes.get(qn)
            if c is not None and attr in c.fields:
                return [(c.fields[attr], c.module, None, None)]
        out: list = []
        for f, a in self.self_attr_writers(owner, attr):
            if a.kind not in ("assign", "annassign"):
                continue
            ctx = self.context(f, owner)
            if a.annotation is not None:
                out.append((a.annotation, f.module, None, None))
            elif a.value[0] == "name" and a.value[1] in ctx.params:
                out.append((ctx.params[a.value[1]].annotation, f.module, None, None))
            else:
                out.append((None, None, a, ctx))
        return out

    def _values_of(self, e, ctx: FunctionContext, depth: int) -> Classes:
        """The classes of ``e.values()``'s elements, from ``e``'s annotation."""
        v = self.canon(e, ctx)
        if v is None:
            return ()
        root = v[0]
        if len(v) == 1 and isinstance(root, ParamRoot):
            ann, module = self._param_annotation(root)
            return self._mapping_values(ann, module) if module is not None else ()
        if len(v) >= 2:
            owner = self.type_of(v[:-1])
            if owner is not None and owner in self.classes:
                return _union(
                    self._mapping_values(ann, module) for ann, module, _a, _c in self._attr_sources(owner, v[-1])
                )
        return ()
