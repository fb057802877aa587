"""Engine probe (a vLLM whose engine runs on this CPU): run a tiny model, record what it produced.

    python probe_current.py ARGS.json OUT.json

Run by the harness in a fresh interpreter whose ``sys.path`` starts with the
vLLM copy under test (original or rewritten), with
``VLLM_ENABLE_V1_MULTIPROCESSING=0`` so the engine core lives in this process
and its state can be read. For each model in ARGS it records:

* ``outputs``: the greedy token ids for every prompt;
* ``kv_cache``: the scheduler's KV-cache configuration (number of blocks, every
  tensor, every group with its spec type, block size, page size and, per spec,
  ``max_memory_usage_bytes``), the model runner's copy if it has one, and the
  shapes of the KV-cache tensors it allocated;
* ``num_gpu_blocks``: ``cache_config.num_gpu_blocks``;
* ``step_seconds`` and ``step_cpu_seconds``: wall time and the stepping thread's CPU time of
  every decode step of several short decode loops (one request each), for the
  latency ratio. They are reported, never asserted.

With ``watch`` in ARGS (sites: ``path`` and ``function``) it also counts how
often each site's function ran (``executed``), so a fix whose code never ran
is not mistaken for one shown harmless. With ``watch_decode`` in a model's spec
it runs one more, untimed decode loop after the timed ones and counts the calls of each
site's function during its decode steps (``decode_calls`` over
``decode_steps``): whether the rewritten code is on the path the latency
ratio measures.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import sys
import time
import traceback
from pathlib import Path

os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
# Let the OS place the engine's threads: on a shared machine a thread pinned to a
# busy core makes the latency numbers meaningless.
os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")

sys.path.append(str(Path(__file__).resolve().parent))  # models.py, after the vLLM under test


def plain(obj, depth: int = 0):
    """JSON-able structure of configuration objects (dataclasses, enums, dtypes, tensors)."""
    if depth > 12:
        return repr(obj)
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, enum.Enum):
        return f"{type(obj).__name__}.{obj.name}"
    if isinstance(obj, dict):
        return {str(k): plain(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = [plain(v, depth + 1) for v in obj]
        return sorted(items, key=repr) if isinstance(obj, (set, frozenset)) else items
    if hasattr(obj, "shape") and hasattr(obj, "dtype"):  # a tensor: its size, not its contents
        return {"__tensor__": list(obj.shape), "dtype": str(obj.dtype)}
    if dataclasses.is_dataclass(obj):
        out = {"__type__": type(obj).__name__}
        for f in dataclasses.fields(obj):
            out[f.name] = plain(getattr(obj, f.name), depth + 1)
        return out
    return repr(obj)


def kv_cache_record(engine) -> dict:
    vllm_config = engine.vllm_config
    core = engine.engine_core.engine_core  # InprocClient -> EngineCore
    sched_cfg = core.scheduler.kv_cache_config
    rec = {"scheduler": plain(sched_cfg), "groups": []}
    for g in sched_cfg.kv_cache_groups:
        spec = g.kv_cache_spec
        rec["groups"].append(
            {
                "spec_type": type(spec).__name__,
                "layers": list(g.layer_names),
                "block_size": spec.block_size,
                "page_size_bytes": spec.page_size_bytes,
                "max_memory_usage_bytes": spec.max_memory_usage_bytes(vllm_config),
            }
        )
    worker = core.model_executor.driver_worker
    worker = getattr(worker, "worker", worker)
    runner = getattr(worker, "model_runner", None)
    if runner is not None:
        if getattr(runner, "kv_cache_config", None) is not None:
            rec["runner"] = plain(runner.kv_cache_config)
        caches = getattr(runner, "kv_caches", None)
        if caches is not None:
            rec["tensors"] = plain(list(caches.values()) if isinstance(caches, dict) else list(caches))
        if hasattr(runner, "max_encoder_len"):
            rec["runner_max_encoder_len"] = runner.max_encoder_len
    return rec


def prompts_for(spec: dict) -> list:
    if spec["kind"] == "whisper":
        from models import synthetic_audio

        decoder = "<|startoftranscript|><|en|><|transcribe|><|notimestamps|>"
        return [
            {
                "encoder_prompt": {"prompt": "", "multi_modal_data": {"audio": synthetic_audio(seconds, tone=tone)}},
                "decoder_prompt": decoder,
            }
            for seconds, tone in ((2.0, 440.0), (3.5, 660.0), (1.0, 220.0))
        ]
    return list(spec["prompts"])


def decode_calls(engine, prompt, params, sites: list[dict]) -> tuple[dict[str, int], int]:
    """Calls of each site's function during the decode steps of one request (profiled, so not timed)."""
    w = Watch(sites)
    engine.add_request("watch-decode", prompt, params)
    steps = 0
    first = True
    while engine.has_unfinished_requests():
        if not first:
            w.start()
        engine.step()
        w.stop()
        steps += 0 if first else 1
        first = False
    return w.hits, steps


