"""Reads of uncached derived @property attributes (cachelint.facts.properties, CL002)."""

from __future__ import annotations

import textwrap

from cachelint.api import lint_sources
from cachelint.config import Config, HotRoot
from cachelint.index.records import FunctionInfo
from cachelint.index.walk import function_reads, index_source

ROOTS = (HotRoot("*.Runner.execute_model", "per-step"),)

CONFIG = """
class ModelConfig:
    def __init__(self, hf_config):
        self.hf_config = hf_config

    @property
    def is_encoder_decoder(self) -> bool:
        return bool(getattr(self.hf_config, "is_encoder_decoder", False) or getattr(self.hf_config, "encoder", None)
                    or hasattr(self.hf_config, "decoder_config"))

    @property
    def layer_types(self) -> list:
        return list(getattr(self.hf_config, "layer_types", ()) or getattr(self.hf_config, "block_types", ())
                    or getattr(self.hf_config, "attn_types", ()))
"""


def _check(code: str, *, fix: bool = False, unsafe: bool = False):
    cfg = Config(preset="none", select=("CL002",), hot_roots=ROOTS)
    sources = {"config.py": textwrap.dedent(CONFIG).lstrip(), "runner.py": textwrap.dedent(code).lstrip()}
    return lint_sources(sources, cfg, fix=fix, unsafe_fixes=unsafe)


def test_function_reads_are_in_file_coordinates_with_non_ascii_lines():
    src = textwrap.dedent(
        """
        class Runner:
            def other(self):
                return "ééé"

            def execute_model(self, batch):
                s = "ü"; x = self.model_config.is_encoder_decoder
                def inner():
                    return self.model_config.is_encoder_decoder
                return x
        """
    ).lstrip()
    fi = index_source(src, "runner.py", "runner", False)
    f = next(g for g in fi.functions if g.qualname == "runner.Runner.execute_model")
    reads = function_reads(src.splitlines(keepends=True), f, frozenset({"is_encoder_decoder"}))
    whole = index_source(src, "runner.py", "runner", False, watch=frozenset({"is_encoder_decoder"})).reads
    # the same reads, at the same places, as indexing the whole file with the
    # name watched: statement lines too (they were the segment's, not the file's)
    assert sorted(map(repr, reads)) == sorted(map(repr, whole))
    lines = src.splitlines()
    for _qn, _e, line, col, _end_line, end_col, *_ in reads:
        assert lines[line - 1][col:end_col] == "self.model_config.is_encoder_decoder"
    assert {r[0] for r in reads} == {"runner.Runner.execute_model", "runner.Runner.execute_model.<locals>.inner"}


def test_function_reads_of_a_module_level_function():
    src = "import x\n\ndef step(config):\n    a = config.prop\n    return a, config.prop.real\n"
    fi = index_source(src, "m.py", "m", False)
    reads = function_reads(src.splitlines(keepends=True), fi.functions[0], frozenset({"prop"}))
    assert [(r[2], r[3], r[5]) for r in reads] == [(4, 8, 19), (5, 14, 25)]


def test_function_reads_refuse_a_stale_function_record():
    src = "def f(x):\n    return x.prop\n"
    stale = FunctionInfo("m.g", "g", "m", "m.py", None, None, 1, 2, 0, [], [], False)
    assert function_reads(src.splitlines(keepends=True), stale, frozenset({"prop"})) == []


def test_reads_through_an_attribute_that_already_holds_the_value_are_not_reported():
    res = _check(
        """
        from config import ModelConfig

        class Runner:
            def __init__(self, model_config: ModelConfig):
                self.model_config = model_config
                self.is_encoder_decoder = model_config.is_encoder_decoder

            def execute_model(self, batch):
                return batch if self.is_encoder_decoder else None
        """
    )
    assert [f for f in res.findings if f.code == "CL002"] == []


def test_a_call_of_what_a_property_returns_is_not_a_read_finding():
    # `x.prop(...)` calls the value; the getter is not what the site repeats
    res = _check(
        """
        from config import ModelConfig

        class Runner:
            def __init__(self, model_config: ModelConfig):
                self.model_config = model_config

            def execute_model(self, batch):
                return self.model_config.layer_types.count("mamba")
        """
    )
    found = [f for f in res.findings if f.code == "CL002"]
    assert len(found) == 1 and found[0].data["property_read"]
    # the read is the receiver of .count(...): reported at the read itself
    assert (found[0].span.column, found[0].span.end_column) == (15, 44)


