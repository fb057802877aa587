"""The cost and purity model (cachelint.facts.cost): one answer per call, with its reason."""

from __future__ import annotations

import textwrap

from cachelint.config import CatalogEntry
from cachelint.facts.catalog import Catalog
from cachelint.facts.cost import CostModel, Decided
from cachelint.facts.purity import MAX_DEPTH, StateKind
from cachelint.index.walk import index_file, index_source
from cachelint.semantic.program import Program


def _model(src: str, *entries: CatalogEntry) -> tuple[CostModel, Program]:
    p = Program([index_source(textwrap.dedent(src).lstrip("\n"), "m.py", "m", False)])
    return CostModel(p, Catalog(entries)), p


def _fn(p: Program, name: str):
    return p.functions[f"m.{name}"]


def _cost(model: CostModel, p: Program, name: str, **kw):
    return model.cost([f"m.{name}"], _fn(p, name), **kw)


SIG = CatalogEntry("inspect.signature", "introspection", True, "builds a Signature")
ENV = CatalogEntry("os.getenv", "environment", False, "reads the environment")


# ----- cost: each way of deciding ---------------------------------------------------------


def test_catalog_entry_decides_outside_the_tree():
    model, _ = _model("import inspect\n", SIG)
    cost = model.cost(["inspect.signature"], None)
    assert cost is not None
    assert (cost.kind, cost.decided, cost.inferred, cost.pure) == ("introspection", Decided.CATALOG, False, True)
    assert cost.reason == "builds a Signature"
    assert cost.pure_reason == "declared pure in the catalog"


def test_catalog_entry_without_why_is_named_in_the_reason():
    model, _ = _model("x = 1\n")
    assert model.cost(["pkg.lookup"], None) is None  # no entry: nothing known
    model, _ = _model("x = 1\n", CatalogEntry("pkg.lookup", "registry"))
    cost = model.cost(["pkg.lookup"], None)
    assert cost is not None and cost.why == ""
    assert cost.reason == "`pkg.lookup` (registry) is in the expensive-call catalog"


def test_declared_pure_entry_is_not_a_cost():
    model, _ = _model("x = 1\n", CatalogEntry("pkg.f", "declared-pure", True))
    assert model.cost(["pkg.f"], None) is None
    assert model.purity(["pkg.f"], None).reason == "declared pure in configuration"


SRC_DERIVE = """
class ModelConfig:
    def __init__(self, hf_config, size):
        self.hf_config = hf_config
        self.size = size

    def plain(self):
        return self.size

    def derive(self):
        a = getattr(self.hf_config, "a", None)
        b = getattr(self.hf_config, "b", None)
        if hasattr(self.hf_config, "c"):
            return a
        return b
"""


def test_config_derivation_entry_body_decides():
    entry = CatalogEntry("*.ModelConfig.*", "config-derivation", True)
    model, p = _model(SRC_DERIVE, entry)
    # a plain read: the body shows it is cheap, whatever the catalog says
    assert model.cost(["m.ModelConfig.plain"], p.functions["m.ModelConfig.plain"]) is None
    cost = model.cost(["m.ModelConfig.derive"], p.functions["m.ModelConfig.derive"])
    assert cost is not None and cost.decided is Decided.BODY and cost.inferred
    assert "probes 3 config attributes" in cost.why


def test_config_walk_without_entry():
    model, p = _model(SRC_DERIVE)
    cost = model.cost(["m.ModelConfig.derive"], p.functions["m.ModelConfig.derive"])
    assert cost is not None
    assert (cost.kind, cost.decided) == ("config-derivation", Decided.CONFIG_WALK)
    assert cost.why.startswith("`m.ModelConfig.derive` probes 3 config attributes (`self.hf_config`)")


def test_reading_a_configs_fields_by_name_in_a_loop_is_a_config_walk():
    src = """
    import dataclasses

    class KernelConfig:
        def apply(self):
            for field in dataclasses.fields(self):
                install(getattr(self, field.name))

        def one(self):
            return getattr(self, "mode", None)

    class Widget:
        def apply(self):
            for field in dataclasses.fields(self):
                install(getattr(self, field.name))

    def install(value):
        return value
    """
    model, p = _model(src)
    cost = _cost(model, p, "KernelConfig.apply")
    assert cost is not None and cost.decided is Decided.CONFIG_WALK
    assert "reads the attributes of `self` one by one by name, in a loop" in cost.why
    assert _cost(model, p, "KernelConfig.one") is None  # one probe with a constant name
    assert _cost(model, p, "Widget.apply") is None  # not a config: neither its spelling nor its class says so


