"""Memoize: ``@functools.cache`` on a module-level function of hashable,
process-invariant parameters, or a module constant in compiled code.

See :mod:`cachelint.fixes.hoisting.planner` for what makes it safe.
"""

from __future__ import annotations

import ast
import re
from functools import cached_property

from ...facts.purity import StateKind
from ...facts.results import ResultKinds
from ...facts.state import related
from ...index.expr import dotted, render
from ...index.records import FunctionInfo
from ...model import Applicability, Edit, EditKind, Fix, Span
from ...semantic.idioms import fills_once
from .inputs import InputAnalysis
from .site import (
    _CONTEXT_KINDS,
    _HASHABLE,
    CALLERS_FOLLOWED,
    Site,
    _annotation_ok,
    _base_name,
    _call_expr,
    names_in,
)

_NUMBERS = frozenset({"int", "float", "complex", "bool"})
_SIGNED_ZERO = frozenset({"float", "complex"})  # `0.0 == -0.0`, one hash, one type
_TEXT = frozenset({"str", "bytes"})  # a `StrEnum` member equals its `str` value
_CONTAINERS = frozenset({"tuple", "Tuple", "frozenset", "FrozenSet"})

# calls whose result is the same for `0.0` and `-0.0` (of one argument)
_SIGN_BLIND_CALLS = frozenset(
    {
        "bool",
        "int",
        "abs",
        "hash",
        "round",
        "math.floor",
        "math.ceil",
        "math.trunc",
        "math.isnan",
        "math.isinf",
        "math.isfinite",
    }
)


def _key_kinds(ann, depth: int) -> frozenset[str]:
    """How values of annotation ``ann`` may be equal, as cache keys, yet
    differ: ``"number"`` (``1 == 1.0 == True``: ``typed=True`` keeps them
    apart), ``"text"`` (a ``str`` and a ``StrEnum`` member equal to it:
    ``typed=True`` too), ``"signed-zero"`` (``0.0`` and ``-0.0``: nothing keeps
    them apart), ``"contents-number"`` and ``"contents-text"`` (a tuple or
    frozenset that may hold such values: ``typed=True`` looks only at the
    argument's own type, so ``(1,)`` and ``(1.0,)`` are one key)."""
    if ann is None or depth > 6:
        return frozenset()
    k = ann[0]
    if k == "const" and isinstance(ann[1], str):
        try:
            from ...index.expr import conv

            return _key_kinds(conv(ast.parse(ann[1], mode="eval").body), depth + 1)
        except SyntaxError:
            return frozenset({"contents-number"})
    if k in ("name", "attr"):
        last = (dotted(ann) or "").rsplit(".", 1)[-1]
        if last in _NUMBERS:
            return frozenset({"number", "signed-zero"} if last in _SIGNED_ZERO else {"number"})
        if last in _TEXT:
            return frozenset({"text"})
        return frozenset({"contents-number"}) if last in _CONTAINERS else frozenset()
    if k == "sub":
        last = (dotted(ann[1]) or "").rsplit(".", 1)[-1]
        members = ann[2][1] if ann[2][0] == "tuple" else (ann[2],)
        if last == "Literal":
            numeric = any(m[0] == "const" and not isinstance(m[1], (str, bytes)) for m in members)
            return frozenset({"number"}) if numeric else frozenset()
        kinds = frozenset().union(*(_key_kinds(m, depth + 1) for m in members))
        if last in _CONTAINERS:
            out = set()
            if any(not _key_kinds(m, depth + 1) and not _plain_item(m) for m in members):
                # an enum member, a `str` subclass, an object whose `__eq__`
                # crosses types: `(Color.RED,)` equals `(Size.SMALL,)` (two
                # `IntEnum`s of one value), `typed` looks at the tuple only
                out.add("contents-other")
            if kinds & {"number", "signed-zero", "contents-number"}:
                out.add("contents-number")
            if kinds & {"text", "contents-text"}:
                out.add("contents-text")
            return frozenset(out)
        return kinds
    if k in ("or", "tuple"):
        return frozenset().union(*(_key_kinds(m, depth + 1) for m in ann[1]))
    return frozenset()


