"""CL008: a collection (or a value folded from one) that a hot function builds again, the same, on every run."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..facts import repeats
from ..facts.state import CONTAINER_MUTATORS, CONTAINER_READERS
from ..facts.timing import baseline, format_seconds
from ..fixes.hoisting.inputs import InputAnalysis
from ..fixes.hoisting.site import argument_for
from ..fixes.hotcalls import hot_route
from ..index.expr import conv, render
from ..index.records import CallSite, FunctionInfo
from ..model import Finding, Span
from ..semantic.idioms import fills_once, never_runs
from ..semantic.values import GlobalRoot, ParamRoot
from .base import Example, Rule

if TYPE_CHECKING:
    from ..facts.analysis import Analysis

_ROOTS = ({"pattern": "*.Runner.execute_model", "kind": "per-step"},)

_COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
# builtins that consume a generator whole into a collection or one value: the
# call is the work rebuilt (``tuple(x for x in ...)``, ``sum(...)``)
_CONSUMERS = frozenset(["tuple", "list", "set", "frozenset", "dict", "sorted", "sum", "any", "all", "max", "min"])
_COLLECTIONS = {"tuple": "tuple", "list": "list", "set": "set", "frozenset": "frozenset", "dict": "dict"}
_COMP_KINDS = {ast.ListComp: "list", ast.SetComp: "set", ast.DictComp: "dict"}
# element expressions that make a new mutable object on each evaluation
_FRESH_NODES = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)
_FRESH_NAMES = {ast.List: "lists", ast.Dict: "dicts", ast.Set: "sets"}
# an attribute changed in place: a mutating method called on it, an item of it
# assigned (or augmented), or deleted
_IN_PLACE = re.compile(
    rb"\.([A-Za-z_]\w*)\.(?:"
    + b"|".join(re.escape(m).encode() for m in sorted(CONTAINER_MUTATORS | {"put", "put_nowait"}))
    + rb")\("
    rb"|\.([A-Za-z_]\w*)\[[^\]\n]*\]\s*(?:[-+*/|&^%@]|//|<<|>>|\*\*)?=(?!=)"
    rb"|\bdel\s+[\w.]*\.([A-Za-z_]\w*)\["
)
# methods that keep their argument in the container they are called on
_KEEPERS = frozenset(["append", "appendleft", "extend", "insert", "add", "setdefault", "put", "put_nowait", "update"])
# where an attribute bound once per object is bound
_CONSTRUCTORS = frozenset(["__init__", "__post_init__", "__new__"])


class RebuiltEachRun(Rule):
    """## What it does
    Finds a hot function that builds, on every run, a collection whose
    contents are the same each time: a comprehension (or a generator handed
    whole to ``tuple``, ``list``, ``set``, ``frozenset``, ``dict``,
    ``sorted``, ``sum``, ``any``, ``all``, ``max`` or ``min``) whose
    iterables, conditions and elements depend only on values that do not
    change between runs:

    - constants and module constants;
    - attributes of ``self`` that only a constructor assigns and nothing
      changes in place (``self.num_groups``, ``self.layers``), and
      attributes of those that no method other than a constructor assigns
      or changes;
    - locals bound once from these;
    - pure calls of these (``range``, ``len``, a pure function of the tree),
      and the comprehension's own loop variables.

    Not reported, because the value may differ between runs or is meant to
    be new on each: a comprehension that reads an argument of the function
    (a caller the call graph does not reach may pass another value); one
    that reads an attribute some method other than a constructor assigns or
    changes in place (hot or not: the call graph does not see every caller),
    or an attribute of a library object the class calls methods of
    (``self.wrapper.plan(...)``, then ``self.wrapper.plan_info``); a method
    of an object made for one run of hot code (built in a hot function, or
    handed to a hot root); a collection the function then fills, stores into
    an attribute or an item, or hands to a container's method (a working
    buffer or a record); code that runs only while a memo is empty, in an
    ``except`` handler, in a nested function or lambda, or under ``if
    TYPE_CHECKING:``; a generator handed to any other function (which may
    stop early); a memoized function.

    ## Why is this bad?
    Each run pays for every element again (and for the garbage collector's
    work on what it drops) to make what the previous run made. A scheduler
    that builds a tuple of empty per-group block lists for each request, or a
    forward that rebuilds the list of its layers' names on every step, pays
    for it per request or per step. vLLM's KV-cache manager was fixed
    upstream by building its empty block lists once.

    ## Example
    ```python
    class Manager:
        def __init__(self, num_groups: int):
            self.num_groups = num_groups

        def empty_blocks(self):
            return tuple([] for _ in range(self.num_groups))
    ```
    Use instead:
    ```python
    class Manager:
        def __init__(self, num_groups: int):
            self.num_groups = num_groups
            self._empty_blocks = tuple(() for _ in range(num_groups))

        def empty_blocks(self):
            return self._empty_blocks
    ```

    ## Fix safety
    No automatic fix: sharing one value is right only when no user of it
    changes it in place (the message says when its elements are new lists,
    dicts or sets on each run, as in the example: the shared value must then
    hold immutable ones), which the callers' code, not this function, shows.

    ## Fix availability
    Never.
    """

    code = "CL008"
    name = "rebuilt-each-run"
    summary = "A collection (or a value folded from one) that a hot function builds again, the same, on every run"
    fix_availability = "never"
    default_severity = "warning"
    reads = ("hot", "program", "bodies", "estimates", "cost", "state")
    needs_hot_paths = True

    VALID = [
        # the iterable is a parameter of the hot root: new on each call
        Example(
            """
