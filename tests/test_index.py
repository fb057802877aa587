"""The per-file index: names, guards, positions, suppressions, bad input."""

from __future__ import annotations

import random
import textwrap

from cachelint.facts.cachesites import _named
from cachelint.files import split_lines
from cachelint.incremental import cache
from cachelint.index.expr import dotted, render
from cachelint.index.scans import fills_site, function_imports, scan_hits, use_keys
from cachelint.index.suppressions import _SUPPRESS_RE, _in_string, parse_suppressions
from cachelint.index.walk import index_source


def _index(code: str, module: str = "pkg.mod", is_package: bool = False):
    return index_source(textwrap.dedent(code), "pkg/mod.py", module, is_package)


def _fn(fi, qualname):
    return next(f for f in fi.functions if f.qualname == qualname)


def test_nested_qualnames_follow_dunder_qualname():
    fi = _index(
        """
        def factory(base):
            class Builder(base):
                def build(self):
                    def inner():
                        return 1
                    return inner()
            return Builder

        class Outer:
            class Inner:
                def m(self):
                    pass
        """
    )
    names = {f.qualname for f in fi.functions}
    assert "pkg.mod.factory.<locals>.Builder.build" in names
    assert "pkg.mod.factory.<locals>.Builder.build.<locals>.inner" in names
    assert "pkg.mod.Outer.Inner.m" in names
    build = _fn(fi, "pkg.mod.factory.<locals>.Builder.build")
    assert build.class_qualname == "pkg.mod.factory.<locals>.Builder"
    assert build.self_name == "self"


def test_guards_if_elif_else_early_exit_assert_ternary_and():
    fi = _index(
        """
        def f(a, b, c, d):
            if a:
                g1()
            elif b:
                g2()
            else:
                g3()
            if not c:
                return
            assert d
            x = g4() if a else g5()
            a and g6()
        """
    )
    calls = {render(c.func): [(render(e), p) for e, p in c.guard] for c in _fn(fi, "pkg.mod.f").calls}
    assert calls["g1"] == [("a", True)]
    assert calls["g2"] == [("a", False), ("b", True)]
    assert calls["g3"] == [("a", False), ("b", False)]
    assert calls["g4"] == [("not c", False), ("d", True), ("a", True)]
    assert calls["g5"] == [("not c", False), ("d", True), ("a", False)]
    assert calls["g6"] == [("not c", False), ("d", True), ("a", True)]


def test_guards_keep_every_way_a_nested_return_skips_what_follows():
    """A fill's guard must name every condition that can skip it (else a
    reader is wrongly proven): an early return in the first branch of an
    if/elif, in a middle branch, inside a `with`, nested in an `if`, a loop or
    a `try` that may return. `raise` and `assert` inside a branch abort the
    construction, so their facts are not carried out of it."""
    fi = _index(
        """
        def f(self):
            if self.task == "embed":
                return
            elif self.task == "classify":
                self.n = 1
            fill1()
            if self.model.startswith("w"):
                self.m = 2
            elif self.pooling:
                return
            fill2()

        def g(self):
            with LOCK:
                if self.pooling:
                    return
            fill3()
            if a:
                g1()
            elif b:
                g2()
            else:
                g3()
            fill4()
            if x:
                if y:
                    return
            fill5()
            for layer in layers:
                if layer:
                    return
            fill6()

        def h(self):
            try:
                risky()
            except E:
                return
            fill7()
            if k:
                if not v:
                    raise ValueError
            fill8()
        """
    )
    calls = {
        render(c.func): [(render(e), p) for e, p in c.guard]
        for name in ("pkg.mod.f", "pkg.mod.g", "pkg.mod.h")
        for c in _fn(fi, name).calls
    }
    assert calls["fill1"] == [("self.task == 'embed'", False)]
    assert calls["fill2"] == [
        ("self.task == 'embed'", False),
        ("self.model.startswith('w') or (not self.pooling)", True),
    ]
    assert calls["fill3"] == [("self.pooling", False)]
    assert calls["fill4"] == [("self.pooling", False)]  # an if/elif/else with no exit adds nothing
    assert calls["fill5"][-1] == ("(not y) or (not x)", True)
    assert calls["fill6"][-1] == ("<no `return` in the loop at line 30>", True)
    assert calls["fill7"] == [("<no exception caught at line 38>", True)]
    assert calls["fill8"] == calls["fill7"]  # a nested raise aborts: nothing to carry


def test_call_positions_are_character_columns():
    fi = _index('def f():\n    s = "héllo"; return g(1)\n')
    call = next(c for c in _fn(fi, "pkg.mod.f").calls if render(c.func) == "g")
    line = 'def f():\n    s = "héllo"; return g(1)\n'.splitlines()[1]
    assert line[call.column : call.end_column] == "g(1)"


def test_assigned_call_records_its_target():
    fi = _index(
        """
        class C:
            def __init__(self, reg):
                self.n = reg.lookup(1)
        """
    )
    call = _fn(fi, "pkg.mod.C.__init__").calls[0]
    assert render(call.assigned_to) == "self.n"


