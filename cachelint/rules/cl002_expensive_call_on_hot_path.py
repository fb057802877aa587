"""CL002: a catalogued expensive call made on a hot path."""

from __future__ import annotations

from ..facts.cost import CostModel
from ..facts.properties import hot_property_reads, property_read_sites, reported_properties
from ..fixes.hoisting import HoistPlanner, Site
from ..fixes.hotcalls import call_sites, hot_call_finding, runs_each_time
from .base import Example, Rule

_ROOTS = ({"pattern": "*.Runner.execute_model", "kind": "per-step"},)


def _at_the_boundary(p, hot, sites: list[Site]) -> list[Site]:
    """Report repeated work where a fix removes it all: drop a site inside a
    function that runs only under reported calls with the same inputs on
    every run (each hot call of it is such a site, or is made in a function
    that runs only so, three calls up at most): ``is_torch_equal_or_newer
    ("2.9")`` per layer is one finding, not also the version parses inside
    it. Kept when the outer sites have no fix and this one has one."""
    reported = {(s.function.qualname, s.call.line, s.call.column): s for s in sites if s.invariant}
    memo: dict = {}

    def covered(qn: str, depth: int) -> list | None:
        """The reported sites every run of ``qn`` comes from, or None."""
        if qn in memo:
            return memo[qn]
        memo[qn] = None  # recursion: not covered
        callers = hot.callers(qn, 1000)
        outer: list = []
        for f, c in callers:
            site = reported.get((f.qualname, c.line, c.column))
            if site is not None:
                outer.append(site)
                continue
            up = covered(f.qualname, depth + 1) if depth < 3 else None
            if up is None:
                return None
            outer.extend(up)
        result = outer or None
        memo[qn] = result
        return result

    out = []
    for s in sites:
        outer = covered(s.function.qualname, 0) if s.invariant else None
        if outer and (s.fix is None or all(o.fix is not None for o in outer)):
            continue
        out.append(s)
    return out


