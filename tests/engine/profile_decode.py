"""A workload for `cachelint profile`: decode steps of the tiny models on the engine (CPU, or CUDA where present).

    cachelint profile VLLM_DIR --step '*.LLMEngine.step' -o prof.json -- tests/engine/profile_decode.py [MODEL ...]

MODEL is ``llama`` (a tiny decoder) or ``whisper`` (a tiny encoder-decoder),
both by default. For each model, the engine is built (start-up: not a step),
then ``REQUESTS`` requests of ``TOKENS`` greedy tokens each run one after
another through ``LLMEngine.step`` (the steps), and the mean wall time of a
step is printed (what the profiler's overhead is measured on). The engine core runs in this
process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``), so the profiler sees it.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
sys.path.append(str(Path(__file__).resolve().parent))  # models.py, after the vLLM under test

REQUESTS = 4
TOKENS = 16
PROMPTS = ["the cache reads", "a scheduler frees the tokens", "every request measures one step per step."]


def run(kind: str) -> int:
    from models import synthetic_audio, tiny_llama, tiny_whisper
    from vllm import LLM, SamplingParams

    if kind == "whisper":
        llm = LLM(
            model=str(tiny_whisper()),
            dtype="float32",
            max_model_len=448,
            enforce_eager=True,
            seed=0,
            limit_mm_per_prompt={"audio": 1},
        )
        prompt: object = {
            "encoder_prompt": {"prompt": "", "multi_modal_data": {"audio": synthetic_audio(2.0)}},
            "decoder_prompt": "<|startoftranscript|><|en|><|transcribe|><|notimestamps|>",
        }
        prompts = [prompt] * REQUESTS
    else:
        llm = LLM(model=str(tiny_llama()), dtype="float32", max_model_len=256, enforce_eager=True, seed=0)
        prompts = [PROMPTS[i % len(PROMPTS)] for i in range(REQUESTS)]
    engine = llm.llm_engine
    params = SamplingParams(temperature=0.0, max_tokens=TOKENS, ignore_eos=True)
    steps = 0
    start = time.perf_counter()
    for i, p in enumerate(prompts):
        engine.add_request(f"{kind}-{i}", p, params)
        while engine.has_unfinished_requests():
            engine.step()
            steps += 1
    seconds = time.perf_counter() - start
    print(f"{kind}: {steps} engine steps, {seconds * 1e3 / steps:.2f} ms per step")
    return steps


if __name__ == "__main__":
    for kind in sys.argv[1:] or ["llama", "whisper"]:
        run(kind)
