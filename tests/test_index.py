"""The per-file index: names, guards, positions, suppressions, bad input."""

from __future__ import annotations

import textwrap

from cachelint.index import index_source, parse_suppressions, render


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