def _plain_item(m) -> bool:
    """A container's item annotation whose values equal only themselves: ``None``, the ``...`` of ``tuple[int, ...]``."""
    if m[0] == "const" and (m[1] is None or m[1] is Ellipsis):
        return True
    return m[0] in ("name", "attr") and (dotted(m) or "").rsplit(".", 1)[-1] == "NoneType"


def _mentions(ann, names: frozenset) -> bool:
    """Annotation ``ann`` names one of ``names`` anywhere in it."""
    if isinstance(ann, tuple):
        if ann[:1] in (("name",), ("attr",)) and (dotted(ann) or "").rsplit(".", 1)[-1] in names:
            return True
        return any(_mentions(x, names) for x in ann[1:])
    return False


def _identity_use(node, params: set) -> ast.Compare | None:
    """An ``is``/``is not`` between a parameter and anything but a constant:
    equal arguments (one cache key) may be different objects."""
    for n in ast.walk(node):
        if not isinstance(n, ast.Compare) or not any(isinstance(o, (ast.Is, ast.IsNot)) for o in n.ops):
            continue
        sides = [n.left, *n.comparators]
        for i, o in enumerate(n.ops):
            if not isinstance(o, (ast.Is, ast.IsNot)):
                continue
            a, b = sides[i], sides[i + 1]
            if any(isinstance(x, ast.Name) and x.id in params for x in (a, b)) and not (
                isinstance(a, ast.Constant) or isinstance(b, ast.Constant)
            ):
                return n
    return None


def _order_use(node, name: str) -> ast.Name | None:
    """A use of set parameter ``name`` whose result may follow its iteration
    order (anything but ``len(x)``, ``sorted(x)``, ``y in x``, ``x == y``)."""
    parents: dict = {}
    for n in ast.walk(node):
        for c in ast.iter_child_nodes(n):
            parents[id(c)] = n
    for n in ast.walk(node):
        if not (isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)):
            continue
        up = parents.get(id(n))
        if isinstance(up, ast.Call) and isinstance(up.func, ast.Name) and up.func.id in ("len", "sorted", "min", "max"):
            continue
        if isinstance(up, ast.Compare) and all(isinstance(o, (ast.In, ast.NotIn, ast.Eq, ast.NotEq)) for o in up.ops):
            continue
        return n
    return None


def _sign_revealing_use(node, name: str) -> ast.Name | None:
    """The first use of parameter ``name`` in function ``node``'s body that
    may tell ``-0.0`` from ``0.0`` (formatting it, dividing by it, passing it
    on, rebinding it), or None when every use is blind to the sign of zero:
    a comparison, a truth test, ``int(x)``, ``abs(x)``..."""
    parents: dict = {}
    for stmt in node.body:
        for n in ast.walk(stmt):
            for ch in ast.iter_child_nodes(n):
                parents[ch] = n
    for stmt in node.body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and n.id == name and not _sign_blind(n, parents.get(n)):
                return n
    return None


def _sign_blind(n: ast.Name, parent) -> bool:
    if not isinstance(n.ctx, ast.Load):
        return False
    if isinstance(parent, ast.Compare):
        return not any(isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops)
    if isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)):
        return parent.test is n
    if isinstance(parent, ast.UnaryOp):
        return isinstance(parent.op, ast.Not)
    if isinstance(parent, ast.Call):
        func = ast.unparse(parent.func)
        return func in _SIGN_BLIND_CALLS and parent.args == [n] and not parent.keywords
    return False