class Runner:
    def __init__(self, n: int):
        self.n = n

    def execute_model(self, batch):
        return [r.id for r in batch]
""",
            hot_roots=_ROOTS,
        ),
        # an attribute a hot method assigns changes between runs
        Example(
            """
class Runner:
    def __init__(self, n: int):
        self.n = n

    def grow(self):
        self.n += 1

    def execute_model(self, batch):
        self.grow()
        return tuple([] for _ in range(self.n)), batch
""",
            hot_roots=_ROOTS,
        ),
        # a list a hot method appends to is not the same on each run
        Example(
            """
class Runner:
    def __init__(self):
        self.seen = []

    def execute_model(self, batch):
        self.seen.append(batch)
        return [len(s) for s in self.seen]
""",
            hot_roots=_ROOTS,
        ),
        # stored into an attribute: a value being kept, not rebuilt for one run
        Example(
            """
class Runner:
    def __init__(self, n: int):
        self.n = n
        self.slots = None

    def execute_model(self, batch):
        if self.slots is None:
            self.slots = [0 for _ in range(self.n)]
        return self.slots, batch
""",
            hot_roots=_ROOTS,
        ),
        # an element made by a call that is not pure (it reads the environment)
        Example(
            """
import os

class Runner:
    def __init__(self, names: tuple):
        self.names = names

    def execute_model(self, batch):
        return [os.environ.get(n) for n in self.names], batch
""",
            hot_roots=_ROOTS,
        ),
        # a dataclass built on each run: its method's `self` is a new object each time
        Example(
            """
from dataclasses import dataclass

@dataclass
class Blocks:
    groups: tuple

    def ids(self):
        return tuple([b for b in g] for g in self.groups)

class Runner:
    def __init__(self, n: int):
        self.n = n

    def execute_model(self, batch):
        return Blocks(tuple(batch)).ids()
""",
            hot_roots=_ROOTS,
        ),
        # a check a constructor runs: once per object, not once per step
        Example(
            """
from dataclasses import dataclass

@dataclass
class Params:
    prompts: list

    def __post_init__(self):
        self._validate()

    def _validate(self):
        if not all(isinstance(p, str) for p in self.prompts):
            raise ValueError("prompts must be strings")

class Runner:
    def __init__(self, defaults: list):
        self.defaults = defaults

    def execute_model(self, batch):
        return Params.__post_init__(batch), batch
""",
            hot_roots=_ROOTS,
        ),
        # a request object handed to the hot root is new on each call
        Example(
            """
class Request:
    def __init__(self, tools: list):
        self.tools = tools

    def schema(self):
        return {t: len(t) for t in self.tools}

class Runner:
    def execute_model(self, request: Request):
        return request.schema()
""",
            hot_roots=_ROOTS,
        ),
        # a local set the function fills before reading it
        Example(
            """
class Runner:
    def __init__(self, names: dict):
        self.names = names

    def execute_model(self, acks):
        done = set()
        for a in acks:
            done.add(a)
        return {self.names[d] for d in done}
""",
            hot_roots=_ROOTS,
        ),
        # built only while the memo is empty (`w = self._w; if w is not None: return w`)
        Example(
            """
class Runner:
    def __init__(self, names: tuple):
        self.names = names
        self._width = None

    def width(self):
        w = self._width
        if w is not None:
            return w
        total = sum(len(n) for n in self.names)
        self._width = total * 2
        return self._width

    def execute_model(self, batch):
        return self.width(), batch
""",
            hot_roots=_ROOTS,
        ),
        # an attribute another method assigns, though no hot code calls it
        Example(
            """
