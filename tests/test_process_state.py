"""Module state a function reads, what changes it, what a call changes (cachelint.facts.state)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from cachelint.facts.bodies import Bodies
from cachelint.facts.purity import StateKind
from cachelint.facts.state import ProcessState
from cachelint.index.walk import index_file
from cachelint.semantic.program import Program


def _state(tmp_path: Path, **modules: str) -> tuple[ProcessState, Program]:
    indexes = []
    for name, src in modules.items():
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(src).lstrip("\n"), encoding="utf-8")
        indexes.append(index_file(str(path), name, False))
    p = Program(indexes)
    return ProcessState(p, Bodies(p)), p


def test_a_global_another_function_assigns_later_is_a_dependence(tmp_path):
    st, p = _state(
        tmp_path,
        ps="""
        _GROUP = None

        def init_group(n):
            global _GROUP
            _GROUP = n

        def world_size():
            assert _GROUP is not None
            return _GROUP
        """,
    )
    dep = st.dependence(p.functions["ps.world_size"])
    assert dep is not None and dep.state is not None
    assert dep.state.kind is StateKind.MUTABLE and dep.state.name == "_GROUP"
    assert "`ps.init_group` rebinds (line 5: `_GROUP = n`)" in dep.reason


def test_a_lazy_getters_own_fill_is_not_a_change_its_reads_see(tmp_path):
    st, p = _state(
        tmp_path,
        plat="""
        _PLATFORM = None

        def current_platform():
            global _PLATFORM
            if _PLATFORM is None:
                _PLATFORM = make()
            return _PLATFORM

        def make():
            return "cuda"
        """,
    )
    assert st.dependence(p.functions["plat.current_platform"]) is None


def test_a_constant_table_and_a_never_changed_private_dict_are_no_dependence(tmp_path):
    st, p = _state(
        tmp_path,
        t="""
        _KINDS = frozenset({"a", "b"})
        _SIZES = {"a": 1}

        def size(k):
            return _SIZES.get(k, 0) if k in _KINDS else -1
        """,
    )
    assert st.reads(p.functions["t.size"])  # it reads both tables ...
    assert st.dependence(p.functions["t.size"]) is None  # ... which nothing changes


def test_a_classmethod_filling_a_class_table_and_a_registry_objects_method_are_changes(tmp_path):
    st, p = _state(
        tmp_path,
        reg="""
        class Models:
            table = {}

            @classmethod
            def register(cls, name, arch):
                cls.table[name] = arch


        class Registry:
            def __init__(self):
                self._items = {}

            def add(self, k, v):
                self._items[k] = v

            def get(self, k):
                return self._items[k]


        REGISTRY = Registry()
        """,
        use="""
        from reg import REGISTRY, Models

        def arch(name):
            return Models.table[name]

        def item(k):
            return REGISTRY.get(k)
        """,
        plugin="""
        from reg import REGISTRY

        def load():
            REGISTRY.add("x", 1)
        """,
    )
    dep = st.dependence(p.functions["use.arch"])
    assert dep is not None and "`reg.Models.register` changes in place (line 6: `cls.table[name] = arch`)" in dep.reason
    dep = st.dependence(p.functions["use.item"])
    assert dep is not None and '`plugin.load` changes in place (line 4: `REGISTRY.add("x", 1)`)' in dep.reason


def test_effects_map_a_helpers_writes_to_its_callers_values(tmp_path):
    st, p = _state(
        tmp_path,
        m="""
        def fill(params):
            params.top_k = 50

        def step(req):
            fill(req.params)
            return req
        """,
    )
    effects = st.effects(p.functions["m.step"])
    assert [(e.line, e.text, e.via) for e in effects] == [(5, "fill(req.params)", "m.fill")]
    assert effects[0].value[1:] == ("params", "top_k")


def test_a_call_typed_by_a_base_class_changes_what_its_overrides_change(tmp_path):
    """``self.waiting.pop_request()`` on a queue declared as the abstract base
    runs a subclass's ``pop_request``: its change to the queue is the call's."""
    st, p = _state(
        tmp_path,
        m="""
        class RequestQueue:
            def peek_request(self):
                raise NotImplementedError

            def pop_request(self):
                raise NotImplementedError

        class FCFSQueue(RequestQueue):
            def __init__(self):
                self.items = []

            def peek_request(self):
                return self.items[0]

            def pop_request(self):
                return self.items.pop(0)

        class Scheduler:
            def __init__(self, waiting: RequestQueue):
                self.waiting = waiting

            def schedule(self):
                while self.waiting:
                    request = self.waiting.peek_request()
                    self.waiting.pop_request()
        """,
    )
    effects = st.effects(p.functions["m.Scheduler.schedule"])
    assert [(e.line, e.text, e.via) for e in effects] == [(25, "self.waiting.pop_request()", "m.FCFSQueue.pop_request")]
    assert effects[0].value[1:] == ("waiting", "items")


def test_bodies_read_the_text_the_program_was_indexed_from_not_the_disk(tmp_path):
    """``--diff`` keeps rewritten files in memory: a later fix pass indexes the
    new text and hands it to Program as its sources; every stage that reads a
    body again must read that text (the file on disk still holds the old one)."""
    from cachelint.index.walk import index_source

    path = tmp_path / "m.py"
    path.write_text("def f(x):\n    return x\n", encoding="utf-8")
    new = "def f(x):\n    y = x.tolist()\n    return y, x.tolist()\n"
    fi = index_source(new, str(path), "m", False)
    p = Program([fi], sources={str(path): new.encode()})
    body = Bodies(p).body(p.functions["m.f"])
    assert body is not None
    assert "".join(body.lines) == new


def test_no_stage_past_the_index_reads_source_files_itself():
    """One reader of sources: Program.source_bytes (the overlay of a --diff
    pass, else the disk); the rest of the analysis goes through it."""
    import re

    pkg = Path(__file__).resolve().parent.parent / "cachelint"
    offenders = []
    for sub in ("semantic", "facts", "fixes", "rules"):
        for py in sorted((pkg / sub).rglob("*.py")):
            text = py.read_text(encoding="utf-8")
            if re.search(r"(?<![\w.])read_bytes\(|\.read_bytes\(\)|open\([^)]*\.py", text):
                offenders.append(str(py.relative_to(pkg)))
    allowed = {"semantic/program.py"}  # Program.source_bytes itself
    assert [o for o in offenders if o not in allowed] == []