def test_visibly_cheap_method_overrides_the_catalog_but_a_function_keeps_its_word():
    src = """
    import functools

    class Registry:
        def lookup(self, key):
            return _lookup(key)

    @functools.cache
    def _lookup(key):
        return key

    def probe(key):
        return 1500
    """
    reg = CatalogEntry("*.lookup", "registry")
    prb = CatalogEntry("*.probe", "registry")
    model, p = _model(src, reg, prb)
    # every implementation of the method only calls a cached function
    assert model.cost(["m.Registry.lookup"], p.functions["m.Registry.lookup"]) is None
    # a module-level function the catalog names stays expensive
    assert _cost(model, p, "probe") is not None


SRC_REACH = """
import inspect

def leaf(fn):
    return inspect.signature(fn)

def middle(fn):
    return leaf(fn)

def top(fn):
    return middle(fn)

def on_error(fn):
    try:
        return fn()
    except TypeError:
        return inspect.signature(fn)

_SIG = None

def fill_once(fn):
    global _SIG
    if _SIG is None:
        _SIG = inspect.signature(fn)
    return _SIG

class Holder:
    def __init__(self):
        self._sig = None

    def lazy(self, fn):
        if self._sig is None:
            self._sig = inspect.signature(fn)
        return self._sig
"""


def test_reach_through_the_tree_with_its_reason_chain():
    model, p = _model(SRC_REACH, SIG)
    cost = _cost(model, p, "top")
    assert cost is not None
    assert (cost.kind, cost.decided, cost.pattern) == ("introspection", Decided.REACH, "inspect.signature")
    assert cost.why == "`m.top` calls `m.middle` calls `m.leaf` calls `inspect.signature`: builds a Signature"
    reach = model.reach(_fn(p, "top"))
    assert reach is not None and [c for c, _ in reach.steps] == ["m.top", "m.middle", "m.leaf"]
    # CL002's own question stops at the call: the reached call is reported where it is made
    assert model.call_cost(["m.top"], _fn(p, "top")) is None


def test_exception_path_is_not_per_step_work():
    model, p = _model(SRC_REACH, SIG)
    assert _cost(model, p, "on_error") is None
    assert model.expensive(["m.on_error"], _fn(p, "on_error")) is None


def test_fill_once_guard_is_not_per_step_work():
    model, p = _model(SRC_REACH, SIG)
    assert _cost(model, p, "fill_once") is None
    assert model.cost(["m.Holder.lazy"], p.functions["m.Holder.lazy"]) is None


def test_cached_functions_and_constructors_have_no_body_cost():
    src = """
    import functools
    import inspect

    @functools.cache
    def cached(fn):
        return inspect.signature(fn)

    def calls_cached(fn):
        return cached(fn)
    """
    model, p = _model(src, SIG)
    assert _cost(model, p, "cached") is None
    assert _cost(model, p, "calls_cached") is None


def _chain(n: int) -> str:
    lines = ["import inspect", "", "def f0(x):", "    return inspect.signature(x)", ""]
    for i in range(1, n + 1):
        lines += [f"def f{i}(x):", f"    return f{i - 1}(x)", ""]
    return "\n".join(lines)


def test_recursion_limit_and_order_independence():
    deep = MAX_DEPTH + 1
    model, p = _model(_chain(deep), SIG)
    # f{MAX_DEPTH} reaches f0 through MAX_DEPTH calls; one more is too deep
    assert _cost(model, p, f"f{MAX_DEPTH}") is not None
    assert _cost(model, p, f"f{deep}") is None
    # asked in the other order, on a fresh model: the same answers
    model2, p2 = _model(_chain(deep), SIG)
    assert _cost(model2, p2, f"f{deep}") is None
    assert _cost(model2, p2, f"f{MAX_DEPTH}") is not None


def test_mutual_recursion_terminates():
    src = """
    def ping(n):
        return pong(n - 1)

    def pong(n):
        return ping(n - 1)
    """
    model, p = _model(src, SIG)
    assert _cost(model, p, "ping") is None
    assert not model.purity(["m.ping"], _fn(p, "ping")).pure


# ----- purity ------------------------------------------------------------------------------

SRC_PURITY = """
import os

_STATE = 0

def pure_math(a: int, b: int) -> int:
    return max(a, b) + len(str(a))

def reads_env() -> bool:
    return os.getenv("FAST") == "1"

def through(x):
    return reads_env()

def rebinds():
    global _STATE
    _STATE += 1
    return _STATE

class Box:
    def __init__(self):
        self.items = []

    def put(self, x):
        self.items = [x]

def stores(d, k):
    d[k] = 1
    return d

def unknown(x):
    return mystery(x)
"""


def test_pure_body_with_reason():
    model, p = _model(SRC_PURITY, ENV)
    pur = model.purity(["m.pure_math"], _fn(p, "pure_math"))
    assert pur.pure and pur.state is None
    assert pur.reason == "`m.pure_math` only reads its inputs and calls pure functions"


