"""The catalog of expensive (and of known-pure) calls, matched as globs, and
what the cost model knows of Python's own names (pure and cheap builtins,
cheap, trivial and fresh-copy methods, nondeterministic modules).

An entry's pattern is matched against every name a call site can be known by:
the resolved qualified name of the callee (``pkg.registry.Registry.lookup``),
``Type.method`` for a method on an object of known type, the dotted path from
a module-level object, and the spelling at the call site
(``REGISTRY.lookup``).
"""

from __future__ import annotations

import builtins

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

# the builtin exception classes (see Purity's ``raise`` statements)
EXCEPTIONS = frozenset(n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException))


def pure_builtin(qualname: str) -> bool:
    """``qualname`` (``builtins.len``) is one of :data:`PURE_BUILTINS`."""
    return qualname.startswith("builtins.") and qualname[9:] in PURE_BUILTINS


CHEAP_BUILTINS = frozenset(
    [
        "isinstance",
        "issubclass",
        "len",
        "int",
        "str",
        "bool",
        "float",
        "tuple",
        "getattr",
        "hasattr",
        "min",
        "max",
        "abs",
        "divmod",
        "round",
        "super",
        "NotImplementedError",
        "RuntimeError",
        "ValueError",
        "TypeError",
        "KeyError",
        "AssertionError",
    ]
)


# methods that read a builtin container, and the constructors of those containers
CONTAINER_READS = frozenset(
    ["get", "keys", "values", "items", "index", "count", "__getitem__", "__contains__", "__len__"]
)
CONTAINERS = frozenset(
    ["dict", "list", "set", "frozenset", "tuple", "defaultdict", "OrderedDict", "deque", "MappingProxyType"]
)

# methods that are a cheap lookup whatever their receiver: reads of a builtin
# container or string, a tensor's metadata (CL006 reports them repeated 3+ times)
CHEAP_METHODS = frozenset(
    [
        *CONTAINER_READS,
        "startswith",
        "endswith",
        "lower",
        "upper",
        "strip",
        "lstrip",
        "rstrip",
        "isdigit",
        "isalpha",
        "is_set",
        "qsize",
        "empty",
        "done",
    ]
)

# methods that cost no more than an attribute read, whatever their receiver:
# a tensor's metadata and views of it (CL006 never counts them)
TRIVIAL_METHODS = frozenset(
    [
        "size",
        "dim",
        "numel",
        "stride",
        "element_size",
        "data_ptr",
        "is_contiguous",
        "get_device",
        "view",
        "view_as",
        "reshape",
        "unsqueeze",
        "squeeze",
        "permute",
        "transpose",
        "t",
        "expand",
        "expand_as",
        "narrow",
        "flatten",
        "unflatten",
        "split",
        "chunk",
        "unbind",
        "select",
        "as_strided",
    ]
)

# methods that return a fresh copy on each call (a clone, a new tensor): two
# calls give two objects, each the caller may change, not one value computed twice
FRESH_METHODS = frozenset(
    ["clone", "copy", "deepcopy", "new_zeros", "new_empty", "new_ones", "new_full", "new_tensor", "detach"]
)

# standard-library calls whose value differs on each call (clocks, random
# sources, identifiers): a repeat is not the same value computed again
NONDETERMINISTIC = ("time.", "random.", "uuid.", "secrets.", "datetime.", "os.urandom", "os.getpid")


class Catalog:
    def __init__(self, entries) -> None:
        self.entries = tuple(entries)
        self._all = GlobSet([e.pattern for e in self.entries])
        self._pure = GlobSet([e.pattern for e in self.entries if e.pure])

    def match(self, names: list[str]) -> CatalogEntry | None:
        """The entry for a call known by ``names``, most precise first (the
        resolved callee, then its type's method, then the spelling): an entry
        for the very function a call resolves to beats a glob on how the call
        is spelled; among the entries matching one name, the first listed."""
        for n in names:
            i = self._all.first(n)
            if i >= 0:
                return self.entries[i]
        return None

    def pure(self, names: list[str]) -> bool:
        return any(self._pure.first(n) >= 0 for n in names)
