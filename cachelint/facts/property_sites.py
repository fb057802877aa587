"""The property stage's selection: which getters are reported, and which hot
reads read one.

:mod:`cachelint.facts.properties` finds the expensive uncached getters and the
reads of their names in hot functions; this keeps the getters at the reported
cost level and ties each read to its getter and cost, as CL002 reports them.
"""

from __future__ import annotations

from ..index.records import CallSite, FunctionInfo
from ..semantic.program import Program
from .cost import Cost, CostModel
from .properties import expensive_properties, resolve_read


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
    one of the ``wanted`` getters (:func:`~cachelint.facts.properties.resolve_read`)."""
    out = []
    for f, c in reads:
        r = resolve_read(program, f, c, wanted)
        if r is not None:
            callee, _getter, cost = r
            out.append((f, c, callee, cost))
    return out
