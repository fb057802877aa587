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
from ..index.records import FunctionInfo
from ..index.scans import scan_keys
from .callgraph import HotPaths, resolve_call
from .program import Program
from .values import GlobalRoot


def is_compile_call(e) -> bool:
    """``e`` names ``torch.compile`` (or a ``torch.compiler`` function)."""
    d = dotted(e) or ""
    return d in ("torch.compile", "compile") or d.endswith("torch.compile") or d.startswith("torch.compiler.")


def is_compile_decorator(d) -> bool:
    if d[0] == "call":
        return is_compile_call(d[1])
    name = dotted(d) or ""
    return name == "torch.compile" or name.endswith(".torch.compile")


def class_decorator_matches(d, patterns: tuple[str, ...]) -> bool:
    """Decorator ``d`` is one of the ``compile-decorators`` globs (on its
    dotted name or its last part)."""
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
        decorated: set[str] = set()
        for c in p.classes.values():
            if any(class_decorator_matches(d, class_decorators) for d in c.decorators):
                decorated.update([c.qualname, *p.subclasses(c.qualname)])
        for sub in sorted(decorated):
            m = p.lookup_method(sub, "forward")
            if m is not None:
                roots.append(m.qualname)
    for fi in p.indexes:
        for _name, val in fi.globals.items():
            if val is not None and val[0] == "call" and is_compile_call(val[1]) and val[2] and val[2][0][0] == "name":
                wrapped = p.resolve_name(fi.module, val[2][0][1])
                if wrapped is not None and wrapped in p.functions:
                    roots.append(wrapped)
    out: dict[str, str] = {}
    queue: deque = deque()
    for r in roots:
        if r not in out:
            out[r] = r
            queue.append(r)
    if class_decorators:
        # the modules a compiled module builds for itself run inside its forward
        for qn, owner in owned_forwards(p, decorated).items():
            if qn not in out:
                out[qn] = out.get(owner, owner)
                queue.append(qn)
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


def owned_forwards(p: Program, compiled_classes: set[str]) -> dict[str, str]:
    """The ``forward`` of each class whose every object of the tree is built
    while an object of a compiled class (``compiled_classes``, or a class
    found so) is being built or used: every construction (``Layer(...)``,
    also inside a lambda handed to a factory such as ``make_layers``) is
    made in a method of such a class. A model's decoder layers, built in its
    compiled model's ``__init__``, run inside that model's compiled forward;
    the call graph does not see ``layer(...)`` over an untyped list of them.
    A class with no construction in the tree, or one built anywhere else, is
    not owned. Each ``forward`` maps to the ``forward`` of a compiled class
    that (through the classes it builds) builds it."""
    wanted: dict[str, list[str]] = {}  # class name -> classes of that name with a forward
    for c in p.classes.values():
        if c.qualname not in compiled_classes and p.lookup_method(c.qualname, "forward") is not None:
            wanted.setdefault(c.name, []).append(c.qualname)
    owners: dict[str, set[str | None]] = {}  # class -> classes whose methods build it (None: code of no class)
    functions = p.functions
    for fi in p.indexes:
        if fi.error is not None or not fi.functions:
            continue
        scans = fi.scans
        if not isinstance(scans, tuple):
            scans = fi.scans = scan_keys(fi)
        keys: dict = scans[1]
        for name in wanted.keys() & keys.keys():
            flat = keys[name]
            for k in range(0, len(flat), 2):
                site: FunctionInfo = fi.functions[flat[k]]
                if functions.get(site.qualname) is not site:
                    continue
                v = p.call_callee(site, site.calls[flat[k + 1]])
                if not v or len(v) != 1 or not isinstance(v[0], GlobalRoot) or v[0].qualname not in wanted[name]:
                    continue
                g: FunctionInfo | None = site
                while g is not None and g.class_qualname is None and g.parent_function:
                    g = functions.get(g.parent_function)
                owners.setdefault(v[0].qualname, set()).add(g.class_qualname if g is not None else None)
    # class -> the compiled class whose forward runs it
    inside: dict[str, str] = {c: c for c in compiled_classes}
    changed = True
    while changed:
        changed = False
        for cls, by in owners.items():
            if cls not in inside and by and all(o is not None and o in inside for o in by):
                inside[cls] = inside[min(o for o in by if o is not None)]
                changed = True
    out: dict[str, str] = {}
    for cls in sorted(set(inside) - compiled_classes):
        # its forward runs for objects of its subclasses too: each built inside as well
        if all(s in inside or s not in owners for s in p.subclasses(cls)):
            m = p.lookup_method(cls, "forward")
            root = p.lookup_method(inside[cls], "forward")
            if m is not None and m.class_qualname == cls and root is not None:
                out[m.qualname] = root.qualname
    return out


def traced_only(hot: HotPaths, compiled: dict[str, str]) -> frozenset[str]:
    """The hot functions reached from the hot roots only through compiled regions:
    every chain from a root enters a compiled root (a ``torch.compile``'d
    function, a compiled class's ``forward``) first, so their Python runs per
    step only in eager mode. A function of a region called from outside it
    (not through its compiled root) runs eagerly there. A hot root inside a
    region that only code of the region calls (a decoder layer's ``forward``,
    matched by a per-layer pattern, that only its compiled model calls) is
    no eager entry: it runs per step through the region."""
    if not compiled:
        return frozenset()
    entries = set(compiled.values())
    eager: set[str] = set()
    queue: deque = deque()
    for r in hot.roots:
        if r not in entries and r not in eager and not _called_only_compiled(hot, compiled, r):
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


def _called_only_compiled(hot: HotPaths, compiled: dict[str, str], r: str) -> bool:
    """Hot root ``r`` lies in a compiled region (called from one, or the
    ``forward`` of a module only compiled modules build), and every call of
    it the hot-path walk saw is made from inside a compiled region."""
    if r not in compiled:
        return False
    return all(c in compiled for c, _i in hot.caller_calls.get(r, ()))
