"""Stage 4b: reads of uncached derived ``@property`` attributes on hot paths.

A property's getter runs on every read, so ``self.model_config.uses_mrope``
is a call in disguise: when the getter derives its value (walks the HF
config, calls a catalogued function, ...), reading it several times per step
repeats that work as surely as calling a helper does.

The whole-program index keeps calls, not attribute reads (there are far too
many). So this stage works in two steps:

1. from the index, the properties *defined in the analysed tree* whose
   getter is expensive, decided from the body (:meth:`CostModel.
   property_cost`: a catalog entry, a body that reaches a catalogued call, or
   a body that walks a config). ``functools.cached_property`` and
   ``@property`` over a lazily filled slot are not uncached;
2. the hot functions whose own lines mention ``.name`` for one of those
   names are parsed again, each alone, with the names watched (the mechanism
   the lock checks use, on one function's lines instead of a whole file), and
   each read is resolved: the receiver's type must be known and the name
   must resolve, through its MRO, to one of those getters.

Each resolved read is returned as a :class:`~cachelint.index.walk.CallSite` with
``is_read`` set, with no arguments, so CL002's selection (repeated work),
hoisting and safety analysis treat it exactly like a call of the getter.

CL002 keeps the getters at its reported cost level (:func:`reported_properties`)
and ties each read to its getter and cost (:func:`property_read_sites`).
"""

from __future__ import annotations

import functools
import re

from ..index.records import CallSite, FunctionInfo
from ..index.walk import function_reads
from ..semantic.callgraph import HotPaths
from ..semantic.program import Program
from .cost import Cost, CostModel


def is_plain_property(fn: FunctionInfo) -> bool:
    """A method decorated ``@property`` (not ``cached_property``): its getter runs on each read."""
    if not fn.decorators or fn.class_qualname is None:
        return False
    return any(d[0] in ("name", "attr") and (d[1] if d[0] == "name" else d[2]) == "property" for d in fn.decorators)


def expensive_properties(program: Program, costs: CostModel) -> dict[str, list[tuple[FunctionInfo, Cost]]]:
    """Attribute name -> the expensive property getters of that name in the tree."""
    out: dict[str, list[tuple[FunctionInfo, Cost]]] = {}
    for fn in program.functions.values():
        if fn.under_type_checking or not is_plain_property(fn):
            continue
        cost = costs.property_cost(fn)
        if cost is not None:
            out.setdefault(fn.name, []).append((fn, cost))
    return out


def looping_properties(program: Program, costs: CostModel) -> dict[str, list[FunctionInfo]]:
    """Attribute name -> the uncached ``@property`` getters of that name whose
    body loops (a ``for`` or a comprehension) and stores nothing on the
    object (a getter that fills ``self._x`` once is a lazy cache): a read
    inside a loop pays the getter's loop per iteration (CL006)."""
    out: dict[str, list[FunctionInfo]] = {}
    for fn in program.functions.values():
        if fn.under_type_checking or not is_plain_property(fn) or not fn.iterated:
            continue
        if program.is_cached(fn):
            continue
        me = fn.self_name
        if any(a.target[0] in ("attr", "sub") and _rooted_at(a.target, me) for a in fn.assigns):
            continue  # fills an attribute (a lazy cache) or changes the object
        out.setdefault(fn.name, []).append(fn)
    return out


def _rooted_at(e, name: str | None) -> bool:
    while e[0] in ("attr", "sub"):
        e = e[1]
    return e == ("name", name)


def watched_reads(lines: list[str], f: FunctionInfo, names) -> list | None:
    """The reads of ``names`` in ``f``'s own lines (:func:`~cachelint.index.walk.
    function_reads`), parsing them only if they mention ``.name`` for one of
    the names; None when they mention none (nothing parsed)."""
    body = "".join(lines[f.line - 1 : f.end_line])
    watch = frozenset(n for n in names if "." + n in body)
    return function_reads(lines, f, watch) if watch else None


def named_in(data: bytes, names) -> list:
    """The ``names`` for which a file's bytes contain ``.name``: the hot
    functions of other files are not parsed for reads. One scan of the file
    for all the names (a regex alternation), not one per name."""
    found = set(_dotted(frozenset(names)).findall(data))
    return [n for n in names if n.encode() in found]


