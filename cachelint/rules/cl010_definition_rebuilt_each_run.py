"""CL010: a hot function defines a compiled or memoized function anew on every run."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from ..facts import repeats
from ..facts.timing import baseline, format_seconds
from ..fixes.hotcalls import hot_route
from ..index.expr import dotted, render
from ..index.records import FunctionInfo
from ..model import Finding, Span
from ..semantic.compiled import class_decorator_matches, is_compile_decorator
from .base import Example, Rule

if TYPE_CHECKING:
    from ..facts.analysis import Analysis
    from ..facts.bodies import Body

_ROOTS = ({"pattern": "*.Sampler.forward", "kind": "per-step"},)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class DefinitionRebuiltEachRun(Rule):
    """## What it does
    Finds a function (or class) defined inside a hot function with a
    decorator that does its work when the definition runs: ``torch.compile``
    (and the configured ``compile-decorators``), which wraps the function in
    a new compiled module, and the cache decorators (``functools.cache``,
    ``lru_cache`` and the configured ``cache-decorators``), which give it a
    new, empty memo. A ``def`` statement runs each time its enclosing
    function runs, so the decorator does that work on every step or request,
    and the memo is dropped at the end of each run.

    Reported only when the definition does not depend on the run: its body
    and its decorators read nothing of the enclosing function but its object
    (``self``) and the names its local imports bind. A nested function over
    the run's own values (a parameter, a local) is a closure built for that
    run; a memo over it may be meant to live only as long as the run. Nor
    when the function keeps it beyond the run (returns it, stores it, hands
    it to a call): then it is built once per keeper, as a fill-once
    ``self._kernel = kernel`` is.

    ## Why is this bad?
    Wrapping a function with ``torch.compile`` costs about half a
    millisecond, and the new wrapper's first call goes through dynamo's
    cache and guards again; vLLM moved a ``@torch.compile`` helper out of the
    CPU sampler's ``forward`` for this (PR #28260). A memo that starts empty
    on every run never serves a later run: the decorated function's body
    runs again each time, plus the cost of building the cache.

    ## Example
    ```python
    class Sampler:
        def forward(self, logits):
            @torch.compile(dynamic=True)
            def sample(x):
                return x.softmax(dim=-1).argmax(dim=-1)

            return sample(logits)
    ```

    Use instead:
    ```python
    @torch.compile(dynamic=True)
    def _sample(x):
        return x.softmax(dim=-1).argmax(dim=-1)

    class Sampler:
        def forward(self, logits):
            return _sample(logits)
    ```

    ## Fix safety
    No fix is offered. Moving a definition out of its function changes when
    its decorator runs (an import-time ``torch.compile``) and, for one that
    reads ``self``, means building it in ``__init__`` and storing it on the
    object; a memo that then serves later runs returns their first value
    again, which is wrong for a function whose value should change from run
    to run (random inputs): drop the decorator there instead. A change for a
    person to make.

    ## Fix availability
    Never.
    """

    code = "CL010"
    name = "definition-rebuilt-each-run"
    summary = "A hot function defines a compiled or memoized function anew on every run"
    fix_availability = "never"
    reads = ("hot", "program", "config", "cost", "bodies", "estimates")
    needs_hot_paths = True

    VALID = [
        # defined once, at module level: compiled once
        Example(
            """
import torch

@torch.compile(dynamic=True)
def sample(x):
    return x.softmax(dim=-1).argmax(dim=-1)

class Sampler:
    def forward(self, logits):
        return sample(logits)
""",
            hot_roots=_ROOTS,
        ),
        # a closure over the run's own value: a memo meant for one run
        Example(
            """
import functools

class Sampler:
    def forward(self, logits, scale):
        @functools.cache
        def scaled(k):
            return logits[k] * scale

        return [scaled(i % 4) for i in range(16)]
""",
            hot_roots=_ROOTS,
        ),
        # two levels down, over the outer method's argument: built for that run
        Example(
            """
import torch

class Sampler:
    def forward(self, x, scale):
        def _encode(x):
            @torch.compile
            def encoder(x):
                return x * scale

            return encoder(x)

        return _encode(x)
""",
            hot_roots=_ROOTS,
        ),
        # the decorator reads the run's argument: built for that run
        Example(
            """
import torch

class Sampler:
    def forward(self, logits, mode):
        @torch.compile(mode=mode)
        def sample(x):
            return x.argmax(dim=-1)

        return sample(logits)
""",
            hot_roots=_ROOTS,
        ),
        # a decorator that does nothing per definition worth reporting
        Example(
            """
import contextlib

class Sampler:
    def forward(self, logits):
        @contextlib.contextmanager
        def scope():
            yield

        with scope():
            return logits.argmax(dim=-1)
""",
            hot_roots=_ROOTS,
        ),
        # kept on the object under a fill-once guard: compiled once
        Example(
            """
import torch

