"""The sglang and lmdeploy presets: chosen by ``preset = "auto"`` from the
top-level package analysed; on the real source (slow tier, downloaded once by
tests/vllm_source.py) every hot-root pattern matches something and no root
is start-up code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cachelint.api import check, hot_paths_report
from cachelint.config import Config, available_presets, load_preset, resolve_presets

from .vllm_source import LMDEPLOY_VERSION, SGLANG_VERSION, package_source

ENGINES = {"sglang": SGLANG_VERSION, "lmdeploy": LMDEPLOY_VERSION}


def test_engine_presets_are_data_and_auto_picks_them_by_top_level_package():
    assert {"python", "vllm", "sglang", "lmdeploy"} <= set(available_presets())
    for name in ENGINES:
        data = load_preset(name)
        assert data["preset"] == {"name": name, "detect": [name]}
        assert data["hot-roots"] and data["expensive-calls"]
        cfg = resolve_presets(Config(), {name, "tests"})
        assert cfg.active_presets == ("python", name)
        assert len(cfg.roots) == len(data["hot-roots"]) + len(load_preset("python").get("hot-roots", []))
    assert resolve_presets(Config(), {"mypkg"}).active_presets == ("python",)
    assert resolve_presets(Config(preset="sglang,lmdeploy"), set()).active_presets == ("python", "sglang", "lmdeploy")


def test_auto_preset_on_an_sglang_shaped_tree_finds_work_on_its_hot_path(tmp_path):
    # a namespace directory below the top package, as SGLang ships them
    files = {
        "sglang/__init__.py": "",
        "sglang/srt/managers/scheduler.py": (
            "import inspect\n\n\n"
            "class Scheduler:\n"
            "    def __init__(self, worker):\n"
            "        self.worker = worker\n\n"
            "    def run_batch(self, batch):\n"
            "        params = inspect.signature(self.worker.forward).parameters\n"
            "        return self.worker.forward(batch, **({'x': 1} if 'x' in params else {}))\n"
        ),
    }
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    res = check([str(tmp_path)], Config())
    assert res.config.active_presets == ("python", "sglang")
    assert [(f.code, f.function, f.data.get("hot_kind")) for f in res.findings] == [
        ("CL002", "sglang.srt.managers.scheduler.Scheduler.run_batch", "per-step")
    ]
    assert res.hot is not None and res.hot.functions == 1 and not res.hot.vacuous


# start-up code: never a hot root (SGLang's per-step `init_new` and
# `init_forward_metadata*` are the exceptions to the `init_` prefix)
STARTUP = re.compile(
    r"\.(__init__|__post_init__|(?!init_new$|init_forward_metadata)_?init_\w*|load_model|warmup|\w*capture\w*|profile_run)$"
)


@pytest.mark.slow
@pytest.mark.parametrize("engine", list(ENGINES))
def test_every_pattern_matches_on_the_real_source_and_no_root_is_startup(engine):
    src = package_source(engine, ENGINES[engine]) / engine
    report = hot_paths_report([str(src)], Config())
    assert report.presets == ("python", engine)
    # the engine preset's own patterns (the python preset's web-handler roots are generic)
    own = {r["pattern"] for r in load_preset(engine)["hot-roots"] if "pattern" in r}
    unmatched = [r.pattern for r in report.roots if r.pattern in own and not r.functions]
    assert unmatched == []
    # by name; a route found by its decorator runs per request whatever it is called
    # (an `/init_weights_update_group` endpoint is a request handler)
    startup = [qn for r in report.roots if r.pattern in own for qn, _ in r.functions if STARTUP.search(qn)]
    assert startup == []
    assert report.coverage.functions > report.coverage.roots


@pytest.mark.slow
def test_sglang_files_get_package_module_names():
    from cachelint.discover.walk import discover

    src = package_source("sglang", SGLANG_VERSION)
    files = discover([str(src / "sglang")])
    bare = [f for f in files if not f.module.startswith("sglang")]
    # only scripts under directories that cannot be packages (a dash in the
    # name, a vendored project with its own setup.py, a dot-directory)
    assert all(re.search(r"/[^/]*[-.][^/]*/|vmoba_attn/", Path(f.path).as_posix()) for f in bare), bare
    assert len(bare) < 20 < len(files)
