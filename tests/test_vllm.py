"""cachelint on real vLLM source (wheels from PyPI, cached outside the repo).

The seed: vLLM PRs #24866 and #24989 replaced four calls of
``MULTIMODAL_REGISTRY.get_encdec_max_encoder_len(model_config)`` with reads of
``scheduler_config.max_num_encoder_input_tokens``. cachelint must find exactly
those sites on 0.10.2 by analysis, class every fix unsafe because of the
``pooler_config`` part of the fill's guard, rewrite them on a copy without
touching anything else, and find nothing of the kind on 0.11.0 (which shipped
the upstream rewrite).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from . import helpers
from .helpers import REPO
from .vllm_source import vllm_source

# whole vLLM trees: each run in a process of its own, not in the test worker
run_cli = functools.partial(helpers.run_cli, in_process=False)

pytestmark = pytest.mark.vllm

SEED_CALL = "get_encdec_max_encoder_len"
SEED_FUNCTIONS = {
    "vllm.attention.layers.cross_attention._get_max_encoder_len",
    "vllm.v1.core.sched.scheduler.Scheduler.schedule",
    "vllm.v1.kv_cache_interface.CrossAttentionSpec.max_memory_usage_bytes",
    "vllm.v1.worker.gpu_model_runner.GPUModelRunner.__init__",
}
FILL = "vllm.config.VllmConfig.__post_init__"


def _json(cwd: Path, *args: str) -> list[dict]:
    proc = run_cli("check", "vllm", "--output-format", "json", *args, cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def v0102() -> Path:
    return vllm_source("0.10.2")


@pytest.fixture(scope="module")
def report_0102(v0102) -> list[dict]:
    return _json(v0102)


def _seed(findings: list[dict]) -> list[dict]:
    return [f for f in findings if f["code"] == "CL001" and SEED_CALL in f["message"]]


def test_no_parse_errors_on_real_tree(report_0102):
    assert [f for f in report_0102 if f["code"] == "CL000"] == []


def test_seed_sites_found_and_nothing_at_the_fill(report_0102):
    seed = _seed(report_0102)
    assert {f["function"] for f in seed} == SEED_FUNCTIONS
    assert len(seed) == 4
    assert all(f["function"] != FILL for f in report_0102 if f["code"] == "CL001")
    for f in seed:
        assert f["data"]["cached_attribute"] == "SchedulerConfig.max_num_encoder_input_tokens"
        assert f["data"]["fill"]["function"] == FILL
        for key in (
            "code",
            "path",
            "line",
            "column",
            "end_line",
            "end_column",
            "message",
            "function",
            "hot_path",
            "fix",
        ):
            assert key in f


def test_seed_fixes_are_unsafe_and_name_pooler_config(report_0102):
    for f in _seed(report_0102):
        assert f["fix"]["applicability"] == "unsafe", f
        assert "pooler_config" in f["message"]
        assert any("pooler_config" in r for r in f["data"]["residual_guard"])
        assert f["fix"]["replacement"].endswith("scheduler_config.max_num_encoder_input_tokens")


def test_seed_replacements_use_the_shortest_path_in_scope(report_0102):
    by_fn = {f["function"]: f["fix"]["replacement"] for f in _seed(report_0102)}
    assert (
        by_fn["vllm.v1.core.sched.scheduler.Scheduler.schedule"] == "self.scheduler_config.max_num_encoder_input_tokens"
    )
    # GPUModelRunner.__init__ binds a local `scheduler_config` before the call
    assert (
        by_fn["vllm.v1.worker.gpu_model_runner.GPUModelRunner.__init__"]
        == "scheduler_config.max_num_encoder_input_tokens"
    )
    assert (
        by_fn["vllm.attention.layers.cross_attention._get_max_encoder_len"]
        == "vllm_config.scheduler_config.max_num_encoder_input_tokens"
    )


def test_per_step_seed_sites_carry_their_chains(report_0102):
    by_fn = {f["function"]: f for f in _seed(report_0102)}
    sched = by_fn["vllm.v1.core.sched.scheduler.Scheduler.schedule"]
    assert sched["hot_path"] == ["vllm.v1.core.sched.scheduler.Scheduler.schedule"]
    cross = by_fn["vllm.attention.layers.cross_attention._get_max_encoder_len"]
    assert cross["hot_path"][-1] == "vllm.attention.layers.cross_attention._get_max_encoder_len"
    assert re.fullmatch(r".*\.<locals>\.CrossAttentionBuilder\.build", cross["hot_path"][0])
    # start-up code is not hot
    assert by_fn["vllm.v1.kv_cache_interface.CrossAttentionSpec.max_memory_usage_bytes"]["hot_path"] is None
    assert by_fn["vllm.v1.worker.gpu_model_runner.GPUModelRunner.__init__"]["hot_path"] is None


def test_findings_document_lists_every_cl001_finding(report_0102):
    """docs/findings/vllm-0.10.2.md must carry a verdict on exactly what CL001 reports."""
    doc = (REPO / "docs" / "findings" / "vllm-0.10.2.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"`(vllm/[\w/]+\.py):(\d+)`", doc))
    reported = {(f["path"], str(f["line"])) for f in report_0102 if f["code"] == "CL001"}
    assert listed == reported
    for path, line in reported:
        row = next(r for r in doc.splitlines() if f"`{path}:{line}`" in r)
        assert re.search(r"\b(accept|reject)\b", row, re.IGNORECASE), row


def _tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*.py"))}


@pytest.fixture(scope="module")
def fixed_copy(v0102, tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("vllm-0.10.2-fixed")
    shutil.copytree(v0102 / "vllm", dest / "vllm")
    proc = run_cli("check", "vllm", "--select", "CL001", "--fix", "--unsafe-fixes", cwd=dest)
    assert proc.returncode in (0, 1), proc.stderr
    assert "error" not in proc.stderr.lower(), proc.stderr
    return dest


def test_fix_rewrites_seed_sites_to_the_cached_attribute(v0102, fixed_copy):
    expectations = {
        "vllm/attention/layers/cross_attention.py": "return vllm_config.scheduler_config.max_num_encoder_input_tokens",
        "vllm/v1/core/sched/scheduler.py": "num_encoder_tokens = self.scheduler_config.max_num_encoder_input_tokens",
        "vllm/v1/kv_cache_interface.py": "max_encoder_len = vllm_config.scheduler_config.max_num_encoder_input_tokens",
        "vllm/v1/worker/gpu_model_runner.py": "self.max_encoder_len = scheduler_config.max_num_encoder_input_tokens",
    }
    for rel, line in expectations.items():
        text = (fixed_copy / rel).read_text(encoding="utf-8")
        assert line in text, rel
        assert SEED_CALL not in text, rel
    # the fill itself is untouched
    cfg = (fixed_copy / "vllm/config/__init__.py").read_text(encoding="utf-8")
    assert cfg == (v0102 / "vllm/config/__init__.py").read_text(encoding="utf-8")


def test_fix_removes_only_imports_it_left_unused(v0102, fixed_copy):
    cross = (fixed_copy / "vllm/attention/layers/cross_attention.py").read_text(encoding="utf-8")
    assert "MULTIMODAL_REGISTRY" not in cross
    kv = (fixed_copy / "vllm/v1/kv_cache_interface.py").read_text(encoding="utf-8")
    assert "MULTIMODAL_REGISTRY" not in kv
    # the scheduler still uses the registry as a default argument: import kept
    sched = (fixed_copy / "vllm/v1/core/sched/scheduler.py").read_text(encoding="utf-8")
    assert "from vllm.multimodal import MULTIMODAL_REGISTRY" in sched
    # every other import line of the changed files is intact
    for rel in ("vllm/attention/layers/cross_attention.py", "vllm/v1/kv_cache_interface.py"):
        before = [ln for ln in (v0102 / rel).read_text().splitlines() if ln.startswith(("import ", "from "))]
        after = [ln for ln in (fixed_copy / rel).read_text().splitlines() if ln.startswith(("import ", "from "))]
        assert [ln for ln in before if "MULTIMODAL_REGISTRY" not in ln] == after


def test_fixed_tree_compiles_and_only_reported_files_changed(v0102, fixed_copy, report_0102):
    before = _tree_digest(v0102)
    after = _tree_digest(fixed_copy)
    changed = {k for k in before if before[k] != after.get(k)}
    reported = {f["path"] for f in report_0102 if f["code"] == "CL001" and f["fix"]}
    assert changed == reported
    for rel in changed:
        compile((fixed_copy / rel).read_text(encoding="utf-8"), rel, "exec")


def test_second_fix_changes_nothing(fixed_copy):
    before = _tree_digest(fixed_copy)
    proc = run_cli("check", "vllm", "--select", "CL001", "--fix", "--unsafe-fixes", cwd=fixed_copy)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _tree_digest(fixed_copy) == before
    assert _seed(_json(fixed_copy, "--select", "CL001")) == []


def test_diff_mode_writes_nothing_and_shows_the_seed_rewrite(v0102, tmp_path):
    shutil.copytree(v0102 / "vllm", tmp_path / "vllm")
    before = _tree_digest(tmp_path)
    proc = run_cli("check", "vllm", "--select", "CL001", "--diff", "--unsafe-fixes", cwd=tmp_path)
    assert proc.returncode == 1
    assert "+                    num_encoder_tokens = self.scheduler_config.max_num_encoder_input_tokens" in proc.stdout
    assert _tree_digest(tmp_path) == before


def test_0_11_0_has_no_seed_finding():
    report = _json(vllm_source("0.11.0"))
    assert [f for f in report if f["code"] == "CL000"] == []
    assert _seed(report) == []
    assert [f for f in report if f["code"] == "CL001" and SEED_CALL in json.dumps(f)] == []


# ----- cachelint.lock on real vLLM: the 0.13.0 regression ------------------------------
SEED_READERS = {
    ("vllm.attention.layers.cross_attention", "_get_max_encoder_len"),
    ("vllm.v1.core.sched.scheduler", "Scheduler.schedule"),
    ("vllm.v1.kv_cache_interface", "CrossAttentionSpec.max_memory_usage_bytes"),
    ("vllm.v1.worker.gpu_model_runner", "GPUModelRunner.__init__"),
}


def _seed_invariant(lock_path: Path) -> dict:
    import tomllib

    lock = tomllib.loads(lock_path.read_text(encoding="utf-8"))
    (inv,) = [i for i in lock["invariant"] if i["attribute"] == "SchedulerConfig.max_num_encoder_input_tokens"]
    return inv


def test_fix_writes_the_seed_invariant_to_the_lock(fixed_copy):
    inv = _seed_invariant(fixed_copy / "cachelint.lock")
    assert inv["callee"].endswith("MultiModalRegistry.get_encdec_max_encoder_len")
    assert inv["arguments"] == ["self.model_config"]
    assert inv["fill"] == {"module": "vllm.config", "function": "VllmConfig.__post_init__", "at_construction": True}
    assert "not self.model_config.pooler_config" in inv["guard"]
    assert "self.model_config.is_encoder_decoder" in inv["guard"]
    assert {(r["module"], r["function"]) for r in inv["readers"]} == SEED_READERS
    # no line numbers anywhere: they drift
    assert not re.search(r"\bline\b|:\d+", (fixed_copy / "cachelint.lock").read_text())


def test_fixed_tree_satisfies_its_own_lock(fixed_copy):
    proc = run_cli("check", "vllm", "--select", "CL003,CL004", "--output-format", "json", cwd=fixed_copy)
    assert proc.returncode == 0, proc.stdout[:2000] + proc.stderr
    assert run_cli("lock", "vllm", "--check", cwd=fixed_copy).returncode == 0


def _with_lock(version: str, fixed_copy: Path, tmp_path: Path) -> Path:
    shutil.copy(fixed_copy / "cachelint.lock", tmp_path / "cachelint.lock")
    (tmp_path / "vllm").symlink_to(vllm_source(version) / "vllm", target_is_directory=True)
    return tmp_path


def test_lock_holds_on_0_11_0(fixed_copy, tmp_path):
    work = _with_lock("0.11.0", fixed_copy, tmp_path)
    proc = run_cli("check", "vllm", "--select", "CL003", "--output-format", "json", cwd=work)
    assert proc.returncode == 0, proc.stdout[:2000] + proc.stderr
    assert json.loads(proc.stdout) == []


def test_lock_catches_the_0_13_0_regression(fixed_copy, tmp_path):
    work = _with_lock("0.13.0", fixed_copy, tmp_path)
    proc = run_cli("check", "vllm", "--select", "CL003", "--output-format", "json", cwd=work)
    assert proc.returncode == 1, proc.stderr
    seed = [
        f for f in json.loads(proc.stdout) if f["data"]["attribute"] == "SchedulerConfig.max_num_encoder_input_tokens"
    ]
    fills = [f for f in seed if f["data"]["role"] == "fill"]
    assert len(fills) == 1
    assert "`vllm.config:VllmConfig.__post_init__` is gone" in fills[0]["message"]
    assert "vllm.v1.core.sched.scheduler:Scheduler.schedule" in fills[0]["message"]
    readers = {f["function"] for f in seed if f["data"]["role"] == "reader"}
    assert "vllm.v1.core.sched.scheduler.Scheduler.schedule" in readers
    sched = next(f for f in seed if f["function"] == "vllm.v1.core.sched.scheduler.Scheduler.schedule")
    assert sched["path"] == "vllm/v1/core/sched/scheduler.py"
    assert "max_num_batched_tokens" in sched["message"]  # what the readers get instead


def test_scan_positions_pick_what_a_scan_of_every_call_picks(v0102, monkeypatch):
    """The cache-site scans visit the calls each file's index lists by key
    (index.scan_keys), computed in the indexing workers: on the whole tree,
    exactly the calls, in the order, that a scan of every call picks."""
    from cachelint import api
    from cachelint.config import Config
    from cachelint.facts.cachesites import _fills, _named
    from cachelint.index.scans import fills_site, function_imports, scan_hits, use_keys

    monkeypatch.chdir(v0102)
    analysis, _ = api.analyse(["vllm"], Config(), jobs=2)
    p = analysis.program
    by_name = analysis.cache_analysis.by_name
    every = [(f, c) for f in p.functions.values() if not f.under_type_checking for c in f.calls]
    assert len(every) > 50_000 and len(by_name) > 20

    def ids(pairs) -> list:
        return [(id(f), id(c)) for f, c in pairs]

    fills = [(f, c) for f, c in every if fills_site(c)]
    assert len(fills) > 1000
    assert ids(scan_hits(p.functions, p.indexes, _fills)) == ids(fills)

    def named(f, c) -> bool:
        keys = use_keys(c.func, function_imports(f.assigns), p.modules_by_path[f.path].imports)
        return any(k in by_name for k in keys)

    uses = [(f, c) for f, c in every if named(f, c)]
    assert len(uses) > 100
    assert ids(scan_hits(p.functions, p.indexes, lambda scans: _named(scans, by_name))) == ids(uses)