def decode_loop_seconds(engine, prompt, params, loops: int) -> tuple[list[list[float]], list[list[float]]]:
    """Wall time and CPU time of the stepping thread for each decode step (the first, prefill step
    excluded), one list per request.

    The thread's CPU time is not charged for waiting for a core, but it is not
    immune to other load: the CPU backend spins while it waits, and spinning
    counts as CPU time. (Process CPU time is worse: every worker thread spins.)
    On a shared machine read the best loop's wall time too.
    """
    wall: list[list[float]] = []
    cpu: list[list[float]] = []
    for i in range(loops):
        w: list[float] = []
        c: list[float] = []
        wall.append(w)
        cpu.append(c)
        engine.add_request(f"latency-{i}", prompt, params)
        first = True
        while engine.has_unfinished_requests():
            t0, c0 = time.perf_counter(), time.thread_time()
            engine.step()
            dt, dc = time.perf_counter() - t0, time.thread_time() - c0
            if not first:
                w.append(dt)
                c.append(dc)
            first = False
    return wall, cpu


def run_model(spec: dict) -> dict:
    from vllm import LLM, SamplingParams

    kwargs = dict(
        model=spec["model"],
        dtype=spec.get("dtype", "float32"),
        max_model_len=spec["max_model_len"],
        enforce_eager=True,
        seed=0,
    )
    if spec["kind"] == "whisper":
        kwargs["limit_mm_per_prompt"] = {"audio": 1}
    kwargs.update(spec.get("engine_args", {}))
    t0 = time.perf_counter()
    llm = LLM(**kwargs)
    init_s = time.perf_counter() - t0
    engine = llm.llm_engine
    params = SamplingParams(temperature=0.0, max_tokens=spec.get("max_tokens", 16), ignore_eos=True)
    prompts = prompts_for(spec)
    outs = llm.generate(prompts, params, use_tqdm=False)
    from vllm.platforms import current_platform

    rec = {
        "device_type": current_platform.device_type,
        "init_seconds": init_s,
        "outputs": [list(o.outputs[0].token_ids) for o in outs],
        "kv_cache": kv_cache_record(engine),
        "num_gpu_blocks": engine.vllm_config.cache_config.num_gpu_blocks,
        "max_num_encoder_input_tokens": getattr(
            engine.vllm_config.scheduler_config, "max_num_encoder_input_tokens", None
        ),
    }
    loop_params = SamplingParams(temperature=0.0, max_tokens=spec.get("latency_tokens", 12), ignore_eos=True)
    try:
        rec["step_seconds"], rec["step_cpu_seconds"] = decode_loop_seconds(
            engine, prompts[0], loop_params, spec.get("latency_loops", 5)
        )
    except Exception as e:  # latency is a report, not a verdict
        rec["step_seconds_error"] = f"{type(e).__name__}: {e}"
    if spec.get("watch_decode"):  # after the timed loops: profiling must not touch them
        rec["decode_calls"], rec["decode_steps"] = decode_calls(engine, prompts[0], loop_params, spec["watch_decode"])
    return rec


class Watch:
    """Counts calls of the functions holding ``sites`` (``{"path", "function"}``): was a rewritten site run?"""

    def __init__(self, sites: list[dict]):
        self.hits = {f"{s['path']}::{s['function']}": 0 for s in sites}
        self._wanted = [(s["path"], s["function"], f"{s['path']}::{s['function']}") for s in sites]
        self.active = False

    def _profile(self, frame, event, arg):
        if not self.active:
            # a thread started while watching keeps this profiler (Python 3.11 cannot
            # unset it from outside): it removes itself at its next event, so it cannot
            # slow down what is timed later
            sys.setprofile(None)
            return
        if event != "call":
            return
        code = frame.f_code
        for path, function, key in self._wanted:
            if code.co_filename.endswith(path) and function.endswith("." + code.co_qualname):
                self.hits[key] += 1

    def start(self) -> None:
        import threading

        self.active = True
        sys.setprofile(self._profile)
        threading.setprofile(self._profile)

    def stop(self) -> None:
        import threading

        self.active = False
        sys.setprofile(None)
        threading.setprofile(None)


def main(args_path: str, out_path: str) -> None:
    with open(args_path) as f:
        args = json.load(f)
    import vllm

    result = {"vllm_file": vllm.__file__, "models": {}}
    if args.get("watch"):
        w = Watch(args["watch"])
        w.start()
        result["executed"] = w.hits
    for name, spec in args["models"].items():
        try:
            result["models"][name] = run_model(spec)
        except Exception as e:
            result["models"][name] = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
