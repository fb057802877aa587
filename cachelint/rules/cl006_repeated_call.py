"""CL006: the same call (or lookup) repeated within one run of a hot function."""

from __future__ import annotations

import ast
import builtins
import functools
import re
from dataclasses import dataclass

from ..facts import repeats
from ..facts.catalog import CHEAP_METHODS, FRESH_METHODS, NONDETERMINISTIC, TRIVIAL_METHODS
from ..facts.cost import Cost
from ..facts.properties import hot_property_reads, looping_properties
from ..facts.purity import StateKind
from ..facts.state import is_mutator
from ..facts.timing import CONDITIONAL
from ..fixes.hoisting import HoistPlanner, Site
from ..fixes.hoisting.site import names_in
from ..fixes.hotcalls import call_sites, hot_route
from ..index.expr import dotted, render
from ..index.records import CallSite, FunctionInfo
from ..model import Finding, Span
from ..semantic.idioms import fills_local_once, fills_once, never_runs
from ..semantic.values import GlobalRoot
from .base import Example, Rule

_ROOTS = ({"pattern": "*.Runner.execute_model", "kind": "per-step"},)

# how many uses in one run make a repeat: a call of unknown or known cost, a cheap lookup
REPEATS = 2
CHEAP_REPEATS = 3

# builtins that compute something worth keeping when repeated (the others are
# O(1), make a fresh object each call, or give a new value each call)
_COUNTED_BUILTINS = frozenset(["sorted", "sum", "any", "all"])

_BUILTIN_NAMES = frozenset(dir(builtins))
# annotations of values one can share without aliasing anything
_IMMUTABLE = frozenset({"int", "str", "float", "bool", "bytes", "complex", "None"})
# a subscript of an attribute by a name or attribute chain, as written (the pre-filter for lookups)
_SUBSCRIPT = re.compile(r"\b[A-Za-z_]\w*\.[\w.]*\[[A-Za-z_][\w.]*\]")


@dataclass(frozen=True)
class Callee:
    """How much a call costs, as far as cachelint knows: ``level`` is
    ``known`` (the catalog or a body of the tree says it does work),
    ``unknown`` (cachelint cannot see the callee) or ``cheap`` (a lookup);
    ``what`` says so in the message; ``names``, the callee's names."""

    level: str
    what: str
    names: tuple[str, ...]
    cost: Cost


