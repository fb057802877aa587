"""Class hierarchies of the program: bases, MRO, subclasses, overrides, protocols.

A mixin of :class:`cachelint.semantic.program.Program`: the methods read the
program's classes and memo tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..index.expr import _last_name, dotted
from ..index.records import ClassInfo, FunctionInfo
from .values import CONSTRUCTORS, CallRoot, GlobalRoot, Value

if TYPE_CHECKING:
    from .program import FunctionContext


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


class Hierarchy:
    """Methods of the program (a mixin: ``self`` is the program)."""

    if TYPE_CHECKING:  # what the program provides (checked against it by mypy)
        _is_protocol: dict
        _mro: dict
        _protocol_impls: dict
        _subclasses: dict | None

        def canon(self, e, ctx: FunctionContext | None, depth: int = 0) -> Value | None: ...

        classes: dict[str, ClassInfo]

        def context(self, f: FunctionInfo, self_class: str | None = None) -> FunctionContext: ...

        functions: dict[str, FunctionInfo]

        def global_value(self, qn: str) -> Value | None: ...
        def resolve_name(self, module: str, name: str, depth: int = 0) -> str | None: ...
        def resolve_qualified(self, qn: str, depth: int = 0) -> str: ...

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

    def dispatch(self, fn: FunctionInfo) -> list[FunctionInfo]:
        """``fn`` and every method a call resolved to ``fn`` may run instead:
        its overrides in subclasses and, for a protocol's method, the
        implementations' (what a call on an object typed by ``fn``'s class
        can do is what any of them does)."""
        if not fn.class_qualname:
            return [fn]
        return [fn, *(g for g in self.overrides(fn.class_qualname, fn.name) if g is not fn)]

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