def test_impure_catalogued_call_names_the_state():
    model, p = _model(SRC_PURITY, ENV)
    direct = model.purity(["os.getenv"], None)
    assert not direct.pure
    assert direct.reason == "`os.getenv` is not pure (environment: reads the environment)"
    assert direct.state is not None and direct.state.kind is StateKind.CATALOGUED
    assert (direct.state.name, direct.state.what) == ("os.getenv", "environment")
    pur = model.purity(["m.through"], _fn(p, "through"))
    assert not pur.pure
    assert pur.reason == "`m.through` is not known to be pure and deterministic"
    assert pur.via == ("m.through", "m.reads_env")
    assert pur.detail().endswith("`m.through` calls `m.reads_env` calls `os.getenv` (environment)")


def test_global_and_writes_name_the_state():
    model, p = _model(SRC_PURITY, ENV)
    g = model.purity(["m.rebinds"], _fn(p, "rebinds"))
    assert not g.pure and g.state is not None
    assert (g.state.kind, g.state.name) == (StateKind.GLOBAL, "_STATE")
    assert "rebinds the module global `_STATE`" in g.detail()
    w = model.purity(["m.Box.put"], p.functions["m.Box.put"])
    assert w.state is not None and (w.state.kind, w.state.name) == (StateKind.WRITE, "self.items")
    s = model.purity(["m.stores"], _fn(p, "stores"))
    assert s.state is not None and (s.state.kind, s.state.name) == (StateKind.WRITE, "d[...]")


def test_unresolved_call_is_not_pure():
    model, p = _model(SRC_PURITY, ENV)
    u = model.purity(["m.unknown"], _fn(p, "unknown"))
    assert not u.pure and u.state is not None
    assert (u.state.kind, u.state.name) == (StateKind.UNRESOLVED, "mystery")
    assert "cachelint cannot see into" in u.detail()


def test_cost_carries_purity():
    src = SRC_REACH + "\nimport os\n\ndef env_then_sig(fn):\n    os.getenv('X')\n    return leaf(fn)\n"
    model, p = _model(src, SIG, ENV)
    cost = _cost(model, p, "top")
    assert cost is not None and cost.pure and cost.pure_reason.startswith("`m.top` only reads")
    impure = _cost(model, p, "env_then_sig")
    assert impure is not None and not impure.pure
    assert impure.pure_reason == "`m.env_then_sig` is not known to be pure and deterministic"


def test_one_memo_shared_by_cost_and_purity():
    model, p = _model(SRC_REACH, SIG)
    _cost(model, p, "top")
    keys = {k[0] for k in model._memo}
    assert {"reach", "pure"} <= keys
    before = len(model._memo)
    _cost(model, p, "top")
    assert len(model._memo) == before


def test_state_reads_in_body_order():
    src = """
    import os

    _FLAG = 0

    def configure():
        global _FLAG
        _FLAG = int(os.getenv("FLAG", "0"))
        return helper()

    def helper():
        return 1
    """
    model, p = _model(src, ENV, SIG)
    reads = model.state_reads(_fn(p, "configure"))
    assert [(r.kind, r.name, r.what) for r in reads] == [
        (StateKind.GLOBAL, "_FLAG", ""),
        (StateKind.CATALOGUED, "os.getenv", "environment"),
    ]
    assert model.state_reads(_fn(p, "helper")) == ()


# ----- computation: a looping body of the tree, timed -------------------------------------

LOOPS = """
def _pages(size, page):
    return -(-size // page)


def total_pages(sizes, page):
    total = 0
    for s in sizes:
        total += _pages(s, page) + _pages(s, 2 * page)
    return total


def ids_of(groups):
    ids = []
    for i in range(len(groups)):
        ids.append(_pages(i, 2) + _pages(i, 3))
    return ids


def drain(queue):
    out = []
    for _ in range(4):
        out.append(queue.pop() + queue.pop())
    return out


def small(sizes):
    return _pages(sizes[0], 2)
"""


def test_a_looping_pure_body_above_the_floor_is_computation_work():
    model, p = _model(LOOPS)
    cost = _cost(model, p, "total_pages")
    assert cost is not None and (cost.kind, cost.decided, cost.pure) == ("computation", Decided.COMPUTE, True)
    assert "loops on each call" in cost.why
    # a list the body builds and fills is a local effect: still pure
    ids = _cost(model, p, "ids_of")
    assert ids is not None and ids.decided is Decided.COMPUTE and ids.pure