def test_imports_relative_and_aliases():
    fi = _index(
        """
        import os.path
        import numpy as np
        from . import sibling
        from ..top import thing as other
        from .reg import REGISTRY as REG
        __all__ = ["REG"]
        """,
        module="pkg.sub.mod",
    )
    assert fi.imports["os"] == "os"
    assert fi.imports["np"] == "numpy"
    assert fi.imports["sibling"] == "pkg.sub.sibling"
    assert fi.imports["other"] == "pkg.top.thing"
    assert fi.imports["REG"] == "pkg.sub.reg.REGISTRY"
    assert fi.all_names == ("REG",)


def test_package_init_relative_import():
    fi = index_source("from .registry import R\n", "pkg/__init__.py", "pkg", True)
    assert fi.imports["R"] == "pkg.registry.R"


def test_suppression_comments():
    src = textwrap.dedent(
        """
        a = f()  # noqa: CL001
        b = f()  # cachelint: ignore[CL001, CL002]
        c = f()  # noqa
        d = "# noqa"
        e = f()  # cachelint: ignore
        g = f()  # NOQA:cl002
        """
    )
    s = parse_suppressions(src)
    assert s[2] == frozenset({"CL001"})
    assert s[3] == frozenset({"CL001", "CL002"})
    assert s[4] is None
    assert 5 not in s
    assert s[6] is None
    assert s[7] == frozenset({"CL002"})


def _suppressions_of_every_line(source: str) -> dict:
    """parse_suppressions as it was, reading every line: the reference."""
    out: dict = {}
    for lineno, text in enumerate(split_lines(source, False), 1):
        lt = text.lower()
        if "#" not in text or ("noqa" not in lt and "cachelint" not in lt):
            continue
        for m in _SUPPRESS_RE.finditer(text):
            if _in_string(text, m.start()):
                continue
            codes = m.group("c1") if m.group("c1") is not None else m.group("c2")
            if codes is None or not codes.strip():
                out[lineno] = None
            else:
                cs = frozenset(c.strip().upper() for c in codes.split(",") if c.strip())
                prev = out.get(lineno, frozenset())
                out[lineno] = None if prev is None else prev | cs
    return out


def test_suppressions_read_on_marked_lines_equal_a_read_of_every_line():
    # only the lines that mention a marker are read; line numbers must stay
    # Python's (\r\n, \r and \n break lines; \f and \u2028 do not), and a
    # lower case that changes the text's length (\u0130) must not shift them
    parts = [
        "#",
        " ",
        "noqa",
        "NOQA",
        ":",
        "CL001",
        ",",
        "\n",
        "\r\n",
        "\r",
        "'",
        '"',
        "\\",
        "cachelint",
        "ignore",
        "[",
        "]",
        "x",
        "\u00e9",
        "\x0c",
        "\u2028",
        "\u0130",
        "\u0131",
    ]
    rnd = random.Random(6)
    for _ in range(20000):
        src = "".join(rnd.choice(parts) for _ in range(rnd.randint(0, 40)))
        assert parse_suppressions(src) == _suppressions_of_every_line(src), repr(src)
    src = "x = 1\n\x0cy = f()  # noqa: CL002\nz = 2  # NoQa"
    assert parse_suppressions(src) == {2: frozenset({"CL002"}), 3: None}


def _every_call(fi, pick_call):
    """The brute-force scan: every call of every function, in order."""
    return [(f, c) for f in fi.functions if not f.under_type_checking for c in f.calls if pick_call(f, c)]


def test_scan_positions_name_exactly_the_calls_a_scan_of_every_call_picks():
    fi = _index(
        """
        from typing import TYPE_CHECKING
        from pkg.probes import probe as measure
        import pkg.helpers as helpers

        class Holder:
            def __init__(self, cfg):
                self.size = measure(cfg)
                self.table = helpers.build(cfg)
                self.plain = cfg

            def step(self, cfg):
                from pkg.other import probe
                n = measure(cfg) + probe(cfg)
                self.size = len(cfg)
                return helpers.build(cfg), n, (lambda: 0)(), self.get()

        if TYPE_CHECKING:
            def typed(cfg):
                self.size = measure(cfg)
        """
    )
    functions = {f.qualname: f for f in fi.functions}
    # cache sites' fills: the calls assigned whole to an attribute
    fills = list(scan_hits(functions, [fi], lambda scans: scans[0]))
    assert fills == _every_call(fi, lambda f, c: fills_site(c))
    assert [render(c.func) for _, c in fills] == ["measure", "helpers.build", "len"]

    def named(keys):  # the scan of uses' pick, for the sites' keys ``keys``
        return lambda scans: _named(scans, dict.fromkeys(keys))

    def key_of(f, c, keys):
        return any(k in keys for k in use_keys(c.func, function_imports(f.assigns), fi.imports))

    for keys in ({"probe"}, {"measure"}, {"build"}, {""}, {"get", "len"}, {"missing"}):
        got = list(scan_hits(functions, [fi], named(keys)))
        assert got == _every_call(fi, lambda f, c: key_of(f, c, keys))  # noqa: B023 - called at once, keys
    # `measure` is found by what it imports, `probe` by its own name and a local import
    assert len(list(scan_hits(functions, [fi], named({"probe"})))) == 3
    # stored and loaded (marshalled until read), or never computed: the same positions
    loaded = cache.decode_index(cache.encode_index(fi))
    assert type(loaded.__dict__["scans"]) is bytes
    assert list(scan_hits({f.qualname: f for f in loaded.functions}, [loaded], named({"build"}))) == [
        (f, c) for f, c in _every_call(loaded, lambda f, c: key_of(f, c, {"build"}))
    ]
    fi.scans = None
    assert list(scan_hits(functions, [fi], lambda scans: scans[0])) == fills


