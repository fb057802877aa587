"""Containers of the program: the functions a dict or list holds, stored by
literal, by subscript assignment or by ``update``/``append``/``setdefault``,
and the elements a subscript or loop reads from them.

A mixin of :class:`cachelint.semantic.program.Program`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..index.records import FileIndex, FunctionInfo
from .values import ALIAS_KINDS, MODULE_CODE, Value

if TYPE_CHECKING:
    from .program import FunctionContext


_ANY = object()  # a key that is not a constant: any entry


_STORE_METHODS = frozenset({"update", "append", "add", "setdefault"})


class Containers:
    """Methods of the program (a mixin: ``self`` is the program)."""

    if TYPE_CHECKING:  # what the program provides (checked against it by mypy)
        _stores: dict | None

        def callee_function(self, callee: Value | None, depth: int = 0) -> FunctionInfo | None: ...
        def canon(self, e, ctx: FunctionContext | None, depth: int = 0) -> Value | None: ...
        def context(self, f: FunctionInfo, self_class: str | None = None) -> FunctionContext: ...

        functions: dict[str, FunctionInfo]

        def is_module_level_variable(self, qn: str) -> bool: ...
        def module_function(self, module: str) -> FunctionInfo | None: ...

        modules: dict[str, FileIndex]

        def resolve_name(self, module: str, name: str, depth: int = 0) -> str | None: ...
        def self_attr_writers(self, class_qn: str, attr: str) -> list: ...

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
        cls = ctx.self_class or ctx.f.class_qualname
        if k == "attr" and e[1][0] == "name" and e[1][1] == ctx.self_name and cls is not None:
            # `self.handlers = {"a": self.handle_a}` bound once (what other methods store into it is not read)
            writers = self.self_attr_writers(cls, e[2])
            if len(writers) != 1 or writers[0][1].kind not in ALIAS_KINDS or writers[0][1].in_loop:
                return None
            f, a = writers[0]
            got = self.container(a.value, self.context(f, cls), depth + 1)
            return (got[0], None) if got is not None else None
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
                if a.kind not in ALIAS_KINDS or a.in_loop:
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
