"""The catalog of expensive (and of known-pure) calls, matched as globs.

An entry's pattern is matched against every name a call site can be known by:
the resolved qualified name of the callee (``vllm.multimodal.registry.
MultiModalRegistry.get_encdec_max_encoder_len``), ``Type.method`` for a method
on an object of known type, the dotted path from a module-level object, and the
spelling at the call site (``MULTIMODAL_REGISTRY.get_encdec_max_encoder_len``).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

from .config import CatalogEntry
from .index import FunctionInfo, dotted

CACHE_DECORATORS = ("cache", "lru_cache", "cached", "cached_property", "memoize", "cache_method")

# builtins that return the same value for the same arguments and touch nothing
PURE_BUILTINS = frozenset(
    "abs all any bool bytes callable chr dict divmod enumerate float format frozenset getattr hasattr hash "
    "int isinstance issubclass iter len list max min next ord pow range repr reversed round set slice sorted str "
    "sum tuple type zip".split()
)


@dataclass
class Catalog:
    entries: tuple[CatalogEntry, ...]

    def __post_init__(self) -> None:
        self._compiled = [(re.compile(fnmatch.translate(e.pattern)), e) for e in self.entries]

    def match(self, names: list[str]) -> CatalogEntry | None:
        for rx, e in self._compiled:
            for n in names:
                if rx.match(n):
                    return e
        return None

    def pure(self, names: list[str]) -> bool:
        for rx, e in self._compiled:
            if e.pure and any(rx.match(n) for n in names):
                return True
        return False


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
