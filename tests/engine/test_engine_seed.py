"""Seed vLLM era (0.10.x, the code of PRs #24866/#24989): the rewritten values on a real VllmConfig.

No engine of that era runs Whisper on this CPU, but its configuration code runs
(``nox -s engine_seed`` installs the 0.10.2 wheel with ``--no-deps`` beside the
CPU torch, plus the few packages that code imports). The probe builds real
``VllmConfig`` objects with ``EngineArgs(...).create_engine_config()`` and
evaluates, in the original and in the rewritten copy, the value computed at each
rewritten seed site (see ``probe_seed.OBSERVES``). For each configuration it
also evaluates the residual guard cachelint reported for the site. The tests
require:

* equal values wherever the reported guard holds: the tiny Whisper, an
  encoder-decoder model without a pooler, at all four sites;
* a different value wherever it does not: a decoder-only model (where the
  guard's ``is_encoder_decoder`` is not implied at the site) and Whisper run as
  a pooling model (``pooler_config`` set), which shows the fix is unsafe for a
  reason;
* and a deliberately wrong rewrite (reading ``max_num_batched_tokens``) to be
  caught.
"""

from __future__ import annotations

import sys

import pytest

from .conftest import note
from .harness import HERE, plant, rewrite, run_probe, vllm_version

VERSION = vllm_version()

pytestmark = pytest.mark.skipif(
    VERSION is None or not VERSION.startswith("0.10."),
    reason=(
        f"the seed era needs vLLM 0.10.x in this environment (found {VERSION}); run `nox -s engine_seed`"
        if VERSION
        else "vLLM is not installed in this environment; run `nox -s engine_seed`"
    ),
)

# The upstream rewrite's call, found by cachelint's analysis; the tests only
# select the findings about it from the report.
SEED_CALL = "get_encdec_max_encoder_len"


@pytest.fixture(scope="module")
def observes():
    sys.path.insert(0, str(HERE))
    try:
        import probe_seed  # only its table of observables: nothing of vLLM is imported here
    finally:
        sys.path.remove(str(HERE))
    return probe_seed.OBSERVES


@pytest.fixture(scope="module")
def seed_sites(findings, observes):
    """Observable name -> the seed finding at the function it observes."""
    seed = [f for f in findings if f["code"] == "CL001" and SEED_CALL in f["message"] and f["fix"]]
    by_fn = {f["function"]: f for f in seed}
    sites = {}
    for name, functions in observes.items():
        hit = [by_fn[fn] for fn in functions if fn in by_fn]
        if hit:
            sites[name] = hit[0]
    return sites


@pytest.fixture(scope="module")
def args(tiny_models, seed_sites):
    return {
        "configs": {
            "whisper": {"model": tiny_models["whisper"]},
            "decoder_only": {"model": tiny_models["llama"], "max_model_len": 512},
            "whisper_pooling": {
                "model": tiny_models["whisper"],
                "engine_args": {"runner": "pooling", "enable_prefix_caching": False},
            },
        },
        "guards": {name: f["data"]["residual_guard"] for name, f in seed_sites.items()},
    }


@pytest.fixture(scope="module")
def unsafe_tier(vllm_pkg, findings, tmp_path_factory):
    t = rewrite(vllm_pkg, tmp_path_factory.mktemp("vllm-unsafe"), "unsafe", findings)
    note("seed", t.summary())
    return t


@pytest.fixture(scope="module")
def original(args, tmp_path_factory):
    return run_probe("probe_seed.py", args, tmp_path_factory.mktemp("probe-original"), None)


@pytest.fixture(scope="module")
def rewritten(args, unsafe_tier, tmp_path_factory):
    return run_probe("probe_seed.py", args, tmp_path_factory.mktemp("probe-unsafe"), unsafe_tier.root)


def test_tiers_rewrote_sites(vllm_pkg, findings, unsafe_tier, tmp_path_factory):
    assert unsafe_tier.sites, "cachelint applied no fix: an unchanged copy proves nothing"
    safe = rewrite(vllm_pkg, tmp_path_factory.mktemp("vllm-safe"), "safe", findings)
    note("seed", safe.summary())
    assert len(unsafe_tier.sites) > len(safe.sites)