class Sampler:
    def __init__(self):
        self._kernel = None

    def forward(self, logits):
        if self._kernel is None:
            @torch.compile
            def kernel(x):
                return x.softmax(dim=-1)

            self._kernel = kernel
        return self._kernel(logits)
""",
            hot_roots=_ROOTS,
        ),
        # the enclosing function is memoized: its body runs once per key
        Example(
            """
import functools
import torch

@functools.cache
def table_for(n):
    @torch.compile
    def kernel(x):
        return x.softmax(dim=-1)

    return kernel(torch.eye(4))

class Sampler:
    def forward(self, logits):
        return logits @ table_for(4)
""",
            hot_roots=_ROOTS,
        ),
    ]
    INVALID = [
        # vLLM PR #28260: the CPU sampler compiled its helper on every step
        Example(
            """
import torch

class Sampler:
    def forward(self, logits):
        @torch.compile(dynamic=True)
        def compiled_random_sample(x):
            probs = x.softmax(dim=-1, dtype=torch.float32)
            q = torch.empty_like(probs)
            q.exponential_()
            return probs.div(q).argmax(dim=-1).view(-1)

        return compiled_random_sample(logits)
""",
            hot_roots=_ROOTS,
            expect=(("example.py", 5),),
            message_contains=("`compiled_random_sample` is defined", "a new compiled wrapper", "module level"),
        ),
        # a memo rebuilt on every step: the group's name is looked up again each time
        Example(
            """
from functools import lru_cache

import torch

class Sampler:
    def forward(self, logits, group):
        @lru_cache(maxsize=1)
        def group_name(g):
            return torch.distributed.get_rank(group=g)

        name = group_name(group)
        return logits, name
""",
            hot_roots=_ROOTS,
            expect=(("example.py", 7),),
            message_contains=("`group_name`", "new, empty memo"),
        ),
        # bare `@torch.compile` over the object's module: build it once in `__init__`
        Example(
            """
import torch

class Encoder:
    def __init__(self, encoder, use_compile):
        self.encoder = encoder
        self.use_compile = use_compile

class Sampler(Encoder):
    def forward(self, x):
        if self.use_compile:

            @torch.compile
            def encoder(x):
                return self.encoder(x)

            return encoder(x)
        return self.encoder(x)
""",
            hot_roots=_ROOTS,
            expect=(("example.py", 12),),
            message_contains=("`__init__`", "reads `self`"),
        ),
        # two levels down: the helper is nested in `encode`, the compiled function reads its `self`
        Example(
            """
import torch

class Sampler:
    def __init__(self, encoder):
        self.encoder = encoder

    def forward(self, x):
        def _encode(x):
            @torch.compile
            def encoder(x):
                return self.encoder(x)

            return encoder(x)

        return _encode(x)