class Memoizer(InputAnalysis):
    """The memoize and module-constant fixes and their safety checks."""

    # memoize --------------------------------------------------------------------------------
    def _memoize(self, s: Site) -> Fix | None:
        f = s.function
        if f.class_qualname is not None or f.parent_function is not None:
            return None
        compiled = self.compiled().get(f.qualname)
        if compiled is not None:
            s.notes.append(
                f"not memoized: `{f.name}` runs inside code compiled by torch.compile (from `{compiled}`), "
                "where Dynamo does not trace through functools.cache; hoist the value to a module constant or an `__init__` attribute"
            )
            return None
        if self.p.is_cached(f):
            return None
        memo = self._memoizing_decorator(f)
        if memo is not None:
            s.notes.append(
                f"not memoized: `{f.name}` is already memoized by `@{memo}`, a caching decorator of the tree"
            )
            return None
        context = self._mutable_context(s)
        if context is not None:
            s.notes.append(f"not memoized: the value of `{f.name}` depends on {context}")
            return None
        reasons: list[str] = []
        if f.is_async:
            return None
        if self._is_generator(f):
            return None
        for prm in f.params:
            if (
                prm.kind in ("vararg", "kwarg")
                or prm.annotation is None
                or not _annotation_ok(prm.annotation, _HASHABLE)
            ):
                # a cache keyed on a tensor, a config object or an unknown value
                # would be keyed on identity: wrong, not merely unproven
                s.notes.append(
                    f"not memoized: parameter `{prm.name}` of `{f.name}` is not annotated as a hashable, immutable value"
                )
                return None
        # equal values of different types (`1`, `1.0`, `True`; `"a"` and a
        # `StrEnum` member) are one `functools.cache` key: `typed=True` keys on
        # each argument's exact type, whatever the annotation says
        typed = bool(f.params)
        for prm in f.params:
            kinds = _key_kinds(prm.annotation, 0)
            shown = f"`{prm.name}: {self._annotation_text(f, prm.name, prm.annotation)}`"
            if "contents-number" in kinds:
                reasons.append(
                    f"parameter {shown} of `{f.name}` may hold numbers: containers "
                    f"whose items are equal across types (`(1,)`, `(1.0,)`, `(True,)`) are one cache key, and "
                    f"`{f.name}` may tell them apart"
                )
            elif "contents-text" in kinds:
                reasons.append(
                    f'parameter {shown} of `{f.name}` may hold strings: `("a",)` and a tuple of a `StrEnum` '
                    f'member equal to `"a"` are one cache key even when typed (it looks only at the tuple\'s own '
                    f"type), and `{f.name}` may tell them apart"
                )
            elif "contents-other" in kinds:
                reasons.append(
                    f"parameter {shown} of `{f.name}` may hold enum members or other values equal across types "
                    f"(`(Color.RED,)` equals `(Size.SMALL,)` for two `IntEnum`s of one value): one cache key even "
                    f"when typed (it looks only at the container's own type), and `{f.name}` may tell them apart"
                )
            if _mentions(prm.annotation, frozenset({"bytes"})):
                reasons.append(
                    f"parameter {shown} of `{f.name}` may receive a `bytearray` (type checkers accept it for "
                    f"`bytes`), which is unhashable: the memoized call would raise TypeError"
                )
            if _mentions(prm.annotation, frozenset({"frozenset", "FrozenSet", "AbstractSet"})):
                body = self.a.bodies.body(f)
                use = _order_use(body.node, prm.name) if body is not None else None
                if body is None or use is not None:
                    at = f" (line {use.lineno + body.shift})" if body is not None and use is not None else ""
                    reasons.append(
                        f"`{f.name}` may depend on the iteration order of parameter {shown}{at}: equal sets "
                        f"(one cache key) may iterate in different orders"
                    )
            if "signed-zero" in kinds:
                body = self.a.bodies.body(f)
                use = _sign_revealing_use(body.node, prm.name) if body is not None else None
                if body is None or use is not None:
                    at = ""
                    if body is not None and use is not None:
                        line = use.lineno + body.shift
                        src = self.lines(f.path)
                        if 0 < line <= len(src):
                            at = f" (line {line}: `{src[line - 1].strip()}`)"
                    reasons.append(
                        f"parameter {shown} of `{f.name}` may be `0.0` or `-0.0`, which are equal and hash the same "
                        f"(one cache key even when typed), and `{f.name}` may tell them apart{at}"
                    )
        body = self.a.bodies.body(f)
        ident = _identity_use(body.node, {q.name for q in f.params}) if body is not None else None
        if ident is not None:
            reasons.append(
                f"`{f.name}` compares identities (line {ident.lineno + body.shift}: `{ast.unparse(ident)}`): "
                "equal arguments, one cache key, may be different objects"
            )
        dep = self.a.state.dependence(f)
        if dep is not None and dep.state is not None and dep.state.kind is StateKind.ENVIRON:
            s.notes.append(f"not memoized: the value of `{f.name}` depends on the environment ({dep.reason})")
            return None
        if f.returns_annotation is None:
            reasons.append("the return value has no annotation; a cached mutable value would be shared by all callers")
        else:
            result = self.results.of_function(f)
            if result[0] != "immutable":
                reasons.append(self._mutable_result(f, result))
        purity = self.a.cost.purity([f.qualname], f)
        pure, why = purity.pure, purity.reason
        opaque = self.a.cost.opaque_decorator(f) if f.decorators else None
        if opaque is not None:
            # the name is the decorator's wrapper: a cache above it skips the wrapper on a repeated call
            reasons.append(
                f"`{f.name}` is wrapped by `@{opaque}`, which cachelint cannot show hands each call through "
                "unchanged; the cache above it would skip the wrapper on a repeated call"
            )
        if not pure and not (opaque is not None and purity.via == (f.qualname,)):
            reasons.append(purity.detail())
        if dep is not None:
            reasons.append(f"{dep.reason}; a cached value would keep the answer of the first call")
        target = f.qualname[len(f.module) + 1 :]
        deco = "functools.lru_cache(maxsize=None, typed=True)" if typed else "functools.cache"
        edits = (
            Edit(Span(f.line, 0, f.line, 0), deco, kind=EditKind.ADD_DECORATOR, target=target),
            Edit(Span(1, 0, 1, 0), "", kind=EditKind.ADD_IMPORT, target="functools"),
        )
        return Fix(
            Applicability.UNSAFE if reasons else Applicability.SAFE,
            edits,
            message=f"Memoize `{f.name}` with `@{deco}`"
            + (
                " (typed: equal values of different types, `1`, `1.0`, `True` or a `str` and a `StrEnum` member, "
                "would share one `functools.cache` key)"
                if typed
                else ""
            )
            + (f" (unsafe: {'; '.join(reasons)})" if reasons else ""),
            relies_on=(f"`{f.name}`: {why}",) if pure and dep is None and opaque is None else (),
        )

    def _annotation_text(self, f: FunctionInfo, name: str, ann) -> str:
        """Parameter ``name``'s annotation as written (``tuple[str, ...]``)."""
        body = self.a.bodies.body(f)
        args = getattr(body.node, "args", None) if body is not None else None
        if args is not None:
            for a in (*args.posonlyargs, *args.args, *args.kwonlyargs):
                if a.arg == name and a.annotation is not None:
                    return ast.unparse(a.annotation)
        return render(ann) if ann is not None else "?"

    def _memoizing_decorator(self, f: FunctionInfo) -> str | None:
        """A decorator of ``f``, defined in the tree, whose wrapper fills a memo
        (``if key not in results: results[key] = fn(...)``), as written."""
        p = self.p
        ctx = p.context(f)
        for d in f.decorators:
            d0 = d[1] if d[0] == "call" else d
            callee = p.canon(d0, ctx)
            g = p.callee_function(callee) if callee is not None else None
            if g is None:
                continue
            for qn in g.nested.values():
                w = p.functions.get(qn)
                if w is not None and any(fills_once(w, c) for c in w.calls):
                    return dotted(d0)
        return None

    @cached_property
    def results(self) -> ResultKinds:
        """Whether a return value is immutable, deeply: the one answer CL001 uses too."""
        return ResultKinds(self.p, self.a.writes)

    def _mutable_result(self, f: FunctionInfo, result: tuple) -> str:
        """Why a cached return value would be shared: its annotated type (what
        in it may change), and a hot caller that changes it in place, if one does."""
        body = self.a.bodies.body(f)
        ann = body.node.returns if body is not None else None
        if ann is not None:
            shown = ast.unparse(ann)
        else:
            shown = render(f.returns_annotation) if f.returns_annotation is not None else "?"
        kind, what = result
        inner = f" ({what})" if what and what not in shown else ""
        if kind == "mutable":
            out = f"it returns `{shown}`{inner}, a mutable value every caller would then share"
        else:
            out = (
                f"it returns `{shown}`{inner}, which cachelint cannot show immutable; a cached value would be shared "
                "by every caller"
            )
        for g, c in self.hot.callers(f.qualname, CALLERS_FOLLOWED):
            t = c.assigned_to
            if t is None or t[0] != "name":
                continue
            for e in self.a.state.effects(g):
                if e.line > c.line and e.text and self._names_local(g, e, t[1]):
                    return out + f"; `{g.qualname}` changes it in place (line {e.line}: `{e.text}`)"
        return out

    def _names_local(self, g: FunctionInfo, e, name: str) -> bool:
        """Effect ``e`` of ``g`` changes the value of its local ``name``."""
        v = self.a.state.value(g, ("name", name))
        return v is not None and related(e.value, v) and len(e.value) >= len(v)

    def _mutable_context(self, s: Site) -> str | None:
        """What mutable state the function's value follows, if the body shows it."""
        f = s.function
        if not s.cost.pure and s.cost.kind in _CONTEXT_KINDS:
            return _CONTEXT_KINDS[s.cost.kind] + f" (`{dotted(s.call.func) or '...'}`)"
        reads = self.a.cost.state_reads(f)
        rebound = [r.name for r in reads if r.kind is StateKind.GLOBAL]
        if rebound:
            return "module globals it rebinds (`global " + ", ".join(rebound) + "`)"
        for r in reads:
            if r.kind is StateKind.CATALOGUED and r.what in _CONTEXT_KINDS:
                return _CONTEXT_KINDS[r.what] + f" (`{r.name}`)"
        return None

    def _is_generator(self, f: FunctionInfo) -> bool:
        t = self.text(f.path, f.line, 0, f.end_line, 10**6) or ""
        return re.search(r"\byield\b", t) is not None

    # module constant ------------------------------------------------------------------------
    def _module_constant(self, s: Site) -> Fix | None:
        """Inside compiled code: evaluate a call of constant inputs once, at import."""
        p = self.p
        f, c = s.function, s.call
        if f.qualname not in self.compiled() or not s.cost.pure:
            return None  # an impure call moved to import time would be a different program
        ctx = p.context(f)
        used: list[str] = []
        names_in(_call_expr(c), used)
        fi = p.modules_by_path.get(f.path)
        if fi is None:
            return None
        for n in used:
            if n == "?" or n in ctx.locals or n in ctx.params or p.resolve_name(fi.module, n) is None:
                return None
            if f.self_name and n == f.self_name:
                return None
        text = self.call_text(f, c)
        if text is None:
            return None
        names = self._constants.setdefault(f.path, {})
        name = names.get(text)
        if name is None:
            name = "_" + _base_name(c).upper()
            taken = set(fi.imports) | set(fi.defs) | set(fi.globals) | set(names.values())
            base, i = name, 2
            while name in taken:
                name, i = f"{base}_{i}", i + 1
            names[text] = name
        reasons = [
            "the call moves to import time (it then runs once, when the module is imported, e.g. before devices are set up)"
        ]
        edits = (
            Edit(Span(c.line, c.column, c.end_line, c.end_column), name),
            Edit(Span(0, 0, 0, 0), f"{name} = {text}", kind=EditKind.APPEND_TO_FUNCTION, target="<module>"),
        )
        return Fix(
            Applicability.UNSAFE,
            edits,
            message=f"Hoist to a module constant `{name}` (compiled code: no functools.cache) (unsafe: {'; '.join(reasons)})",
        )