class Handler:
    def __init__(self):
        self.req_ids = []

    def set_batch(self, req_ids: list):
        self.req_ids = req_ids

    def draft(self):
        return [[-1] for _ in self.req_ids]

class Runner:
    def __init__(self, handler: Handler):
        self.handler = handler

    def execute_model(self, batch):
        return self.handler.draft(), batch
""",
            hot_roots=_ROOTS,
        ),
        # a list another method changes in place, though no hot code calls it
        Example(
            """
class Stats:
    def __init__(self, n: int):
        self.histogram = [0] * n

    def observe(self, k: int):
        self.histogram[k] += 1

    def mean(self):
        return sum(j * c for j, c in enumerate(self.histogram))

class Runner:
    def __init__(self, stats: Stats):
        self.stats = stats

    def execute_model(self, batch):
        return self.stats.mean(), batch
""",
            hot_roots=_ROOTS,
        ),
        # read through a library object whose own methods the class calls
        Example(
            """
import flashinfer

class State:
    def __init__(self):
        self.wrapper = flashinfer.Wrapper()

class Planner:
    def __init__(self, state: State):
        self.state = state

    def plan(self, lens):
        self.state.wrapper.plan(lens)
        return [int(x) for x in self.state.wrapper.plan_info]

class Runner:
    def __init__(self, planner: Planner):
        self.planner = planner

    def execute_model(self, batch):
        return self.planner.plan(batch)
""",
            hot_roots=_ROOTS,
        ),
        # an attribute of objects of a class cachelint does not know, changed in
        # place elsewhere in the program
        Example(
            """
def enqueue(scheduler, request):
    scheduler.waiting.append(request)

class Runner:
    def __init__(self, make):
        self.schedulers = [make() for _ in range(2)]

    def execute_model(self, batch):
        return sum(len(s.waiting) for s in self.schedulers), batch
""",
            hot_roots=_ROOTS,
        ),
        # elements of the list are changed in place, in a loop over it
        Example(
            """
class Runner:
    def __init__(self, windows: tuple):
        self.histories = [[] for _ in windows]

    def execute_model(self, value):
        for history in self.histories:
            history.append(value)
        return [sum(h) / len(h) for h in self.histories]
""",
            hot_roots=_ROOTS,
        ),
        # a working buffer the function fills: new on each run by design
        Example(
            """
class Runner:
    def __init__(self, groups: int):
        self.groups = groups

    def execute_model(self, batch):
        rows = [[] for _ in range(self.groups)]
        for i, x in enumerate(batch):
            rows[i % self.groups].append(x)
        return rows
""",
            hot_roots=_ROOTS,
        ),
        # a counter a helper of the tree fills: new on each run by design
        Example(
            """
class Runner:
    def __init__(self, kinds: tuple):
        self.kinds = kinds

    def _count(self, batch, counts):
        for x in batch:
            counts[x] += 1

    def execute_model(self, batch):
        counts = {k: 0 for k in self.kinds}
        self._count(batch, counts)
        return counts
""",
            hot_roots=_ROOTS,
        ),
        # kept per request: each run needs its own lists
        Example(
            """
class Runner:
    def __init__(self, windows: tuple):
        self.windows = windows
        self.pending = {}

    def execute_model(self, request_id):
        blocks = [[] for _ in self.windows]
        self.pending[request_id] = (request_id, blocks)
        return blocks
""",
            hot_roots=_ROOTS,
        ),
        # read from an argument: the one hot caller passes the same list, but a
        # caller the call graph does not reach may pass another on each call
        Example(
            """
def names_of(layers):
    return [layer.name for layer in layers]

class Runner:
    def __init__(self, layers: list):
        self.layers = layers

    def execute_model(self, batch):
        return names_of(self.layers), batch
""",
            hot_roots=_ROOTS,
        ),
        # a generator handed to a function that may stop early
        Example(
            """
class Runner:
    def __init__(self, names: tuple):
        self.names = names

    def execute_model(self, batch):
        return next(n for n in self.names if n), batch
""",
            hot_roots=_ROOTS,
        ),
    ]

    INVALID = [
        # a tuple of new empty lists, one per group, on each run
        Example(
            """
class Manager:
    def __init__(self, num_groups: int):
        self.num_groups = num_groups

    def empty_blocks(self):
        return tuple([] for _ in range(self.num_groups))

class Runner:
    def __init__(self, manager: Manager):
        self.manager = manager

    def execute_model(self, batch):
        return self.manager.empty_blocks(), batch