def test_bad_input_is_recorded_not_raised():
    assert index_source("def f(:\n", "x.py", "x", False).error[0].startswith("SyntaxError")
    assert index_source("x = 1\0\n", "x.py", "x", False).error is not None
    deep = "x = " + "(" * 300 + "1" + ")" * 300 + "\n"
    fi = index_source(deep, "x.py", "x", False)
    assert fi.error is None or "nesting" in fi.error[0] or "SyntaxError" in fi.error[0] or "Recursion" in fi.error[0]


def test_type_checking_blocks_are_marked():
    fi = _index(
        """
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            def only_for_types():
                pass
        def real():
            pass
        """
    )
    assert _fn(fi, "pkg.mod.only_for_types").under_type_checking
    assert not _fn(fi, "pkg.mod.real").under_type_checking


def test_every_block_body_is_indexed_whether_or_not_it_returns():
    # the calls of a `with` body and of a `finally` body are indexed even when
    # the body has no `return` (the guard facts they add are another matter)
    src = """
def f(lock, items):
    with lock:
        for x in items:
            g(x)
    try:
        h()
    finally:
        k()
    if items:
        with lock:
            m()
"""
    fi = index_source(textwrap.dedent(src), "m.py", "m", False)
    (f,) = fi.functions
    assert {c.func[1] for c in f.calls if c.func[0] == "name"} == {"g", "h", "k", "m"}


def test_return_kinds_say_what_each_return_builds():
    src = textwrap.dedent(
        """
        def f(d, status):
            if status:
                return [s for s in d.values() if s == status]
            return list(d.values()) if d else sorted(d)

        def g(d):
            return make(d)

        def h(d):
            return d
        """
    )
    fi = index_source(src, "m.py", "m", False)
    kinds = {fn.name: fn.return_kinds for fn in fi.functions}
    assert kinds == {"f": ("list", "list"), "g": ("call",), "h": ("?",)}
    assert len(fi.functions[0].returns) == 2  # aligned with returns


def test_a_constant_subscript_of_a_call_is_an_implicit_getitem():
    fi = index_source("def f(g):\n    return g.seqs()[0], g.seqs(lambda: 1)[0]\n", "m.py", "m", False)
    got = [c.func for c in fi.functions[0].implicit_calls if c.func[2] == "__getitem__"]
    # the call's element 0; not where the call holds a lambda (its name is given in source order)
    assert got == [("attr", ("call", ("attr", ("name", "g"), "seqs"), (), ()), "__getitem__")]


def test_the_statements_that_only_lead_to_a_closing_raise_are_an_error_path():
    fi = _index(
        """
        import torch

        def require(ok):
            if ok:
                return check()
            sm = torch.cuda.get_device_capability()
            raise RuntimeError(f"needs SM80, got {sm}")

        def loops(xs):
            for x in xs:
                if x:
                    break
            probe()
            raise ValueError(describe())

        def caught():
            try:
                first()
                raise KeyError("k")
            except KeyError:
                pass
            return last()

        def leaves(xs):
            for x in xs:
                if x:
                    continue
                stay = measure(x)
                raise ValueError(stay)

        def stream(xs):
            for x in xs:
                yield convert(x)
            raise StopIteration_()
        """
    )
    handler = {f.name: {dotted(c.func): c.in_handler for c in f.calls} for f in fi.functions}
    assert handler["require"] == {"check": False, "torch.cuda.get_device_capability": True, "RuntimeError": True}
    # a `break` of a loop inside the statement does not leave the block
    assert handler["loops"] == {"probe": True, "ValueError": True, "describe": True}
    # a `try` may catch what the block raises: not an error path
    assert handler["caught"] == {"first": False, "KeyError": False, "last": False}
    # the `continue` leaves the loop's block before the raise only where it runs: what follows it is doomed
    assert handler["leaves"] == {"measure": True, "ValueError": True}
    # a generator's values reach its consumer before the raise: the loop is not an error path
    assert handler["stream"] == {"convert": False, "StopIteration_": True}