class ExpensiveCallOnHotPath(Rule):
    """## What it does
    Finds expensive work repeated on a hot path: a call from the
    expensive-call catalog (registry lookups, processor construction,
    ``AutoConfig.from_pretrained``, ``inspect.signature``,
    ``importlib.import_module``, version parsing, environment and device
    queries, ...), or a call of a function of the analysed tree whose body
    walks a config, or loops and is pure with a time per call (timed from
    its body) above the ``compute-floor-calls`` of small Python calls, made in a function reached from a
    hot root, and reports
    the chain of calls from the root and how often the site runs (per token,
    per layer, per step, per request, per batch).

    An ``import`` statement inside a function, in a ``try`` that catches
    ``ImportError``, counts as a call too: it probes for an optional module,
    and while the module is absent every run searches the import path again
    (a failed import is not cached). Its only fix is memoizing the function.

    Each finding carries an estimate of the time it costs per step (the
    call's calibrated or body-derived time, times how often the site runs),
    and output is ranked by it.

    Reads of uncached derived ``@property`` attributes count as calls: a
    getter runs on every read, so ``self.model_config.uses_mrope`` read per
    step redoes the getter's work when the getter (defined in the tree) walks
    a config or reaches a catalogued call. ``cached_property`` and getters
    that read a field are not reported, nor is an attribute of the reader's
    own object that already holds the value.

    For a function or method defined in the tree, its body decides, not its
    name: a catalogued ``config-derivation`` helper whose body became a plain
    attribute read is not reported, nor is a catalogued method every
    implementation of which only calls cached functions. Only repeated work
    is reported: the call's inputs are the same on every run (constants,
    module constants, attributes bound once at construction and never
    changed in place by a hot method of the object's classes, parameters
    every hot caller passes such values for), or the same call is made twice
    in one run. A call on per-call data (the batch, the request) computes a
    new value and is not reported.

    Never reported: impure calls made for their side effect (a whole
    statement, value discarded: ``torch.cuda.synchronize()``), calls under
    ``if TYPE_CHECKING`` or in ``except`` handlers (error paths), bodies of
    ``functools.cache`` / ``lru_cache`` functions and ``cached_property``
    getters, module-level constants, code reached only from constructors,
    and calls under a fill-once guard (``if self._x is None: self._x =
    ...``, a memo dict the function fills, ``if not hasattr(...)``).
    Catalog entries marked ``cost = "low"`` (process-group, stream and
    forward-context lookups: cheap, but everywhere in model code) are
    reported only with ``min-cost = "low"``.

    ## Why is this bad?
    Work whose result does not change between steps is paid again on every
    step. In vLLM a 10 ms registry lookup on the decode path cost more than
    the decoder's forward pass (PR #24866: 1300 ms to 305 ms).

    ## Example
    ```python
    class Runner:
        def __init__(self, model):
            self.model = model

        def execute_model(self, batch):
            sig = inspect.signature(self.model.forward)
    ```
    Use instead:
    ```python
        def __init__(self, model):
            self.model = model
            self._signature = inspect.signature(self.model.forward)

        def execute_model(self, batch):
            sig = self._signature
    ```

    ## Fix safety
    Each fix has its own safety class, computed per finding; an unsafe fix
    says which hazard it could not rule out, naming the exact thing (the
    condition dropped, the statement that changes an input, the attribute
    not yet assigned, the state the callee reads and the code that changes
    it). A safe fix is one you can apply without reading it.

    - *Hoist to `__init__`* (a method whose call reads only ``self``
      attributes, constructor parameters and module constants): safe when
      the callee is pure; every input is bound once, unconditionally, at
      construction, never reassigned (in the class, its bases or its
      subclasses; through another receiver that may be the object, such as
      ``runner.n = 5``; by a ``setattr`` whose name is computed at run time;
      for a class attribute read through ``self``, on the class object:
      ``Runner.BLOCK = 32``, ``cls.BLOCK = ...``, ``setattr(Runner, ...)``)
      and never changed in place outside a constructor
      (``self.table.append(...)``, ``self.table[k] = v`` in any method,
      including a loop around the call); an input the callee reads as a
      whole object is not a ``list`` or ``dict``, nor one the constructor
      was handed (a parameter, or another object's attribute) of a type that
      may change in place or that cachelint cannot resolve: whoever else
      holds it may change it; an input object of a class of the tree has
      none of the attributes the callee may read written after its
      construction, anywhere, on a receiver that may be that object
      (``self.vocab.grow()``, ``r.vocab.size = 11`` in ``main``, another
      constructor bumping a shared counter: the analysis CL001 makes of its
      fill arguments); the call runs unconditionally in
      its method (not in an ``if`` branch, past an early ``return``, on the
      right of ``and``/``or``, in a ``try`` whose handler catches its
      errors; an ``assert`` is no condition), unless the catalog declares it
      ``total`` (never raises, like ``torch.cuda.is_available``); the call
      cannot raise, for the method may never run, or run inside its
      caller's ``try``: the catalog declares it ``total``, or its body in
      the tree provably cannot raise nor loop whatever it is given
      (annotations are not checked at run time, so they prove nothing):
      only names bound on every path, constants, tuple and list displays,
      ``if`` on ``is``/``is not`` tests and comparisons of constants,
      ``return``, and calls of ``id``, ``callable``, catalog-``total``
      entries and total functions of the tree; no loop, attribute read,
      subscript, arithmetic, other comparison, truth test of a value,
      formatting, ``str``/``len``/``bool``/``range``/``hasattr``... (they
      run dunders or reject values), so most bodies are not total and the
      reason names what may raise;
      ``__init__`` has no early return, does not itself reach the method
      (nor through what it runs implicitly: ``f"{self}"`` or ``print(self)``
      runs ``__str__``/``__repr__``, ``self.prop`` a getter, ``self == x``
      or ``len(self)`` a dunder, ``__new__`` runs first),
      and hands the object to no call cachelint cannot resolve (a platform
      hook given ``self`` may call the method before the attribute is set);
      no input is a ``cached_property`` or another descriptor but a plain
      property (read at the end of ``__init__``, it would see and keep the
      attributes as they are then); the object can take the new attribute
      (not frozen, not a tuple, no
      ``__setattr__`` of its own, and not ``__slots__`` in every class of
      the tree it inherits from); no class of its hierarchy defines
      ``__getstate__``, ``__setstate__``, ``__reduce__`` or ``__copy__``
      (a copy or an unpickled object is built without ``__init__`` and may
      lack the new attribute);
      every subclass constructor calls ``super().__init__()``; for a method
      or property of the object itself, every implementation (overrides
      included) reads only attributes assigned, unconditionally, before the
      end of the base ``__init__`` (not after a subclass's
      ``super().__init__()``, not in ``load_model()`` later); and the
      callee's body (followed through the functions of the tree it calls)
      reads no module state that other code changes (a registry a plugin
      fills, a process group ``init_distributed`` sets, a flag a context
      manager toggles) and no ``os.environ``.
    - *Hoist to a local* (the same call, or property read, twice in one
      function): safe when the callee is pure; a use runs on every path
      from the statement the local goes before (in the innermost block
      holding every use: a use in a separate ``if`` block does not count,
      nor one past a ``return``, ``raise`` or ``break`` that may leave that
      block, nor one in an ``assert``, which ``python -O`` strips), unless
      the callee is ``total``; and nothing between the
      hoisted statement and the last use, nor in a loop that repeats a use,
      changes what the call reads: its arguments, its receiver (for a
      method of the tree, the attributes it reads), the module state its
      body reads. Changes are assignments (``budget.used += n``), in-place
      calls (``seq.append(tok)``, ``opts.update(...)``), and what the
      functions of the tree called there change (``apply_defaults(params)``,
      ``kv.grow(n)``, ``with graph_capture():``), and what code of the
      tree run implicitly on an object of a class of the tree changes: a
      property's getter or setter (``self.size = 50``), ``__setattr__``,
      the dunders ``len(self)``, ``f"{self}"``, ``print(self)``,
      ``self == other``, ``self[k]``, ``if self:`` run. A call there that
      cachelint cannot resolve (a callback, a method of an object of unknown
      type) may change any input it can reach, so it makes the hoist unsafe
      unless every input is sealed: a constant, or a parameter annotated
      with an immutable type. ``print`` and the methods of a list, dict or
      string that every binding of its variable builds change only what
      they are given. So does a place where unseen code runs: an ``await``
      or ``yield`` (the caller runs while the function is suspended), an
      ``async for`` or ``async with``, a ``with`` whose context manager is
      not made by a call there.
      What the call reads includes the binding its callee is looked up
      through (``self.weight = plain``, a helper's ``global weight``,
      ``sys.modules[__name__].weight``, ``h.weight`` on a module); a call
      there that may run the function again (recursion) counts all its
      changes, wherever they stand; a nested function or lambda changes the
      variables it captured where it is called; a function of the tree that
      calls a callable it is given (``apply(ids.append, 7)``,
      ``call(self.bump)``) makes that callable's changes, or counts as a call
      cachelint cannot resolve. Unsafe, too: a method Python calls
      implicitly on an argument (``__hash__``, ``__eq__``, ``__iter__``...)
      that is not pure, and a function that reads its own local variables
      (``locals()``, ``vars()``, ``eval``, ``exec``), which would see the new
      local.
      When a later use, not the first, is the one on every path, what
      lies before it must have no observable effect (unless the callee is
      ``total``): the call would now raise first. A use in a generator expression not consumed at once is
      unsafe: it runs when the generator is consumed.
    - A hoist to a local is unsafe when the callee iterates an argument that
      nothing shows to be a collection (a parameter without a collection
      annotation): an iterator would be used up by the first use.
    - Both hoists are unsafe when a use changes the value in place
      (``x.append(...)``, ``x[k] = v``, ``x += ...``): the uses, or the
      runs, would then share one object where each had a fresh one.
    - *Memoize* (a module-level function of parameters annotated as
      hashable, immutable values): ``@functools.lru_cache(maxsize=None,
      typed=True)`` (``functools.cache`` for a function of no parameters:
      ``1``, ``1.0`` and ``True``, or ``"a"`` and a ``StrEnum`` member equal
      to it, are one ``functools.cache`` key; ``typed`` keys on each
      argument's exact type) is safe when no parameter is a tuple or
      frozenset that may hold numbers, strings, enum members or other
      values whose equality crosses types (``(1,)`` and ``(1.0,)``, or
      ``(Color.RED,)`` and ``(Size.SMALL,)`` of two ``IntEnum`` classes, are one
      key even when typed), the result does not follow the iteration order
      of a ``frozenset`` parameter (equal sets may iterate differently), no
      ``is``/``is not`` compares a parameter with anything but a constant
      (equal arguments may be different objects), no parameter is
      annotated ``bytes`` (a ``bytearray``, which type checkers accept, is
      unhashable: the memo would raise), no ``float`` parameter reaches the
      result but through comparisons, truth tests, ``int()``, ``abs()``...
      (``0.0`` and ``-0.0`` are one key even when typed, and formatting or
      dividing tells them apart), no decorator of the function may do more
      than hand the call through (a tree decorator whose wrapper records
      each call would be skipped by a cache above it; ``staticmethod``,
      ``functools.wraps`` wrappers that only ``return fn(...)`` are fine),
      the function is inferred pure (a decorated function is pure only
      when its decorators are transparent), returns an immutable value, deeply (a
      tuple or frozenset only when its items are: ``tuple[int, ...]``, a
      tuple display of immutable items, not ``([spec], n)``; otherwise the
      message names the returned type and a caller that changes it in
      place), and reads no module state that code of the tree changes: a
      module dict or list that a function fills (``_SAMPLERS[name] = ...``,
      ``BACKENDS.append(...)``, ``cls._models[name] = ...`` in a
      classmethod), a "current config" global that a setter rebinds, a
      module-level object's attribute (``_STATE.config = cfg``), a module
      name (a variable, or a function it calls) that code rebinds from
      outside (``setattr(shapes, "fmt", ...)``, ``shapes.fmt = ...``,
      ``globals()["SCALE"] = v``, ``vars(shapes)[...]``; a ``globals()``
      write with a computed key may rebind any name of its module), or
      that its own module's top-level code rebinds after the first binding
      (``SCALE = 2``, ``SCALE += 1``, ``for SCALE in ...``), a function's
      attribute (``height.offset = 100``), a class attribute read through
      any class of the MRO (``Sub.scale`` reads ``Base.scale``: a write on
      ``Base``, through ``cls`` in its classmethod, or ``type(obj)`` counts).
      A table no
      code changes (a constant, a ``frozenset``, a private dict only read)
      is fine. Not offered inside code compiled by ``torch.compile`` (Dynamo
      does not trace through ``functools.cache``): there a call of constant
      inputs may go to a module constant (always unsafe: it moves to import
      time). Not offered when the value depends on mutable context (the
      environment, read through a catalogued call, ``os.environ[...]`` or a
      module ``__getattr__`` such as vLLM's ``envs``; the filesystem; the
      current device or stream; a forward context): the message says which.

    A write cachelint cannot place (a ``setattr`` with a computed name, a
    receiver of unknown type) counts as a writer of every attribute it may
    reach; the analysis follows calls :data:`~cachelint.facts.purity.MAX_DEPTH`
    deep.
    ``docs/fix-safety-audit.md`` lists the safe fixes on real trees, each
    read by hand.

    Trusted, not proven: type annotations; the catalog's ``pure`` and
    ``total`` (``importlib.import_module`` is pure only while nothing
    replaces the entry in ``sys.modules``); that nothing outside the
    analysed files (an ``exec``, a C extension, another thread) changes the
    objects; and that no code lists an object's attributes to decide what
    it computes (a hoist to ``__init__`` adds one, visible to ``vars()``
    and ``__dict__``).

    Where an attribute already caches the value, CL001 reports the call with
    a fix instead (and CL002 stays quiet on that call).

    ## Fix availability
    Sometimes: when one of the three rewrites applies.
    """

    code = "CL002"
    name = "expensive-call-on-hot-path"
    summary = "Expensive call on a hot path"
    fix_availability = "sometimes"
    reads = (
        "hot",
        "program",
        "config",
        "cost",
        "cached_call_spans",
        "bodies",
        "state",
        "receives",
        "compiled",
        "estimates",
        "writes",
    )
    needs_hot_paths = True

    VALID = [
        # a method of a dataclass built on each step: its `self` is new each time, so
        # its inputs are not the same on every run (nothing to hoist into a constructor)
        Example(
            """
import inspect
from dataclasses import dataclass

@dataclass
class Batch:
    fn: object

    def params(self):
        return inspect.signature(self.fn).parameters

class Runner:
    def __init__(self, fn):
        self.fn = fn

    def execute_model(self, batch):
        return Batch(batch).params()
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # a looping helper whose result changes with the same inputs (it pops a
        # queue) is no repeated work
        Example(
            """
def drain(queue) -> list:
    out = []
    for _ in range(8):
        out.append(queue.pop() + queue.pop())
    return out

class Runner:
    def __init__(self, queue):
        self.queue = queue

    def execute_model(self, batch):
        return drain(self.queue), batch
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # a catalogued call whose value depends on where it is made (`varies`:
        # the caller's stack) is never the same value twice, even with the
        # same (no) arguments, and logging it is done for the log
        Example(
            """
import traceback

class Runner:
    def execute_model(self, batch):
        where = traceback.format_stack()
        if not batch:
            return where, traceback.format_stack()
        return where
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # a deep copy of `self` (a `clone()` per request): the same object on
        # each call of the method, but the copy reads its whole current state,
        # and a fresh object is what the caller wants
        Example(
            """
import copy

class Params:
    def __init__(self, n):
        self.n = n

    def clone(self):
        return copy.deepcopy(self)

class Runner:
    def __init__(self, params: Params):
        self.params = params

    def execute_model(self, batch):
        return self.params.clone(), batch
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # an import in a function outside any `try` catching ImportError is a
        # lookup in sys.modules after the first run, not a probe
        Example(
            """
class Runner:
    def execute_model(self, batch):
        import json
        try:
            import pickle
        except KeyError:
            pass
        return json.dumps(batch), pickle
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # the same call outside any hot path (code reached only from __init__)
        Example(
            """
import inspect

class Runner:
    def __init__(self, model):
        self.model = model
        self._setup()

    def _setup(self):
        self.sig = inspect.signature(self.model.forward)

    def execute_model(self, batch):
        return self.sig
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # calls under `if TYPE_CHECKING` never run
        Example(
            """
import inspect
from typing import TYPE_CHECKING

class Runner:
    def execute_model(self, batch):
        return 1

if TYPE_CHECKING:
    def helper():
        return inspect.signature(helper)
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # ... and so do calls under `if TYPE_CHECKING:` in a hot function
        Example(
            """
import inspect
from typing import TYPE_CHECKING

class Runner:
    def execute_model(self, batch):
        if TYPE_CHECKING:
            sig = inspect.signature(print)
        return batch
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # the body of a memoized function runs once per arguments, not per step
        Example(
            """
import functools
import inspect

class Runner:
    def execute_model(self, batch):
        return signature_of(type(self))

@functools.cache
def signature_of(cls):
    return inspect.signature(cls)
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # a cached_property getter runs once per object
        Example(
            """
import functools
import inspect

class Runner:
    def __init__(self, model):
        self.model = model

    @functools.cached_property
    def sig(self):
        return inspect.signature(self.model.forward)

    def execute_model(self, batch):
        return self.sig
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # the lazy-init idiom fills the attribute once
        Example(
            """
import inspect

class Runner:
    def __init__(self, model):
        self.model = model
        self._sig = None

    def execute_model(self, batch):
        if self._sig is None:
            self._sig = inspect.signature(self.model.forward)
        return self._sig
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # a memo dict the function fills: once per key
        Example(
            """
import importlib

_MODULES = {}

class Runner:
    def execute_model(self, batch):
        return load("json")

def load(name: str):
    mod = _MODULES.get(name)
    if mod is not None:
        return mod
    _MODULES[name] = importlib.import_module(name)
    return _MODULES[name]
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # a module-level constant is computed at import
        Example(
            """
import inspect

SIG = inspect.signature(print)

class Runner:
    def execute_model(self, batch):
        return SIG
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # the input is new on every call (the batch): not repeated work
        Example(
            """
import inspect

class Runner:
    def execute_model(self, batch):
        return inspect.signature(batch.callback)
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # the input is never rebound but changed in place on each run (a helper appends to it)
        Example(
            """
def recent(items, n=4):
    out = []
    for i in range(max(0, len(items) - n), len(items)):
        out.append(items[i] * 2)
    return out

def record(items, x):
    items.append(x)

class Runner:
    def __init__(self):
        self.history = []

    def execute_model(self, batch):
        context = recent(self.history)
        record(self.history, batch)
        return context
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # a call made for its side effect (its value discarded) is not work to compute once
        Example(
            """
import torch

class Runner:
    def execute_model(self, batch):
        out = batch.run()
        torch.cuda.synchronize()
        return out
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # a catalogued config-derivation helper whose body in the tree is a plain read
        Example(
            """
class ModelConfig:
    def __init__(self, head_size: int):
        self.head_size = head_size

    def get_head_size(self) -> int:
        return self.head_size


class Runner:
    def __init__(self, model_config: ModelConfig):
        self.model_config = model_config

    def execute_model(self, batch):
        return self.model_config.get_head_size()
""",
            preset="none",
            hot_roots=_ROOTS,
            expensive_calls=({"pattern": "*.ModelConfig.get_head_size", "kind": "config-derivation", "pure": True},),
        ),
        # an attribute that already holds a derived property's value (filled in
        # __init__), and a property whose getter is a plain read
        Example(
            """
class ModelConfig:
    def __init__(self, hf_config, vocab_size: int):
        self.hf_config = hf_config
        self.vocab_size = vocab_size

    @property
    def is_encoder_decoder(self) -> bool:
        return bool(getattr(self.hf_config, "is_encoder_decoder", False) or getattr(self.hf_config, "encoder", None)
                    or hasattr(self.hf_config, "decoder_config"))

    @property
    def vocab(self) -> int:
        return self.vocab_size


class Runner:
    def __init__(self, model_config: ModelConfig):
        self.model_config = model_config
        self.is_encoder_decoder = model_config.is_encoder_decoder

    def execute_model(self, batch):
        if self.is_encoder_decoder:
            return batch
        return self.model_config.vocab
""",
            preset="none",
            hot_roots=_ROOTS,
        ),
    ]

    INVALID = [
        # reported where a fix removes all of it: the catalogued outer call with
        # constant inputs, not also the version parses inside it
        Example(
            """
from packaging import version

def newer(target: str) -> bool:
    return version.parse("2.5") >= version.parse(target)

class Runner:
    def __init__(self, model):
        self.model = model

    def execute_model(self, batch):
        return newer("2.4"), batch
""",
            expect=(("example.py", 11),),
            applicability=("unsafe",),
            message_contains=("`newer(...)`",),
            fixed={
                "example.py": """
from packaging import version

def newer(target: str) -> bool:
    return version.parse("2.5") >= version.parse(target)

class Runner:
    def __init__(self, model):
        self.model = model
        self._newer = newer("2.4")

    def execute_model(self, batch):
        return self._newer, batch
"""
            },
            preset="python",
            hot_roots=_ROOTS,
            expensive_calls=({"pattern": "*.newer", "kind": "version", "pure": True},),
        ),
        # a pure helper of the tree that loops on each call, on inputs bound once:
        # its body, timed, is the evidence (no catalog entry names it)
        Example(
            """
def _pages(size: int, page: int) -> int:
    return -(-size // page)

def total_pages(sizes: tuple, page: int) -> int:
    total = 0
    for s in sizes:
        total += _pages(s, page) + _pages(s, 2 * page)
    return total

class Runner:
    def __init__(self, sizes: tuple, page: int):
        self.sizes = sizes
        self.page = page

    def execute_model(self, batch):
        return total_pages(self.sizes, self.page) + len(batch)
""",
            expect=(("example.py", 16),),
            applicability=("unsafe",),
            message_contains=("computation work", "loops on each call"),
            fixed={
                "example.py": """
def _pages(size: int, page: int) -> int:
    return -(-size // page)

def total_pages(sizes: tuple, page: int) -> int:
    total = 0
    for s in sizes:
        total += _pages(s, page) + _pages(s, 2 * page)
    return total

class Runner:
    def __init__(self, sizes: tuple, page: int):
        self.sizes = sizes
        self.page = page
        self._total_pages = total_pages(self.sizes, self.page)

    def execute_model(self, batch):
        return self._total_pages + len(batch)
"""
            },
            preset="python",
            hot_roots=_ROOTS,
        ),
        # an import in a function that probes for an optional module: each run
        # searches the import path again while the module is absent; the
        # memo is unsafe (installing the package would change the answer)
        Example(
            """
def has_fast_kernels() -> bool:
    try:
        import fast_kernels_ext
    except ImportError:
        return False
    return True

class Runner:
    def execute_model(self, batch):
        return has_fast_kernels()
""",
            expect=(("example.py", 3),),
            applicability=("unsafe",),
            message_contains=("`import fast_kernels_ext`", "probes for an optional module"),
            fixed={
                "example.py": """
import functools


@functools.cache
def has_fast_kernels() -> bool:
    try:
        import fast_kernels_ext
    except ImportError:
        return False
    return True

class Runner:
    def execute_model(self, batch):
        return has_fast_kernels()
"""
            },
            preset="python",
            hot_roots=_ROOTS,
        ),
        # no __init__ of its own to hoist into: reported without a fix
        Example(
            """
import inspect

class Runner:
    def execute_model(self, batch):
        return self._prepare(batch)

    def _prepare(self, batch):
        return inspect.signature(self.forward)
""",
            expect=(("example.py", 8),),
            applicability=(None,),
            message_contains=("inspect.signature", "Runner.execute_model", "defines no `__init__`"),
            preset="python",
            hot_roots=_ROOTS,
        ),
        # hoist to __init__: inputs bound once at construction, pure callee
        Example(
            """
import inspect

class Runner:
    def __init__(self, model):
        self.model = model

    def execute_model(self, batch):
        return batch, inspect.signature(self.model.forward)
""",
            expect=(("example.py", 8),),
            applicability=("unsafe",),
            message_contains=("per-step", "inputs are the same on every run"),
            fixed={
                "example.py": """
import inspect

class Runner:
    def __init__(self, model):
        self.model = model
        self._signature = inspect.signature(self.model.forward)

    def execute_model(self, batch):
        return batch, self._signature
"""
            },
            preset="python",
            hot_roots=_ROOTS,
        ),
        # hoist to __init__ is unsafe when a subclass constructor skips super().__init__()
        Example(
            """
import inspect

class Runner:
    def __init__(self, model):
        self.model = model

    def execute_model(self, batch):
        return inspect.signature(self.model.forward)


class DraftRunner(Runner):
    def __init__(self, model):
        self.model = model
""",
            expect=(("example.py", 8),),
            applicability=("unsafe",),
            preset="python",
            hot_roots=_ROOTS,
        ),
        # ... and when a subclass constructor rebinds an input after super().__init__()
        Example(
            """
import inspect

class Runner:
    def __init__(self, model):
        self.model = model

    def execute_model(self, batch):
        return inspect.signature(self.model.forward)


class WrappedRunner(Runner):
    def __init__(self, model):
        super().__init__(model)
        self.model = wrap(model)


def wrap(model):
    return model
""",
            expect=(("example.py", 8),),
            applicability=("unsafe",),
            preset="python",
            hot_roots=_ROOTS,
        ),
        # a helper of the tree that walks a config (no catalog entry): its body decides
        Example(
            """
class ModelConfig:
    def __init__(self, hf_config):
        self.hf_config = hf_config

    def sliding_window(self):
        w = getattr(self.hf_config, "sliding_window", None)
        if w is None:
            w = getattr(self.hf_config, "attention_window", None)
        if w is None and hasattr(self.hf_config, "text_config"):
            w = getattr(self.hf_config.text_config, "sliding_window", None)
        return w


class Runner:
    def __init__(self, model_config: ModelConfig):
        self.model_config = model_config

    def execute_model(self, batch):
        return batch, self.model_config.sliding_window()
""",
            expect=(("example.py", 19),),
            # unsafe: the probes run whatever `__getattr__` the config has, and may raise
            applicability=("unsafe",),
            message_contains=("config-derivation", "probes 4 config attributes"),
            fixed={
                "example.py": """
class ModelConfig:
    def __init__(self, hf_config):
        self.hf_config = hf_config

    def sliding_window(self):
        w = getattr(self.hf_config, "sliding_window", None)
        if w is None:
            w = getattr(self.hf_config, "attention_window", None)
        if w is None and hasattr(self.hf_config, "text_config"):
            w = getattr(self.hf_config.text_config, "sliding_window", None)
        return w


class Runner:
    def __init__(self, model_config: ModelConfig):
        self.model_config = model_config
        self._sliding_window = self.model_config.sliding_window()

    def execute_model(self, batch):
        return batch, self._sliding_window
"""
            },
            preset="none",
            hot_roots=_ROOTS,
        ),
        # hoist to a local: the same call on per-call data, twice in one run
        Example(
            """
import json

class Runner:
    def execute_model(self, batch):
        if json.loads(batch.spec)["kind"] == "a":
            return 1
        return len(json.loads(batch.spec))
""",
            # one finding for the same call at both sites (merged, both listed)
            expect=(("example.py", 5),),
            applicability=("safe",),
            message_contains=("evaluated 2 times", "also at line 7"),
            fixed={
                "example.py": """
import json

class Runner:
    def execute_model(self, batch):
        loads = json.loads(batch.spec)
        if loads["kind"] == "a":
            return 1
        return len(loads)
"""
            },
            preset="python",
            hot_roots=_ROOTS,
        ),
        # a value tied to each call's context (the forward context) is shared
        # within one run only: a local, never an __init__ attribute
        Example(
            """
from engine.context import get_forward_context


class Runner:
    def __init__(self, model):
        self.model = model

    def execute_model(self, batch):
        a = get_forward_context().attn
        b = get_forward_context().meta
        return a, b
""",
            expect=(("example.py", 9),),
            applicability=("unsafe",),
            message_contains=("evaluated 2 times", "also at line 10"),
            fixed={
                "example.py": """
from engine.context import get_forward_context


class Runner:
    def __init__(self, model):
        self.model = model

    def execute_model(self, batch):
        forward_context = get_forward_context()
        a = forward_context.attn
        b = forward_context.meta
        return a, b
"""
            },
            preset="none",
            hot_roots=_ROOTS,
            expensive_calls=({"pattern": "*.get_forward_context", "kind": "per-call-context", "pure": False},),
        ),
        # memoize a module-level function of hashable inputs
        Example(
            """
from packaging import version

class Runner:
    def execute_model(self, batch):
        return newer_than("2.4")

def newer_than(target: str) -> bool:
    return version.parse("2.5") >= version.parse(target)
""",
            expect=(("example.py", 8), ("example.py", 8)),
            applicability=("safe", "safe"),
            fixed={
                "example.py": """
import functools

from packaging import version

class Runner:
    def execute_model(self, batch):
        return newer_than("2.4")

@functools.lru_cache(maxsize=None, typed=True)
def newer_than(target: str) -> bool:
    return version.parse("2.5") >= version.parse(target)
"""
            },
            preset="python",
            hot_roots=_ROOTS,
        ),
        # not memoized where the value follows mutable context: the message says why
        Example(
            """
import os

class Runner:
    def execute_model(self, batch):
        return use_fast_path()

def use_fast_path() -> bool:
    return os.getenv("FAST", "0") == "1"
""",
            expect=(("example.py", 8),),
            applicability=(None,),
            message_contains=("depends on the environment",),
            preset="python",
            hot_roots=_ROOTS,
        ),
        # inside torch.compile'd code: no functools.cache, a module constant instead (unsafe)
        Example(
            """
import torch
from packaging import version

class Runner:
    def execute_model(self, batch):
        return forward(batch)

@torch.compile
def forward(x):
    if version.parse("2.5") >= version.parse("2.4"):
        return x
    return -x
""",
            expect=(("example.py", 10), ("example.py", 10)),
            applicability=("unsafe", "unsafe"),
            message_contains=("torch.compile",),
            preset="python",
            hot_roots=_ROOTS,
        ),
        # an uncached derived property read on the step: its getter walks the
        # config on every read; hoisted into __init__ like a call
        Example(
            """
class ModelConfig:
    def __init__(self, hf_config):
        self.hf_config = hf_config

    @property
    def is_encoder_decoder(self) -> bool:
        return bool(getattr(self.hf_config, "is_encoder_decoder", False) or getattr(self.hf_config, "encoder", None)
                    or hasattr(self.hf_config, "decoder_config"))


class Runner:
    def __init__(self, model_config: ModelConfig):
        self.model_config = model_config

    def execute_model(self, batch):
        return batch if self.model_config.is_encoder_decoder else None
""",
            expect=(("example.py", 16),),
            # unsafe: the getter's probes may raise, and `__init__` would raise where the step did
            applicability=("unsafe",),
            message_contains=("reads the uncached property `is_encoder_decoder`", "probes 3 config attributes"),
            fixed={
                "example.py": """
class ModelConfig:
    def __init__(self, hf_config):
        self.hf_config = hf_config

    @property
    def is_encoder_decoder(self) -> bool:
        return bool(getattr(self.hf_config, "is_encoder_decoder", False) or getattr(self.hf_config, "encoder", None)
                    or hasattr(self.hf_config, "decoder_config"))


class Runner:
    def __init__(self, model_config: ModelConfig):
        self.model_config = model_config
        self._is_encoder_decoder = self.model_config.is_encoder_decoder

    def execute_model(self, batch):
        return batch if self._is_encoder_decoder else None
"""
            },
            preset="none",
            hot_roots=_ROOTS,
        ),
        # a property read twice on per-call data: one read into a local; unsafe
        # when a use changes the (fresh, mutable) value in place
        Example(
            """
import json


class Request:
    def __init__(self, body: str):
        self.body = body

    @property
    def options(self) -> dict:
        return json.loads(self.body)


class Runner:
    def execute_model(self, request: Request):
        request.options.setdefault("n", 1)
        return request.options["temperature"]
""",
            expect=(("example.py", 15),),
            applicability=("unsafe",),
            message_contains=("evaluated 2 times", "also at line 16"),
            fixed={
                "example.py": """
import json


class Request:
    def __init__(self, body: str):
        self.body = body

    @property
    def options(self) -> dict:
        return json.loads(self.body)


class Runner:
    def execute_model(self, request: Request):
        options = request.options
        options.setdefault("n", 1)
        return options["temperature"]
"""
            },
            preset="python",
            hot_roots=_ROOTS,
        ),
    ]

    def check(self, analysis):
        hot = analysis.hot
        p = analysis.program
        covered = analysis.cached_call_spans
        costs = analysis.cost
        low_ok = analysis.config.min_cost == "low"
        sites: list[Site] = []
        for qn in sorted(hot.chains):
            sites.extend(call_sites(p, costs, p.functions[qn], covered, low_ok))
        sites.extend(self._property_sites(analysis, costs, covered, low_ok))
        planner = HoistPlanner(analysis, hot)
        sites = planner.select(sites)
        planner.plan(sites)
        sites = _at_the_boundary(p, hot, sites)
        compiled = planner.compiled() if sites else {}
        estimates = analysis.estimates if sites else None
        for s in sites:
            assert estimates is not None
            qn = s.function.qualname
            # the message speaks of compiled code only where that is the only way the site runs
            traced_from = compiled.get(qn) if qn in estimates.traced else None
            yield hot_call_finding(self.code, s, hot, estimates.site(s.function, s.call), traced_from)

    def _property_sites(self, analysis, costs: CostModel, covered: set, low_ok: bool) -> list[Site]:
        """Reads of expensive uncached properties in hot functions: a call of the getter each."""
        p = analysis.program
        wanted = reported_properties(p, costs, low_ok)
        reads = hot_property_reads(p, analysis.hot, wanted)
        reads = [(f, c) for f, c in reads if runs_each_time(f, c, covered)]
        return [Site(f, c, cost, callee, (callee, ())) for f, c, callee, cost in property_read_sites(p, reads, wanted)]
