"""Example sources shared by the lock rules (CL003, CL004): a cached fill, its
reader, and the ``cachelint.lock`` that records the invariant.

Not analysis code: the rules' VALID/INVALID examples build their modules from
these parts.
"""

from __future__ import annotations

LOCK_CONFIG = """
class Registry:
    def max_len(self, model_config):
        ...

REGISTRY = Registry()


class ModelConfig:
    is_encoder_decoder: bool


class SchedulerConfig:
    max_encoder_len: int = 0
"""

LOCK_FILL = """
class EngineConfig:
    model_config: ModelConfig
    scheduler_config: SchedulerConfig

    def __post_init__(self):
        if self.model_config.is_encoder_decoder:
            self.scheduler_config.max_encoder_len = REGISTRY.max_len(self.model_config)
"""

LOCK_RUNNER = """
from config import EngineConfig


class Runner:
    def __init__(self, config: EngineConfig):
        self.config = config

    def step(self):
        if self.config.model_config.is_encoder_decoder:
            return self.config.scheduler_config.max_encoder_len
        return 0
"""

LOCK_TEXT = """
version = 1

[[invariant]]
attribute = "SchedulerConfig.max_encoder_len"
holder = "config.SchedulerConfig"
anchor = "config.EngineConfig"
target = "self.scheduler_config.max_encoder_len"
callee = "config.Registry.max_len"
arguments = ["self.model_config"]
guard = ["self.model_config.is_encoder_decoder"]
fill = { module = "config", function = "EngineConfig.__post_init__", at_construction = true }
readers = [
    { module = "runner", function = "Runner.step" },
]
known_reads = []
known_writers = []
"""

LOCK_CATALOG = ({"pattern": "*.Registry.max_len", "pure": True, "kind": "registry", "why": "builds a processor"},)
