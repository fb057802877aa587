"""Stage 3c: code compiled by ``torch.compile`` (or captured in a CUDA graph with it).

Python inside a compiled region runs when Dynamo traces it, and again only on
a recompilation; per step it runs only in eager mode. Roots of compiled
regions: functions decorated with ``torch.compile`` (``@torch.compile``,
``@torch.compile(...)``), functions wrapped at module level
(``fast = torch.compile(slow)``), and the ``forward`` of classes (and their
subclasses) decorated with a class decorator the configuration names
(``compile-decorators``: vLLM's ``support_torch_compile`` is in its preset).
The region is their closure over resolved calls, not entering memoized
functions.
"""

from __future__ import annotations

from collections import deque
from fnmatch import fnmatchcase

from ..index.expr import dotted
from .callgraph import HotPaths, resolve_call
from .program import Program


def is_compile_call(e) -> bool:
    """``e`` names ``torch.compile`` (or a ``torch.compiler`` function)."""
    d = dotted(e) or ""
    return d in ("torch.compile", "compile") or d.endswith("torch.compile") or d.startswith("torch.compiler.")


def is_compile_decorator(d) -> bool:
    if d[0] == "call":
        return is_compile_call(d[1])
    name = dotted(d) or ""
    return name == "torch.compile" or name.endswith(".torch.compile")


def _class_decorator_matches(d, patterns: tuple[str, ...]) -> bool:
    name = dotted(d[1] if d[0] == "call" else d) or ""
    last = name.rsplit(".", 1)[-1]
    return any(fnmatchcase(name, p) or fnmatchcase(last, p) for p in patterns)


def compiled_functions(p: Program, class_decorators: tuple[str, ...] = ()) -> dict[str, str]:
    """Every function inside a compiled region, mapped to the compiled root reaching it."""
    roots: list[str] = []
    for f in p.functions.values():
        if any(is_compile_decorator(d) for d in f.decorators):
            roots.append(f.qualname)
    if class_decorators:
        for c in p.classes.values():
            if any(_class_decorator_matches(d, class_decorators) for d in c.decorators):
                for sub in [c.qualname, *p.subclasses(c.qualname)]:
                    m = p.lookup_method(sub, "forward")
                    if m is not None:
                        roots.append(m.qualname)
    for fi in p.indexes:
        for _name, val in fi.globals.items():
            if val is not None and val[0] == "call" and is_compile_call(val[1]) and val[2] and val[2][0][0] == "name":
                qn = p.resolve_name(fi.module, val[2][0][1])
                if qn in p.functions:
                    roots.append(qn)
    out: dict[str, str] = {}
    queue: deque = deque()
    for r in roots:
        if r not in out:
            out[r] = r
            queue.append(r)
    while queue:
        qn = queue.popleft()
        f = p.functions[qn]
        for call in f.calls:
            t = resolve_call(p, f, call)
            if t is None or t.qualname in out or p.is_cached(t):
                continue
            out[t.qualname] = out[qn]
            queue.append(t.qualname)
    return out


def traced_only(hot: HotPaths, compiled: dict[str, str]) -> frozenset[str]:
    """The hot functions reached from the hot roots only through compiled regions:
    every chain from a root enters a compiled root (a ``torch.compile``'d
    function, a compiled class's ``forward``) first, so their Python runs per
    step only in eager mode. A function of a region called from outside it
    (not through its compiled root) runs eagerly there."""
    if not compiled:
        return frozenset()
    entries = set(compiled.values())
    eager: set[str] = set()
    queue: deque = deque()
    for r in hot.roots:
        if r not in entries and r not in eager:
            eager.add(r)
            queue.append(r)
    edges = hot.edges
    while queue:
        qn = queue.popleft()
        for _i, t in edges.get(qn, ()):
            if t not in eager and t not in entries and t in hot.chains:
                eager.add(t)
                queue.append(t)
    return frozenset(qn for qn in hot.chains if qn not in eager and qn in compiled)