def test_hoisting_a_mutable_property_value_into_init_is_unsafe_when_a_use_mutates_it():
    res = _check(
        """
        from config import ModelConfig

        class Runner:
            def __init__(self, model_config: ModelConfig):
                self.model_config = model_config

            def execute_model(self, batch):
                types = self.model_config.layer_types
                self.model_config.layer_types.append("attention")
                return types
        """
    )
    found = sorted((f for f in res.findings if f.code == "CL002"), key=lambda f: f.span.line)
    # the getter's probes may raise, so both reads' hoists are unsafe: one finding for the two sites
    assert [f.span.line for f in found] == [8]
    assert found[0].fix.applicability.value == "unsafe"
    assert "may raise" in found[0].fix.message


def test_a_property_read_twice_on_per_call_data_is_hoisted_to_a_local():
    res = _check(
        """
        from config import ModelConfig

        class Runner:
            def execute_model(self, config: ModelConfig):
                if config.is_encoder_decoder:
                    return 1
                return 2 if config.is_encoder_decoder else 3
        """,
        fix=True,
    )
    assert (
        res.sources_after["runner.py"]
        == textwrap.dedent(
            """
        from config import ModelConfig

        class Runner:
            def execute_model(self, config: ModelConfig):
                is_encoder_decoder = config.is_encoder_decoder
                if is_encoder_decoder:
                    return 1
                return 2 if is_encoder_decoder else 3
        """
        ).lstrip()
    )


def test_a_local_hoist_is_unsafe_when_the_function_writes_what_the_getter_reads():
    res = _check(
        """
        from config import ModelConfig

        def reconfigure(config: ModelConfig, hf_config):
            before = config.is_encoder_decoder
            config.hf_config = hf_config
            return before, config.is_encoder_decoder

        class Runner:
            def execute_model(self, config: ModelConfig, hf_config):
                return reconfigure(config, hf_config)
        """
    )
    found = [f for f in res.findings if f.code == "CL002"]
    assert len(found) == 1 and [line for line, _ in found[0].data["sites"]] == [4, 6]  # one finding, both reads
    assert all(f.fix is not None and f.fix.applicability.value == "unsafe" for f in found)
    # the reason quotes the statement between the uses and names what it changes
    assert "`config.hf_config = hf_config` (line 5) changes `config.hf_config` between the uses" in found[0].fix.message


def test_line_numbers_are_pythons_after_a_form_feed():
    """``str.splitlines`` also breaks at a form feed (and \\v, \\x1c-\\x1e,
    \\x85, \\u2028, \\u2029), which Python does not: every text read by line
    (the property stage, the hoisting checks, non-ASCII columns, ``noqa``
    comments) must number lines as the parser does."""
    code = """
        from config import ModelConfig
        # section break:\x0c
        class Runner:
            def execute_model(self, config: ModelConfig):
                s = "ü\u2028"; x = config.is_encoder_decoder  # noqa: CL001
                if config.is_encoder_decoder:  # cachelint: ignore[CL002]
                    return 1
                return 2 if config.is_encoder_decoder else 3
        """
    res = _check(code)
    text = textwrap.dedent(code).lstrip()
    lines = text.split("\n")  # Python's lines here: no \r in the text
    assert len(text.splitlines()) == len(lines) - 1 + 2  # the two extra breaks this test is about
    (f,) = res.findings  # the two unsuppressed reads: one finding listing both
    assert [line for line, _ in f.data["sites"]] == [5, 8]  # the read on line 6 is suppressed
    for line, col in f.data["sites"]:
        assert lines[line - 1][col - 1 :].startswith("config.is_encoder_decoder")
    fixed = _check(code, fix=True).sources_after["runner.py"]
    assert (
        "    def execute_model(self, config: ModelConfig):\n        is_encoder_decoder = config.is_encoder_decoder\n"
        in fixed
    )
    assert "# section break:\x0c\n" in fixed
    compile(fixed, "runner.py", "exec")
