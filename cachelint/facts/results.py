"""Whether what a function returns can be changed in place by its callers.

A CL001 rewrite hands every reader the one object an attribute holds, where
each call of the callee made a new one: that is the same only for a value no
caller can change in place. :class:`ResultKinds` answers, from the return
annotation, else from the ``return`` statements (builtins, constructors of
frozen or immutable classes, and the functions of the tree they call, three
deep), ``("immutable" | "mutable" | "unknown", the type as named)``.
"""

from __future__ import annotations

import ast

from ..index.expr import UNKNOWN, conv, dotted, render
from ..index.records import FunctionInfo
from ..semantic.program import Program, Value
from ..semantic.values import GlobalRoot
from ..semantic.writes import Writes

# return annotations (last name) whose values callers cannot change in place
IMMUTABLE_TYPES = frozenset(
    {
        "int",
        "float",
        "bool",
        "str",
        "bytes",
        "complex",
        "tuple",
        "Tuple",
        "frozenset",
        "FrozenSet",
        "range",
        "None",
        "NoneType",
        "Literal",
        "LiteralString",
    }
)
MUTABLE_TYPES = frozenset(
    {
        "list",
        "List",
        "dict",
        "Dict",
        "set",
        "Set",
        "bytearray",
        "defaultdict",
        "DefaultDict",
        "OrderedDict",
        "deque",
        "Deque",
        "Counter",
        "MutableMapping",
        "MutableSequence",
        "MutableSet",
    }
)
_UNION = frozenset({"Optional", "Union"})
_IMMUTABLE_BUILTINS = frozenset(
    {"int", "float", "bool", "str", "bytes", "len", "tuple", "frozenset", "repr", "hash", "abs", "round", "isinstance"}
)
_IMMUTABLE_BASES = frozenset({"NamedTuple", "Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"})


class ResultKinds:
    """The kind of value functions of one program return (see the module)."""

    def __init__(self, program: Program, writes: Writes) -> None:
        self.p = program
        self.writes = writes

    def of_callee(self, callee: Value) -> tuple:
        """("immutable" | "mutable" | "unknown", what the callee returns)."""
        fn = self.p.callee_function(callee)
        if fn is None:
            return ("unknown", "")
        return self._function_result(fn, 0)

    def _function_result(self, fn: FunctionInfo, depth: int) -> tuple:
        if fn.returns_annotation is not None:
            return self._annotation_kind(fn.returns_annotation, fn.module, 0)
        if depth > 3:
            return ("unknown", "")
        kinds = [self._expr_kind(e, fn, depth) for e in fn.returns] or [("immutable", "None")]
        for k in ("mutable", "unknown"):
            for got in kinds:
                if got[0] == k:
                    return got
        return ("immutable", "")

    def _expr_kind(self, e, fn: FunctionInfo, depth: int) -> tuple:
        k = e[0]
        if k == "const" or k == "tuple" or k == "cmp" or k == "not":
            return ("immutable", "")
        if k == "call":
            callee = self.p.canon(e[1], self.p.context(fn))
            if callee is not None and len(callee) == 1 and isinstance(callee[0], GlobalRoot):
                qn = callee[0].qualname
                name = qn.rsplit(".", 1)[-1]
                if qn.startswith("builtins."):
                    if name in _IMMUTABLE_BUILTINS:
                        return ("immutable", name)
                    if name in MUTABLE_TYPES or name == "sorted":
                        return ("mutable", "list" if name == "sorted" else name)
                if qn in self.p.classes:
                    return self._class_kind(qn)
            g = self.p.callee_function(callee) if callee is not None else None
            if g is not None and g is not fn:
                return self._function_result(g, depth + 1)
        return ("unknown", "")

    def _annotation_kind(self, ann, module: str, depth: int) -> tuple:
        if ann is None or depth > 6:
            return ("unknown", "")
        k = ann[0]
        if k == "const":
            if ann[1] is None:
                return ("immutable", "None")
            if isinstance(ann[1], str):
                try:
                    node = ast.parse(ann[1], mode="eval").body
                except SyntaxError:
                    return ("unknown", "")
                return self._annotation_kind(conv(node), module, depth + 1)
            return ("unknown", "")
        if k in ("name", "attr"):
            d = dotted(ann) or ""
            last = d.rsplit(".", 1)[-1]
            if last in IMMUTABLE_TYPES:
                return ("immutable", last)
            if last in MUTABLE_TYPES:
                return ("mutable", last)
            qn = self.p.resolve_annotation(ann, module)
            if qn is not None and qn in self.p.classes:
                return self._class_kind(qn)
            return ("mutable", last) if qn is not None else ("unknown", last)
        if k == "sub":
            last = (dotted(ann[1]) or "").rsplit(".", 1)[-1]
            members = ann[2][1] if ann[2][0] == "tuple" else (ann[2],)
            if last in _UNION:
                return self._union([self._annotation_kind(m, module, depth + 1) for m in members])
            if last in IMMUTABLE_TYPES:
                return ("immutable", last)
            if last in MUTABLE_TYPES:
                return ("mutable", last)
            return ("unknown", render(ann))
        if k == "or":
            return self._union([self._annotation_kind(m, module, depth + 1) for m in ann[1]])
        return ("unknown", "")

    @staticmethod
    def _union(kinds: list) -> tuple:
        for k in ("mutable", "unknown"):
            for got in kinds:
                if got[0] == k:
                    return got
        return ("immutable", "")

    def _class_kind(self, qn: str) -> tuple:
        p = self.p
        name = qn.rsplit(".", 1)[-1]
        if self.writes.is_frozen(qn):
            return ("immutable", name)
        c = p.classes.get(qn)
        if c is not None and any(
            (dotted(b) or "").rsplit(".", 1)[-1] in _IMMUTABLE_BASES for b in c.bases if b != UNKNOWN
        ):
            return ("immutable", name)
        return ("mutable", name)
