"""The types a receiver may have: which objects an attribute write may reach.

A write ``x.attr = v`` changes a cached attribute only if ``x`` may be the
object holding it. :class:`ReceiverTypes` (a mixin of
:class:`~cachelint.semantic.writes.Writes`) answers which classes a value
may be an instance of: from annotations (generics, unions, ``TypeVar``
bounds), declared attributes, and for an unannotated parameter from the
arguments of every call of its function, when the function is only ever
called (its name appears nowhere else in the tree's source). None means
unknown, which a proof must treat as "may be any object".
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from typing import TYPE_CHECKING

from ..index.expr import UNKNOWN, conv, render
from ..index.records import FunctionInfo
from ..index.scans import scan_hits
from .program import Program
from .values import CONSTRUCTORS, GlobalRoot, ParamRoot, SelfRoot, Value

# types that say nothing about the object: as good as no annotation
_ANY_TYPES = frozenset({"typing.Any", "typing_extensions.Any", "builtins.object", "object"})

# what possible_types says of a class object, a module or a function: the
# instance attributes a fill stores are not theirs to rebind
NOT_AN_INSTANCE = "<not an instance>"


class ReceiverTypes:
    """Which classes a value may be an instance of (a mixin: ``self`` is the :class:`Writes`)."""

    if TYPE_CHECKING:  # what Writes provides (checked against it by mypy)
        p: Program
        _callers: dict
        _types: dict
        _decorators: set | None
        _only_called: dict[str, bool]
        _accounted: Counter | None
        _sources: dict[str, bytes]

        def module_functions(self) -> dict[str, FunctionInfo]: ...
        def _not_instance(self, qn: str) -> bool: ...

    def type_of(self, v: Value | None) -> str | None:
        """``Program.type_of`` with ``Any``/``object`` and type variables
        (module-level names of the tree that are no class) as unknown."""
        if v is None:
            return None
        t = self.p.type_of(v)
        if t is None or t in _ANY_TYPES or (t not in self.p.classes and self.p.is_module_level_variable(t)):
            return None
        return t

    def possible_types(self, v: Value | None, depth: int = 0) -> list[str] | None:
        """The classes ``v`` may be an instance of; None when unknown. A class
        object, module or function is :data:`NOT_AN_INSTANCE`."""
        if v is None:
            return None
        root = v[0]
        if len(v) == 1 and isinstance(root, GlobalRoot) and self._not_instance(root.qualname):
            return [NOT_AN_INSTANCE]
        if len(v) == 1 and isinstance(root, ParamRoot):
            declared = self._declared_param(root)
            if declared is not None:
                return declared
        t = self.type_of(v)
        if t is not None:
            return [t]
        if len(v) >= 2 and isinstance(v[-1], str):
            declared = self._declared_attr(v, depth)
            if declared is not None:
                return declared
        if depth > 2:
            return None
        if len(v) == 1 and isinstance(root, ParamRoot):
            return self._param_types(root, depth)
        if len(v) == 2 and isinstance(root, SelfRoot) and isinstance(v[1], str):
            # an attribute only constructors bind, each from one of their parameters
            ws = self.p.self_attr_writers(root.cls, v[1])
            if not ws:
                return None
            out: list[str] = []
            for f, a in ws:
                if f.name not in CONSTRUCTORS or a.value is None or a.value[0] != "name":
                    return None
                if not any(prm.name == a.value[1] for prm in f.params):
                    return None
                got = self._param_types(ParamRoot(f.qualname, a.value[1]), depth)
                if got is None:
                    return None
                out += got
            return out
        return None

    def _declared_attr(self, v: Value, depth: int) -> list[str] | None:
        """The classes an attribute's declared annotation allows (``Optional[
        Union[dict, PoolerConfig]]``: a dict or a PoolerConfig)."""
        if depth > 3:
            return None
        owners = self.possible_types(v[:-1], depth + 1)
        if not owners:
            return None
        out: list[str] = []
        for o in owners:
            if o == NOT_AN_INSTANCE:
                return None
            ann = None
            for qn in self.p.mro(o):
                c = self.p.classes.get(qn)
                if c is not None and v[-1] in c.fields:
                    ann, module = c.fields[v[-1]], c.module
                    break
            got = self.annotation_types(ann, module) if ann is not None else None
            if got is None:
                return None
            out += got
        return out

    def annotation_types(self, ann, module: str, depth: int = 0) -> list[str] | None:
        """The classes an annotation allows, unions spelled out; None when it
        allows anything (``Any``, ``object``, an unbound type variable)."""
        if ann is None or depth > 6:
            return None
        k = ann[0]
        if k == "const":
            if ann[1] is None:
                return []
            if isinstance(ann[1], str):
                try:
                    return self.annotation_types(conv(ast.parse(ann[1], mode="eval").body), module, depth + 1)
                except SyntaxError:
                    return None
            return None
        if k == "or":
            return self._union([self.annotation_types(m, module, depth + 1) for m in ann[1]])
        if k == "sub":
            last = render(ann[1]).rsplit(".", 1)[-1]
            members = ann[2][1] if ann[2][0] == "tuple" else (ann[2],)
            if last in ("Optional", "Union"):
                return self._union([self.annotation_types(m, module, depth + 1) for m in members])
            if last in ("type", "Type"):
                return [NOT_AN_INSTANCE]
            if last in ("Annotated", "Final", "ClassVar"):
                return self.annotation_types(members[0], module, depth + 1)
            return self.annotation_types(ann[1], module, depth + 1)  # list[int]: a list
        if k in ("name", "attr"):
            if ann == ("name", "None"):
                return []
            bound = self._typevar_bound(ann, module)
            if bound is not None:
                return self.annotation_types(bound, module, depth + 1)
            head, _, rest = render(ann).partition(".")
            r = self.p.resolve_name(module, head)
            if r is None:
                return None
            qn = self.p.resolve_qualified(f"{r}.{rest}" if rest else r)
            if qn in _ANY_TYPES or (qn not in self.p.classes and self.p.is_module_level_variable(qn)):
                return None
            return [qn]
        return None

    @staticmethod
    def _union(parts: list) -> list[str] | None:
        out: list[str] = []
        for x in parts:
            if x is None:
                return None
            out += x
        return out

    def _declared_param(self, root: ParamRoot) -> list[str] | None:
        """A parameter annotated ``type[X]`` (or a type variable bound to one)
        holds a class object; the first parameter of a classmethod too."""
        p = self.p
        f = p.functions.get(root.function)
        if f is None:
            return None
        for i, prm in enumerate(f.params):
            if prm.name != root.name:
                continue
            if i == 0 and f.class_qualname and any(render(d).endswith("classmethod") for d in f.decorators):
                return [NOT_AN_INSTANCE]
            return self.annotation_types(prm.annotation, f.module)
        return None

    def _typevar_bound(self, ann, module: str):
        """The ``bound=`` of a module-level ``T = TypeVar("T", bound=...)``."""
        if ann[0] != "name":
            return None
        qn = self.p.resolve_name(module, ann[1])
        if qn is None:
            return None
        mod, _, name = qn.rpartition(".")
        fi = self.p.modules.get(mod)
        val = fi.globals.get(name) if fi is not None else None
        if val is None or val[0] != "call" or render(val[1]).rsplit(".", 1)[-1] != "TypeVar":
            return None
        for k, v in val[3]:
            if k == "bound":
                if v[0] == "const" and isinstance(v[1], str):
                    try:
                        return conv(ast.parse(v[1], mode="eval").body)
                    except SyntaxError:
                        return None
                return v
        return None

    def _param_types(self, root: ParamRoot, depth: int) -> list[str] | None:
        key = (root, depth)
        if key in self._types:
            return self._types[key]
        self._types[key] = None  # recursion guard
        out = self._param_types_uncached(root, depth)
        self._types[key] = out
        return out

    def _param_types_uncached(self, root: ParamRoot, depth: int) -> list[str] | None:
        p = self.p
        f = p.functions.get(root.function)
        if f is None:
            return None
        names = [prm.name for prm in f.params]
        if root.name not in names:
            return None
        prm = f.params[names.index(root.name)]
        if prm.kind not in ("pos", "kwonly"):
            return None
        out: list[str] = []
        if names.index(root.name) == 0 and self.decorates(f):
            out.append(NOT_AN_INSTANCE)  # a decorator gets a class or a function
        calls = self.callers(f)
        if not calls and not out:
            return None
        if not self.only_called(f):
            return None  # also passed around as a value: some calls are not seen
        for g, c, bound in calls:
            arg = None
            if prm.kind == "pos":
                i = names.index(root.name) - (1 if bound else 0)
                if any(a == UNKNOWN for a in c.args[: max(i, 0) + 1]):
                    return None  # *args
                if 0 <= i < len(c.args):
                    arg = c.args[i]
            if arg is None:
                for k, v in c.kwargs:
                    if k is None:
                        return None  # **kwargs
                    if k == root.name:
                        arg = v
            if arg is None:
                if prm.default is None:
                    return None
                continue  # the default: not an object some caller made
            got = self.possible_types(p.canon(arg, p.context(g)), depth + 1)
            if got is None:
                return None
            out += got
        return out

    def only_called(self, f: FunctionInfo) -> bool:
        """Every mention of ``f``'s name (its class's, for a constructor) in
        the tree's files is its definition, an import, a decorator or a call
        spelled with that name: no list of hooks, callback or alias calls it
        where no call site shows. Strings and comments count as mentions."""
        name = f.name
        if f.name in CONSTRUCTORS and f.class_qualname:
            name = f.class_qualname.rsplit(".", 1)[-1]
        hit = self._only_called.get(name)
        if hit is not None:
            return hit
        p = self.p
        accounted = self._accounted_names()[name]
        pattern = re.compile(rb"\b" + re.escape(name.encode()) + rb"\b")
        mentions = 0
        for fi in p.indexes:
            if fi.error is not None:
                continue
            data = self._source(fi.path)
            if name.encode() in data:
                mentions += len(pattern.findall(data))
        ok = mentions <= accounted
        self._only_called[name] = ok
        return ok

    def _accounted_names(self) -> Counter:
        """For every name, how many of its mentions in the tree's files
        :meth:`only_called` can account for (definitions of classes and
        functions, imports and their targets, ``__all__`` entries, calls,
        decorators): one pass over the indexes, on first use."""
        if self._accounted is not None:
            return self._accounted
        counts: Counter = Counter()
        for fi in self.p.indexes:
            if fi.error is not None:
                continue
            counts.update(c.name for c in fi.classes)
            counts.update(g.name for g in fi.functions)
            for local, target in fi.imports.items():
                counts[local] += 1
                last = target.rsplit(".", 1)[-1]
                if last != local:
                    counts[last] += 1
            counts.update(fi.all_names or ())
            scans = fi.scans
            if isinstance(scans, tuple):
                for key, at in scans[1].items():
                    counts[key] += len(at) // 2
            counts.update(c.func[-1] for c in fi.module_calls if isinstance(c.func[-1], str))
            for g in fi.functions:
                for a in g.assigns:
                    if a.kind == "import":
                        named = {a.value[1].rsplit(".", 1)[-1]}
                        if a.target[0] == "name":
                            named.add(a.target[1])
                        counts.update(named)
            for holder in (*fi.classes, *fi.functions):
                for d in holder.decorators:
                    d0 = d[1] if d[0] == "call" else d
                    if isinstance(d0[-1], str):
                        counts[d0[-1]] += 1
        self._accounted = counts
        return counts

    def _source(self, path: str) -> bytes:
        data = self._sources.get(path)
        if data is None:
            try:
                data = self.p.source_bytes(path)
            except OSError:
                data = b""
            self._sources[path] = data
        return data

    def decorates(self, f: FunctionInfo) -> bool:
        """``f`` is used as a decorator (``@f`` or ``@f(...)``) somewhere."""
        if self._decorators is None:
            used: set = set()
            p = self.p
            for holder in list(p.classes.values()) + list(p.functions.values()):
                for d in holder.decorators:
                    d0 = d[1] if d[0] == "call" else d
                    if d0[0] in ("name", "attr"):
                        used.add(d0[1] if d0[0] == "name" else d0[2])
            self._decorators = used
        return f.name in self._decorators and f.class_qualname is None

    def callers(self, f: FunctionInfo) -> list:
        """The calls of ``f`` seen in the tree: (caller, call, bound), bound
        when ``self`` is not among the call's arguments. Constructors are
        called through their class."""
        hit = self._callers.get(f.qualname)
        if hit is not None:
            return hit
        p = self.p
        key = f.name
        cls_name = None
        if f.name in CONSTRUCTORS and f.class_qualname:
            cls_name = f.class_qualname.rsplit(".", 1)[-1]
            key = cls_name
        out = []

        def pick(scans: tuple) -> list:
            return list(scans[1].get(key, ()))

        candidates = list(scan_hits(p.functions, p.indexes, pick))
        for m in self.module_functions().values():
            for c in m.calls:
                last = c.func[2] if c.func[0] == "attr" else c.func[1] if c.func[0] == "name" else None
                if last == key:
                    candidates.append((m, c))
        for g, c in candidates:
            callee = p.canon(c.func, p.context(g))
            if callee is None:
                continue
            if cls_name is not None:
                if len(callee) == 1 and isinstance(callee[0], GlobalRoot) and callee[0].qualname in p.classes:
                    if p.lookup_method(callee[0].qualname, f.name) is f:
                        out.append((g, c, True))
                continue
            if p.callee_function(callee) is not f:
                continue
            unbound = len(callee) == 1 and isinstance(callee[0], GlobalRoot)
            out.append((g, c, bool(f.self_name) and not unbound))
        self._callers[f.qualname] = out
        return out
