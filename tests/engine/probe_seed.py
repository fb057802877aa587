"""Seed-era probe (vLLM 0.10.x): evaluate each seed site's value on a real VllmConfig.

    python probe_seed.py ARGS.json OUT.json

Run by the harness in a fresh interpreter whose ``sys.path`` starts with the
vLLM copy under test (original or rewritten). No engine of that era runs
Whisper on this CPU, but its configuration code does: this builds a real
``VllmConfig`` with ``EngineArgs(...).create_engine_config()`` for each model in
ARGS and records, per observable, the value the code under test computes, or
the error it raised. The harness compares two such files.

Observables (each names the functions whose rewrite it observes):

* ``cross_attention_max_encoder_len``: the cross-attention backend's helper
  (a module function taking the VllmConfig);
* ``cross_attention_spec_max_memory``: ``CrossAttentionSpec.max_memory_usage_bytes``
  for a fixed spec;
* ``scheduler_encoder_tokens``: the ``num_encoder_tokens`` that
  ``Scheduler.schedule`` passes to the KV-cache manager for a request with one
  audio input (observed by wrapping the manager's ``allocate_slots``);
* ``runner_max_encoder_len``: the model runner's ``max_encoder_len`` after
  ``__init__`` (the CPU runner, a subclass of the GPU one);
* ``fill_max_num_encoder_input_tokens``: the attribute itself, for the record.

ARGS may also give, per observable, the residual guard cachelint reported for
its site (a list of expressions); the probe evaluates it on each real config
(``guard_holds``), so the test can require equal values exactly where the
guard holds.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

OBSERVES = {
    "cross_attention_max_encoder_len": ["vllm.attention.layers.cross_attention._get_max_encoder_len"],
    "cross_attention_spec_max_memory": ["vllm.v1.kv_cache_interface.CrossAttentionSpec.max_memory_usage_bytes"],
    "scheduler_encoder_tokens": ["vllm.v1.core.sched.scheduler.Scheduler.schedule"],
    "runner_max_encoder_len": ["vllm.v1.worker.gpu_model_runner.GPUModelRunner.__init__"],
    "fill_max_num_encoder_input_tokens": ["vllm.config.VllmConfig.__post_init__"],
}


def use_cpu_platform() -> None:
    """A tiny platform plugin: vLLM 0.10.x detects CPU only for a '+cpu' build."""
    import vllm.platforms as platforms
    from vllm.platforms.cpu import CpuPlatform

    platforms._current_platform = CpuPlatform()


def build_config(spec: dict):
    from vllm.engine.arg_utils import EngineArgs

    kwargs = dict(
        model=spec["model"], dtype="float32", max_model_len=spec.get("max_model_len", 448), enforce_eager=True, seed=0
    )
    kwargs.update(spec.get("engine_args", {}))
    return EngineArgs(**kwargs).create_engine_config()


def _kv_cache_config(vllm_config):
    import torch
    from vllm.v1.kv_cache_interface import (
        CrossAttentionSpec,
        FullAttentionSpec,
        KVCacheConfig,
        KVCacheGroupSpec,
        KVCacheTensor,
    )

    common = dict(block_size=16, num_kv_heads=4, head_size=64, dtype=torch.float32, use_mla=False)
    groups = [KVCacheGroupSpec(["self"], FullAttentionSpec(**common))]
    if vllm_config.model_config.is_encoder_decoder:
        groups.append(KVCacheGroupSpec(["cross"], CrossAttentionSpec(**common)))
    num_blocks = 1024
    vllm_config.cache_config.num_gpu_blocks = num_blocks  # as the engine core sets it after profiling
    tensors = [
        KVCacheTensor(size=num_blocks * g.kv_cache_spec.page_size_bytes, shared_by=g.layer_names) for g in groups
    ]
    return KVCacheConfig(num_blocks=num_blocks, kv_cache_tensors=tensors, kv_cache_groups=groups)


def obs_cross_attention_max_encoder_len(cfg):
    from vllm.attention.layers.cross_attention import _get_max_encoder_len

    return _get_max_encoder_len(cfg)


def obs_cross_attention_spec_max_memory(cfg):
    import torch
    from vllm.v1.kv_cache_interface import CrossAttentionSpec

    spec = CrossAttentionSpec(block_size=16, num_kv_heads=4, head_size=64, dtype=torch.float32, use_mla=False)
    return spec.max_memory_usage_bytes(cfg)


def obs_scheduler_encoder_tokens(cfg):
    from vllm.multimodal.inputs import MultiModalFeatureSpec, PlaceholderRange
    from vllm.sampling_params import SamplingParams
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.request import Request
    from vllm.v1.structured_output import StructuredOutputManager

    sched = Scheduler(cfg, _kv_cache_config(cfg), StructuredOutputManager(cfg))
    seen: list[int] = []
    allocate = sched.kv_cache_manager.allocate_slots

    def spy(*args, **kwargs):
        seen.append(kwargs.get("num_encoder_tokens", 0))
        return allocate(*args, **kwargs)

    sched.kv_cache_manager.allocate_slots = spy
    length = 8
    features = [
        MultiModalFeatureSpec(
            data=None, modality="audio", identifier="clip-0", mm_position=PlaceholderRange(offset=0, length=length)
        )
    ]
    if not cfg.model_config.is_encoder_decoder:
        features = None  # a decoder-only model takes no encoder input
    req = Request("r0", [0] * length, SamplingParams(max_tokens=4), None, eos_token_id=None, mm_features=features)
    sched.add_request(req)
    sched.schedule()
    if not seen:
        raise RuntimeError("the scheduler allocated no slots")
    return seen


def obs_runner_max_encoder_len(cfg):
    import torch
    from vllm.v1.worker.cpu_model_runner import CPUModelRunner

    return CPUModelRunner(cfg, torch.device("cpu")).max_encoder_len


def obs_fill_max_num_encoder_input_tokens(cfg):
    return cfg.scheduler_config.max_num_encoder_input_tokens


def guard_namespace(cfg) -> dict:
    """Names under which the reported residual guards refer to the configuration at each site."""
    from types import SimpleNamespace

    scope = dict(vllm_config=cfg, model_config=cfg.model_config, scheduler_config=cfg.scheduler_config)
    return dict(scope, self=SimpleNamespace(**scope))


def guard_holds(atoms: list[str], cfg) -> bool:
    ns = guard_namespace(cfg)
    return all(bool(eval(atom, {"__builtins__": {}}, ns)) for atom in atoms)


def evaluate(spec: dict, guards: dict) -> dict:
    out: dict = {}
    try:
        cfg = build_config(spec)
    except Exception as e:  # the config itself must build: record it, the test fails on it
        return {"config_error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
    out["is_encoder_decoder"] = bool(cfg.model_config.is_encoder_decoder)
    out["pooler_config"] = cfg.model_config.pooler_config is not None
    values = {}
    for name in OBSERVES:
        try:
            values[name] = {"value": globals()[f"obs_{name}"](cfg)}
        except Exception as e:
            values[name] = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
    out["values"] = values
    out["guard_holds"] = {name: guard_holds(atoms, cfg) for name, atoms in guards.items()}
    return out


def main(args_path: str, out_path: str) -> None:
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    with open(args_path) as f:
        args = json.load(f)
    import vllm

    use_cpu_platform()
    result = {"vllm_file": vllm.__file__, "observes": OBSERVES, "configs": {}}
    for name, spec in args["configs"].items():
        result["configs"][name] = evaluate(spec, args.get("guards", {}))
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1, default=repr)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