""",
            hot_roots=_ROOTS,
            expect=(("example.py", 9),),
            message_contains=("it reads `self`", "`__init__`"),
        ),
    ]

    def check(self, analysis: Analysis) -> Iterable[Finding]:
        hot = analysis.hot
        p = analysis.program
        compile_patterns = tuple(analysis.config.compile_decorators)
        out: list[Finding] = []
        for qn in sorted(hot.chains):
            f = p.functions.get(qn)
            if f is None or not f.nested or f.under_type_checking or p.is_cached(f):
                continue
            candidates = []
            for name, nested_qn in f.nested.items():
                g = p.functions.get(nested_qn)
                decorators = g.decorators if g is not None else _class_decorators(p, nested_qn)
                what = _rebuilding_decorator(p, g, decorators, compile_patterns)
                if what is not None:
                    candidates.append((name, nested_qn, g, what))
            if not candidates:
                continue
            with analysis.bodies.transient():
                body = analysis.bodies.body(f)
                if body is None:
                    continue
                for name, nested_qn, g, (kind, deco) in candidates:
                    found = _finding(self.code, analysis, f, body, name, nested_qn, g, kind, deco)
                    if found is not None:
                        out.append(found)
        return out


def _class_decorators(p, qn: str) -> list:
    c = p.classes.get(qn)
    return list(c.decorators) if c is not None else []


def _rebuilding_decorator(p, g: FunctionInfo | None, decorators: list, compile_patterns: tuple) -> tuple | None:
    """("compile" | "cache", the decorator) for the first decorator that
    builds something when the definition runs, or None."""
    for d in decorators:
        if is_compile_decorator(d):
            return "compile", d
        if g is None and class_decorator_matches(d, compile_patterns):
            return "compile", d
        last = (dotted(d[1] if d[0] == "call" else d) or "").rsplit(".", 1)[-1]
        if g is not None and last != "cached_property" and p.cache_decorators.memoizes(d):
            return "cache", d
    return None


def _finding(
    code: str,
    analysis: Analysis,
    f: FunctionInfo,
    body: Body,
    name: str,
    nested_qn: str,
    g: FunctionInfo | None,
    kind: str,
    deco,
) -> Finding | None:
    node = next(
        (
            n
            for n in ast.walk(body.node)
            if isinstance(n, _DEFS) and n is not body.node and n.name == name and _outer_def(body, n)
        ),
        None,
    )
    if node is None:
        return None
    ctx = analysis.program.context(f)
    run_bound = _run_bound_names(node, ctx, f)
    if run_bound:
        return None  # built over the run's own values
    if _escapes(body.node, name):
        return None  # kept beyond the run (returned, stored, handed on): built once per keeper
    obj = _object_name(ctx)
    reads_self = obj is not None and obj in _loads(node)
    deco_text = render(deco)
    line = node.decorator_list[0].lineno + body.shift if node.decorator_list else node.lineno + body.shift
    text = body.lines[line - 1].rstrip() if line - 1 < len(body.lines) else ""
    column = len(text) - len(text.lstrip())  # the `@` of the first decorator
    share = repeats.run_share(body, node)
    if kind == "compile":
        seconds = baseline("compile-wrap")
        basis = f"wrapping a function with `torch.compile` and its first call: {format_seconds(seconds)}, calibrated"
        work = "a new compiled wrapper, whose first call goes through dynamo's cache and guards again"
    else:
        wrap = baseline("cache-wrap")
        body_seconds = analysis.cost.seconds([nested_qn], g).seconds if g is not None else 0.0
        seconds = wrap + body_seconds
        basis = (
            f"a new memo ({format_seconds(wrap)}, calibrated) and one run of the body it was to keep"
            f" ({format_seconds(body_seconds)})"
        )
        work = "a new, empty memo, dropped at the end of the run: it never serves a later run"
    estimate = analysis.estimates.work(f, seconds, basis, share)
    if share < 1:
        estimate = replace(
            estimate, count_basis="the definition runs under branches, each counted as taken half the time"
        )
    where = "in `__init__`, stored on the object" if reads_self else "once at module level"
    hot = analysis.hot
    chain = hot.chain(f.qualname)
    hot_kind = hot.kind(f.qualname, "hot")
    why_self = f"; it reads `{obj}`, so build it" if reads_self else "; define it"
    message = (
        f"`{name}` is defined, and decorated with `@{deco_text}`, on every run of `{f.name}`: each run builds"
        f" {work}{why_self} {where}; on a {hot_kind} path, reached via {hot_route(chain)}"
    )
    note = f"no fix: define `{name}` {where}"
    return Finding(
        code=code,
        path=f.path,
        span=Span(line, column, line, len(text)),
        message=message,
        function=f.qualname,
        hot_path=chain,
        fix=None,
        notes=(note,),
        data={
            "definition": nested_qn,
            "decorator": deco_text,
            "kind": kind,
            "reads_self": reads_self,
            "hot_kind": hot_kind,
            "estimate": estimate.to_data(),
        },
    )


def _outer_def(body: Body, node: ast.AST) -> bool:
    """``node`` is a definition in the function's own scope, not in a nested one."""
    steps = body.steps(node)
    return bool(steps) and not any(isinstance(parent, (*_DEFS, ast.Lambda)) for parent, _f, _i, _c in steps[1:])


def _escapes(fn_node: ast.AST, name: str) -> bool:
    """The enclosing function uses ``name`` other than by calling it: returns
    it, stores it (``self._kernel = kernel`` under a fill-once guard), or
    hands it to a call; the definition then outlives the run."""
    called = {id(n.func) for n in ast.walk(fn_node) if isinstance(n, ast.Call)}
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) and id(n) not in called
        for n in ast.walk(fn_node)
    )


def _loads(node: ast.AST) -> set[str]:
    """The names a definition reads that it does not bind itself (its free
    names and globals), its decorators included."""
    loads: set[str] = set()
    bound: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            (loads if isinstance(n.ctx, ast.Load) else bound).add(n.id)
        elif isinstance(n, ast.arg):
            bound.add(n.arg)
        elif isinstance(n, _DEFS) and n is not node:
            bound.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in n.names)
    outer: set[str] = set()
    for d in getattr(node, "decorator_list", []):
        outer.update(x.id for x in ast.walk(d) if isinstance(x, ast.Name))
    return (loads - bound) | outer


def _run_bound_names(node: ast.AST, ctx, f: FunctionInfo) -> list[str]:
    """The names the definition reads that the enclosing functions bind for
    the run: their parameters (but a method's object) and their locals (but
    local imports), the function's own and, for a function nested in
    another, the outer ones'."""
    out = []
    loads = _loads(node)
    scope = ctx
    while scope is not None:
        for n in sorted(loads):
            if n == scope.self_name or n in out:
                continue
            if n in scope.params or (n in scope.locals and any(a.kind != "import" for a in scope.locals[n])):
                out.append(n)
        loads -= set(scope.params) | set(scope.locals)  # an inner binding hides an outer one
        scope = scope.parent
    return out


def _object_name(ctx) -> str | None:
    """The name of the object (``self``) of the method the definition is in,
    at any depth of nesting, or None."""
    scope = ctx
    while scope is not None:
        if scope.self_name is not None:
            return scope.self_name
        scope = scope.parent
    return None
