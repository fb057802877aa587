"""CL001: an expensive call whose value an attribute already caches."""

from __future__ import annotations

from ..facts.invariants import from_uses
from ..index.expr import render
from ..model import Applicability, Edit, Finding, Fix, Span
from .base import Example, Rule

_CATALOG = ({"pattern": "*.Registry.max_len", "pure": True, "kind": "registry", "why": "builds a processor"},)

_DEFS = """
from dataclasses import dataclass


class Registry:
    def max_len(self, model_config):
        ...

REGISTRY = Registry()


class ModelConfig:
    is_encoder_decoder: bool
    pooler_config: object


class SchedulerConfig:
    max_encoder_len: int = 0


@dataclass
class EngineConfig:
    model_config: ModelConfig
    scheduler_config: SchedulerConfig

    def __post_init__(self):
        if self.model_config.is_encoder_decoder:
            self.scheduler_config.max_encoder_len = REGISTRY.max_len(self.model_config)
"""


# a message names this many hazards; the finding's notes (JSON `notes`) hold them all
SHOWN_REASONS = 2


def _first(reasons) -> str:
    """The first hazards, and how many more the finding's notes list."""
    shown = "; ".join(reasons[:SHOWN_REASONS])
    more = len(reasons) - SHOWN_REASONS
    return shown + (f"; and {more} more (all are in the JSON output's `notes`)" if more > 0 else "")


