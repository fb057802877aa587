"""The invariant checks (facts/invariants.py), unit by unit: an invariant is built
from a program's cache site and its readers, then checked against edited programs.

Each edit is one way the code can stop guaranteeing what a CL001 rewrite relies on
(the fill deleted, re-guarded, joined by a second writer, a new reader outside the
guard), beside the edits that keep it (the fill moved to a helper, reformatted).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import textwrap
from pathlib import Path

import pytest

from cachelint.config import CatalogEntry, Config, resolve_presets
from cachelint.facts.cachesites import CacheAnalysis
from cachelint.facts.catalog import Catalog
from cachelint.facts.cost import CostModel
from cachelint.facts.invariants import InvariantCheck, from_uses
from cachelint.index.walk import index_source
from cachelint.lock.lockfile import dumps, load
from cachelint.semantic.program import Program

CONFIG = """
from .registry import REGISTRY


class ModelConfig:
    def __init__(self, name: str, is_encoder_decoder: bool):
        self.name = name
        self.is_encoder_decoder = is_encoder_decoder


class SchedulerConfig:
    def __init__(self):
        self.max_encoder_len = 0


class EngineConfig:
    def __init__(self, model_config: ModelConfig, scheduler_config: SchedulerConfig):
        self.model_config = model_config
        self.scheduler_config = scheduler_config
        if self.model_config.is_encoder_decoder:
            self.scheduler_config.max_encoder_len = REGISTRY.max_encoder_len(self.model_config)
"""

REGISTRY = """
from transformers import AutoProcessor


class Registry:
    def max_encoder_len(self, model_config):
        # builds a processor: nothing the analysis can see proves it cheap
        return AutoProcessor.from_pretrained(model_config.name).max_length


REGISTRY = Registry()
"""

RUNNER = """
from .config import EngineConfig
from .registry import REGISTRY


class Runner:
    def __init__(self, config: EngineConfig):
        self.config = config

    def step(self):
        if self.config.model_config.is_encoder_decoder:
            return REGISTRY.max_encoder_len(self.config.model_config)
        return 0
"""

# the reader after `cachelint --fix`: what the lock is recorded for
RUNNER_FIXED = """
from .config import EngineConfig


class Runner:
    def __init__(self, config: EngineConfig):
        self.config = config

    def step(self):
        if self.config.model_config.is_encoder_decoder:
            return self.config.scheduler_config.max_encoder_len
        return 0
"""


def _program(sources: dict[str, str]) -> Program:
    """The program of these modules of package ``eng``, written to a fresh
    directory: the read check indexes the files again with the lock's names watched."""
    root = Path(tempfile.mkdtemp(prefix="cachelint-invariants-"))
    atexit.register(shutil.rmtree, root, True)
    indexes = []
    for rel, code in sources.items():
        path = root / "eng" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        text = textwrap.dedent(code).lstrip("\n")
        path.write_text(text, encoding="utf-8")
        indexes.append(index_source(text, str(path), "eng." + rel.removesuffix(".py"), False))
    return Program(indexes)


def _catalog() -> Catalog:
    entry = CatalogEntry("*.Registry.max_encoder_len", "registry-lookup", False, "walks the model registry")
    return Catalog(resolve_presets(Config(preset="none", extend_expensive_calls=(entry,)), {"eng"}).catalog)


@pytest.fixture(scope="module")
def invariant():
    program = _program({"config.py": CONFIG, "registry.py": REGISTRY, "runner.py": RUNNER})
    catalog = _catalog()
    ca = CacheAnalysis(program, catalog, CostModel(program, catalog))
    ca.collect()
    uses = list(ca.uses())
    assert [(u.function.qualname, u.call.line) for u in uses] == [("eng.runner.Runner.step", 11)]
    invs = from_uses(program, uses)
    assert len(invs) == 1
    return invs[0]


def _state(inv, config: str, runner: str = RUNNER_FIXED, **extra: str):
    program = _program({"config.py": config, "registry.py": REGISTRY, "runner.py": runner, **extra})
    states = InvariantCheck(program, [inv]).states()
    assert len(states) == 1
    return states[0]


