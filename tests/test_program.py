"""Whole-program facts: aliases fold to one value, types, the call graph."""

from __future__ import annotations

import textwrap

from cachelint.config import HotRoot
from cachelint.index.walk import index_source
from cachelint.semantic.callgraph import hot_paths
from cachelint.semantic.program import Program
from cachelint.semantic.values import GlobalRoot, SelfRoot

REGISTRY = """
class MultiModalRegistry:
    def get_encdec_max_encoder_len(self, model_config: "ModelConfig") -> int:
        return 1500

MULTIMODAL_REGISTRY = MultiModalRegistry()
"""

CONFIG = """
from dataclasses import dataclass, field
from typing import Optional


@dataclass
class ModelConfig:
    is_encoder_decoder: bool = False


@dataclass
class SchedulerConfig:
    max_num_encoder_input_tokens: int = 0


@dataclass
class VllmConfig:
    model_config: Optional[ModelConfig] = None
    scheduler_config: SchedulerConfig = field(default_factory=SchedulerConfig)
"""

RUNNER = """
from eng.config import VllmConfig
from eng.multimodal import MULTIMODAL_REGISTRY
from eng.helpers import helper


class Base:
    def step_helper(self):
        return helper()


class Runner(Base):
    def __init__(self, vllm_config: VllmConfig):
        self.vllm_config = vllm_config
        self.model_config = vllm_config.model_config
        self.mm_registry = MULTIMODAL_REGISTRY

    def a(self):
        model_config = self.model_config
        return self.mm_registry.get_encdec_max_encoder_len(model_config)

    def b(self):
        return MULTIMODAL_REGISTRY.get_encdec_max_encoder_len(self.vllm_config.model_config)

    def execute_model(self):
        self.step_helper()
        def closure():
            return self.b()
        return closure()
"""

HELPERS = """
def helper():
    return leaf()

def leaf():
    return 1

def cold():
    return 2
"""


def _program() -> Program:
    files = {
        "eng/multimodal/__init__.py": (
            "eng.multimodal",
            True,
            "from .registry import MultiModalRegistry, MULTIMODAL_REGISTRY\n",
        ),
        "eng/multimodal/registry.py": ("eng.multimodal.registry", False, REGISTRY),
        "eng/config.py": ("eng.config", False, CONFIG),
        "eng/runner.py": ("eng.runner", False, RUNNER),
        "eng/helpers.py": ("eng.helpers", False, HELPERS),
    }
    return Program([index_source(textwrap.dedent(src), path, mod, pkg) for path, (mod, pkg, src) in files.items()])


def _call(p: Program, qualname: str, index: int = -1):
    f = p.functions[qualname]
    c = f.calls[index]
    ctx = p.context(f)
    return p.canon(c.func, ctx), tuple(p.canon(a, ctx) for a in c.args)


def test_aliases_fold_to_the_same_call_on_the_same_object():
    p = _program()
    a = _call(p, "eng.runner.Runner.a")
    b = _call(p, "eng.runner.Runner.b")
    assert a == b
    callee, args = a
    assert callee == (GlobalRoot("eng.multimodal.registry.MULTIMODAL_REGISTRY"), "get_encdec_max_encoder_len")
    assert args == ((SelfRoot("eng.runner.Runner"), "vllm_config", "model_config"),)


def test_types_from_annotations_fields_and_constructors():
    p = _program()
    runner = (SelfRoot("eng.runner.Runner"),)
    assert p.type_of(runner + ("vllm_config",)) == "eng.config.VllmConfig"
    assert p.type_of(runner + ("vllm_config", "model_config")) == "eng.config.ModelConfig"  # Optional[...] unwrapped
    assert p.type_of(runner + ("vllm_config", "scheduler_config")) == "eng.config.SchedulerConfig"
    assert (
        p.type_of((GlobalRoot("eng.multimodal.registry.MULTIMODAL_REGISTRY"),))
        == "eng.multimodal.registry.MultiModalRegistry"
    )
    f = p.callee_function(_call(p, "eng.runner.Runner.b")[0])
    assert f.qualname == "eng.multimodal.registry.MultiModalRegistry.get_encdec_max_encoder_len"


def test_reexports_resolve_to_the_definition():
    p = _program()
    assert p.resolve_qualified("eng.multimodal.MULTIMODAL_REGISTRY") == "eng.multimodal.registry.MULTIMODAL_REGISTRY"


def test_hot_paths_through_bases_imports_and_closures():
    p = _program()
    hp = hot_paths(p, (HotRoot("*.Runner.execute_model", "per-step"),))
    assert hp.chain("eng.helpers.leaf") == (
        "eng.runner.Runner.execute_model",
        "eng.runner.Base.step_helper",
        "eng.helpers.helper",
        "eng.helpers.leaf",
    )
    assert hp.chain("eng.runner.Runner.b")[-2:] == (
        "eng.runner.Runner.execute_model.<locals>.closure",
        "eng.runner.Runner.b",
    )
    assert hp.chain("eng.helpers.cold") is None
    assert hp.chain("eng.runner.Runner.a") is None
    assert hp.kinds["eng.helpers.leaf"] == "per-step"


def test_globset_matches_like_fnmatch_and_first_pattern_wins():
    import fnmatch

    from cachelint.globs import GlobSet

    patterns = [
        "*.Scheduler.schedule",
        "*Builder.build",
        "vllm.model_executor.models.*.forward",
        "a?c",
        "x[!0-9]y",
        "*",
    ]
    gs = GlobSet(patterns)
    names = [
        "vllm.v1.core.sched.scheduler.Scheduler.schedule",
        "m.f.<locals>.CrossAttentionBuilder.build",
        "vllm.model_executor.models.llama.LlamaModel.forward",
        "abc",
        "xay",
        "x1y",
        "other",
    ]
    for n in names:
        expected = next(i for i, p in enumerate(patterns) if fnmatch.fnmatchcase(n, p))
        assert gs.first(n) == expected, n
    assert GlobSet(["a.b"]).first("aXb") == -1  # dots are literal
