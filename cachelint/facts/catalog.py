"""The catalog of expensive (and of known-pure) calls, matched as globs.

An entry's pattern is matched against every name a call site can be known by:
the resolved qualified name of the callee (``pkg.registry.Registry.lookup``),
``Type.method`` for a method on an object of known type, the dotted path from
a module-level object, and the spelling at the call site
(``REGISTRY.lookup``).
"""

from __future__ import annotations

from ..config import CatalogEntry
from ..globs import GlobSet

# builtins that return the same value for the same arguments and touch nothing
PURE_BUILTINS = frozenset(
    [
        "abs",
        "all",
        "any",
        "bool",
        "bytes",
        "callable",
        "chr",
        "dict",
        "divmod",
        "enumerate",
        "float",
        "format",
        "frozenset",
        "getattr",
        "hasattr",
        "hash",
        "int",
        "isinstance",
        "issubclass",
        "iter",
        "len",
        "list",
        "max",
        "min",
        "next",
        "ord",
        "pow",
        "range",
        "repr",
        "reversed",
        "round",
        "set",
        "slice",
        "sorted",
        "str",
        "sum",
        "tuple",
        "type",
        "zip",
    ]
)


class Catalog:
    def __init__(self, entries) -> None:
        self.entries = tuple(entries)
        self._all = GlobSet([e.pattern for e in self.entries])
        self._pure = GlobSet([e.pattern for e in self.entries if e.pure])

    def match(self, names: list[str]) -> CatalogEntry | None:
        best = -1
        for n in names:
            i = self._all.first(n)
            if i >= 0 and (best < 0 or i < best):
                best = i
        return self.entries[best] if best >= 0 else None

    def pure(self, names: list[str]) -> bool:
        return any(self._pure.first(n) >= 0 for n in names)
