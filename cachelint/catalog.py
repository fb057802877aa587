"""The catalog of expensive (and of known-pure) calls, matched as globs.

An entry's pattern is matched against every name a call site can be known by:
the resolved qualified name of the callee (``pkg.registry.Registry.lookup``),
``Type.method`` for a method on an object of known type, the dotted path from
a module-level object, and the spelling at the call site
(``REGISTRY.lookup``).
"""

from __future__ import annotations

import re

from .config import CatalogEntry
from .globs import bracket
from .index import FunctionInfo, dotted

CACHE_DECORATORS = ("cache", "lru_cache", "cached", "cached_property", "memoize", "cache_method")

# builtins that return the same value for the same arguments and touch nothing
PURE_BUILTINS = frozenset(
    "abs all any bool bytes callable chr dict divmod enumerate float format frozenset getattr hasattr hash "
    "int isinstance issubclass iter len list max min next ord pow range repr reversed round set slice sorted str "
    "sum tuple type zip".split()
)


def glob_regex(pattern: str) -> str:
    """fnmatch semantics (``*`` crosses dots, ``?``, ``[...]``) without groups.

    ``fnmatch.translate`` emits named groups on Python 3.10, which cannot be
    combined into one alternation; this yields plain, group-free regex text.
    """
    out = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            while i + 1 < n and pattern[i + 1] == "*":
                i += 1
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[" and (b := bracket(pattern, i)) is not None:
            out.append(b[0])
            i = b[1]
        else:
            out.append(re.escape(c))
        i += 1
    return "(?s:" + "".join(out) + r")\Z"


class GlobSet:
    """Ordered fnmatch globs compiled into one regex: the first pattern wins.

    One alternation scanned in C instead of a Python loop over ~200 patterns
    for each of ~70k call sites; results are memoized per name.
    """

    def __init__(self, patterns: list[str]) -> None:
        self.patterns = list(patterns)
        if self.patterns:
            alts = "|".join(f"(?P<g{i}>{glob_regex(p)})" for i, p in enumerate(self.patterns))
            self._rx = re.compile(alts)
        else:
            self._rx = None
        self._memo: dict[str, int] = {}

    def first(self, name: str) -> int:
        """Index of the first pattern matching ``name``, or -1."""
        hit = self._memo.get(name)
        if hit is not None:
            return hit
        hit = -1
        if self._rx is not None:
            m = self._rx.match(name)
            if m is not None:
                hit = int(m.lastgroup[1:])
        self._memo[name] = hit
        return hit


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


def is_cached_function(f: FunctionInfo) -> bool:
    """Decorated with functools.cache / lru_cache / cached_property and friends."""
    for d in f.decorators:
        d0 = d[1] if d[0] == "call" else d
        name = (dotted(d0) or "").split(".")[-1]
        if name in CACHE_DECORATORS:
            return True
    return False


def is_property(f: FunctionInfo) -> bool:
    return any((dotted(d) or "").split(".")[-1] in ("property", "cached_property") for d in f.decorators)
