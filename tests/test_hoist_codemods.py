"""The hoisting and memoizing codemods, and the fixer's atomic application."""

from __future__ import annotations

import libcst as cst
from libcst.codemod import CodemodContext

from cachelint.apply.fixer import _apply_atomically, apply_file_edits
from cachelint.model import Applicability, Edit, EditKind, Finding, Fix, Span
from codemods.hoist import HoistCommand
from codemods.memoize import MemoizeCommand

SRC = """import inspect


class Runner:
    def __init__(self, model):
        self.model = model

    def step(self, x):
        if x:
            a = inspect.signature(self.model)
        for i in range(3):
            b = inspect.signature(self.model)
        return a, b
"""


def span(src: str, line: int, text: str) -> Span:
    col = src.splitlines()[line - 1].index(text)
    return Span(line, col, line, col + len(text))


CALL = "inspect.signature(self.model)"
S10, S12 = span(SRC, 10, CALL), span(SRC, 12, CALL)
INIT = Edit(Span(5, 0, 5, 0), f"self._sig = {CALL}", kind=EditKind.APPEND_TO_FUNCTION, target="Runner.__init__")
LOCAL = Edit(S10, f"sig = {CALL}", kind=EditKind.INSERT_BEFORE, anchors=(S10, S12))


def run(src: str, edits: list[Edit]) -> tuple[str, HoistCommand]:
    cmd = HoistCommand(CodemodContext(), edits)
    return cmd.transform_module(cst.parse_module(src)).code, cmd


def test_insert_before_goes_to_the_innermost_block_holding_every_use():
    code, cmd = run(SRC, [Edit(S10, "sig"), Edit(S12, "sig"), LOCAL])
    assert (
        "    def step(self, x):\n        sig = inspect.signature(self.model)\n        if x:\n            a = sig\n"
        in code
    )
    assert "            b = sig\n" in code
    assert not cmd.unmatched


def test_append_to_init_and_a_second_run_adds_nothing():
    code, _ = run(SRC, [Edit(S10, "self._sig"), INIT])
    assert "        self.model = model\n        self._sig = inspect.signature(self.model)\n" in code
    again, cmd = run(code, [INIT])
    assert again == code and cmd.applied == [INIT]


def test_equal_statements_of_two_findings_are_inserted_once():
    code, _ = run(SRC, [INIT, INIT, LOCAL, LOCAL])
    assert code.count("self._sig = ") == 1
    assert code.count("sig = inspect") == 2  # one local, one attribute


def test_append_to_a_function_that_is_not_there_is_unmatched():
    missing = Edit(Span(5, 0, 5, 0), "self._x = 1", kind=EditKind.APPEND_TO_FUNCTION, target="Other.__init__")
    code, cmd = run(SRC, [missing])
    assert code == SRC and cmd.unmatched == [missing]


def test_module_constant_is_appended_after_two_blank_lines():
    const = Edit(
        Span(0, 0, 0, 0), "_SIG = inspect.signature(print)", kind=EditKind.APPEND_TO_FUNCTION, target="<module>"
    )
    code, _ = run(SRC, [const])
    assert code.endswith("        return a, b\n\n\n_SIG = inspect.signature(print)\n")


def test_memoize_adds_the_decorator_on_top_and_the_import_once():
    src = "import os\n\n@staticmethod\ndef f(n: int) -> int:\n    return n\n"
    edits = [
        Edit(Span(4, 0, 4, 0), "functools.cache", kind=EditKind.ADD_DECORATOR, target="f"),
        Edit(Span(1, 0, 1, 0), "", kind=EditKind.ADD_IMPORT, target="functools"),
    ]
    cmd = MemoizeCommand(CodemodContext(), edits)
    code = cmd.transform_module(cst.parse_module(src)).code
    assert (
        # sorted into the standard-library imports, as isort and ruff's I001 want it
        code == "import functools\nimport os\n\n@functools.cache\n@staticmethod\ndef f(n: int) -> int:\n    return n\n"
    )
    cmd2 = MemoizeCommand(CodemodContext(), edits)
    assert cmd2.transform_module(cst.parse_module(code)).code == code


def _finding(line: int, edits: tuple) -> Finding:
    return Finding("CL002", "m.py", Span(line, 0, line, 1), "msg", fix=Fix(Applicability.SAFE, edits))


def test_a_finding_whose_edits_do_not_all_apply_is_dropped_whole():
    good = _finding(10, (Edit(S10, "self._sig"), INIT))
    # its replacement is fine, but its statement goes to a function that does not exist
    broken = _finding(
        12,
        (
            Edit(S12, "self._other"),
            Edit(Span(5, 0, 5, 0), "self._other = 1", kind=EditKind.APPEND_TO_FUNCTION, target="Nope.__init__"),
        ),
    )
    code, fixed = _apply_atomically(SRC, [good, broken], "m.py")
    assert fixed == [good]
    assert "self._other" not in code and "a = self._sig" in code
    assert "b = inspect.signature(self.model)" in code


def test_apply_file_edits_runs_both_codemods_on_one_file():
    src = "import inspect\n\n\ndef g(n: int) -> int:\n    return len(inspect.signature(g).parameters) + n\n"
    edits = [
        Edit(Span(4, 0, 4, 0), "functools.cache", kind=EditKind.ADD_DECORATOR, target="g"),
        Edit(Span(1, 0, 1, 0), "", kind=EditKind.ADD_IMPORT, target="functools"),
    ]
    code, applied = apply_file_edits(src, edits, "g.py")
    assert set(applied) == set(edits)
    assert "@functools.cache\ndef g" in code and "import functools" in code
    compile(code, "g.py", "exec")