@functools.lru_cache(maxsize=8)
def _dotted(names: frozenset):
    """A pattern matching ``.name`` for each of ``names`` (longest first, whole identifiers)."""
    alts = b"|".join(re.escape(n.encode()) for n in sorted(names, key=len, reverse=True))
    return re.compile(rb"\.\s*(" + alts + rb")(?![A-Za-z0-9_])")


def hot_property_reads(program: Program, hot: HotPaths, names) -> list[tuple[FunctionInfo, CallSite]]:
    """Reads of ``names`` in hot functions, as (function, CallSite with ``is_read``).

    Only the hot functions whose own lines contain ``.name`` for one of the
    names are parsed again, each alone (:func:`~cachelint.index.walk.function_reads`);
    the rest of the tree is not touched.
    """
    names = frozenset(names)
    if not names:
        return []
    hot_files: dict[str, list[FunctionInfo]] = {}
    for qn in hot.chains:
        f = program.functions.get(qn)
        if f is not None and not f.under_type_checking:
            hot_files.setdefault(f.path, []).append(f)
    out: list[tuple[FunctionInfo, CallSite]] = []
    for path in sorted(hot_files):
        fi = program.modules_by_path.get(path)
        if fi is None or fi.error:
            continue
        try:
            data = program.source_bytes(path)
        except OSError:
            continue
        in_file = named_in(data, names)
        if not in_file:
            continue
        lines = program.source_lines(path)
        if lines is None:
            continue  # undecodable, or changed since it was indexed: positions would not match
        seen: set = set()
        for f in sorted(hot_files[path], key=lambda g: (g.line, g.qualname)):
            reads = watched_reads(lines, f, in_file)
            if reads is None:
                continue
            for qn, expr, line, col, end_line, end_col, guard, in_loop, stmt_line, in_handler, is_callee in reads:
                g = program.functions.get(qn)
                if g is None or not hot.is_hot(g.qualname) or is_callee or (line, col) in seen:
                    continue  # `x.prop(...)` calls what the property returns: CL002 sees the call
                seen.add((line, col))
                out.append(
                    (
                        g,
                        CallSite(
                            expr,
                            (),
                            (),
                            line,
                            col,
                            end_line,
                            end_col,
                            guard,
                            in_loop,
                            stmt_line,
                            in_handler=in_handler,
                            is_read=True,
                        ),
                    )
                )
    return out


def resolve_read(
    program: Program, f: FunctionInfo, c: CallSite, wanted: dict
) -> tuple[tuple | None, FunctionInfo, Cost] | None:
    """The canonical callee, getter and cost of a property read, if it reads an expensive one."""
    ctx = program.context(f)
    # the receiver's class must have the property: ``self.uses_mrope`` after
    # ``self.uses_mrope = config.uses_mrope`` in __init__ reads an attribute
    # that already holds the value, although its canonical value is the read
    recv = program.canon(c.func[1], ctx)
    if recv is None:
        return None
    t = program.type_of(recv)
    if t is None or t not in program.classes:
        return None
    getter = program.lookup_method(t, c.func[2])
    if getter is None:
        return None
    for fn, cost in wanted.get(c.func[2], ()):
        if fn is getter:
            return recv + (c.func[2],), fn, cost
    return None


def reported_properties(program: Program, costs: CostModel, low_ok: bool) -> dict[str, list[tuple[FunctionInfo, Cost]]]:
    """Property name -> its expensive getters at the reported cost level:
    those whose catalog cost is ``low`` only with ``low_ok``; names left with
    none are dropped."""
    wanted = {
        name: [(fn, cost) for fn, cost in getters if low_ok or cost.cost != "low"]
        for name, getters in expensive_properties(program, costs).items()
    }
    return {n: g for n, g in wanted.items() if g}


def property_read_sites(
    program: Program, reads: list[tuple[FunctionInfo, CallSite]], wanted: dict
) -> list[tuple[FunctionInfo, CallSite, tuple | None, Cost]]:
    """(function, read, canonical callee, cost) of each of ``reads`` that reads
    one of the ``wanted`` getters (:func:`resolve_read`)."""
    out = []
    for f, c in reads:
        r = resolve_read(program, f, c, wanted)
        if r is not None:
            callee, _getter, cost = r
            out.append((f, c, callee, cost))
    return out