def test_an_impure_loop_or_a_body_without_a_loop_is_not_computation_work():
    model, p = _model(LOOPS)
    assert _cost(model, p, "drain") is None  # `queue.pop()`: a result that changes with the same input
    assert _cost(model, p, "small") is None  # no loop


def test_seconds_times_a_body_from_its_calls_and_loops():
    model, p = _model(LOOPS)
    one = model.body_seconds(_fn(p, "_pages"))
    loop = model.body_seconds(_fn(p, "total_pages"))
    assert loop > 8 * 2 * one * 0.9  # two calls per iteration, eight iterations
    t = model.seconds(["m.total_pages"], _fn(p, "total_pages"))
    assert t.seconds == loop and "the body of `m.total_pages`" in t.basis
    assert model.seconds(["ext.unknown"], None).basis.endswith("counted as a small Python call")


def test_a_body_that_derives_a_config_value_costs_at_least_the_calibrated_derivation():
    from cachelint.facts.timing import kind_seconds

    model, p = _model(
        """
        def sliding_window(config):
            a = getattr(config.hf_config, "sliding_window", None)
            b = getattr(config.hf_config, "window", None)
            c = getattr(config.hf_text_config, "sliding_window", None)
            return a or b or c
        """
    )
    t = model.seconds(["m.sliding_window"], _fn(p, "sliding_window"))
    assert t.seconds == kind_seconds("config-derivation")[0] > model.body_seconds(_fn(p, "sliding_window"))
    assert "derives a config value" in t.basis


SRC_RAISE = """
class Holder:
    def __init__(self, tok):
        self.tok = tok

    def get(self):
        if self.tok is None:
            raise ValueError(f"no tokenizer: {self.tok!r}")
        return self.tok

    def problem(self):
        return ValueError("built, not raised")

    def raise_unknown(self):
        if self.tok is None:
            raise make_error()
        return self.tok


class Queue:
    def peek(self):
        raise NotImplementedError

    def pop(self):
        raise NotImplementedError


class ListQueue(Queue):
    def __init__(self):
        self.items = [1, 2]

    def peek(self):
        return self.items[0]

    def pop(self):
        return self.items.pop(0)


def first(q: Queue):
    return q.pop()
"""


def _model_on_disk(tmp_path, src: str) -> tuple[CostModel, Program]:
    """As _model, from a file: what a ``raise`` statement builds is read from the source text."""
    path = tmp_path / "m.py"
    path.write_text(textwrap.dedent(src).lstrip("\n"), encoding="utf-8")
    p = Program([index_file(str(path), "m", False)])
    return CostModel(p, Catalog(())), p


def test_an_exception_a_raise_builds_leaves_the_getter_pure(tmp_path):
    model, p = _model_on_disk(tmp_path, SRC_RAISE)
    assert model.purity(["m.Holder.get"], p.functions["m.Holder.get"]).pure
    # an exception that is returned, not raised, is a new object (identity equality): not pure
    assert not model.purity(["m.Holder.problem"], p.functions["m.Holder.problem"]).pure
    # what a raise calls that is not a builtin exception is judged as any call
    assert not model.purity(["m.Holder.raise_unknown"], p.functions["m.Holder.raise_unknown"]).pure


def test_a_call_of_a_stub_is_as_pure_as_its_overrides():
    model, p = _model(SRC_RAISE)
    assert model.purity(["m.Queue.peek"], p.functions["m.Queue.peek"]).pure  # the stub alone
    pur = model.purity(["m.first"], p.functions["m.first"])
    assert not pur.pure and pur.state is not None
    assert pur.via[:2] == ("m.first", "m.ListQueue.pop")


def test_the_entry_for_the_resolved_callee_beats_a_glob_on_the_spelling():
    generic = CatalogEntry("*tokenizer.get_vocab", "processor", True, "rebuilds the vocab")
    exact = CatalogEntry("pkg.Tok.get_vocab", "processor", True, "returns a cached dict", cost="low")
    cat = Catalog([generic, exact])
    assert cat.match(["pkg.Tok.get_vocab", "tokenizer.get_vocab"]) is exact
    assert cat.match(["other.Tok.get_vocab", "tokenizer.get_vocab"]) is generic
    assert cat.match(["tokenizer.get_vocab"]) is generic


def test_the_python_preset_declares_typing_cast_pure():
    from cachelint.config import Config, resolve_presets

    cfg = resolve_presets(Config(), set())
    model, p = _model("from typing import cast\n\ndef as_int(x):\n    return cast(int, x)\n", *cfg.catalog)
    assert model.purity(["m.as_int"], _fn(p, "as_int")).pure
    bare, q = _model("from typing import cast\n\ndef as_int(x):\n    return cast(int, x)\n")
    assert not bare.purity(["m.as_int"], _fn(q, "as_int")).pure  # without the preset: an unknown library call
