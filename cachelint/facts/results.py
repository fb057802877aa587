"""Whether what a function returns can be changed in place by its callers.

A CL001 rewrite hands every reader the one object an attribute holds, where
each call of the callee made a new one, and a memoized function hands every
caller the one object its first call returned: that is the same only for a
value no caller can change in place. :class:`ResultKinds` answers, from the
return annotation, else from the ``return`` statements (builtins,
constructors of frozen or immutable classes, and the functions of the tree
they call, three deep), ``("immutable" | "mutable" | "unknown", the type as
named)``. Immutability is deep: a tuple or frozenset is immutable only when
its items are (``tuple[int, ...]``, ``tuple[str, str]``, a tuple display of
immutable items); ``([], 1)`` holds a list any caller may append to. A bare
``tuple`` annotation says nothing of its items: the ``return`` statements do.
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
        "dtype",  # torch.dtype, torch.device: immutable singletons and values
        "device",
    }
)
# immutable themselves, but their items may not be
SHALLOW_TYPES = frozenset({"tuple", "Tuple", "frozenset", "FrozenSet"})
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
_ENUM_BASES = frozenset({"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"})
_IMMUTABLE_BASES = frozenset({"NamedTuple"})
_WRAPPERS = frozenset({"ClassVar", "Final", "Annotated", "InitVar"})


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

    def of_function(self, fn: FunctionInfo) -> tuple:
        """("immutable" | "mutable" | "unknown", what ``fn`` returns)."""
        return self._function_result(fn, 0)

    def _function_result(self, fn: FunctionInfo, depth: int) -> tuple:
        ann = fn.returns_annotation
        if ann is not None:
            got = self._annotation_kind(ann, fn.module, 0)
            bare = _bare_shallow(ann)
            if bare is None or depth > 3:
                return got
            # `-> tuple`: what the return statements build says what it holds
            kinds = [self._expr_kind(e, fn, depth) for e in fn.returns]
            worst = _worst(kinds) if kinds else ("unknown", "")
            if worst[0] == "immutable":
                return ("immutable", bare)
            if worst[1].startswith(("tuple ", "frozenset ")):
                return worst  # a tuple display: `tuple holding a list`
            return (worst[0], f"{bare} holding a {worst[1]}" if worst[1] else bare)
        if depth > 3:
            return ("unknown", "")
        kinds = [self._expr_kind(e, fn, depth) for e in fn.returns] or [("immutable", "None")]
        return _worst(kinds)

    def _expr_kind(self, e, fn: FunctionInfo, depth: int, seen: frozenset = frozenset()) -> tuple:
        k = e[0]
        if k == "const" or k == "cmp" or k == "not":
            return ("immutable", "")
        if k == "tuple":
            got = _worst([self._expr_kind(x, fn, depth, seen) for x in e[1]])
            return got if got[0] == "immutable" else (got[0], f"tuple holding a {got[1]}" if got[1] else "tuple")
        if k in ("list", "dict"):
            return ("mutable", k)
        if k == "name" and depth <= 3 and e[1] not in seen:
            return self._name_kind(e[1], fn, depth, seen | {e[1]})
        if k == "call":
            callee = self.p.canon(e[1], self.p.context(fn))
            if callee is not None and len(callee) == 1 and isinstance(callee[0], GlobalRoot):
                qn = callee[0].qualname
                name = qn.rsplit(".", 1)[-1]
                if qn.startswith("builtins."):
                    if name in _IMMUTABLE_BUILTINS:
                        if name in ("tuple", "frozenset"):
                            return ("unknown", name)  # of items cachelint does not follow
                        return ("immutable", name)
                    if name in MUTABLE_TYPES or name == "sorted":
                        return ("mutable", "list" if name == "sorted" else name)
                if qn in self.p.classes:
                    return self.class_kind(qn)
            g = self.p.callee_function(callee) if callee is not None else None
            if g is not None and g is not fn:
                return self._function_result(g, depth + 1)
        return ("unknown", "")

    def _name_kind(self, name: str, fn: FunctionInfo, depth: int, seen: frozenset) -> tuple:
        """A name a return statement uses: a parameter, by its annotation; a
        local, by what every assignment binds it to."""
        ctx = self.p.context(fn)
        if name in ctx.params:
            for prm in fn.params:
                if prm.name == name and prm.kind in ("pos", "kwonly"):
                    return self._annotation_kind(prm.annotation, fn.module, 0)
            return ("unknown", "")
        assigns = ctx.locals.get(name)
        if not assigns or any(a.kind not in ("assign", "annassign") for a in assigns):
            return ("unknown", "")
        return _worst([self._expr_kind(a.value, fn, depth, seen) for a in assigns])

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
            if last in SHALLOW_TYPES:
                return ("unknown", last)  # of items the annotation does not name
            if last in IMMUTABLE_TYPES:
                return ("immutable", last)
            if last in MUTABLE_TYPES:
                return ("mutable", last)
            qn = self.p.resolve_annotation(ann, module)
            if qn is not None and qn in self.p.classes:
                return self.class_kind(qn, depth + 1)
            return ("mutable", last) if qn is not None else ("unknown", last)
        if k == "sub":
            last = (dotted(ann[1]) or "").rsplit(".", 1)[-1]
            members = ann[2][1] if ann[2][0] == "tuple" else (ann[2],)
            if last in _WRAPPERS:  # ClassVar[int], Final[str]: the type inside
                return self._annotation_kind(members[0], module, depth + 1)
            if last in _UNION:
                return self._union([self._annotation_kind(m, module, depth + 1) for m in members])
            if last in SHALLOW_TYPES:
                got = _worst([self._annotation_kind(m, module, depth + 1) for m in members if m != ("const", Ellipsis)])
                return ("immutable", last) if got[0] == "immutable" else (got[0], _ann_text(ann))
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
        return _worst(kinds)

    def annotation_kind(self, ann, module: str) -> tuple:
        """("immutable" | "mutable" | "unknown", the type as named) of a value annotated ``ann``."""
        return self._annotation_kind(ann, module, 0)

    def assignable(self, qn: str) -> bool:
        """Instances of class ``qn`` of the tree can have attributes assigned:
        their changes are attribute writes, which cachelint follows."""
        bases = {(dotted(b) or "").rsplit(".", 1)[-1] for k in self.p.mro(qn) for b in self._bases(k)}
        return not (self.writes.is_frozen(qn) or bases & (_IMMUTABLE_BASES | _ENUM_BASES))

    def _bases(self, qn: str) -> list:
        c = self.p.classes.get(qn)
        return [b for b in c.bases if b != UNKNOWN] if c is not None else []

    def class_kind(self, qn: str, depth: int = 0) -> tuple:
        """An instance of a class of the tree: immutable when it is an
        ``Enum``, or it cannot be assigned (frozen, a ``NamedTuple``) and
        every field's value is immutable too; a frozen dataclass holding a
        ``list`` can still have that list changed in place."""
        p = self.p
        name = qn.rsplit(".", 1)[-1]
        mro = [k for k in p.mro(qn) if k in p.classes]
        bases = {(dotted(b) or "").rsplit(".", 1)[-1] for k in mro for b in p.classes[k].bases if b != UNKNOWN}
        if bases & _ENUM_BASES:
            return ("immutable", name)
        if not (self.writes.is_frozen(qn) or bases & _IMMUTABLE_BASES):
            return ("mutable", name)
        if depth > 4:  # fields of fields of ...: not shown immutable
            return ("unknown", name)
        for k in mro:
            c = p.classes[k]
            for field_name, ann in c.fields.items():
                kind = self._annotation_kind(ann, c.module, depth + 1)
                if kind[0] != "immutable":
                    return (kind[0], f"{name} (its field `{field_name}` is a `{kind[1] or render(ann)}`)")
        return ("immutable", name)


def _worst(kinds: list) -> tuple:
    """The kind of a value that may be any of ``kinds``: mutable, else unknown, else immutable."""
    for k in ("mutable", "unknown"):
        for got in kinds:
            if got[0] == k:
                return got
    return ("immutable", "")


def _bare_shallow(ann) -> str | None:
    """``tuple`` or ``frozenset`` annotated without its items (``-> tuple``)."""
    if ann is not None and ann[0] == "const" and isinstance(ann[1], str):
        try:
            ann = conv(ast.parse(ann[1], mode="eval").body)
        except SyntaxError:
            return None
    if ann is None or ann[0] not in ("name", "attr"):
        return None
    last = (dotted(ann) or "").rsplit(".", 1)[-1]
    return last if last in SHALLOW_TYPES else None


def _ann_text(ann) -> str:
    """An annotation as written (``tuple[list[int], int]``, ``tuple[int, ...]``)."""
    k = ann[0]
    if k == "sub":
        inner = ann[2][1] if ann[2][0] == "tuple" else (ann[2],)
        return f"{_ann_text(ann[1])}[{', '.join(_ann_text(m) for m in inner)}]"
    if k == "const":
        return "..." if ann[1] is Ellipsis else "None" if ann[1] is None else repr(ann[1])
    if k == "or":
        return " | ".join(_ann_text(m) for m in ann[1])
    return render(ann)