def test_the_invariant_records_fill_guard_and_reader(invariant, tmp_path):
    assert invariant.attribute.endswith("max_encoder_len")
    assert invariant.fill.module == "eng.config" and invariant.fill.function == "EngineConfig.__init__"
    assert [r.function for r in invariant.readers] == ["Runner.step"]
    assert any("is_encoder_decoder" in g for g in invariant.guard)
    assert invariant.at_construction
    # it survives the lock file's text form unchanged
    lock = tmp_path / "cachelint.lock"
    lock.write_text(dumps([invariant]), encoding="utf-8")
    assert load(lock) == [invariant]


def test_unchanged_code_keeps_it(invariant):
    st = _state(invariant, CONFIG)
    assert st.problems == [] and st.unsafe_reads == []
    assert len(st.good_fills) == 1


def test_the_fill_moved_to_a_helper_with_another_anchor_name_keeps_it(invariant):
    moved = CONFIG.replace(
        "        if self.model_config.is_encoder_decoder:\n"
        "            self.scheduler_config.max_encoder_len = REGISTRY.max_encoder_len(self.model_config)\n",
        "        fill(self)\n",
    ) + (
        "\n\ndef fill(cfg: EngineConfig):\n"
        "    if cfg.model_config.is_encoder_decoder:\n"
        "        cfg.scheduler_config.max_encoder_len = REGISTRY.max_encoder_len(cfg.model_config)\n"
    )
    assert moved != CONFIG
    st = _state(invariant, moved)
    assert st.problems == [], [p.what for p in st.problems]


def test_the_fill_deleted_is_a_problem_naming_it(invariant):
    gone = CONFIG.replace(
        "            self.scheduler_config.max_encoder_len = REGISTRY.max_encoder_len(self.model_config)\n",
        "            pass\n",
    )
    st = _state(invariant, gone)
    assert len(st.problems) == 1
    assert "is gone" in st.problems[0].what and "EngineConfig.__init__" in st.problems[0].what


def test_a_guard_weakened_or_strengthened_is_a_problem(invariant):
    stronger = CONFIG.replace(
        "        if self.model_config.is_encoder_decoder:\n",
        "        if self.model_config.is_encoder_decoder and self.model_config.name:\n",
    )
    st = _state(invariant, stronger)
    assert len(st.problems) == 1
    assert "different guard" in st.problems[0].what and "now also requires" in st.problems[0].what
    weaker = CONFIG.replace("        if self.model_config.is_encoder_decoder:\n", "        if True:\n")
    st = _state(invariant, weaker)
    assert len(st.problems) == 1 and "no longer requires" in st.problems[0].what


def test_a_second_writer_is_a_problem_naming_its_value(invariant):
    runner = RUNNER_FIXED + (
        "\n\ndef shrink(config: EngineConfig):\n    config.scheduler_config.max_encoder_len = 16\n"
    )
    st = _state(invariant, CONFIG, runner)
    assert len(st.problems) == 1
    assert "now also assigns" in st.problems[0].what and "16" in st.problems[0].what


def test_a_new_reader_outside_the_guard_is_unsafe_with_the_missing_condition(invariant):
    runner = RUNNER_FIXED + ("\n    def budget(self):\n        return self.config.scheduler_config.max_encoder_len\n")
    st = _state(invariant, CONFIG, runner)
    assert st.problems == []
    assert len(st.unsafe_reads) == 1
    read = st.unsafe_reads[0]
    assert read.read.function.qualname == "eng.runner.Runner.budget" and read.related
    assert any("is_encoder_decoder" in t for t in read.residual)


def test_a_new_reader_inside_the_guard_is_safe(invariant):
    runner = RUNNER_FIXED + (
        "\n    def budget(self):\n"
        "        if self.config.model_config.is_encoder_decoder:\n"
        "            return self.config.scheduler_config.max_encoder_len\n"
        "        return 0\n"
    )
    st = _state(invariant, CONFIG, runner)
    assert st.problems == [] and st.unsafe_reads == []


def test_an_invariant_outside_the_checked_files_is_not_in_scope(invariant):
    program = _program({"other.py": "def f():\n    return 1\n"})
    assert InvariantCheck(program, [invariant]).states() == []