class CachedValueRecomputed(Rule):
    """## What it does
    Finds a call whose result an attribute already stores, made anywhere but
    in the statement that stores it. The storing statement (the *fill*) is an
    assignment ``<obj>.<attr> = <call>(...)``; a later call with the same
    callee on the same argument objects (after following aliases such as
    ``self.model_config = vllm_config.model_config`` and
    ``self.registry = REGISTRY``) recomputes it. A name a comprehension,
    generator expression or lambda binds is its own variable, not the
    parameter or local it shadows: in a function where a comprehension
    rebinds the name, no call on it matches a fill. Only callees
    that are expensive on each call are considered, decided as for CL002: an
    entry of the expensive-call catalog (unless the callee's body in the tree
    shows it cheap, e.g. a ``config-derivation`` helper that became a plain
    attribute read), or a function of the analysed tree whose body walks a
    config or reaches a catalogued call outside ``except`` handlers and
    fill-once guards.

    ## Why is this bad?
    vLLM's cross-attention builder asked the multimodal registry for the
    maximum encoder length on every decode step (about 10 ms: it builds the
    multimodal processor and runs the feature extractor on dummy audio),
    although the engine config's construction had already stored that value
    in a scheduler-config attribute. Reading the attribute took Whisper
    latency from 1300 ms to 305 ms (vLLM PRs #24866, #24989).

    ## Example
    ```python
    @dataclass
    class EngineConfig:
        def __post_init__(self):
            if self.model_config.is_encoder_decoder:
                self.scheduler_config.max_encoder_len = REGISTRY.max_len(self.model_config)

    class Runner:
        def __init__(self, config: EngineConfig):
            self.config = config

        def step(self):
            if self.config.model_config.is_encoder_decoder:
                n = REGISTRY.max_len(self.config.model_config)
    ```
    Use instead:
    ```python
        def step(self):
            if self.config.model_config.is_encoder_decoder:
                n = self.config.scheduler_config.max_encoder_len
    ```

    ## Fix safety
    A fix is safe only when cachelint proves that, wherever the rewritten
    read runs, the attribute holds exactly what the call would return there:

    1. *The fill ran.* Either the read comes later in the fill's own function,
       on the object it filled, on every path through the fill, with nothing
       but the same call in between (then nothing else can have run, and items
       4 and 5 hold as well); or the fill runs whenever the object is built: in
       `__init__` or a dataclass's `__post_init__`, not in a loop, an `except`
       handler, a `try` whose `except` goes on, or a `with` whose context
       manager may swallow an exception (`suppress(...)`, a class whose
       `__exit__` may return true, a `@contextmanager` whose `yield` sits in
       a `try` that catches, or one cachelint cannot see into);
       every subclass's constructor calls it: what the subclass's MRO
       resolves the method to before the filling class (an override, a
       mixin's method, a dataclass's generated `__init__`, a base outside
       the tree) calls ``super()`` on every path, not under a condition or in
       a `try` whose `except` goes on; and no call the constructor
       makes before the fill reaches the reading function, or hands the
       object (``self``, a bound method) to code cachelint cannot resolve.
       Every object of the class is built by calling it: no
       ``X.__new__(X)`` or ``object.__new__(X)`` outside a ``__new__``
       makes one (of the class, a subclass, ``cls`` in a classmethod of a
       related class, or of a class cachelint cannot tell), no metaclass in
       the family defines ``__call__`` (or is one cachelint cannot see
       into), no class of the family defines ``__getstate__``,
       ``__setstate__``, ``__reduce__``, ``__reduce_ex__``, ``__copy__`` or
       ``__deepcopy__`` (a copy or an unpickled object gets their state, not
       the fill's), and nothing assigns (or ``setattr``s) ``__init__``,
       ``__post_init__`` or ``__new__`` of a related class (``cls`` in a
       classmethod or ``__init_subclass__`` too). When the constructor (or
       a subclass's, before its ``super()`` call) hands the object out
       before the fill (passes ``self`` to any call, stores it in a global
       or another object), nothing from there to the fill may raise
       (proven as a hoist's calls are): whoever catches the exception holds
       an object the fill never ran for.
       Calls made implicitly count: formatting ``self`` (an f-string,
       ``str``, ``repr``, ``format``, ``%``, ``print``) runs
       ``__format__``/``__str__``/``__repr__``, a read of a property
       ``self.x`` its getter, a comparison, ``hash``, ``len``, iteration or
       truth test of ``self`` its dunder, and the class's ``__new__`` runs
       before ``__init__`` (with what it calls on the object it makes); such
       a dunder inherited from a base outside the tree is code cachelint
       cannot resolve.
    2. *Its guard holds.* Every condition that can skip the fill, the early
       `return`s of any `if`/`elif`/`else` branch, `with` or `try` body
       included, is implied by the conditions the read runs under. A
       `match` case is a comparison of the subject when its pattern is a
       literal, a value or `None` (or an or-pattern of them), and says that
       no earlier case matched; a fill under any other pattern, in the
       `else` of a loop that may `break`, or in the `else` of a `try` whose
       `except` goes on, is never proven. A condition cachelint cannot
       express (a walrus, arithmetic) implies nothing, not even itself.
    3. *The call is deterministic*: the callee is known pure (catalog, or
       inferred from its body), and so is every override the receiver's
       type may dispatch to (an object typed by a base class may be any
       subclass); and, for a callee inferred pure, the module state it (or
       such an override) reads does not change: no code of the tree changes
       it, it is not the environment, and it is not a public module-level
       container (a `dict`, `list` or `set` code outside the analysed files
       may change in place). A constant bound once (a number, a string, a
       tuple, a `frozenset`, a class) and a private table no code changes
       are fine inputs. A read right after the fill, with nothing in
       between, needs only the first half.
    4. *Nothing changed since.* No other code may write the attribute, the
       holder on its path (`limits` in `self.limits.encoder_len`), the fill's
       arguments (the attributes on their path, and any attribute of an
       argument object of a mutable class of the tree; the object the callee
       is a method of is an argument too), or the state the fill's guard
       reads; and reading or storing none of them runs code: none is a
       property, or a descriptor (a class attribute whose class defines
       `__get__`, `__set__` or `__delete__`, or made by a call cachelint
       cannot resolve) on the holder's class, a base or any subclass (the
       reader's object may be one), and none of these classes defines
       `__getattribute__`, `__setattr__` or `__delattr__`, or a
       `__getattr__` for an attribute the object does not hold itself. An
       assignment to `__class__` of an object that may be the holder
       changes all of them. The guard's state outside the
       object counts too: a module variable or class attribute that code of
       the tree rebinds or changes (`global X` in any function, `mod.X = v`
       from another module), and the environment (`os.environ`, `os.getenv`,
       a catalogued environment read, directly or in a function the guard
       calls), which anything may change at run time. A write to the class
       (`Config.flag = v`, `cls.flag = v` in a classmethod,
       `type(self).flag = v`) changes what an instance without its own
       attribute reads: it counts unless every construction gives the
       instance its own (a dataclass field, an unconditional assignment in
       a constructor). A
       write counts however it is spelled (assignment, augmented, `del`,
       `setattr` with a literal or computed name, `object.__setattr__`,
       `__dict__`/`vars()` stores, in-place changes such as `.append(...)` or
       `x[k] = v`), wherever it is (any function, module-level code, a
       `setattr` in a lambda), unless its receiver cannot be the object: its
       annotated or constructed type is unrelated, or every caller of its
       untyped parameter (a function never used as a value) passes an
       unrelated type. An unknown receiver may be the object. Writes made
       while the object is built, before the fill, do not count.
       `setattr`, `delattr`, `object.__setattr__` or `vars` taken as a value
       (`partial(setattr, ...)`, `s = setattr`), and a `__dict__` stored,
       passed on or assigned, may write any attribute of any object. An
       argument object that is mutable (a `list`, `dict` or `set`, a frozen
       class with such a field, a type cachelint cannot show immutable) and
       that the object did not make itself (a constructor's parameter, a
       dataclass field, a class attribute, a module global) may be changed
       in place through any other reference, outside the analysed files too.
    5. *The object is not shared*: no `dataclasses.replace` of it runs the
       constructor again on a copy that shares the holder, no construction
       is handed a holder made elsewhere, and the holder is not bound to a
       class attribute, a dataclass field's default (or a `default_factory`
       that may return the same object), a parameter's default value or a
       module global, which several objects share.
    6. *The value is not a shared mutable object*: the callee's return
       annotation (or what it returns) is immutable (`int`, `str`, `bool`,
       `float`, `bytes`, `None`, an `Enum`, `torch.dtype`; a `tuple`,
       `frozenset`, frozen dataclass or `NamedTuple` only when its items or
       fields are too: `([1], 2)` holds a list a reader may change). The
       call gave each caller a fresh object; the attribute is one object for
       all of them.

    Otherwise the fix is unsafe, and the message names each unproven item:
    the guard condition in the reader's own terms, the other writer (its
    qualified function, line, the write as written, and why its receiver may
    be the object), the subclass, the copy, the call made before the fill.
    For the vLLM seed sites the fill's guard includes
    ``not model_config.pooler_config``, which no reader implies, so all four
    rewrites are unsafe, exactly as the upstream reviewers argued. For other
    models the attribute holds ``max_num_batched_tokens``.

    Trusted, not proven: type annotations, the catalog's `pure`, and that
    nothing outside the analysed files (an `exec`, a C extension, another
    thread, an overridden `__setattr__`) changes the objects.

    ## Fix availability
    Sometimes: when an access path to the attribute is in scope at the call
    (``self.scheduler_config``, a parameter, a local bound earlier). The fix
    replaces the call with the shortest such path and removes imports it
    leaves unused.
    """

    code = "CL001"
    name = "cached-value-recomputed"
    summary = "Expensive call recomputes a value an attribute already caches"
    fix_availability = "sometimes"

    VALID = [
        # reading the cached attribute is what we want
        Example(
            _DEFS
            + """
class Runner:
    def __init__(self, config: EngineConfig):
        self.config = config

    def step(self):
        return self.config.scheduler_config.max_encoder_len
""",
            expensive_calls=_CATALOG,
        ),
        # a different argument object: not the cached value
        Example(
            _DEFS
            + """
class Runner:
    def __init__(self, config: EngineConfig, draft: ModelConfig):
        self.config = config
        self.draft = draft

    def step(self):
        return REGISTRY.max_len(self.draft)
""",
            expensive_calls=_CATALOG,
        ),
        # a cheap callee (not in the catalog, reaches nothing expensive)
        Example(
            """
class Config:
    size: int

    def __post_init__(self):
        self.double = double(self.size)


def double(n):
    return 2 * n


class User:
    def __init__(self, config: Config):
        self.config = config

    def step(self):
        return double(self.config.size)
""",
        ),
        # a constructor makes a new object each time: not a cached value
        Example(
            """
import inspect

class Buffers:
    def __init__(self, n: int):
        self.n = n
        self.table = Table(self.n)

    def reset(self):
        self.other = Table(self.n)


class Table:
    def __init__(self, n):
        self.sig = inspect.signature(print)
""",
            preset="python",
        ),
    ]

    INVALID = [
        # guard implied at the use site: safe fix
        Example(
            files={
                "example.py": _DEFS
                + """
class Runner:
    def __init__(self, config: EngineConfig):
        self.config = config
        self.scheduler_config = config.scheduler_config

    def step(self):
        if self.config.model_config.is_encoder_decoder:
            return REGISTRY.max_len(self.config.model_config)
        return 0
""",
            },
            expect=(("example.py", 36),),
            applicability=("safe",),
            fixed={
                "example.py": _DEFS
                + """
class Runner:
    def __init__(self, config: EngineConfig):
        self.config = config
        self.scheduler_config = config.scheduler_config

    def step(self):
        if self.config.model_config.is_encoder_decoder:
            return self.scheduler_config.max_encoder_len
        return 0
""",
            },
            expensive_calls=_CATALOG,
            # on a hot path: the finding carries its estimated time per step
            hot_roots=({"pattern": "*.Runner.step", "kind": "per-step"},),
        ),
        # no guard at the use site: unsafe fix naming the residual condition
        Example(
            files={
                "example.py": _DEFS
                + """
def max_encoder_len(config: EngineConfig) -> int:
    return REGISTRY.max_len(config.model_config)
""",
            },
            expect=(("example.py", 30),),
            applicability=("unsafe",),
            message_contains=("config.model_config.is_encoder_decoder",),
            fixed={
                "example.py": _DEFS
                + """
def max_encoder_len(config: EngineConfig) -> int:
    return config.scheduler_config.max_encoder_len
""",
            },
            expensive_calls=_CATALOG,
        ),
    ]

    reads = ("cache_analysis", "hot", "removable_names", "estimates")

    def check(self, analysis):
        ca = analysis.cache_analysis
        for use in ca.uses():
            yield self._finding(analysis, use)

    def lock_invariants(self, analysis, fixed):
        """The invariant each rewritten read relies on: its fill, guard and callee."""
        spans = {(f.path, f.span.line, f.span.column) for f in fixed}
        uses = [u for u in analysis.cache_analysis.uses() if (u.function.path, u.call.line, u.call.column) in spans]
        return from_uses(analysis.program, uses)

    def _finding(self, analysis, use) -> Finding:
        site, g, c = use.site, use.function, use.call
        call_text = render(("call", c.func, c.args, c.kwargs))
        if len(call_text) > 90:
            call_text = render(c.func) + "(...)"
        message = f"`{call_text}` recomputes `{site.owner}`, which `{site.function.qualname}` already stores"
        fix = None
        relies_on = [
            f"fill: `{site.function.qualname}` assigns `{site.owner}` = `{render(('call', site.call.func, site.call.args, site.call.kwargs))}`"
        ]
        if site.atoms:
            relies_on.append("fill guard: " + " and ".join(f"`{a.negated_text()}`" for a in site.atoms))
        else:
            relies_on.append("fill guard: none (unconditional)")
        relies_on.append(f"callee: {site.pure_reason}" if site.pure else "callee: not proven pure")
        if use.replacement is not None:
            applicability = Applicability.UNSAFE if use.reasons else Applicability.SAFE
            span = Span(c.line, c.column, c.end_line, c.end_column)
            edit = Edit(span, use.replacement, analysis.removable_names(g, c))
            fix = Fix(
                applicability=applicability,
                edits=(edit,),
                message=f"Read `{use.replacement}`",
                relies_on=tuple(relies_on),
            )
            if use.reasons:
                message += f"; reading `{use.replacement}` is unsafe: " + _first(use.reasons)
        else:
            message += "; " + _first(use.notes)
        return Finding(
            code=self.code,
            path=g.path,
            span=Span(c.line, c.column, c.end_line, c.end_column),
            message=message,
            function=g.qualname,
            hot_path=analysis.hot.chain(g.qualname),
            fix=fix,
            notes=tuple(use.reasons) if use.replacement is not None else tuple(use.notes),
            data={
                "cached_attribute": site.owner,
                "fill": {"function": site.function.qualname, "path": site.function.path, "line": site.call.line},
                "callee": site.callee_names[0] if site.callee_names else None,
                "residual_guard": list(use.residual_text),
                "cost": site.cost,
                "hot_kind": analysis.hot.kind(g.qualname),
            }
            | ({"estimate": analysis.estimates.site(g, c).to_data()} if analysis.hot.is_hot(g.qualname) else {}),
        )
