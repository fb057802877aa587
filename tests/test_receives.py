"""Which calls receive a new value each time, and which functions return one (cachelint.facts.receives)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cachelint import api
from cachelint.config import Config, ConfigError, parse_table, resolve_presets
from cachelint.facts.bodies import Bodies
from cachelint.facts.catalog import Catalog
from cachelint.facts.receives import Receives
from cachelint.index.walk import index_file
from cachelint.semantic.program import Program


def _receives(tmp_path: Path, src: str, patterns: tuple[str, ...] | None = None) -> tuple[Receives, Program]:
    path = tmp_path / "chan.py"
    path.write_text(textwrap.dedent(src).lstrip("\n"), encoding="utf-8")
    p = Program([index_file(str(path), "chan", False)])
    if patterns is None:
        patterns = resolve_presets(Config(), set()).receive_calls
    return Receives(p, Bodies(p), Catalog(()), patterns), p


def _draws(tmp_path: Path, src: str, name: str, patterns=None) -> str | None:
    r, p = _receives(tmp_path, src, patterns)
    return r.draws(p.functions[f"chan.{name}"])


def test_a_buffer_a_receive_fills_is_what_the_function_returns(tmp_path):
    why = _draws(
        tmp_path,
        """
        import pickle
        import torch.distributed as dist

        def receive_object(buf, src):
            dist.recv(buf, src=src)
            return pickle.loads(bytes(buf.tolist()))
        """,
        "receive_object",
    )
    assert why is not None and "torch.distributed.recv" in why


def test_the_flow_goes_through_unpacking_and_through_a_function_of_the_tree(tmp_path):
    src = """
        class Stage:
            def __init__(self, sock):
                self.sock = sock

            def recv_message(self):
                return self.sock.recv_pyobj()

            def prealloc_ids(self, local):
                good, bad = self.recv_message()
                return [list(set(good) & set(local)), bad]
        """
    why = _draws(tmp_path, src, "Stage.prealloc_ids")
    assert why is not None and "recv_pyobj" in why and "Stage.prealloc_ids" in why


def test_an_attribute_assigned_from_a_receive_and_read_back(tmp_path):
    why = _draws(
        tmp_path,
        """
        class Conn:
            def __init__(self, pipe):
                self.pipe = pipe
                self.last = None

            def latest(self):
                self.last = self.pipe.recv()
                return self.last
        """,
        "Conn.latest",
    )
    assert why is not None


def test_a_receive_whose_value_is_not_returned_does_not_draw(tmp_path):
    # the poll is logged and dropped: what the function returns is computed
    # from its inputs alone, so two calls can still be one repeated value
    src = """
        import logging

        log = logging.getLogger(__name__)

        class Stage:
            def __init__(self, conn, sizes):
                self.conn = conn
                self.sizes = sizes

            def layout(self):
                ready = self.conn.poll()
                log.debug("ready: %s", ready)
                return sorted(self.sizes)
        """
    assert _draws(tmp_path, src, "Stage.layout") is None


def test_a_clock_read_that_is_returned_draws(tmp_path):
    src = """
        import time

        def deadline(budget):
            now = time.monotonic()
            return now + budget
        """
    why = _draws(tmp_path, src, "deadline")
    assert why is not None and "clock" in why


def test_recursion_proves_nothing(tmp_path):
    src = """
        def walk(n):
            if n:
                return walk(n - 1)
            return 0
        """
    assert _draws(tmp_path, src, "walk") is None


def test_without_patterns_a_socket_read_is_not_known_to_receive(tmp_path):
    src = """
        def next_message(sock):
            return sock.recv()
        """
    assert _draws(tmp_path, src, "next_message", patterns=()) is None
    assert _draws(tmp_path, src, "next_message") is not None


def test_extend_receive_calls_adds_a_channel_and_is_checked(tmp_path):
    cfg = parse_table({"extend-receive-calls": ["mypkg.Channel.take"]}, "pyproject.toml")
    assert "mypkg.Channel.take" in resolve_presets(cfg, set()).receive_calls
    assert "*.recv" in resolve_presets(cfg, set()).receive_calls  # the presets' stay
    with pytest.raises(ConfigError):
        parse_table({"extend-receive-calls": [3]}, "pyproject.toml")


def test_cl002_does_not_count_two_receives_as_one_call_made_twice(tmp_path):
    # `fetch_table` receives a table and parses it (expensive work that is
    # also reached through the catalog): two calls in one step are two
    # messages, not one value computed twice
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "stage.py").write_text(
        textwrap.dedent(
            """
            import json

            class Stage:
                def __init__(self, sock):
                    self.sock = sock

                def fetch_table(self):
                    text = self.sock.recv_string()
                    return json.loads(text)

                def execute_model(self):
                    first = self.fetch_table()
                    second = self.fetch_table()
                    return first, second
            """
        ).lstrip("\n")
    )
    roots = ({"pattern": "*.Stage.execute_model", "kind": "per-step"},)
    calls = ({"pattern": "*.Stage.fetch_table", "kind": "registry"},)
    cfg = parse_table({"extend-hot-roots": list(roots), "extend-expensive-calls": list(calls)}, "x")
    found = api.check([str(pkg)], cfg.with_overrides(select=("CL002", "CL006")))
    assert not [f for f in found.findings if f.code in ("CL002", "CL006")]
    cfg_none = cfg.with_overrides(preset="none")
    found = api.check([str(pkg)], cfg_none.with_overrides(select=("CL002",)))
    assert [f.code for f in found.findings] == ["CL002"]  # without the patterns: the repeat is reported