""",
            expect=(("example.py", 6),),
            applicability=(None,),
            message_contains=("builds the same tuple on each run of `empty_blocks`", "new empty lists"),
            hot_roots=_ROOTS,
        ),
        # the names of the layers, and their total width, on every step
        Example(
            """
class Layer:
    def __init__(self, name: str, width: int):
        self.name = name
        self.width = width

class Runner:
    def __init__(self, layers: list):
        self.layers = layers

    def execute_model(self, batch):
        names = [layer.name for layer in self.layers if layer.width > 0]
        total = sum(layer.width * 2 for layer in self.layers)
        return names, total, batch
""",
            expect=(("example.py", 11), ("example.py", 12)),
            applicability=(None, None),
            message_contains=("on each run of `execute_model`",),
            hot_roots=_ROOTS,
        ),
    ]

    def check(self, analysis: Analysis) -> Iterable[Finding]:
        hot = analysis.hot
        p = analysis.program
        inputs = InputAnalysis(analysis, hot)
        shared: dict = {}  # memos of the run's judgements, across functions
        out: list[Finding] = []
        for qn in sorted(hot.chains):
            f = p.functions.get(qn)
            if f is None or f.under_type_checking or not f.iterated or p.is_cached(f):
                continue
            # parse the function again only when something it iterates is the same on every run
            if not any(inputs.varies(f, e) is None for es in f.iterated.values() for e in es if e[0] != "?"):
                continue
            with analysis.bodies.transient():  # one function's parsed body at a time
                out.extend(_Function(self.code, analysis, inputs, f, shared).findings())
        return out


def _bind(e: Any, bound: frozenset[str]) -> Any:
    """Expression ``e`` with the comprehension's own names made constants."""
    if type(e) is not tuple or not e:
        return e
    if e[0] == "name" and len(e) == 2 and e[1] in bound:
        return ("const", None)
    return tuple(_bind(x, bound) for x in e)


def _followed(e: Any) -> bool:
    """``e`` holds no part the index could not express (``("?",)``)."""
    if type(e) is not tuple:
        return True
    if e == ("?",):
        return False
    return all(_followed(x) for x in e)