class RepeatedCall(Rule):
    """## What it does
    Finds work a hot function does more than once per run with the same
    inputs:

    - the same call (same callee on the same receiver, the same argument
      expressions) evaluated two or more times in one run of the function,
      with nothing between the uses seen to change what it reads
      (``exc.errors()`` in three places of a handler; ``x.model_dump()`` for
      a debug log and again for the response);
    - a call inside a ``for`` or ``while`` loop (or a comprehension) whose
      callee and arguments the loop does not change
      (``tokenizer.get_added_vocab()`` in a per-token loop);
    - a subscript of an attribute with the same key (``self.table[key]``,
      counting ``key in self.table`` and a final ``del self.table[key]``)
      three or more times;
    - a read, inside a loop or comprehension, of a ``@property`` whose
      getter itself loops and stores nothing (``t not in
      self.all_special_tokens`` per token, where the getter decodes every
      special token), its receiver unchanged by the loop.

    Cheap lookups (a method such as ``.get(k)``, ``.items()``, ``.size()``,
    a plain getter of the tree, a catalog entry marked ``cost = "low"``)
    count only when repeated three or more times, and never in a loop;
    builtins that run in constant time or build a fresh object (``len``,
    ``isinstance``, ``list``, ``next``, ...) and constructors never count.
    A call whose callee cachelint cannot resolve (a method of an object of
    unknown type) is reported with "cost unknown".

    Never reported: calls whose value is discarded (made for their side
    effect), calls whose value is new each time (a receive from a socket,
    queue or another rank, a clock: the ``receive-calls`` patterns), or
    whose callee returns what such a call gave it, calls that each fill their own attribute or item
    (``self.a = make(); self.b = make()``: one object per slot, which one
    shared value would alias), a local filled once inside a loop (``if x
    is None: x = ...``), uses on exclusive branches (an ``if`` and its ``else``, a
    branch that returns and the code after it), calls in ``except``
    handlers or lambdas, calls under a fill-once guard, a use after which
    an argument is rebound or the receiver is changed in place, a loop
    whose body rebinds or changes an input (its target included), a call
    in a loop whose body then always leaves the loop, a call not proven
    pure in a ``while`` loop (its end may depend on that call), in a loop
    that awaits or with an ``await`` between its uses (other tasks run
    there) or a ``with`` entered between them (double-checked locking: the
    second check runs once the lock is held), and any call CL002 reports
    (CL002 wins at the same span).

    The estimate counts what repeats on average. A branch whose test
    cachelint does not evaluate counts as taken on half the runs (each
    independently), and the repeats are the runs expected less the one
    call a fix keeps: two uses, each under a branch of its own, repeat a
    quarter of a call per run. A loop's iterations come from its source
    where it says (``range(2)``, a literal tuple), else the assumed count;
    a loop of one iteration repeats nothing and is not reported.

    ## Why is this bad?
    Each use pays the call again: a pydantic dump, a scan of the prompt, a
    dict the tokenizer builds, per request or per token. vLLM fixed several
    such repeats upstream by computing the value once into a local.

    ## Example
    ```python
    def handler(exc):
        if exc.errors():
            log(str(exc.errors()))
        return [e["msg"] for e in exc.errors()]
    ```
    Use instead:
    ```python
    def handler(exc):
        errors = exc.errors()
        if errors:
            log(str(errors))
        return [e["msg"] for e in errors]
    ```

    ## Fix safety
    The fix (for calls; subscripts are reported without one) computes the
    value once into a local, before the statement of the first use or
    before the loop. It is safe only when ``CostModel.purity`` proves the
    callee pure (so an unresolved callee is always unsafe, named in the
    reason), a use runs on every path from where the local goes (a loop
    may run zero times, so a hoist out of a loop is unsafe unless the
    catalog declares the callee ``total``), nothing between the uses (or in
    the loop) changes what the call reads, no call there that cachelint
    cannot resolve receives one of its inputs, and, when such a call runs
    there at all (or an ``await``, a ``yield``, a ``with`` whose context
    manager is not made by a call there), every input is a constant or a
    parameter annotated with an immutable type (unseen code may reach any
    other input through the objects it holds), and no use changes the
    value in place. What the call reads includes the binding its callee is
    looked up through (``self.weight``, a module's ``weight``, rebound by
    an assignment, a ``global`` statement of a helper, ``setattr`` or
    ``sys.modules[...]``); a call there that may run the function again
    counts every change the function makes, wherever it stands; a nested
    function or lambda changing a variable it captured changes it where it
    is called; a function of the tree that calls a callable it is given
    makes that callable's changes (``apply(ids.append, 7)``), or, when
    cachelint cannot tell them, counts as a call it cannot resolve. It is
    unsafe when a method Python calls implicitly on an argument
    (``__hash__``, ``__eq__``, ``__iter__``, ...) is not pure (for an
    argument of unknown type: one of the tree that changes something), and
    when the function reads its own local variables (``locals()``,
    ``vars()``, ``dir()``, ``eval``, ``exec``): they would see the new local.
    When the first use runs only under a condition (an
    ``if``, ``and``/``or``, a chained comparison's short circuit) and a
    later use is the one on every path, the call, unless ``total``, would
    now raise before what lies between: a call not proven pure, a store to
    anything but a local, an ``await`` or ``yield`` there makes the fix
    unsafe. A use in a generator expression runs when the generator is
    consumed (unless a builtin such as ``sum`` or ``list`` consumes it at
    once): unsafe. The window of changes runs to the end of the last use's
    statement (a conditional's test, an assignment's value may sit on a
    later line and run first), and the ``__iter__``/``__next__`` of a
    class of the tree a loop iterates count as changes in the loop. The
    local's name is one that neither the function (nested scopes
    included) reads or binds nor the module binds.
    The unsafe reasons name the unproven thing.

    ## Fix availability
    Sometimes: for calls, when the uses share a statement block and are
    spelled alike.
    """

    code = "CL006"
    name = "repeated-call"
    summary = "Same call repeated in one run of a hot function"
    fix_availability = "sometimes"
    reads = ("hot", "program", "config", "cost", "cached_call_spans", "bodies", "state", "receives", "estimates")
    needs_hot_paths = True

    VALID = [
        # each pass receives the next message from the previous stage: what the
        # callee returns is what `dist.recv` put in the buffer, new on each call
        Example(
            """
import pickle

import torch.distributed as dist

def receive_object(buf, src):
    dist.recv(buf, src=src)
    return pickle.loads(bytes(buf.tolist()))

class Runner:
    def __init__(self, buf, rank):
        self.buf = buf
        self.rank = rank

    def recv_from_prev(self):
        if self.rank > 0:
            data = receive_object(self.buf, self.rank - 1)
        else:
            data = None
        return data

    def execute_model(self, batches):
        out = []
        for batch in batches:
            ids = self.recv_from_prev()
            out.append([r for r in batch if r in ids])
        return out
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # the loop takes each request off the queue: the call on the declared base
        # runs the subclass's `pop_request`, whose change to the queue is the call's
        Example(
            """
class RequestQueue:
    def peek_request(self):
        raise NotImplementedError

    def pop_request(self):
        raise NotImplementedError

class FCFSQueue(RequestQueue):
    def __init__(self):
        self.items = []

    def peek_request(self):
        if not self.items:
            raise IndexError("peek from an empty queue")
        return self.items[0]

    def pop_request(self):
        return self.items.pop(0)

class Runner:
    def __init__(self, waiting: RequestQueue):
        self.waiting = waiting

    def execute_model(self, budget):
        scheduled = []
        for _ in range(budget):
            request = self.waiting.peek_request()
            scheduled.append(request)
            self.waiting.pop_request()
        return scheduled
""",
            hot_roots=_ROOTS,
        ),
        # each call fills its own slot: the slots get distinct objects, not one shared value
        Example(
            """
class Runner:
    def execute_model(self, batch):
        self.prefill_meta = make_metadata(batch.size)
        self.decode_meta = make_metadata(batch.size)
        self.spec_meta = make_metadata(batch.size)
        return batch

def make_metadata(n):
    from kernels import get_metadata
    return get_metadata(n)[0]
""",
            hot_roots=_ROOTS,
        ),
        # each iteration keeps its own copy: hoisting would share one object among the slots
        Example(
            """
class Runner:
    def execute_model(self, batch):
        base = self.base_table
        for seq in batch:
            self.tables[seq.seq_id] = base.fork()
        views = []
        for seq in batch:
            views.append(base.fork())
        return views
""",
            hot_roots=_ROOTS,
        ),
        # the test of a `while` loop changes, or the loop would not end (here through
        # a call cachelint does not follow)
        Example(
            """
class Pages:
    def __init__(self, ranges: list):
        self.ranges = ranges

    @property
    def free(self) -> int:
        return sum(n for _start, n in self.ranges)

class Runner:
    def __init__(self, pages: Pages, lru):
        self.pages = pages
        self.lru = lru

    def execute_model(self, need):
        while self.pages.free < need:
            self.lru.evict_oldest()
        return need
""",
            hot_roots=_ROOTS,
        ),
        # a library function imported in the function, like one imported at module
        # level, is not a method of an object (it may make a new value each call)
        Example(
            """
class Runner:
    def execute_model(self, specs):
        import cutlass.cute as cute

        return [(spec, cute.sym_int()) for spec in specs]
""",
            hot_roots=_ROOTS,
        ),
        # a local filled once, when first needed, inside the loop: once per run, not per iteration
        Example(
            """
class Runner:
    def execute_model(self, batch):
        table = None
        out = []
        for req in batch:
            if not req.ready:
                continue
            if table is None:
                table = self.sampled.tolist()
            out.append(table[req.index])
        return out
""",
            hot_roots=_ROOTS,
        ),
        # a property that fills a slot once (a lazy cache) is a lookup after the first read
        Example(
            """
class Tokenizer:
    def __init__(self, specials: list[int]):
        self._specials = specials
        self._sorted = None

    @property
    def special_ids(self) -> list[int]:
        if self._sorted is None:
            self._sorted = sorted({t for t in self._specials if t >= 0})
        return self._sorted

    def convert(self, ids: list[int]) -> list[str]:
        return [str(i) for i in ids if i not in self.special_ids]

class Runner:
    def __init__(self, tok: Tokenizer):
        self.tok = tok

    def execute_model(self, batch):
        return self.tok.convert(batch)
""",
            hot_roots=_ROOTS,
        ),
        # double-checked locking: the second check of the filesystem runs after
        # the lock is taken, when another process may have done the work
        Example(
            """
import os
import threading

_LOCK = threading.Lock()


def ready(path):
    return os.path.exists(os.path.join(path, "done"))


class Runner:
    def execute_model(self, path):
        if ready(path):
            return path
        with _LOCK:
            if ready(path):
                return path
            os.makedirs(path)
        return path
""",
            preset="python",
            hot_roots=_ROOTS,
        ),
        # the second use only builds an error message: it runs when the function fails
        Example(
            """
class Runner:
    def execute_model(self, batch):
        size = batch.slot_size(batch.layout)
        if size <= 0:
            raise ValueError(f"bad slot size {batch.slot_size(batch.layout)}")
        assert size < 4096, f"slot size {batch.slot_size(batch.layout)} too large"
        return size
""",
            hot_roots=_ROOTS,
        ),
        # a use under `if TYPE_CHECKING:` never runs: one call per run
        Example(
            """
from typing import TYPE_CHECKING

class Runner:
    def execute_model(self, batch):
        if TYPE_CHECKING:
            pool = batch.pool()
        pool = batch.pool()
        return pool.size
""",
            hot_roots=_ROOTS,
        ),
        # different arguments: different values
        Example(
            """
class Runner:
    def execute_model(self, batch):
        a = batch.encode(batch.first)
        b = batch.encode(batch.second)
        return a, b
""",
            hot_roots=_ROOTS,
        ),
        # an argument rebound between the uses
        Example(
            """
class Runner:
    def execute_model(self, batch):
        ids = batch.ids
        a = batch.encode(ids)
        ids = batch.more
        b = batch.encode(ids)
        return a, b
""",
            hot_roots=_ROOTS,
        ),
        # the receiver changed in place between the uses (a method of the tree)
        Example(
            """
class Buffer:
    def __init__(self):
        self.items = []

    def render(self):
        return ",".join(str(x) for x in self.items)


class Runner:
    def __init__(self):
        self.buf = Buffer()

    def execute_model(self, batch):
        before = self.buf.render()
        self.buf.items.append(batch)
        after = self.buf.render()
        return before, after
""",
            hot_roots=_ROOTS,
        ),
        # exclusive branches: one use per run
        Example(
            """
class Runner:
    def execute_model(self, batch):
        if batch.fast:
            return batch.encode(batch.ids)
        else:
            return [batch.encode(batch.ids)]
""",
            hot_roots=_ROOTS,
        ),
        # a branch that returns, and the code after it: one use per run
        Example(
            """
class Runner:
    def execute_model(self, batch):
        if batch.fast:
            return batch.encode(batch.ids)
        return [batch.encode(batch.ids)]
""",
            hot_roots=_ROOTS,
        ),
        # the first use's block returns after it: one use per run
        Example(
            """
class Runner:
    def execute_model(self, batch):
        if batch.dummy:
            if batch.empty:
                out = batch.encode(batch.ids)
                return out
        out = batch.encode(batch.ids)
        return [out]
""",
            hot_roots=_ROOTS,
        ),
        # a command on an argument between the uses (`end.record()`): it may change the value
        Example(
            """
class Runner:
    def execute_model(self, start, end, batch):
        a = start.elapsed_time(end)
        end.record()
        b = start.elapsed_time(end)
        return a, b
""",
            hot_roots=_ROOTS,
        ),
        # the loop target is an argument: a new value on each iteration
        Example(
            """
class Runner:
    def execute_model(self, batch):
        out = []
        for tok in batch.tokens:
            out.append(batch.decode(tok))
        return out
""",
            hot_roots=_ROOTS,
        ),
        # the loop changes the receiver: not the same call on each iteration
        Example(
            """
class Runner:
    def execute_model(self, batch):
        seen = []
        out = []
        for tok in batch.tokens:
            seen.append(tok)
            out.append(batch.encode(seen))
        return out
""",
            hot_roots=_ROOTS,
        ),
        # value discarded: made for the side effect
        Example(
            """
class Runner:
    def execute_model(self, batch):
        batch.flush(batch.ids)
        batch.flush(batch.ids)
        return batch
""",
            hot_roots=_ROOTS,
        ),
        # a cheap lookup twice
        Example(
            """
class Runner:
    def execute_model(self, batch):
        a = batch.table.get(batch.key)
        b = batch.table.get(batch.key)
        return a, b
""",
            hot_roots=_ROOTS,
        ),
        # cheap builtins, and a plain getter of the tree
        Example(
            """
class Batch:
    def __init__(self, n):
        self._n = n

    def count(self):
        return self._n


class Runner:
    def execute_model(self, batch: Batch):
        if len(batch.ids) > 1 and len(batch.ids) < 9:
            return batch.count() + batch.count()
        return 0
""",
            hot_roots=_ROOTS,
        ),
        # the error path
        Example(
            """
class Runner:
    def execute_model(self, batch):
        try:
            return batch.run()
        except ValueError as exc:
            return exc.errors(), exc.errors()
""",
            hot_roots=_ROOTS,
        ),
        # in a loop that always leaves after the call: once per run
        Example(
            """
class Runner:
    def execute_model(self, batch):
        for tok in batch.tokens:
            if tok == 0:
                return batch.encode(batch.ids)
        return None
""",
            hot_roots=_ROOTS,
        ),
        # not on a hot path
        Example(
            """
class Runner:
    def execute_model(self, batch):
        return batch

def setup(cfg):
    return cfg.dump(), cfg.dump()
""",
            hot_roots=_ROOTS,
        ),
    ]

    INVALID = [
        # each use under a branch of its own: the call repeats only on runs that take
        # both (estimated at a quarter of a call per run), and a local computed first
        # would be a call more on runs that take neither: the fix is unsafe and says so
        Example(
            """
class Runner:
    def execute_model(self, meta):
        out = meta
        if meta.dtype != "int32":
            if meta.stream.is_capturing():
                raise RuntimeError("a cast during capture")
            out = meta.cast("int32")
        if not meta.contiguous:
            if meta.stream.is_capturing():
                raise RuntimeError("a copy during capture")
            out = out.copy()
        return out
""",
            expect=(("example.py", 5),),
            applicability=("unsafe",),
            message_contains=("evaluated 2 times", "no use runs on every path"),
            hot_roots=_ROOTS,
        ),
        # a property whose getter loops, read for each element of a comprehension
        Example(
            """
class Tokenizer:
    def __init__(self, specials: list[int]):
        self._specials = specials

    @property
    def special_ids(self) -> list[int]:
        return sorted({t for t in self._specials if t >= 0})

    def convert(self, ids: list[int]) -> list[str]:
        return [str(i) for i in ids if i not in self.special_ids]

class Runner:
    def __init__(self, tok: Tokenizer):
        self.tok = tok

    def execute_model(self, batch):
        return self.tok.convert(batch)
""",
            expect=(("example.py", 10),),
            applicability=("unsafe",),
            message_contains=("runs its getter once per iteration of the comprehension", "loops on each read"),
            hot_roots=_ROOTS,
        ),
        # an unresolved method called three times with the same receiver and
        # arguments: cost unknown, and the fix is unsafe (nothing proves it pure)
        Example(
            """
class Runner:
    def execute_model(self, exc):
        errors = [e["msg"] for e in exc.errors()]
        if exc.errors() and errors:
            return str(exc.errors())
        return None
""",
            expect=(("example.py", 3),),
            applicability=("unsafe",),
            message_contains=("evaluated 3 times", "cost unknown", "`exc.errors` is not known to be pure"),
            fixed={
                "example.py": """
class Runner:
    def execute_model(self, exc):
        errors_2 = exc.errors()
        errors = [e["msg"] for e in errors_2]
        if errors_2 and errors:
            return str(errors_2)
        return None
"""
            },
            hot_roots=_ROOTS,
        ),
        # both uses in a branch that ends in a `return`, the second in the `return` itself
        Example(
            """
class Runner:
    def execute_model(self, batch, result):
        if result is None:
            return None
        elif result.ok:
            batch.log(result.dump(full=False))
            return batch.respond(result.dump(full=False))
        return result
""",
            expect=(("example.py", 6),),
            applicability=("unsafe",),
            message_contains=("evaluated 2 times", "(lines 6, 7)"),
            hot_roots=_ROOTS,
        ),
        # a first use, then one in each branch of an `if`: two in any run, and
        # the fix has the branch that is not counted read the local as well
        Example(
            """
class Runner:
    def execute_model(self, grid, flag):
        sizes = grid.tolist()
        if flag:
            return grid.run(grid.tolist())
        else:
            out = grid.run(grid.tolist())
        return out, sizes
""",
            expect=(("example.py", 3),),
            applicability=("unsafe",),
            message_contains=("evaluated 2 times", "(lines 3, 5)", "appears 3 times"),
            fixed={
                "example.py": """
class Runner:
    def execute_model(self, grid, flag):
        tolist = grid.tolist()
        sizes = tolist
        if flag:
            return grid.run(tolist)
        else:
            out = grid.run(tolist)
        return out, sizes
"""
            },
            hot_roots=_ROOTS,
        ),
        # a pure function of the tree (it loops over its input) called twice:
        # proven pure, a use on every path, nothing changes `ids` between: safe
        Example(
            """
def checksum(ids: tuple) -> int:
    total = 0
    for i in ids:
        total = (total * 31 + i) % 1000003
    return total


class Runner:
    def execute_model(self, batch):
        ids = tuple(batch.ids)
        key = checksum(ids)
        return key, checksum(ids) % 7
""",
            expect=(("example.py", 11),),
            applicability=("safe",),
            message_contains=("evaluated 2 times", "per-step"),
            fixed={
                "example.py": """
def checksum(ids: tuple) -> int:
    total = 0
    for i in ids:
        total = (total * 31 + i) % 1000003
    return total


class Runner:
    def execute_model(self, batch):
        ids = tuple(batch.ids)
        checksum_2 = checksum(ids)
        key = checksum_2
        return key, checksum_2 % 7
"""
            },
            hot_roots=_ROOTS,
        ),
        # an unresolved call between the uses receives the argument: unsafe, named
        Example(
            """
def checksum(ids: list) -> int:
    total = 0
    for i in ids:
        total = (total * 31 + i) % 1000003
    return total


class Runner:
    def execute_model(self, batch):
        ids = list(batch.ids)
        key = checksum(ids)
        batch.extend_ids(ids)
        return key, checksum(ids) % 7
""",
            expect=(("example.py", 11),),
            applicability=("unsafe",),
            message_contains=("`batch.extend_ids(...)` (line 12) is a call cachelint cannot resolve",),
            hot_roots=_ROOTS,
        ),
        # an unresolved callback between the uses receives nothing the call
        # reads, but it may hold the list: unsafe, naming the call and the input
        Example(
            """
def checksum(ids: list) -> int:
    total = 0
    for i in ids:
        total = (total * 31 + i) % 1000003
    return total


class Runner:
    def __init__(self, ids: list):
        self.ids = ids

    def execute_model(self, on_step):
        key = checksum(self.ids)
        on_step()
        return key, checksum(self.ids) % 7
""",
            expect=(("example.py", 13),),
            applicability=("unsafe",),
            message_contains=("`on_step(...)` (line 14) is a call cachelint cannot resolve: it may reach `self.ids`",),
            hot_roots=_ROOTS,
        ),
        # a loop-invariant call: once per iteration of the loop; unsafe to move
        # out (the loop may not run; the callee is unresolved)
        Example(
            """
class Runner:
    def execute_model(self, tokenizer, tokens):
        out = []
        for tok in tokens:
            if tok in tokenizer.get_added_vocab():
                out.append(tok)
        return out
""",
            expect=(("example.py", 5),),
            applicability=("unsafe",),
            message_contains=("once per iteration of the loop at line 4", "cost unknown"),
            fixed={
                "example.py": """
class Runner:
    def execute_model(self, tokenizer, tokens):
        out = []
        added_vocab = tokenizer.get_added_vocab()
        for tok in tokens:
            if tok in added_vocab:
                out.append(tok)
        return out
"""
            },
            hot_roots=_ROOTS,
        ),
        # a cheap lookup three times (a membership test, two reads, a final del)
        Example(
            """
class Runner:
    def __init__(self):
        self.table = {}

    def execute_model(self, key, block_id):
        if key in self.table:
            del self.table[key][block_id]
            if len(self.table[key]) == 0:
                del self.table[key]
        return key
""",
            expect=(("example.py", 6),),
            applicability=(None,),
            message_contains=("looked up 4 times",),
            hot_roots=_ROOTS,
        ),
        # a cheap method three times
        Example(
            """
class Runner:
    def execute_model(self, batch):
        a = batch.table.get(batch.key)
        b = batch.table.get(batch.key)
        c = batch.table.get(batch.key)
        return a, b, c
""",
            expect=(("example.py", 3),),
            applicability=("unsafe",),
            message_contains=("evaluated 3 times", "a cheap lookup"),
            hot_roots=_ROOTS,
        ),
    ]

    def check(self, analysis) -> list[Finding]:
        hot = analysis.hot
        p = analysis.program
        covered = analysis.cached_call_spans
        costs = analysis.cost
        low_ok = analysis.config.min_cost == "low"
        planner = HoistPlanner(analysis, hot)
        # reads, inside loops, of properties whose getter loops (parsed again
        # only in the hot functions whose lines mention one of the names)
        looping = looping_properties(p, costs)
        reads: dict[str, list[CallSite]] = {}
        for g, c in hot_property_reads(p, hot, looping):
            if c.in_loop and not c.in_handler:
                reads.setdefault(g.qualname, []).append(c)
        out: list[Finding] = []
        for qn in sorted(hot.chains):
            f = p.functions.get(qn)
            if f is None or f.under_type_checking:
                continue
            with analysis.bodies.transient():  # one function's parsed bodies at a time
                fn = _Function(self.code, analysis, planner, f, covered, low_ok, costs)
                out.extend(fn.findings(reads.get(qn, ()), looping))
        return out


class _Function:
    """The findings of one hot function."""

    def __init__(self, code, analysis, planner: HoistPlanner, f: FunctionInfo, covered, low_ok, costs) -> None:
        self.code = code
        self.a = analysis
        self.p = analysis.program
        self.planner = planner
        self.f = f
        self.covered = covered
        self.low_ok = low_ok
        self.costs = costs
        self.ctx = self.p.context(f)
        fi = self.p.modules_by_path.get(f.path)
        self.module = fi.module if fi is not None else None
        self._cl002: set | None = None
        self._nodes: dict | None = None

    # the function's body is parsed again only when the index shows a candidate
    @functools.cached_property
    def body(self):
        return self.a.bodies.body(self.f)

    @functools.cached_property
    def stores(self) -> dict[str, list[int]]:
        """Names bound in the body (nested scopes apart), with their AST lines."""
        return repeats.stores(self.body.node, body=self.body)

    @functools.cached_property
    def store_positions(self) -> dict[str, list[tuple[int, int]]]:
        """Names bound in the body, with where each binding takes effect (AST line, column)."""
        return repeats.store_positions(self.body.node, self.body)

    @functools.cached_property
    def mutations(self) -> list[tuple[str, int]]:
        return repeats.mutations(self.body.node, body=self.body)

    def node(self, c: CallSite) -> ast.AST | None:
        """The call node the index recorded at ``c``'s span (one walk of the body for all)."""
        body = self.body
        if self._nodes is None:
            self._nodes = {
                (n.lineno, n.col_offset, n.end_lineno, n.end_col_offset): n
                for n in body.code_nodes
                if isinstance(n, ast.Call)
            }
        sh = body.shift
        key = (c.line - sh, body._bcol(c.line, c.column), c.end_line - sh, body._bcol(c.end_line, c.end_column))
        return self._nodes.get(key)

    # ----- what CL002 reports here ---------------------------------------------------------
    def cl002_spans(self) -> set:
        if self._cl002 is None:
            sites = call_sites(self.p, self.costs, self.f, self.covered, self.low_ok)
            chosen = self.planner.select(sites) if sites else []
            self._cl002 = {(s.call.line, s.call.column) for s in chosen}
        return self._cl002

    # ----- the callee ---------------------------------------------------------------------------
    def callee(self, c: CallSite) -> Callee | None:
        """What calling ``c``'s callee costs, or None when it never counts: a
        constructor, a factory (a fresh object each call), a generator or
        coroutine function, a call whose value differs each time (a clock, a
        random source, a function that changes state), an O(1) builtin, a
        plain getter, a memoized function, a function of a library module."""
        p = self.p
        callee = p.call_callee(self.f, c)
        names = p.callee_names(callee, dotted(c.func))
        fn = p.callee_function(callee) if callee is not None else None
        if names and self.a.receives.receive(names) is not None:
            return None  # a receive, a clock, a random source: each call gives a new value
        if fn is not None and self.a.receives.draws(fn) is not None:
            return None  # what it returns comes from such a call
        if callee is not None and len(callee) == 1 and isinstance(callee[0], GlobalRoot):
            qn = callee[0].qualname
            if qn in p.classes:
                return None  # a constructor: a fresh object each time
            if qn.startswith("builtins."):
                if qn[9:] not in _COUNTED_BUILTINS:
                    return None
                return Callee(
                    "known", f"the builtin `{qn[9:]}` walks its input", tuple(names), self._cost(names, fn, callee)
                )
        cost = self.costs.call_cost(names, fn)
        if cost is not None:
            if cost.varies:
                return None  # its value depends on where and when it is called: no two calls share one
            if cost.cost == "low" and not self.low_ok:
                return None  # cheap, but everywhere (CL002 too reports these only with min-cost = low)
            return Callee("known", f"{cost.kind} work ({cost.reason})", tuple(names), cost)
        if fn is not None:
            if p.is_cached(fn) or fn.name.startswith("__") or fn.is_async or self.costs.trivial(fn):
                return None  # a memo lookup, a dunder, a coroutine function, a plain getter
            if fn.parent_function is not None:
                return None  # a closure: it reads variables of its enclosing function the call does not show
            if self._fresh(fn):
                return None
            mine = self._cost(names, fn, callee)
            if not any(a.kind == "for" for a in fn.assigns) and self.costs.visibly_cheap(fn):
                return Callee("cheap", f"a cheap function of the tree (`{fn.qualname}`)", tuple(names), mine)
            return Callee("known", f"a call of `{fn.qualname}`", tuple(names), mine)
        if c.func[0] != "attr":
            return None  # a function of a library module, or unresolved: nothing known
        last = c.func[2]
        root = c.func[1]
        while root[0] == "attr":
            root = root[1]
        if root[0] == "name" and self.module is not None and root[1] not in self.ctx.params:
            local = self.ctx.locals.get(root[1], ())
            if local and all(a.kind == "import" for a in local):
                return None  # `import cutlass.cute as cute` in the function: `cute.sym_int()` is a library function
            if root[1] not in self.ctx.locals and self.p.resolve_name(self.module, root[1]) is not None:
                return None  # `torch.empty_like(...)`, `math.sqrt(...)`: a library function, not a method of an object
        if last in TRIVIAL_METHODS or last in FRESH_METHODS or last.startswith("__") or repeats.class_like(last):
            return None  # an O(1) method, a fresh copy, a dunder, or a class (a constructor)
        if last in CHEAP_METHODS:
            return Callee("cheap", "a cheap lookup", tuple(names), self._cost(names, fn, callee))
        return Callee(
            "unknown", "cost unknown: cachelint cannot see the callee", tuple(names), self._cost(names, fn, callee)
        )

    def _fresh(self, fn: FunctionInfo, depth: int = 0) -> bool:
        """``fn`` gives a new value on each call: a generator function, a
        factory (it returns a constructor call, or a factory's value), or a
        body that changes state (assigns an attribute, rebinds a global,
        calls a mutator) or reads a clock or random source."""
        p = self.p
        if self.planner._is_generator(fn):
            return True
        ctx = p.context(fn)
        for r in fn.returns:
            if r[0] != "call":
                continue
            d = dotted(r[1]) or ""
            if r[1] == ("name", "cls") or repeats.class_like(d.rsplit(".", 1)[-1]):
                return True
            target = p.canon(r[1], ctx)
            if target is not None and len(target) == 1 and isinstance(target[0], GlobalRoot):
                if target[0].qualname in p.classes:
                    return True
            g = p.callee_function(target) if target is not None else None
            if g is not None and g is not fn and depth < 2 and self._fresh(g, depth + 1):
                return True
        for c in fn.calls:
            if any(n.startswith(NONDETERMINISTIC) for n in p.callee_names(p.call_callee(fn, c), dotted(c.func))):
                return True  # a clock, a random source, an identifier
        if depth:
            return False
        st = self.costs.purity([fn.qualname], fn).state
        if st is None:
            return False
        if st.kind in (StateKind.WRITE, StateKind.GLOBAL):
            return True
        if st.kind is StateKind.CATALOGUED and st.what == "copy":
            return True
        last = st.name.rsplit(".", 1)[-1]
        return st.name.startswith(NONDETERMINISTIC) or is_mutator(last) or last in FRESH_METHODS

    def _cost(self, names: list, fn, callee=None) -> Cost:
        """Purity of the call: of every implementation a method call may
        dispatch to (an override that changes state makes the call impure)."""
        purity = self.costs.call_purity(names, fn, callee=callee)
        return Cost("repeated-work", "", purity.pure, purity.detail())

    # ----- the uses -------------------------------------------------------------------------------
    def candidates(self) -> dict[tuple, list[CallSite]]:
        """The calls that may repeat, from the index alone, grouped by call
        expression: in a group of two or more, or in a loop."""
        f, planner = self.f, self.planner
        groups: dict[tuple, list[CallSite]] = {}
        for c in f.calls:
            if c.is_read or c.in_handler or never_runs(c) or (f.path, c.line, c.column) in self.covered:
                continue
            groups.setdefault((c.func, c.args, c.kwargs), []).append(c)
        out: dict[tuple, list[CallSite]] = {}
        for key, calls in groups.items():
            if len(calls) < REPEATS and not calls[0].in_loop:
                continue
            targets = [c.assigned_to for c in calls]
            if (
                len(calls) > 1
                and all(t is not None and t[0] in ("attr", "sub") for t in targets)
                and len(set(targets)) > 1
            ):
                continue  # `self.a = make(); self.b = make()`: one object per slot, not one shared value
            names: list[str] = []
            names_in(("call", *key), names)
            if "?" in names or not self._names_known(names):
                continue
            calls = [
                c
                for c in calls
                if not fills_once(f, c) and not fills_local_once(c) and not planner._value_discarded(f, c)
            ]
            if calls:
                out[key] = calls
        return out

    def located(self, calls: list[CallSite]) -> list[tuple[CallSite, ast.AST]]:
        """The calls with their nodes, less those in a lambda or awaited (a
        coroutine, or a generator delegated to: a fresh one each call)."""
        out = []
        for c in calls:
            node = self.node(c)
            if node is None or self._in_lambda(node):
                continue
            up = self.body._parent.get(id(node))
            if up is not None and isinstance(up[0], (ast.Await, ast.YieldFrom)):
                continue
            if self._on_error_path(node):
                continue
            out.append((c, node))
        return out

    def _kept_apart(self, c: CallSite, node: ast.AST) -> bool:
        """The call's value is kept apart from other runs of the call
        (:func:`~cachelint.facts.repeats.kept_apart`), and the callee is not
        known to return an immutable scalar, which one could share."""
        return not self._immutable_result(c) and repeats.kept_apart(self.body, node)

    def _immutable_result(self, c: CallSite) -> bool:
        """The callee is a function of the tree annotated to return an
        immutable scalar (``-> int``, ``-> str``, ...)."""
        callee = self.p.call_callee(self.f, c)
        fn = self.p.callee_function(callee) if callee is not None else None
        ann = fn.returns_annotation if fn is not None else None
        return ann is not None and ann[0] == "name" and ann[1] in _IMMUTABLE

    def _on_error_path(self, node: ast.AST) -> bool:
        """``node`` only builds an exception (in a ``raise`` statement) or an
        ``assert`` message: it runs when the function fails, not per run."""
        child = node
        up = self.body._parent.get(id(child))
        while up is not None:
            parent = up[0]
            if isinstance(parent, ast.Raise):
                return True
            if isinstance(parent, ast.Assert):
                return parent.msg is child
            if isinstance(parent, ast.stmt):
                return False
            child = parent
            up = self.body._parent.get(id(child))
        return False

    def _names_known(self, names: list[str]) -> bool:
        """Every name is a parameter, a local, a name of an enclosing function or of the module."""
        ctx = self.ctx
        for n in names:
            if n in ctx.params or n in ctx.locals:
                continue
            up = ctx.parent
            found = False
            while up is not None and not found:
                found = n in up.params or n in up.locals
                up = up.parent
            if found:
                continue
            if self.module is None or self.p.resolve_name(self.module, n) is None:
                return False  # a comprehension variable, or unknown
        return True

    def _in_lambda(self, node: ast.AST) -> bool:
        return any(isinstance(par, ast.Lambda) for par, _f, _i, _c in self.body.steps(node))

    # ----- findings -------------------------------------------------------------------------------
    def findings(self, reads=(), looping: dict | None = None) -> list[Finding]:
        out: list[Finding] = []
        f = self.f
        if f.calls:
            cands = self.candidates()
            callees: dict[tuple, Callee] = {}
            for key, calls in cands.items():
                cal = self.callee(calls[0])
                if cal is None:
                    continue
                need = CHEAP_REPEATS if cal.level == "cheap" else REPEATS
                if len(calls) >= need or (
                    cal.level != "cheap" and any(c.in_loop for c in calls) and self._may_be_invariant(key)
                ):
                    callees[key] = cal
            if callees and self.body is not None:
                reported = self.cl002_spans()
                groups = {}
                for key in callees:
                    located = self.located([c for c in cands[key] if (c.line, c.column) not in reported])
                    if located:
                        groups[key] = located
                out.extend(self._call_findings(groups, callees))
        if self._subscript_hint() and self.body is not None:
            out.extend(self._subscript_findings())
        if reads and looping and self.body is not None:
            out.extend(self._property_findings(reads, looping))
        return _outermost(out)

    # ----- property reads in loops ------------------------------------------------------------
    def _property_findings(self, reads, looping: dict) -> list[Finding]:
        """A read, in a loop, of a property whose getter loops on each read
        (:func:`~cachelint.facts.properties.looping_properties`), its
        receiver unchanged by the loop: the getter's loop runs per iteration."""
        reported = self.cl002_spans()
        groups: dict[tuple, list] = {}
        getters: dict[tuple, FunctionInfo] = {}
        for c in reads:
            if (c.line, c.column) in reported:
                continue
            getter = self._getter(c, looping)
            if getter is None:
                continue
            node = self._attr_node(c)
            if node is None or self._in_lambda(node) or self._on_error_path(node):
                continue
            loop = self._loop_of(node)
            if loop is None:
                continue
            key = (c.func, id(loop))
            groups.setdefault(key, []).append((c, node, loop))
            getters[key] = getter
        out: list[Finding] = []
        for key, uses in groups.items():
            g = getters[key]
            cal = Callee(
                "known", f"the getter `{g.qualname}` loops on each read", (g.qualname,), self._cost([g.qualname], g)
            )
            found = self._loop_finding([(c, n) for c, n, _l in uses], uses[0][2], cal)
            if found is not None:
                out.append(found)
        return out

    def _getter(self, c: CallSite, looping: dict) -> FunctionInfo | None:
        """The looping getter a read resolves to, through the receiver's class (or classes)."""
        wanted = looping.get(c.func[2], ())
        for cls in self.p.expr_classes(c.func[1], self.ctx):
            g = self.p.lookup_method(cls, c.func[2])
            if g is not None and g in wanted:
                return g
        return None

    def _attr_node(self, c: CallSite) -> ast.AST | None:
        """The attribute node of a property read at ``c``'s span."""
        body = self.body
        sh = body.shift
        key = (c.line - sh, body._bcol(c.line, c.column), c.end_line - sh, body._bcol(c.end_line, c.end_column))
        for n in body.code_nodes:
            if isinstance(n, ast.Attribute) and (n.lineno, n.col_offset, n.end_lineno, n.end_col_offset) == key:
                return n
        return None

    def _may_be_invariant(self, key: tuple) -> bool:
        """From the index alone, before the body is parsed again: the
        receiver's root is bound only outside loops, and no argument is
        itself a loop target (``decode(tok)`` in ``for tok in ...``)."""
        func, args, kwargs = key
        locals_ = self.ctx.locals
        root = func
        while root[0] in ("attr", "call"):
            root = root[1]
        if func[0] == "attr" and root[0] == "name" and any(a.in_loop for a in locals_.get(root[1], ())):
            return False
        for part in (*args, *(v for _k, v in kwargs)):
            if part[0] == "name" and any(a.kind == "for" for a in locals_.get(part[1], ())):
                return False
        return True

    def _subscript_hint(self) -> bool:
        """The function's text holds one subscript ``T[k]`` (a name key)
        three times: the lookups worth reporting (3+) are spelled so, but for
        a membership test ``k in T``."""
        f = self.f
        text = self.planner.text(f.path, f.line, 0, f.end_line, 10**6) or ""
        if text.count("[") < CHEAP_REPEATS:
            return False
        seen: dict[str, int] = {}
        for m in _SUBSCRIPT.finditer(text):
            n = seen[m.group(0)] = seen.get(m.group(0), 0) + 1
            if n >= CHEAP_REPEATS - 1 and (n >= CHEAP_REPEATS or " in " in text):
                return True
        return False

    def _call_findings(self, groups: dict, callees: dict) -> list[Finding]:
        out: list[Finding] = []
        taken: set = set()
        # (b) loop-invariant calls, grouped by their innermost loop
        for key, uses in groups.items():
            cal = callees[key]
            if cal.level == "cheap":
                continue
            by_loop: dict[int, list] = {}
            loops: dict[int, ast.AST] = {}
            for c, n in uses:
                loop = self._loop_of(n) if c.in_loop else None
                if loop is not None:
                    by_loop.setdefault(id(loop), []).append((c, n))
                    loops[id(loop)] = loop
            for lid, lu in by_loop.items():
                found = self._loop_finding(lu, loops[lid], cal)
                if found is not None:
                    out.append(found)
                    taken.update((c.line, c.column) for c, _n in lu)
        # (a) the same call several times in one run (a use whose value is kept in
        # a slot or added to a collection wants its own object: not shared)
        for key, uses in groups.items():
            cal = callees[key]
            uses = [(c, n) for c, n in uses if (c.line, c.column) not in taken and not self._kept_apart(c, n)]
            need = CHEAP_REPEATS if cal.level == "cheap" else REPEATS
            if len(uses) < need:
                continue
            found = self._repeat_finding(uses, cal, need)
            if found is not None:
                out.append(found)
        return out

    def _repeat_finding(self, uses: list, cal: Callee, need: int) -> Finding | None:
        uses = sorted(uses, key=lambda u: (u[0].line, u[0].column))
        names: list[str] = []
        c0 = uses[0][0]
        names_in(("call", c0.func, c0.args, c0.kwargs), names)
        barriers: list = [at for n in set(names) for at in self.store_positions.get(n, ())]
        used = self._input_chains(c0)
        barriers += [line for m, line in self.mutations if any(repeats.related(m, u) for u in used)]
        best: list = []
        whole: list = []  # the segment ``best`` was drawn from
        for segment in repeats.segments(uses, barriers):
            seg = repeats.compatible(segment, self.body)
            if len(seg) < need or not self._one_value(seg, cal):
                continue
            if len(seg) > len(best):
                best, whole = seg, segment
        if not best:
            return None
        fixed = self._dominated(best, whole, cal)
        saved, basis = self._saved_in_run(fixed)
        sites = [Site(self.f, c, cal.cost, self.p.call_callee(self.f, c), None) for c, _n in fixed]
        fix = self.planner.hoist_local(sites[0], sites)
        n = len(best)
        lines = ", ".join(str(c.line) for c, _n in best)
        how = f"is evaluated {n} times with the same arguments in one run of `{self.f.name}` (lines {lines})"
        data = {"repeats": n, "loop_line": None}
        return self._finding(best, cal, how, fix, data, n - 1 if saved is None else saved, basis)

    def _saved_in_run(self, uses: list) -> tuple[float | None, str]:
        """The repeated calls per run of ``uses`` when some use runs under a
        branch the others do not: the runs the uses are expected to make from
        the statement a local would go before (one half per branch between,
        :func:`repeats.run_share`, the branches taken independently) less the
        one call a run that makes any keeps (:func:`repeats.repeated_runs`);
        with how it was counted. (None, "") when every use runs whenever that
        statement does (the plain count: uses less one) or there is no such
        statement."""
        hp = self.body.hoist_point([n for _c, n in uses])
        if hp is None:
            return None, ""
        shares = []
        for _c, node in uses:
            j = repeats.statement_in(self.body, node, hp.block)
            if j is None:
                return None, ""
            share = repeats.run_share(self.body, node, hp.block[j])
            if j > hp.index and self.body.exits(hp.block[hp.index : j]) is not None:
                share *= CONDITIONAL  # a statement before it may leave first
            shares.append(share)
        if all(x == 1 for x in shares):
            return None, ""
        waste = repeats.repeated_runs(shares)
        basis = (
            f"{len(uses)} uses, some under branches (each counted as taken on half the runs): "
            f"{sum(shares):g} runs expected, {waste:.3g} of them repeats"
        )
        return waste, basis

    def _dominated(self, best: list, segment: list, cal: Callee) -> list:
        """The uses one local computed at ``best``'s first use serves: ``best``
        (the uses of one run), and the other uses of its segment after that
        first use on paths ``best`` does not take (the ``else`` of an ``if``
        whose other branch has a use), when the first use runs on every path
        to them and nothing between changes an input. One fix then removes
        every repeat; a second pass would otherwise hoist the rest again."""
        kept = {(c.line, c.column) for c, _n in best}
        extra = [
            (c, n)
            for c, n in segment
            if (c.line, c.column) not in kept
            and (c.line, c.column) > (best[0][0].line, best[0][0].column)
            and not any(x.kind in ("except", "lambda") for x in self.body.conditions(n))
        ]
        if not extra:
            return best
        every = sorted(best + extra, key=lambda u: (u[0].line, u[0].column))
        hp = self.body.hoist_point([n for _c, n in every])
        if hp is None or hp.uncovered or hp.exit_line is not None or not self._one_value(every, cal):
            return best
        return every

    def _one_value(self, uses: list, cal: Callee) -> bool:
        """The uses (source order) give one value: nothing between them changes
        the receiver or an input, and, when the callee is not proven pure, no
        code cachelint does not follow runs between them and may change the
        state it reads (see :meth:`_unfollowed_between`)."""
        if self._receiver_touched(uses, None):
            return False
        if not cal.cost.pure and self._unfollowed_between(uses[0][1], uses[-1][1]):
            return False
        sites = [Site(self.f, c, cal.cost, self.p.call_callee(self.f, c), None) for c, _n in uses]
        return self.planner.changed_between(sites[0], sites, None, [n for _c, n in uses]) is None

    def _loop_finding(self, uses: list, loop: ast.AST, cal: Callee) -> Finding | None:
        uses = sorted(uses, key=lambda u: (u[0].line, u[0].column))
        c0 = uses[0][0]
        names: list[str] = []
        names_in(("call", c0.func, c0.args, c0.kwargs), names)
        if isinstance(loop, ast.While) and not cal.cost.pure:
            return None  # a `while` loop ends because something in it changes: perhaps this very call
        if isinstance(loop, ast.While) and any(repeats.within(self.body, node, loop.test) for _c, node in uses):
            return None  # the loop's own test: the loop ends when its value changes
        if any(self._kept_apart(c, node) for c, node in uses):
            return None  # each iteration keeps its own result (`tables[seq.id] = base.fork()`): one per slot
        if not cal.cost.pure and repeats.suspends(loop, self.body):
            return None  # other tasks run at each `await`: they may change what the call reads
        bound = repeats.stores(loop, include_self=True, body=self.body)
        if any(n in bound for n in names):
            return None  # the loop rebinds an input (its target included)
        used = self._input_chains(c0)
        if any(
            repeats.related(m, u)
            for m, _line in repeats.mutations(loop, include_self=True, body=self.body)
            for u in used
        ):
            return None  # the loop changes an input in place
        if any(repeats.always_leaves(self.body, node, loop) for _c, node in uses):
            return None  # runs once, then the loop is left
        if self._receiver_touched(uses, loop):
            return None
        sites = [Site(self.f, c, cal.cost, self.p.call_callee(self.f, c), None) for c, _n in uses]
        if self.planner.changed_between(sites[0], sites, loop, [n for _c, n in uses]) is not None:
            return None
        saved, basis = self._saved_in_loop(uses, loop)
        if saved <= 0:
            return None  # a loop of one iteration: nothing repeats
        fix = self.planner.hoist_local(sites[0], sites, loop)
        line = self.body.line_of(loop)
        kind = "comprehension" if isinstance(loop, repeats.COMPS) else "loop"
        if c0.is_read:
            how = (
                f"runs its getter once per iteration of the {kind} at line {line}, its receiver unchanged by the {kind}"
            )
        else:
            how = f"runs once per iteration of the {kind} at line {line}, its callee and arguments unchanged by the {kind}"
        data = {"repeats": None, "loop_line": line}
        return self._finding(uses, cal, how, fix, data, saved if basis else None, basis)

    def _saved_in_loop(self, uses: list, loop: ast.AST) -> tuple[float, str]:
        """The repeated calls per run of ``uses`` in ``loop``: over its
        iterations (from its source, ``range(2)`` or a literal tuple, else the
        assumed count), the runs some use is expected to make (one half per
        branch inside the loop body) less the one call a run that makes any
        keeps (:func:`repeats.repeated_runs`); with how it was counted."""
        trips = repeats.trip_count(loop)
        count = trips if trips is not None else int(self.a.estimates.loop)
        share = max(repeats.run_share(self.body, node, loop) for _c, node in uses)
        waste = repeats.repeated_runs_each(share, count)
        if trips is None and share == 1:
            return waste, ""  # the plain count: the assumed iterations less one
        where = f"{trips} iterations, from the source" if trips is not None else f"{count} iterations assumed"
        if share == 1:
            return waste, f"{where}, less the one call kept"
        return waste, (
            f"{where}, some use under branches (each counted as taken half the time) in {share:g} of them: "
            f"{count * share:g} runs expected, {waste:.3g} of them repeats"
        )

    def _finding(
        self, uses: list, cal: Callee, how: str, fix, data: dict, extra: float | None, count_basis: str = ""
    ) -> Finding:
        f = self.f
        hot = self.a.hot
        chain = hot.chain(f.qualname)
        kind = hot.kind(f.qualname, "hot")
        c0 = uses[0][0]
        shown = render(c0.func) if c0.is_read else f"{render(c0.func)}(...)"
        msg = f"`{shown}` {how}; {cal.what}; on a {kind} path, reached via {hot_route(chain)}"
        notes: tuple = ()
        if fix is None:
            notes = ("no fix: the uses do not share a statement block, or are spelled differently",)
            msg += "; " + notes[0]
        else:
            msg += f"; fix: {fix.message}"
        return Finding(
            code=self.code,
            path=f.path,
            span=Span(c0.line, c0.column, c0.end_line, c0.end_column),
            message=msg,
            function=f.qualname,
            hot_path=chain,
            fix=fix,
            notes=notes,
            data={
                **data,
                "sites": [[c.line, c.column] for c, _n in uses],
                "hot_kind": kind,
                "cost": cal.level,
                "pure": cal.cost.pure,
                # what a per-finding cost estimate (``data["estimate"]``, from
                # the cost model) is computed from: the callee, and how many
                # extra runs per function run (None: once per loop iteration)
                "cost_basis": {"callee": list(cal.names), "extra_runs": extra, "loop_line": data["loop_line"]},
                # the runs a fix saves: the extra uses, or all iterations of the loop but one
                "estimate": self.a.estimates.site(
                    f, c0, repeats=extra if extra is not None else self.a.estimates.loop - 1, count_basis=count_basis
                ).to_data(),
            },
        )

    def _unfollowed_between(self, first: ast.AST, last: ast.AST) -> bool:
        """Between the two nodes, other tasks run (``await``, ``async for``)
        or a ``with`` is entered: its ``__enter__`` may wait for other
        processes (a lock, a file lock) while the state an impure callee reads
        changes, as in double-checked locking (check, lock, check again)."""
        lo, hi = getattr(first, "lineno", 0), getattr(last, "lineno", 0)
        return any(
            isinstance(n, (ast.Await, ast.AsyncFor, ast.AsyncWith, ast.With)) and lo <= n.lineno <= hi
            for n in self.body.code_nodes
        )

    def _input_chains(self, c: CallSite) -> list[str]:
        """The chains a call reads: its arguments, and its receiver unless the
        callee is a method of the tree (its effects are followed precisely)."""
        out: list[str] = []
        for part in (*c.args, *(v for _k, v in c.kwargs)):
            repeats.chains(part, out)
        if c.func[0] == "attr":
            callee = self.p.call_callee(self.f, c)
            if callee is None or self.p.callee_function(callee) is None:
                repeats.chains(c.func[1], out)
        return out

    def _receiver_touched(self, uses: list, loop: ast.AST | None) -> bool:
        """Between the uses (or in ``loop``), a call cachelint cannot resolve
        is made on the receiver or an argument of the repeated call as a
        command (a whole statement, or a mutator: ``parser.feed(tok)``
        between two ``parser.is_done(ids)``, ``end.record()`` before
        ``start.elapsed_time(end)``): it may change what the call returns."""
        c0 = uses[0][0]
        watched: list[str] = []
        for part in (*c0.args, *(v for _k, v in c0.kwargs)):
            repeats.chains(part, watched)
        if c0.func[0] == "attr":
            recv = dotted(c0.func[1])
            if recv is not None:
                watched.append(recv)
        if not watched:
            return False
        if loop is not None:
            lo, hi = (
                self.body.line_of(loop),
                (getattr(loop, "end_lineno", None) or getattr(loop, "lineno", 0)) + self.body.shift,
            )
        else:
            lo, hi = uses[0][0].line, uses[-1][0].end_line
        mine = {(c.line, c.column) for c, _n in uses}
        p = self.p
        for c in self.f.calls:
            if (c.line, c.column) in mine or not lo <= c.line <= hi or c.func[0] != "attr":
                continue
            d = dotted(c.func[1])
            if d is None or not any(d == w or w.startswith(d + ".") for w in watched):
                continue
            if c.func[2] in CHEAP_METHODS or (c.func, c.args, c.kwargs) == (c0.func, c0.args, c0.kwargs):
                continue
            if not is_mutator(c.func[2]) and not self.planner._value_discarded(self.f, c):
                continue  # its value is used: a query, not a command
            callee = p.call_callee(self.f, c)
            if callee is not None and p.callee_function(callee) is not None:
                continue  # a function of the tree: its effects are followed
            return True
        return False

    def _loop_of(self, node: ast.AST) -> ast.AST | None:
        """The innermost loop (or comprehension) that runs ``node`` on each iteration."""
        steps = self.body.steps(node)
        for parent, fname, _idx, _child in reversed(steps):
            if isinstance(parent, repeats.SCOPES):
                return None
            if isinstance(parent, (ast.For, ast.AsyncFor)) and fname == "body":
                return parent
            if isinstance(parent, ast.While) and fname in ("body", "test"):
                return parent
            if isinstance(parent, repeats.COMPS) and fname in ("elt", "key", "value"):
                return parent
            if isinstance(parent, ast.comprehension) and fname == "ifs":
                return self.body._parent.get(id(parent), (None,))[0]
        return None

    # ----- subscripts -------------------------------------------------------------------------------
    def _subscript_findings(self) -> list[Finding]:
        """``T[k]`` read 3+ times with the same key (``k in T`` and a final
        ``del T[k]`` or ``T[k] = v`` count as lookups; after that, the table changed)."""
        body = self.body
        groups: dict[str, list] = {}
        for node in body.code_nodes:
            if isinstance(node, ast.Subscript):
                key = repeats.lookup_key(node.value, node.slice)
                if key is not None:
                    kind = "read" if isinstance(node.ctx, ast.Load) else "write"
                    groups.setdefault(key, []).append((node, kind))
            elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
                key = repeats.lookup_key(node.comparators[0], node.left)
                if key is not None:
                    groups.setdefault(key, []).append((node, "test"))
        out = []
        for key, uses in groups.items():
            if sum(1 for _n, k in uses if k == "read") < 1 or len(uses) < CHEAP_REPEATS:
                continue
            found = self._subscript_group(key, uses)
            if found is not None:
                out.append(found)
        return out

    def _subscript_group(self, key: str, uses: list) -> Finding | None:
        body = self.body
        uses = sorted(uses, key=lambda u: (u[0].lineno, u[0].col_offset))
        target = uses[0][0]
        table = target.value if isinstance(target, ast.Subscript) else target.comparators[0]
        names = {n.id for n in ast.walk(table) if isinstance(n, ast.Name)}
        sl = target.slice if isinstance(target, ast.Subscript) else target.left
        names |= {n.id for n in ast.walk(sl) if isinstance(n, ast.Name)}
        barriers = sorted({line for n in names for line in self.stores.get(n, ())})  # AST lines
        conds = {id(n): body.conditions(n) for n, _k in uses}
        if any(any(x.kind in ("except", "lambda") for x in conds[id(n)]) for n, _k in uses):
            uses = [(n, k) for n, k in uses if not any(x.kind in ("except", "lambda") for x in conds[id(n)])]
        best: list = []
        cur: list = []
        for n, k in uses:
            if cur and any(cur[-1][0].lineno <= b < n.lineno for b in barriers):
                cur = []
            if any(repeats.exclusive(conds[id(n)], conds[id(m)]) for m, _k in cur):
                continue
            if cur and cur[-1][1] == "write":
                cur = []  # the table changed: a new value from here on
            cur.append((n, k))
            if len(cur) > len(best) and any(kk == "read" for _m, kk in cur):
                best = list(cur)
        if len(best) < CHEAP_REPEATS or self._table_changed(best, table):
            return None
        first = best[0][0]
        f = self.f
        hot = self.a.hot
        chain = hot.chain(f.qualname)
        kind = hot.kind(f.qualname, "hot")
        line, col = body.line_of(first), first.col_offset
        lines = ", ".join(str(body.line_of(n)) for n, _k in best)
        msg = (
            f"`{key}` is looked up {len(best)} times with the same key in one run of `{f.name}` (lines {lines}); "
            f"a cheap lookup, repeated; on a {kind} path, reached via {hot_route(chain)}; "
            "no fix: bind the value once (`x = table.get(key)`) by hand"
        )
        end = getattr(first, "end_lineno", None) or first.lineno
        return Finding(
            code=self.code,
            path=f.path,
            span=Span(
                line,
                repeats.char_col(body, line, col),
                end + body.shift,
                repeats.char_col(body, end + body.shift, first.end_col_offset or 0),
            ),
            message=msg,
            function=f.qualname,
            hot_path=chain,
            fix=None,
            notes=("no fix: a subscript is not hoisted automatically",),
            data={
                "repeats": len(best),
                "loop_line": None,
                "sites": [[body.line_of(n), repeats.char_col(body, body.line_of(n), n.col_offset)] for n, _k in best],
                "hot_kind": kind,
                "cost": "cheap",
                "pure": None,
                "cost_basis": {"callee": ["__getitem__"], "extra_runs": len(best) - 1, "loop_line": None},
                "estimate": self.a.estimates.lookup(f, len(best) - 1).to_data(),
            },
        )

    def _table_changed(self, uses: list, table: ast.AST) -> bool:
        """A call between the uses changes the table in place (``T.pop(k)``, a
        function of the tree that writes it, an unresolved call passed it)."""
        shown = ast.unparse(table)
        lo = self.body.line_of(uses[0][0])
        hi = self.body.line_of(uses[-1][0])
        for c in self.f.calls:
            if not lo <= c.line <= hi:
                continue
            parts = [c.func[1]] if c.func[0] == "attr" else []
            parts += [*c.args, *(v for _k, v in c.kwargs)]
            if any(dotted(x) == shown for x in parts):
                if c.func[0] == "attr" and c.func[1] is not None and dotted(c.func[1]) == shown:
                    if c.func[2] in CHEAP_METHODS:
                        continue
                return True
        return False


# ----- helpers over the AST ---------------------------------------------------------------------


def _outermost(found: list[Finding]) -> list[Finding]:
    """Drop a finding whose call is part of another's (``x.pow(2)`` in ``x.pow(2).sum()``)."""

    def inside(a: Span, b: Span) -> bool:
        return (
            a != b
            and (b.line, b.column) <= (a.line, a.column)
            and (a.end_line, a.end_column) <= (b.end_line, b.end_column)
        )

    return [f for f in found if not any(inside(f.span, g.span) for g in found)]
