"""The keys of the two whole-program scans over every call: a call assigned
whole to an attribute may fill a cache site; a call by a site's callee name may
use one. Each file lists the positions of its calls by key."""

from __future__ import annotations

from .records import CallSite, FileIndex, FunctionInfo


def fills_site(c: CallSite) -> bool:
    """Whether :meth:`cachelint.facts.cachesites.CacheAnalysis.collect` looks at a call: the whole value of
    an attribute assignment."""
    t = c.assigned_to
    return t is not None and t[0] == "attr"


def function_imports(assigns) -> dict:
    """A function's own imports: local name -> what it imports."""
    out: dict = {}
    for a in assigns:
        if a.kind == "import" and a.target[0] == "name":
            out.setdefault(a.target[1], a.value[1])
    return out


def use_keys(func, local_imports: dict, module_imports: dict) -> tuple:
    """The names :meth:`cachelint.facts.cachesites.CacheAnalysis._find_uses` looks a call up by among the
    cache sites: its last name and, for a bare name, the last part of what it
    imports (`from m import probe as measure`)."""
    if func[0] == "attr":
        return (func[2],)
    if func[0] != "name":
        return ("",)
    key = func[1]
    target = local_imports.get(key)
    if target is None:
        target = module_imports.get(key)
    return (key,) if target is None else (key, target.rsplit(".", 1)[-1])


def scan_keys(fi: FileIndex) -> tuple:
    """``(fills, keys)`` for :attr:`FileIndex.scans`: ``fills`` the positions
    of the calls for which :func:`fills_site` holds, ``keys`` each of
    :func:`use_keys` -> the positions of the calls it names; a position is
    two ints, function and call, flattened, in order. Functions under
    ``TYPE_CHECKING`` are not scanned."""
    fills: list = []
    keys: dict = {}
    for n, f in enumerate(fi.functions):
        if f.under_type_checking:
            continue
        local = None
        for i, c in enumerate(f.calls):
            if fills_site(c):
                fills += (n, i)
            func = c.func
            if func[0] == "name":
                if local is None:
                    local = function_imports(f.assigns)
                ks = use_keys(func, local, fi.imports)
            else:
                ks = (func[2],) if func[0] == "attr" else ("",)
            for k in ks:
                at = keys.get(k)
                if at is None:
                    keys[k] = [n, i]
                elif at[-2] != n or at[-1] != i:  # a name and its import may be one key
                    at += (n, i)
    return tuple(fills), {k: tuple(v) for k, v in keys.items()}


def scan_hits(functions: dict, indexes: list, pick):
    """``(function, call)`` of the calls ``pick(fi.scans)`` (flat positions,
    see :func:`scan_keys`) names in each file, in program order: files in
    order, functions in file order (only the one ``functions`` holds for
    its qualified name), calls in order."""
    for fi in indexes:
        fns = fi.functions
        if not fns:
            continue
        scans = fi.scans
        if scans is None:  # an index built without them
            scans = fi.scans = scan_keys(fi)
        flat = pick(scans)
        for k in range(0, len(flat), 2):
            f: FunctionInfo = fns[flat[k]]
            if functions.get(f.qualname) is f:
                yield f, f.calls[flat[k + 1]]