class _Function:
    """The findings of one hot function, from its body parsed again."""

    def __init__(self, code: str, analysis: Analysis, inputs: InputAnalysis, f: FunctionInfo, shared: dict) -> None:
        self.code = code
        self.a = analysis
        self.p = analysis.program
        self.inputs = inputs
        self.f = f
        self.ctx = self.p.context(f)
        self.a_memo = shared

    def findings(self) -> list[Finding]:
        body = self.a.bodies.body(self.f)
        if body is None:
            return []
        out: list[Finding] = []
        for node, parent, stmt, loops in _candidates(body.node):
            target = self._target(node, parent)
            if target is None or self._runs_once(stmt.lineno + body.shift) or self._filled_after(stmt):
                continue
            why = self._varies(node, frozenset()) or self._argument(node) or self._unsettled(node)
            if why is not None:
                continue
            out.append(self._finding(body, node, target, loops))
        return out

    def _filled_after(self, stmt: ast.stmt) -> bool:
        """The statement binds a local that the function then fills (an item
        of it, or of one of its elements, assigned, or a method other than a
        reader called on it or on an element: ``hit[i] = b``,
        ``rows[k].append(x)``) or keeps (stored into an attribute or an item,
        or handed to a method such as ``append``). The collection is then a
        new working buffer or record on each run, not a value to build once."""
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            t = stmt.targets[0]
        elif isinstance(stmt, ast.AnnAssign):
            t = stmt.target
        else:
            return False
        if not isinstance(t, ast.Name):
            return False
        local = ("name", t.id)

        def held(e) -> bool:  # the local, or an element of it
            return e == local or (e[0] == "sub" and e[1] == local)

        def mentions(e) -> bool:
            return e == local or (type(e) is tuple and any(mentions(x) for x in e))

        f = self.f
        for a in f.assigns:
            if a.target[0] == "sub" and held(a.target[1]):
                return True
            if a.target[0] in ("attr", "sub") and mentions(a.value):
                return True  # kept in an attribute or a container: one per run is what is wanted
        for c in f.calls:
            if c.func[0] == "attr" and c.func[2] not in CONTAINER_READERS:
                if held(c.func[1]) or (c.func[2] in _KEEPERS and any(mentions(x) for x in c.args)):
                    return True  # filled, or kept by a container (`pending.append(rows)`)
            if self._fills_argument(c, local):
                return True
        return False

    def _fills_argument(self, c: CallSite, local: tuple) -> bool:
        """Call ``c`` hands ``local`` to a function of the tree that changes
        that parameter in place (``self._evict(request, tracker)`` filling
        ``tracker``), as the state model's effects of the callee say."""
        if local not in c.args and all(v != local for _k, v in c.kwargs):
            return False
        callee = self.p.call_callee(self.f, c)
        g = self.p.callee_function(callee) if callee is not None else None
        if g is None:
            return False
        changed = {
            e.value[0].name
            for e in self.a.state.effects(g)
            if isinstance(e.value[0], ParamRoot) and e.value[0].function == g.qualname
        }
        if not changed:
            return False
        params = list(g.params)
        return any(q.name in changed and argument_for(g, params, c, q.name) == local for q in params)

    def _runs_once(self, line: int) -> bool:
        """The statement on ``line`` runs only while a slot the function
        fills is empty (``if self._x is not None: return self._x``), as the
        index's guard of a call or assignment of that statement says."""
        f = self.f
        guard = next((a.guard for a in f.assigns if a.line == line), None)
        if guard is None:
            guard = next((c.guard for c in f.calls if c.stmt_line == line), None)
        if not guard:
            return False
        probe = CallSite(("name", "_"), (), (), line, 0, line, 0, guard, False, line)
        return never_runs(probe) or fills_once(f, probe)

    # ----- what the analysis cannot see change -----------------------------------------
    def _unsettled(self, node: ast.AST) -> str | None:
        """Why an attribute the comprehension reads may hold something else
        on the next run although no hot code the call graph reaches assigns
        it: a method of its class other than a constructor assigns it or
        changes it in place (it may run between two runs: the call graph
        does not see every caller), or the object read through is one of a
        library on which the class calls methods cachelint cannot see into
        (``self.wrapper.plan(...)`` before ``self.wrapper._plan_info``).
        Attributes of ``self`` are judged in its class; an attribute of
        another object (``scheduler.swapped`` for each scheduler of a list),
        in each class cachelint knows that object may be."""
        f = self.f
        cls = f.class_qualname
        if cls is not None and f.self_name:
            for chain in self._self_chains(node):
                why = self._settled_in(cls, chain[0])
                if why is not None:
                    return why
                for i in range(1, len(chain)):
                    why = self._opaque_calls(cls, chain[:i])
                    if why is not None:
                        return why
        for sub in ast.walk(node):
            if not isinstance(sub, ast.Attribute):
                continue
            base = conv(sub.value)
            if base == ("name", f.self_name) or not _followed(base):
                continue
            classes = self.p.expr_classes(base, self.ctx)
            for k in classes:
                why = self._settled_in(k, sub.attr)
                if why is not None:
                    return why
            if not classes:
                why = self._settled_anywhere(sub.attr)
                if why is not None:
                    return why
        return None

    def _settled_anywhere(self, attr: str) -> str | None:
        """For an object of a class cachelint does not know: why ``.attr``
        may change after construction, judged over the whole program by
        name: some function other than a constructor assigns ``.attr``, or
        some file changes an ``.attr`` in place (``x.attr.append(...)``,
        ``x.attr[k] = v``, ``del x.attr[k]``)."""
        for w, _a in self.p.writers(attr):
            if w.name not in _CONSTRUCTORS:
                return f"`.{attr}` is assigned in `{w.qualname}`"
        changed = self.a_memo.get("changed-anywhere")
        if changed is None:
            changed = self.a_memo["changed-anywhere"] = self._changed_anywhere()
        if attr in changed:
            return f"some `.{attr}` is changed in place ({changed[attr]})"
        return None

    def _changed_anywhere(self) -> dict[str, str]:
        """Attribute names some file of the program changes in place, each
        with where: one scan of the sources (only when an attribute of an
        object of unknown class is all that is left to judge)."""
        out: dict[str, str] = {}
        for fi in self.p.indexes:
            if fi.error is not None:
                continue
            try:
                text = self.p.source_bytes(fi.path)
            except OSError:
                continue
            for m in _IN_PLACE.finditer(text):
                name = (m.group(1) or m.group(2) or m.group(3)).decode()
                if name not in out:
                    line = text.count(b"\n", 0, m.start()) + 1
                    out[name] = f"{fi.path}:{line}"
        return out

    def _settled_in(self, cls: str, attr: str) -> str | None:
        """Why ``attr`` of an object of ``cls`` may change after construction:
        a method of ``cls`` or a subclass other than a constructor assigns it
        or changes it in place."""
        for k in (cls, *self.p.subclasses(cls)):
            for w, _a in self.p.self_attr_writers(k, attr):
                if w.name not in _CONSTRUCTORS:
                    return f"`.{attr}` is also assigned in `{w.qualname}`"
        return self._changed_in_place(cls, attr)

    def _argument(self, node: ast.AST) -> str | None:
        """A parameter of the function (other than ``self``) the comprehension
        reads, directly or through locals bound from it: the invariance model
        takes it as unchanged when every *hot* caller passes the same value,
        but a caller the call graph does not reach may pass another on each
        call; a collection rebuilt from an argument is not reported."""
        f = self.f
        params = {prm.name for prm in f.params} - {f.self_name}
        seen: set[str] = set()
        stack = [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            if n in params:
                return f"`{n}` is an argument of `{f.name}`"
            for a in self.ctx.locals.get(n, ()):
                stack.extend(_names(a.value))
        return None

    def _self_chains(self, node: ast.AST) -> list[tuple[str, ...]]:
        """The attribute chains on ``self`` read by ``node``, directly or through
        locals bound once (``tasks = self.tasks``)."""
        out: list[tuple[str, ...]] = []
        sn = self.f.self_name
        seen: set[str] = set()
        todo = [conv(sub) for sub in ast.walk(node) if isinstance(sub, (ast.Attribute, ast.Name))]
        while todo:
            found: list[str] = []
            repeats.chains(todo.pop(), found)
            for d in found:
                head, *rest = d.split(".")
                if head == sn and rest:
                    out.append(tuple(rest))
                elif head != sn and head not in seen:  # a local: what it was bound to
                    seen.add(head)
                    todo.extend(a.value for a in self.ctx.locals.get(head, ()))
        return out

    def _changed_in_place(self, cls: str, first: str) -> str | None:
        """A method of ``cls`` or a subclass other than a constructor changes
        ``self.<first>`` or one of its elements in place: an item assigned or
        deleted, or a method other than a reader called on it, on an item of
        it, or on the variable of a loop over it (hot or not: the call graph
        does not see every caller)."""
        key = ("in-place", cls, first)
        memo = self.a_memo
        if key in memo:
            return memo[key]
        why = None
        for k in (cls, *self.p.subclasses(cls)):
            ci = self.p.classes.get(k)
            for qn in ci.methods.values() if ci is not None else ():
                m = self.p.functions.get(qn)
                if m is None or m.name in _CONSTRUCTORS or not m.self_name:
                    continue
                held = ("attr", ("name", m.self_name), first)
                # the object itself, an item of it, or an element a loop takes from it
                touched: list[tuple] = [held]
                touched += [("name", v) for v, es in m.iterated.items() if held in es]

                def changes(e, touched=touched) -> bool:
                    return e in touched or (e[0] == "sub" and e[1] in touched)

                if any(a.target[0] == "sub" and changes(a.target[1]) for a in m.assigns) or any(
                    c.func[0] == "attr" and changes(c.func[1]) and c.func[2] not in CONTAINER_READERS for c in m.calls
                ):
                    why = f"`.{first}` (or an element of it) is changed in place in `{m.qualname}`"
                    break
            if why is not None:
                break
        memo[key] = why
        return why

    def _opaque_calls(self, cls: str, prefix: tuple[str, ...]) -> str | None:
        """A method of ``cls`` calls a method on ``self.<prefix>`` that
        cachelint cannot resolve (a library object's): it may change the
        object, and what is read from it."""
        key = (cls, prefix)
        memo = self.a_memo
        if key in memo:
            return memo[key]
        sn = self.f.self_name
        recv: Any = ("name", sn)
        for part in prefix:
            recv = ("attr", recv, part)
        why = None
        ci = self.p.classes.get(cls)
        for qn in ci.methods.values() if ci is not None else ():
            m = self.p.functions.get(qn)
            if m is None or m.self_name != sn:
                continue
            for c in m.calls:
                if c.func[0] == "attr" and c.func[1] == recv:
                    callee = self.p.call_callee(m, c)
                    if callee is None or self.p.callee_function(callee) is None:
                        why = f"`{render(c.func)}(...)` in `{m.name}` may change `self.{'.'.join(prefix)}`"
                        break
            if why is not None:
                break
        memo[key] = why
        return why

    # ----- what is built -------------------------------------------------------------
    def _target(self, node: ast.AST, parent: ast.AST | None) -> tuple[ast.AST, str] | None:
        """The expression rebuilt (the comprehension, or the builtin call
        consuming its generator) and what it makes; None when not reported."""
        if isinstance(parent, ast.Call) and parent.args == [node] and not parent.keywords:
            name = self._builtin(parent.func)
            if name in _CONSUMERS:
                made = _COLLECTIONS.get(name, "value")
                return parent, ("list" if name == "sorted" else made)
        if isinstance(node, ast.GeneratorExp):
            return None  # handed to a function that may stop early, or kept lazy
        return node, _COMP_KINDS[type(node)]

    def _builtin(self, func: ast.AST) -> str | None:
        if not isinstance(func, ast.Name):
            return None
        v = self.p.canon(("name", func.id), self.ctx)
        if v is not None and len(v) == 1 and isinstance(v[0], GlobalRoot) and v[0].qualname.startswith("builtins."):
            return v[0].qualname[9:]
        return None

    # ----- invariance ----------------------------------------------------------------
    def _varies(self, node: Any, bound: frozenset[str]) -> str | None:
        """Why ``node`` can differ between runs of the function, or None; the
        names in ``bound`` are loop variables of enclosing comprehensions
        (the same on each run when their iterables are)."""
        if isinstance(node, _COMPS):
            names = set(bound)
            for gen in node.generators:
                if gen.is_async:
                    return "an async comprehension"
                why = self._varies(gen.iter, frozenset(names))
                if why is not None:
                    return why
                names.update(n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name))
                for cond in gen.ifs:
                    why = self._varies(cond, frozenset(names))
                    if why is not None:
                        return why
            inner = frozenset(names)
            parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            for part in parts:
                why = self._varies(part, inner)
                if why is not None:
                    return why
            return None
        if isinstance(node, ast.Constant):
            return None
        if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
            e = conv(node)
            if _followed(e):
                return self.inputs.varies(self.f, _bind(e, bound))
            if isinstance(node, ast.Call):
                for part in (*node.args, *(k.value for k in node.keywords)):
                    why = self._varies(part, bound)
                    if why is not None:
                        return why
                func = conv(node.func)
                if not _followed(func):
                    return "a callee cachelint does not follow"
                shape = (
                    "call",
                    _bind(func, bound),
                    tuple(("const", None) for _ in node.args),
                    tuple((k.arg, ("const", None)) for k in node.keywords),
                )
                return self.inputs.varies(self.f, shape)
            if isinstance(node, ast.Subscript):
                return self._varies(node.value, bound) or self._varies(node.slice, bound)
            if isinstance(node, ast.Attribute):
                why = self._varies(node.value, bound)
                return why or self.inputs.varies(self.f, ("attr", ("const", None), node.attr))
            return "an expression cachelint does not follow"
        if isinstance(node, (ast.BinOp, ast.BoolOp, ast.UnaryOp, ast.Compare, ast.IfExp)):
            kids = list(ast.iter_child_nodes(node))
            for kid in kids:
                if isinstance(kid, (ast.operator, ast.boolop, ast.unaryop, ast.cmpop)):
                    continue
                why = self._varies(kid, bound)
                if why is not None:
                    return why
            return None
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            for elt in node.elts:
                why = self._varies(elt.value if isinstance(elt, ast.Starred) else elt, bound)
                if why is not None:
                    return why
            return None
        if isinstance(node, ast.Dict):
            entries: list[ast.expr | None] = [*node.keys, *node.values]
            for entry in entries:
                if entry is None:
                    return "a `**` unpacking"
                why = self._varies(entry, bound)
                if why is not None:
                    return why
            return None
        return f"`{type(node).__name__}` expressions are not followed"

    # ----- the finding ---------------------------------------------------------------
    def _finding(self, body, node: ast.AST, target: tuple[ast.AST, str], loops: int) -> Finding:
        f = self.f
        hot = self.a.hot
        expr, made = target
        line = getattr(expr, "lineno", 0) + body.shift
        end_line = (getattr(expr, "end_lineno", None) or getattr(expr, "lineno", 0)) + body.shift
        col = repeats.char_col(body, line, getattr(expr, "col_offset", 0))
        end_col = repeats.char_col(body, end_line, getattr(expr, "end_col_offset", 0) or 0)
        text = " ".join((self.inputs.text(f.path, line, col, end_line, end_col) or "").split()) or ast.unparse(expr)
        shown = text if len(text) <= 80 else text[:77] + "..."
        chain = hot.chain(f.qualname)
        kind = hot.kind(f.qualname, "hot")
        seconds, basis = self._cost(node)
        calls = self.a.estimates.loop**loops if loops else 1.0
        estimate = self.a.estimates.work(f, seconds, basis, calls, loops > 0)
        if made == "value":
            what = f"computes the same value on each run of `{f.name}`"
        else:
            what = f"builds the same {made} on each run of `{f.name}`"
        fresh = _fresh_elements(node)
        notes = []
        if fresh is not None:
            notes.append(
                f"its elements are new {fresh} on each run: a value built once and shared must hold"
                " immutable ones unless no user changes them"
            )
        note = "no fix: build it once where its inputs are bound (`__init__`, a module constant) and read it here"
        message = (
            f"`{shown}` {what} (its iterables and elements do not change between runs); on a {kind} path,"
            f" reached via {hot_route(chain)}; {'; '.join([*notes, note])}"
        )
        return Finding(
            code=self.code,
            path=f.path,
            span=Span(line, col, end_line, end_col),
            message=message,
            function=f.qualname,
            hot_path=chain,
            fix=None,
            notes=(*notes, note),
            data={"built": made, "hot_kind": kind, "estimate": estimate.to_data(), "group": text},
        )

    def _cost(self, node: ast.AST) -> tuple[float, str]:
        """Seconds per run of comprehension ``node``: the container, then one
        element per iteration of each ``for`` (the loop count, or what its
        source says: :func:`repeats.iterations`), each a small build or a call."""
        build = baseline("small-build")
        call = baseline("python-call")
        assert isinstance(node, _COMPS)
        n = 1.0
        counts = []
        for gen in node.generators:
            k = repeats.iterations(gen.iter)
            count = float(k) if k is not None else self.a.estimates.loop
            counts.append(f"{count:g}" if k is not None else f"{count:g} (the loop count)")
            n *= count
        elts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        builds = sum(1 for e in elts for x in ast.walk(e) if isinstance(x, (*_FRESH_NODES, ast.Tuple)))
        calls = sum(1 for e in elts for x in ast.walk(e) if isinstance(x, ast.Call))
        per = max(builds * build + calls * call, baseline("dict-lookup"))
        seconds = build + n * per
        basis = f"{' x '.join(counts)} elements x {format_seconds(per)} each, calibrated"
        return seconds, basis