def test_every_seed_site_is_rewritten_and_observed(seed_sites, observes, unsafe_tier):
    rewritten_fns = {f["function"] for f in unsafe_tier.sites}
    observed = {name for name in observes if name != "fill_max_num_encoder_input_tokens"}
    assert set(seed_sites) == observed, f"seed sites found: {sorted(seed_sites)}"
    for name, f in seed_sites.items():
        assert f["function"] in rewritten_fns, name
        assert f["fix"]["applicability"] == "unsafe"
    unobserved = sorted(rewritten_fns - {fn for fns in observes.values() for fn in fns})
    note(
        "seed",
        f"{len(seed_sites)} seed sites observed; rewritten but not observable from the configuration: "
        f"{len(unobserved)} ({', '.join(unobserved)})",
    )


def _values(result: dict, config: str) -> dict:
    c = result["configs"][config]
    assert "config_error" not in c, c.get("traceback")
    return c


def test_original_evaluates_every_site(original, seed_sites):
    for config in original["configs"]:
        c = _values(original, config)
        for name in seed_sites:
            assert "value" in c["values"][name], (config, name, c["values"][name].get("traceback"))


def test_equal_values_where_the_reported_guard_holds(original, rewritten, seed_sites):
    whisper = _values(original, "whisper")
    assert whisper["is_encoder_decoder"] and not whisper["pooler_config"]
    assert all(whisper["guard_holds"][name] for name in seed_sites), whisper["guard_holds"]
    checked = 0
    for config in original["configs"]:
        o, r = _values(original, config), _values(rewritten, config)
        for name in seed_sites:
            if o["guard_holds"][name]:
                assert "value" in r["values"][name], r["values"][name].get("traceback")
                assert r["values"][name]["value"] == o["values"][name]["value"], (config, name)
                checked += 1
    assert checked >= len(seed_sites)
    note(
        "seed",
        f"equal values at {checked} (config, site) pairs inside the reported guard; "
        f"Whisper encoder length {whisper['values']['cross_attention_max_encoder_len']['value']}",
    )


def test_different_values_where_the_reported_guard_fails(original, rewritten, seed_sites):
    outside = 0
    for config in ("decoder_only", "whisper_pooling"):
        o, r = _values(original, config), _values(rewritten, config)
        failing = [name for name in seed_sites if not o["guard_holds"][name]]
        assert failing, f"{config} is inside every reported guard: it shows nothing"
        for name in failing:
            before, after = o["values"][name].get("value"), r["values"][name].get("value")
            assert before != after, f"{config}/{name}: the unsafe rewrite gives the same value {before!r}"
            note("seed", f"{config} {name}: original {before!r}, unsafe rewrite {after!r}")
            outside += 1
    pooling = _values(original, "whisper_pooling")
    assert pooling["pooler_config"] and not any(pooling["guard_holds"].values())
    assert outside >= len(seed_sites) + 1


def test_planted_wrong_rewrite_is_caught(vllm_pkg, findings, args, original, tmp_path_factory):
    """A rewrite that changes behaviour must make the comparison fail."""
    t = rewrite(vllm_pkg, tmp_path_factory.mktemp("vllm-planted"), "unsafe", findings)
    cross = next(f for f in t.sites if f["function"].endswith("._get_max_encoder_len"))
    plant(
        t.root,
        cross["path"],
        "scheduler_config.max_num_encoder_input_tokens",
        "scheduler_config.max_num_batched_tokens",
    )
    planted = run_probe("probe_seed.py", args, tmp_path_factory.mktemp("probe-planted"), t.root)
    o = _values(original, "whisper")["values"]["cross_attention_max_encoder_len"]["value"]
    p = _values(planted, "whisper")["values"]["cross_attention_max_encoder_len"]["value"]
    assert o != p, "the planted rewrite went unnoticed"
