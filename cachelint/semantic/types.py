"""Types of symbolic values: annotations (string ones too), generics and type variables,
constructor calls and bindings, return annotations. Nothing is imported or executed.

A mixin of :class:`cachelint.semantic.program.Program`.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..index.expr import conv, dotted
from ..index.records import ClassInfo, FileIndex, FunctionInfo
from .values import (
    COPY_CALLS,
    CallRoot,
    GlobalRoot,
    KwArg,
    ParamRoot,
    SelfRoot,
    Value,
)

if TYPE_CHECKING:
    from .program import FunctionContext


def string_annotation(ann):
    """The expression a string annotation (``"list[Foo]"``) spells, converted;
    None when ``ann`` is not a string or does not parse."""
    if ann is None or ann[0] != "const" or not isinstance(ann[1], str):
        return None
    try:
        node = ast.parse(ann[1], mode="eval").body
    except SyntaxError:
        return None
    return conv(node)


_NONE = (("const", None), ("name", "None"))


def type_arguments(sub) -> tuple:
    """The type arguments of a subscripted annotation (``dict[K, V]``: ``(K, V)``)."""
    s = sub[2]
    return s[1] if s[0] == "tuple" else (s,)


def only_member(ann):
    """The one type a union annotation admits besides None: ``X`` of
    ``Optional[X]``, ``Union[X, None]``, ``X | None``; None otherwise."""
    if ann[0] == "sub":
        last = (dotted(ann[1]) or "").rsplit(".", 1)[-1]
        if last == "Optional":
            return ann[2]
        if last != "Union" or ann[2][0] != "tuple":
            return None
        members = [m for m in ann[2][1] if m not in _NONE]
    elif ann[0] == "or":
        members = [m for m in ann[1] if m not in _NONE]
    else:
        return None
    return members[0] if len(members) == 1 else None


class Types:
    """Methods of the program (a mixin: ``self`` is the program)."""

    if TYPE_CHECKING:  # what the program provides (checked against it by mypy)
        _bindings: dict
        _returns_memo: dict
        _type_memo: dict

        def callee_function(self, callee: Value | None, depth: int = 0) -> FunctionInfo | None: ...
        def canon(self, e, ctx: FunctionContext | None, depth: int = 0) -> Value | None: ...

        classes: dict[str, ClassInfo]

        def cls_param_class(self, root) -> str | None: ...
        def context(self, f: FunctionInfo, self_class: str | None = None) -> FunctionContext: ...

        functions: dict[str, FunctionInfo]

        def global_value(self, qn: str) -> Value | None: ...
        def is_module_level_variable(self, qn: str) -> bool: ...

        modules: dict[str, FileIndex]

        def mro(self, class_qn: str) -> list[str]: ...
        def resolve_name(self, module: str, name: str, depth: int = 0) -> str | None: ...
        def resolve_qualified(self, qn: str, depth: int = 0) -> str: ...
        def self_attr_writers(self, class_qn: str, attr: str) -> list: ...

    # ----- types -----------------------------------------------------------------
    def annotation_name(self, ann, module: str) -> str | None:
        """The qualified name a name or dotted expression (``Foo``,
        ``mod.Foo``) in ``module`` refers to, through imports and re-exports."""
        d = dotted(ann)
        if d is None:
            return None
        head, _, rest = d.partition(".")
        r = self.resolve_name(module, head)
        if r is None:
            return None
        return self.resolve_qualified(f"{r}.{rest}" if rest else r)

    def resolve_annotation(self, ann, module: str, depth: int = 0) -> str | None:
        if ann is None or depth > 6:
            return None
        k = ann[0]
        parsed = string_annotation(ann)
        if parsed is not None:
            return self.resolve_annotation(parsed, module, depth + 1)
        if k in ("name", "attr"):
            qn = self.annotation_name(ann, module)
            if qn is None:
                return None
            if qn.startswith("builtins.") or qn in self.modules:
                return None
            if qn not in self.classes and self.is_module_level_variable(qn):
                return self._annotation_alias(qn, depth)
            return qn
        inner = only_member(ann)
        if inner is not None:
            return self.resolve_annotation(inner, module, depth + 1)
        if k == "sub":
            base = dotted(ann[1]) or ""
            last = base.split(".")[-1]
            if last in ("Final", "ClassVar", "Annotated"):
                inner = ann[2][1][0] if ann[2][0] == "tuple" else ann[2]
                return self.resolve_annotation(inner, module, depth + 1)
            # a generic class of the tree with its type arguments: Box[Layer] is a Box
            g = self.resolve_annotation(ann[1], module, depth + 1) if ann[1][0] in ("name", "attr") else None
            return g if g is not None and g in self.classes else None
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

    def value_annotation(self, v: Value) -> tuple | None:
        """``(annotation, module)`` declared for canonical value ``v``: a
        parameter's, a module variable's, or an attribute's (a class-level
        annotation or an annotated assignment in the class); None when
        nothing declares one."""
        root = v[0]
        if len(v) == 1:
            if isinstance(root, ParamRoot):
                f = self.functions.get(root.function)
                p = next((p for p in f.params if p.name == root.name), None) if f is not None else None
                return (p.annotation, f.module) if p is not None and f is not None and p.annotation else None
            if isinstance(root, GlobalRoot):
                mod, _, name = root.qualname.rpartition(".")
                fi = self.modules.get(mod)
                ann = fi.global_annotations.get(name) if fi is not None else None
                return (ann, mod) if ann is not None else None
            return None
        owner = self.type_of(v[:-1])
        if owner is None:
            return None
        attr = v[-1]
        for qn in self.mro(owner):
            c = self.classes.get(qn)
            if c is not None and attr in c.fields:
                return c.fields[attr], c.module
        for f, a in self.self_attr_writers(owner, attr):
            if a.annotation is not None:
                return a.annotation, f.module
        return None

    def callable_return(self, ann, module: str, depth: int = 0) -> tuple | None:
        """``(R, module)`` of an annotation ``Callable[..., R]`` (or ``Optional``
        of one, a string of one, or an alias of one)."""
        if ann is None or depth > 6:
            return None
        parsed = string_annotation(ann)
        if parsed is not None:
            return self.callable_return(parsed, module, depth + 1)
        inner = only_member(ann)
        if inner is not None:
            return self.callable_return(inner, module, depth + 1)
        if ann[0] in ("name", "attr"):
            alias = self.alias_value(ann, module)
            if alias is None or alias[0][0] != "sub":
                return None
            return self.callable_return(alias[0], alias[1], depth + 1)
        if ann[0] != "sub" or (dotted(ann[1]) or "").rpartition(".")[2] != "Callable":
            return None
        args = type_arguments(ann)
        return (args[1], module) if len(args) == 2 else None

    def alias_value(self, ann, module: str) -> tuple | None:
        """``(expression, module)`` of the module variable an annotation names, when it is one."""
        qn = self.annotation_name(ann, module)
        if qn is None or qn in self.classes or not self.is_module_level_variable(qn):
            return None
        mod, _, name = qn.rpartition(".")
        fi = self.modules.get(mod)
        e = fi.globals.get(name) if fi is not None else None
        if e is None or e[0] not in ("sub", "or", "name", "attr", "const"):
            return None
        return e, mod

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
                    if cq in COPY_CALLS:  # copy.copy(x), dataclasses.replace(x, ...): x's class
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
                found = self.value_annotation(callee)  # a value annotated `Callable[..., R]`: R
                ret = self.callable_return(found[0], found[1]) if found is not None else None
                return self.resolve_annotation(ret[0], ret[1]) if ret is not None else None
            return None
        owner = self.type_of(v[:-1], depth + 1)
        if owner is None:
            return None
        return self.attr_type(owner, v[-1], depth + 1)

    def _module_value(self, e, module: str) -> Value | None:
        qn = self.annotation_name(e, module)
        return (GlobalRoot(qn),) if qn is not None else None

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