def _candidates(root: ast.AST) -> Iterator[tuple[ast.AST, ast.AST | None, ast.stmt, int]]:
    """The outermost comprehensions of function ``root``'s own code that run
    when it does (not in handlers, nested scopes or ``if TYPE_CHECKING:``,
    not stored into an attribute or item), with their parent node, the
    statement holding them and how many loops of the function hold them."""
    body = getattr(root, "body", [])
    stack: list[tuple[ast.AST, ast.AST | None, Any, int, bool]] = [(s, root, s, 0, False) for s in reversed(body)]
    while stack:
        node, parent, stmt, loops, stored = stack.pop()
        if isinstance(node, ast.stmt):
            stmt = node
        if isinstance(node, (*_SCOPES, ast.ExceptHandler)):
            continue
        if isinstance(node, ast.If) and _type_checking(node.test):
            stack.extend((c, node, c, loops, stored) for c in reversed(node.orelse))
            continue
        if isinstance(node, _COMPS):
            effects = (ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)
            if not stored and not any(isinstance(x, effects) for x in ast.walk(node)):
                yield node, parent, stmt, loops
            continue  # the outermost only
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            keeps = any(isinstance(t, (ast.Attribute, ast.Subscript)) for t in targets)
            if node.value is not None:
                stack.append((node.value, node, stmt, loops, keeps))
            continue
        for child in reversed(list(ast.iter_child_nodes(node))):
            in_body = isinstance(node, _LOOPS) and child not in (
                getattr(node, "iter", None),
                getattr(node, "test", None),
            )
            stack.append((child, node, stmt, loops + 1 if in_body else loops, stored))


def _type_checking(test: ast.AST) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _fresh_elements(node: ast.AST) -> str | None:
    """What each element is when it is a new mutable object made per
    iteration (``"empty lists"``, ``"dicts"``), else None."""
    elt = node.value if isinstance(node, ast.DictComp) else getattr(node, "elt", None)
    if not isinstance(elt, _FRESH_NODES):
        return None
    if isinstance(elt, (ast.List, ast.Set)):
        return ("empty " if not elt.elts else "") + _FRESH_NAMES[type(elt)]
    if isinstance(elt, ast.Dict):
        return ("empty " if not elt.keys else "") + "dicts"
    return {ast.ListComp: "lists", ast.DictComp: "dicts", ast.SetComp: "sets"}[type(elt)]


def _names(e) -> list[str]:
    """The bare names index expression ``e`` reads."""
    if type(e) is not tuple or not e:
        return []
    if e[0] == "name" and len(e) == 2 and isinstance(e[1], str):
        return [e[1]]
    return [n for x in e for n in _names(x)]
