"""Whether a call is pure and deterministic: the records and the questions.

:class:`Purity` answers it (and :class:`StateRead` names the state an impure
call depends on, of a :class:`StateKind`). :class:`PurityQuestions` holds the
questions the :class:`~cachelint.facts.cost.CostModel` answers about purity
(a mixin: ``self`` is the model, with its catalog, program and one memo).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from ..index.expr import dotted
from ..index.records import FunctionInfo
from ..semantic.values import GlobalRoot
from .catalog import CONTAINER_READS, CONTAINERS, EXCEPTIONS, pure_builtin

if TYPE_CHECKING:
    from ..semantic.program import Program
    from .catalog import Catalog

# how many calls deep a body is followed (reach, purity, config walks)
MAX_DEPTH = 3

# decorators (last name) that hand each call to the function unchanged, or
# only memoize it: a decorated function is as pure as its body
TRANSPARENT_DECORATORS = frozenset(
    {
        "staticmethod",
        "classmethod",
        "property",
        "cached_property",
        "abstractmethod",
        "overload",
        "override",
        "final",
        "wraps",
        "no_type_check",
        "cache",
        "lru_cache",
        "no_grad",
        "inference_mode",
    }
)


class StateKind(str, Enum):
    """The kind of state an impure call depends on (or the limit that stopped the proof)."""

    CATALOGUED = "catalogued"  # a catalog entry not marked pure (environment, I/O, a registry, ...)
    GLOBAL = "global"  # a module global the body rebinds (``global X``)
    WRITE = "write"  # an attribute or item the body assigns
    UNRESOLVED = "unresolved"  # a call cachelint cannot see into
    LIMIT = "limit"  # recursion or the depth limit: nothing proven
    # module state a pure body reads and other code changes (see facts.state)
    MUTABLE = "mutable"  # a module variable, class attribute or module-level object's attribute
    ENVIRON = "environ"  # os.environ (read as a mapping, not through a catalogued call)
    DECORATOR = "decorator"  # a decorator that may do more than hand the call through


@dataclass(frozen=True, slots=True)
class StateRead:
    r"""The state an impure call reads or writes: its kind, the exact name, and
    for a catalogued call the entry's kind (``environment``, ``io``, ...), for
    mutable module state what changes it (``\`pkg.registry.register\` changes
    it in place (line 5: ...)``). ``describe()`` continues a sentence whose
    subject is the function."""

    kind: StateKind
    name: str
    what: str = ""

    def describe(self) -> str:
        if self.kind is StateKind.CATALOGUED:
            return f"calls `{self.name}` ({self.what})"
        if self.kind is StateKind.GLOBAL:
            return f"rebinds the module global `{self.name}`"
        if self.kind is StateKind.WRITE:
            return f"assigns `{self.name}`"
        if self.kind is StateKind.UNRESOLVED:
            return f"calls `{self.name}`, which cachelint cannot see into"
        if self.kind is StateKind.MUTABLE:
            return f"reads `{self.name}`, which {self.what}"
        if self.kind is StateKind.ENVIRON:
            return f"reads `{self.name}` (the environment can change at run time)"
        if self.kind is StateKind.DECORATOR:
            return f"is wrapped by `@{self.name}`, which cachelint cannot show hands each call through unchanged"
        return "(recursive, or too deep to follow)"


@dataclass(frozen=True, slots=True)
class Purity:
    """Whether a call is pure and deterministic, and why (``reason``: the text
    messages quote); when it is not, ``state`` is the first state the call (or
    a function it calls) depends on, and ``via`` the functions of the tree
    from the one asked about to the one whose body depends on it."""

    pure: bool
    reason: str
    state: StateRead | None = None
    via: tuple[str, ...] = ()

    def detail(self) -> str:
        """The reason with the state named, e.g. ``...: `f` calls `g` calls `os.getenv` (environment)``."""
        if self.state is None:
            return self.reason
        chain = " calls ".join(f"`{q}`" for q in self.via)
        return f"{self.reason}: {chain + ' ' if chain else ''}{self.state.describe()}"


class PurityQuestions:
    """The purity questions of the cost model (a mixin: ``self`` is the model)."""

    if TYPE_CHECKING:  # what the model provides (checked against it by mypy)
        program: Program
        catalog: Catalog
        _memo: dict

    def purity(self, names: list[str], fn: FunctionInfo | None, depth: int = 0) -> Purity:
        """Whether calling ``fn`` (known by ``names``) is pure and deterministic.

        The catalog decides first (an entry's ``pure``; a ``declared-pure``
        pattern); then the body in the tree: pure when it rebinds no global,
        assigns no attribute or item, and only calls pure builtins and pure
        functions, followed down to :data:`MAX_DEPTH` (recursion proves
        nothing). A call cachelint cannot resolve is not pure."""
        entry = self.catalog.match(names)
        if entry is not None and entry.kind != "declared-pure":
            if entry.pure:
                return Purity(True, "declared pure in the catalog")
            shown = names[0] if names else entry.pattern
            return Purity(
                False,
                f"`{shown}` is not pure ({entry.kind}: {entry.why or 'catalog'})",
                StateRead(StateKind.CATALOGUED, shown, entry.kind),
            )
        if self.catalog.pure(names):
            return Purity(True, "declared pure in configuration")
        if fn is None:
            shown = names[0] if names else "?"
            return Purity(
                False,
                f"`{shown}` is not known to be pure and deterministic",
                StateRead(StateKind.UNRESOLVED, shown),
            )
        key = ("pure", fn.qualname, depth)
        memo = self._memo
        if key in memo:
            return memo[key]
        result = self._infer_purity(fn, depth)
        memo[key] = result
        return result

    def call_purity(self, names: list[str], fn: FunctionInfo | None, depth: int = 0, callee=None) -> Purity:
        """Whether a call resolved to ``fn`` (known by ``names``) is pure: ``fn``
        and every method the call may run instead (``Program.dispatch``: the
        overrides in subclasses, a protocol's implementations). A receiver typed
        by a base class may be an instance of any subclass, so one override
        that is not pure makes the call not pure; the reason names it. Given
        the canonical ``callee`` (``receiver + (name,)``), only the overrides
        its receiver may run count: none on an object just constructed, those
        of the receiver's class and its subclasses on one of a class that
        inherits ``fn`` (``self.get_hf_config()`` in one processor never runs
        another processor's override)."""
        first = self.purity(names, fn, depth)
        if not first.pure or fn is None or not fn.class_qualname:
            return first
        for impl in self._overrides_run(fn, callee):
            other = self.purity([impl.qualname], impl, depth)
            if not other.pure:
                return Purity(
                    False,
                    f"`{fn.qualname}` may run the override `{impl.qualname}`, which is not known to be pure",
                    other.state,
                    other.via or (impl.qualname,),
                )
        return first

    def _overrides_run(self, fn: FunctionInfo, callee) -> list[FunctionInfo]:
        """The methods other than ``fn`` a call resolved to ``fn`` on ``callee`` may run."""
        p = self.program
        impls = p.dispatch(fn)[1:]
        if not impls or callee is None or len(callee) < 2:
            return impls
        base = callee[:-1]
        if p.exact_class(base):
            return []
        t = p.type_of(base)
        if t is None or t not in p.classes or p.is_protocol(t) or not p.is_subclass(t, fn.class_qualname or ""):
            return impls
        return [g for g in impls if g.class_qualname and p.is_subclass(g.class_qualname, t)]

    def state_reads(self, fn: FunctionInfo) -> tuple[StateRead, ...]:
        """The mutable state ``fn``'s own body depends on, in order: the module
        globals it rebinds, then each call the catalog names and does not mark
        pure (its name as spelled at the call, the entry's kind). Memoized."""
        key = ("state", fn.qualname)
        memo = self._memo
        hit = memo.get(key)
        if hit is not None:
            return hit
        out = [StateRead(StateKind.GLOBAL, g) for g in fn.global_names]
        p = self.program
        for c in fn.calls:
            e = self.catalog.match(p.callee_names(p.call_callee(fn, c), dotted(c.func)))
            if e is not None and not e.pure:
                out.append(StateRead(StateKind.CATALOGUED, dotted(c.func) or "...", e.kind))
        result = memo[key] = tuple(out)
        return result

    def opaque_decorator(self, fn: FunctionInfo) -> str | None:
        """The first decorator of ``fn`` (as written) that may do more than hand
        each call to ``fn`` (record it, count it, read state, change the
        arguments or the result): calling a decorated name runs the
        decorator's wrapper. None when every decorator is transparent: a
        known one (:data:`TRANSPARENT_DECORATORS`, a configured cache
        decorator), or one of the tree that returns the function itself or a
        wrapper whose body is only ``return fn(...)`` (``functools.wraps``
        allowed)."""
        key = ("decorators", fn.qualname)
        memo = self._memo
        if key in memo:
            return memo[key]
        out = None
        for d in fn.decorators:
            if self._transparent_decorator(fn, d):
                continue
            out = dotted(d[1] if d[0] == "call" else d) or "..."
            break
        memo[key] = out
        return out

    def _transparent_decorator(self, fn: FunctionInfo, d) -> bool:
        p = self.program
        d0 = d[1] if d[0] == "call" else d
        if (dotted(d0) or "").rsplit(".", 1)[-1] in TRANSPARENT_DECORATORS or p.cache_decorators.memoizes(d):
            return True
        if d[0] == "call":
            return False  # a decorator factory: what it makes is not followed
        callee = p.canon(d0, p.context(fn))
        g = p.callee_function(callee) if callee is not None else None
        if g is None or g.class_qualname is not None:
            return False
        positional = [q.name for q in g.params if q.kind == "pos"]
        if len(positional) != 1 or not g.returns:
            return False
        wrapped = positional[0]
        for r in g.returns:
            if r == ("name", wrapped):
                continue  # registers the function and returns it as it is
            w = p.functions.get(g.nested.get(r[1], "")) if r[0] == "name" else None
            if w is None or not _forwards(w, wrapped):
                return False
        return True

    def _infer_purity(self, fn: FunctionInfo, depth: int) -> Purity:
        not_pure = f"`{fn.qualname}` is not known to be pure and deterministic"
        if depth > MAX_DEPTH:
            return Purity(False, not_pure, StateRead(StateKind.LIMIT, fn.qualname), (fn.qualname,))
        opaque = self.opaque_decorator(fn) if fn.decorators else None
        if opaque is not None:
            return Purity(False, not_pure, StateRead(StateKind.DECORATOR, opaque), (fn.qualname,))
        if fn.global_names:
            return Purity(False, not_pure, StateRead(StateKind.GLOBAL, fn.global_names[0]), (fn.qualname,))
        for a in fn.assigns:
            t = a.target
            if t[0] in ("attr", "sub"):
                shown = dotted(t) if t[0] == "attr" else f"{dotted(t[1]) or '...'}[...]"
                return Purity(False, not_pure, StateRead(StateKind.WRITE, shown or "..."), (fn.qualname,))
        p = self.program
        for c in fn.calls:
            if c.func[0] == "attr" and c.func[1][0] == "name" and self._fresh_container(fn, c.func[1][1]):
                continue  # `ids.append(i)` on a list the body built: a local effect
            callee = p.call_callee(fn, c)
            if callee is not None and len(callee) == 1 and isinstance(callee[0], GlobalRoot):
                qn = callee[0].qualname
                if pure_builtin(qn) or (qn.startswith("builtins.") and qn[9:] in EXCEPTIONS and self._raised(fn, c)):
                    continue
            if callee is not None and self._container_read(callee):
                continue  # `_TABLE.get(k)` reads the table like `_TABLE[k]` (facts.state follows who changes it)
            names = p.callee_names(callee, dotted(c.func))
            target = p.callee_function(callee) if callee is not None else None
            # an override that is not pure makes the call not pure
            inner = self.call_purity(names, target, depth + 1, callee)
            if not inner.pure:
                return Purity(False, not_pure, inner.state, (fn.qualname,) + inner.via)
        return Purity(True, f"`{fn.qualname}` only reads its inputs and calls pure functions")

    def _raised(self, fn: FunctionInfo, c) -> bool:
        """``c`` builds the exception a ``raise`` statement raises: the call
        fails there, so the exception is never a value it returns, and
        building a builtin one changes nothing (``if x is None: raise
        ValueError(...)`` in a getter)."""
        lines = self.program.source_lines(fn.path) or []
        return 0 < c.stmt_line <= len(lines) and lines[c.stmt_line - 1].lstrip().startswith("raise ")

    def _fresh_container(self, fn: FunctionInfo, name: str) -> bool:
        """``name`` is a local of ``fn`` bound only to new builtin containers
        (``[]``, ``{}``, ``list()``, ``defaultdict(list)``, ...) built by the
        body: changing it changes nothing the caller can see, unless the body
        stores it somewhere (an attribute or item write, which makes the body
        impure on its own) or passes it to a call (judged on its own)."""
        ctx = self.program.context(fn)
        if name in ctx.params:
            return False
        assigns = ctx.locals.get(name)
        if not assigns:
            return False
        for a in assigns:
            if a.kind not in ("assign", "annassign"):
                return False
            v = a.value
            if v[0] in ("list", "dict", "tuple"):
                continue
            if v[0] == "call" and (dotted(v[1]) or "").split(".")[-1] in CONTAINERS and not v[2] and not v[3]:
                continue
            if v[0] == "call" and (dotted(v[1]) or "") in ("defaultdict", "collections.defaultdict"):
                continue
            return False
        return True

    def _container_read(self, callee: tuple) -> bool:
        """``callee`` is a reading method (``get``, ``keys``, ``items``, ...) of a
        module-level container: a literal or a builtin container's constructor."""
        if len(callee) != 2 or not isinstance(callee[0], GlobalRoot) or callee[1] not in CONTAINER_READS:
            return False
        p = self.program
        qn = callee[0].qualname
        if not p.is_module_level_variable(qn):
            return False
        mod, _, name = qn.rpartition(".")
        v = p.modules[mod].globals.get(name)
        if v is None:
            return False
        if v[0] == "call":
            return (dotted(v[1]) or "").split(".")[-1] in CONTAINERS
        return v[0] in ("?", "tuple", "const", "dict", "list")  # a literal (small ones are indexed item by item)


def _forwards(w: FunctionInfo, wrapped: str) -> bool:
    """Wrapper ``w`` only returns ``wrapped(...)``: one unconditional call of
    the wrapped function, nothing assigned, every decorator ``functools.wraps``."""
    if w.assigns or w.global_names or len(w.calls) != 1 or len(w.returns) != 1:
        return False
    c = w.calls[0]
    if c.func != ("name", wrapped) or c.guard or c.in_loop or c.in_handler:
        return False
    if any((dotted(d[1] if d[0] == "call" else d) or "").rsplit(".", 1)[-1] != "wraps" for d in w.decorators):
        return False
    r = w.returns[0]
    return r[0] == "call" and r[1] == ("name", wrapped)
