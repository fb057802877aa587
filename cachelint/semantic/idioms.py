"""Code that runs once (or once per key) although its function runs often.

The *fill-once* idioms: a slot is computed only while it is empty, and the
function fills it, so what runs under that guard runs once per process (per
object, per key), not once per call::

    if self._sig is None:                 # lazy init of an attribute
        self._sig = inspect.signature(fn)

    global _IMPL                          # of a module global (an early exit too)
    if _IMPL is not None:
        return _IMPL
    _IMPL = load()

    cached = self._loaded.get(key)        # a memo dict, filled below (the local
                                          # may be re-read under a lock, or reused)
    if cached is not None:
        return cached
    self._loaded[key] = compile(key)

    if key not in _CACHE:                 # the same with a membership test
        _CACHE[key] = build(key)

    if not hasattr(self, "_x"):
        self._x = probe()

    if _DONE.get(key) is None:            # the memo test written inline
        _DONE[key] = True
        compile_kernels(key)

    layout = getattr(self, "_layout", None)   # lazy init read through getattr
    if layout is None:
        layout = self._layout = build()

The test is syntactic, on the guard the index records for each call (the
enclosing ``if`` tests and earlier early exits): a condition saying "the slot
is empty" (``is None``, falsy, ``not in``, ``not hasattr``) about a slot that
the same function assigns. Calls under it are neither hot-path edges nor
CL002 findings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import DEFAULT_CACHE_DECORATORS
from ..globs import GlobSet
from ..index.expr import dotted
from ..index.records import CallSite, FunctionInfo

if TYPE_CHECKING:
    from .program import Program

# ``D.setdefault(k, v)``, ``D.update(...)``, ``D.__setitem__(k, v)``: calls that fill a memo dict
MEMO_FILL_METHODS = frozenset({"setdefault", "update", "__setitem__"})


# methods that bind the attribute their first argument names on the object they are called on
ATTRIBUTE_SETTERS = frozenset({"register_buffer", "register_parameter", "register_module", "add_module"})


def _named_attribute_set(c: CallSite) -> str | None:
    """``obj.x`` when call ``c`` sets attribute ``"x"`` of ``obj`` by name."""
    args = c.args
    if c.func == ("name", "setattr") and len(args) >= 2:
        obj, name = args[0], args[1]
    elif c.func[0] == "attr" and c.func[2] in ATTRIBUTE_SETTERS and args:
        obj, name = c.func[1], args[0]
    else:
        return None
    if name[0] != "const" or not isinstance(name[1], str) or not name[1].isidentifier():
        return None
    return dotted(("attr", obj, name[1])) or None


def _slots(f: FunctionInfo) -> tuple[set, set]:
    """(attributes and globals the function assigns, containers it stores into),
    remembered on the function's record: it lives as long as the program that
    holds it (a table of this module would keep every program's records alive)."""
    hit = f.__dict__.get("_slots")
    if hit is not None:
        return hit
    filled: set = set()
    stores: set = set()
    for a in f.assigns:
        t = a.target
        if t[0] == "attr":
            d = dotted(t)
            if d:
                filled.add(d)
        elif t[0] == "name" and t[1] in f.global_names:
            filled.add(t[1])
        elif t[0] == "sub":
            d = dotted(t[1])
            if d:
                stores.add(d)
    for c in f.calls:  # D.setdefault(k, v), D.update(...) fill a memo dict too
        if c.func[0] == "attr" and c.func[2] in MEMO_FILL_METHODS:
            d = dotted(c.func[1])
            if d:
                stores.add(d)
        # an attribute set by name: `setattr(obj, "x", v)`, a module's
        # `self.register_buffer("x", v)` (read back as `self.x`)
        named = _named_attribute_set(c)
        if named is not None:
            filled.add(named)
    f.__dict__["_slots"] = (filled, stores)
    return filled, stores


def _empty_tests(cond, positive: bool, out: list) -> None:
    """The facts a guard entry states: ``("empty", expr)``, ``("missing",
    key, container)``, ``("stale", expr)`` (``expr`` differs from what it is
    compared with: a stored key that no longer matches), and ``("any",
    [facts, ...])`` for a disjunction, one list of facts per alternative."""
    k = cond[0]
    if k == "not":
        _empty_tests(cond[1], not positive, out)
    elif (k == "and" and positive) or (k == "or" and not positive):
        for e in cond[1]:
            _empty_tests(e, positive, out)
    elif k in ("and", "or"):  # `a or b`, `not (a and b)`: one of them holds
        alternatives = []
        for e in cond[1]:
            alt: list = []
            _empty_tests(e, positive, alt)
            alternatives.append(alt)
        out.append(("any", alternatives))
    elif k == "cmp" and len(cond[1]) == 1:
        op, left, right = cond[1][0], cond[2], cond[3][0]
        if (right == ("const", None) and ((op == "is" and positive) or (op == "is not" and not positive))) or (
            right == ("const", None) and ((op == "==" and positive) or (op == "!=" and not positive))
        ):
            out.append(("empty", left))
        elif (op == "in" and not positive) or (op == "not in" and positive):
            out.append(("missing", left, right))
        elif (op == "!=" and positive) or (op == "==" and not positive):
            out.append(("stale", left))
            out.append(("stale", right))
    elif k in ("name", "attr") and not positive:
        out.append(("empty", cond))
    elif k == "call" and not positive and cond[1] == ("name", "hasattr") and len(cond[2]) == 2:
        obj, name = cond[2]
        if name[0] == "const" and isinstance(name[1], str) and dotted(obj):
            out.append(("empty", ("attr", obj, name[1])))


def fills_local_once(c: CallSite) -> bool:
    """``c`` fills a local only while it is empty: ``if x is None: x =
    c(...)``, typically in a loop, where it runs once per run of the
    function, not once per iteration (unlike :func:`fills_once`, a slot
    that lives only as long as the run)."""
    t = c.assigned_to
    if t is None or t[0] != "name" or not c.guard:
        return False
    facts: list = []
    for cond, positive in c.guard:
        _empty_tests(cond, positive, facts)
    return any(fact[0] == "empty" and fact[1] == t for fact in facts)


_FALSY = (("const", False), ("const", None), ("const", 0))
_TRUTHY = (("const", True), ("const", 1))


def clears_its_flag(program: Program, f: FunctionInfo, c: CallSite) -> bool:
    """``c`` runs under a test of an object's flag that the work turns off:
    ``if self.flag:`` and the work assigns ``self.flag = False`` (or None, 0),
    or ``if not self.done:`` and it assigns ``self.done = True``; in the
    guarded block itself, or on every run of the method ``c`` calls on that
    object (``if self.calculate_kv_scales: self.calc_kv_scales(...)``, whose
    body ends with ``self.calculate_kv_scales = False``; ``if not
    self.router.fused: self.router.fuse()``). It runs once per object, not
    once per call of ``f``."""
    receiver = c.func[1] if c.func[0] == "attr" else None
    me = ("name", f.self_name) if f.self_name is not None else None
    turns_off: dict[tuple, tuple] = {}  # (object, flag) -> the values that turn its test off
    for cond, positive in c.guard:
        if cond[0] == "not":  # `if not self.done:` is a negative test of `self.done`
            cond, positive = cond[1], not positive
        if cond[0] == "attr" and cond[1] in (me, receiver):
            turns_off[(cond[1], cond[2])] = _FALSY if positive else _TRUTHY
    if not turns_off:
        return False
    for a in f.assigns:
        t = a.target
        if t[0] == "attr" and a.value in turns_off.get((t[1], t[2]), ()) and a.guard[: len(c.guard)] == c.guard:
            return True
    if receiver is None or not any(obj == receiver for obj, _ in turns_off):
        return False
    g = program.call_function(f, c)
    if g is None or g.self_name is None:
        return False
    own = ("name", g.self_name)
    return any(
        a.target[0] == "attr"
        and a.target[1] == own
        and a.value in turns_off.get((receiver, a.target[2]), ())
        and not a.guard
        for a in g.assigns
    )


def never_runs(c: CallSite) -> bool:
    """``c`` sits under ``if TYPE_CHECKING:`` (``typing.TYPE_CHECKING`` is
    False when the program runs): only a type checker reads it."""
    for cond, positive in c.guard:
        if positive and (cond == ("name", "TYPE_CHECKING") or (cond[0] == "attr" and cond[2] == "TYPE_CHECKING")):
            return True
    return False


def fills_once(f: FunctionInfo, c: CallSite) -> bool:
    """Whether ``c`` runs only while a slot ``f`` fills is empty.

    A precondition is not such a test: after ``if self.state is not None:
    raise ...`` (``FunctionInfo.refusals``) the code runs on every call that
    succeeds, and another method empties the slot again between them (a
    state machine, as a model runner's execute/sample pair), where a memo's
    ``if self._x is not None: return self._x`` leaves it filled."""
    if not c.guard:
        return False
    filled, stores = _slots(f)
    if not filled and not stores:
        return False
    facts: list = []
    for cond, positive in c.guard:
        if not positive and cond in f.refusals:
            continue  # `if self.state is not None: raise`: a precondition, not a memo's check
        _empty_tests(cond, positive, facts)
    for fact in facts:
        if fact[0] == "any":
            # a memo with a key (`if memo is None or built_for != key:`): every
            # alternative tests a slot the function fills, one of them for empty
            alternatives = fact[1]
            if all(any(_on_slot(f, x, filled, stores) for x in alt) for alt in alternatives) and any(
                any(x[0] != "stale" and _on_slot(f, x, filled, stores) for x in alt) for alt in alternatives
            ):
                return True
        elif fact[0] != "stale" and _on_slot(f, fact, filled, stores):
            return True
    return False


def _on_slot(f: FunctionInfo, fact: tuple, filled: set, stores: set) -> bool:
    """A fact about a slot ``f`` fills (an attribute or global it assigns, a
    memo dict it stores into), read directly or through a local."""
    if fact[0] == "any":
        return False
    if fact[0] == "missing":
        d = dotted(fact[2])
        return bool(d) and d in stores
    e = fact[1]
    d = dotted(e)
    if d and d in filled:
        return True
    if _memo_read(e, filled, stores):  # `D.get(k) is None`, `getattr(self, "_x", None) is None`
        return True
    if e[0] == "name":
        # a local read from a memo dict or a slot the function fills:
        # `x = D.get(k)`, `x = getattr(self, "_x", None)`, `x = self._x`
        values = [a.value for a in f.assigns if a.target == e]
        if any(_memo_read(v, filled, stores) or dotted(v) in filled for v in values):
            return True
    return False


def _memo_read(v, filled: set, stores: set) -> bool:
    """``D.get(k)`` of a memo dict ``D`` the function stores into, or
    ``getattr(obj, "_x", default)`` of an attribute it assigns."""
    if not isinstance(v, tuple) or not v or v[0] != "call":
        return False
    func, args = v[1], v[2]
    if func[0] == "attr" and func[2] == "get" and dotted(func[1]) in stores:
        return True
    if func == ("name", "getattr") and len(args) >= 2 and args[1][0] == "const" and isinstance(args[1][1], str):
        d = dotted(("attr", args[0], args[1][1]))
        return bool(d) and d in filled
    return False


CACHE_DECORATORS = DEFAULT_CACHE_DECORATORS


class CacheDecorators:
    """Which decorators memoize: ``cache-decorators`` entries. An entry without a
    dot is a glob on the decorator's last name (``cache_once`` matches
    ``@cache_once``, ``@utils.cache_once`` and ``@cache_once(...)``); one with a
    dot is a glob on the decorator as spelled (``functools.lru_cache``)."""

    def __init__(self, names=CACHE_DECORATORS) -> None:
        self.names = tuple(names)
        plain = [n for n in self.names if "." not in n]
        self._exact = frozenset(n for n in plain if not any(ch in n for ch in "*?["))
        self._name_globs = (
            GlobSet([n for n in plain if n not in self._exact]) if len(plain) > len(self._exact) else None
        )
        dotted_ = [n for n in self.names if "." in n]
        self._dotted_globs = GlobSet(dotted_) if dotted_ else None
        self._memo: dict = {}

    def memoizes(self, d) -> bool:
        """Decorator expression ``d`` (``@lru_cache``, ``@lru_cache(maxsize=1)``) is one of them."""
        return self.matches(dotted(d[1] if d[0] == "call" else d) or "")

    def matches(self, spelled: str) -> bool:
        hit = self._memo.get(spelled)
        if hit is None:
            last = spelled.rsplit(".", 1)[-1]
            hit = (
                last in self._exact
                or (self._name_globs is not None and self._name_globs.first(last) >= 0)
                or (self._dotted_globs is not None and self._dotted_globs.first(spelled) >= 0)
            )
            self._memo[spelled] = hit
        return hit


DEFAULT_DECORATORS = CacheDecorators()


def is_cached_function(f: FunctionInfo, decorators: CacheDecorators = DEFAULT_DECORATORS) -> bool:
    """Decorated with functools.cache / lru_cache / cached_property and friends
    (``decorators``: the configured list; ``Program.is_cached`` passes it)."""
    return any(decorators.memoizes(d) for d in f.decorators)


def is_property(f: FunctionInfo) -> bool:
    return any((dotted(d) or "").split(".")[-1] in ("property", "cached_property") for d in f.decorators)
