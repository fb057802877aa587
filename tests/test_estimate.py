"""Each finding's estimated time per step: cost per call x calls per run x runs per step."""

from __future__ import annotations

import json
import textwrap

import pytest

from cachelint.config import ConfigError, min_cost_setting, parse_time
from cachelint.facts.timing import cost_table, format_seconds, kind_seconds

from .helpers import run_cli

PYPROJECT = """
[tool.cachelint]
preset = "none"
hot-roots = [
    { pattern = "*.Runner.step", kind = "per-step" },
    { pattern = "*.Layer.forward", kind = "per-layer" },
    { pattern = "*.Model.forward", kind = "per-step" },
]
extend-compile-decorators = ["compiled_model"]
expensive-calls = [
    { pattern = "ext.slow_lookup", kind = "registry", time = "200us" },
    { pattern = "ext.fast_lookup", kind = "registry", time = "2us" },
    { pattern = "ext.device_query", kind = "device" },
]
"""

ENGINE = """
import ext


def compiled_model(cls):
    return cls


class Runner:
    def step(self):
        a = ext.slow_lookup("x")
        for _ in range(3):
            b = ext.fast_lookup("y")
        return a, b


class Layer:
    def forward(self, x):
        return ext.fast_lookup("z")


@compiled_model
class Model:
    def forward(self, x):
        return inner()


def inner():
    return ext.device_query()
"""


def _project(tmp_path, extra: str = ""):
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT) + extra)
    (tmp_path / "engine.py").write_text(textwrap.dedent(ENGINE).lstrip())
    (tmp_path / "ext.py").write_text("def slow_lookup(k): ...\ndef fast_lookup(k): ...\ndef device_query(): ...\n")
    return tmp_path


def _findings(work, *args: str) -> dict:
    proc = run_cli("check", ".", "--output-format", "json", "--no-cache", *args, cwd=work)
    assert proc.returncode in (0, 1), proc.stderr
    return {f["line"]: f for f in json.loads(proc.stdout)}


def test_estimate_is_cost_per_call_times_calls_per_run_times_runs_per_step(tmp_path):
    got = _findings(_project(tmp_path))
    loop = float(cost_table()["loop"]["iterations"])
    per_layer = float(cost_table()["frequency"]["per-layer"]["runs"])
    slow = got[10]["data"]["estimate"]
    assert slow["per_call_seconds"] == pytest.approx(200e-6)  # the entry's own time
    assert slow["per_step_seconds"] == pytest.approx(200e-6) and slow["frequency"] == "per-step"
    fast = got[12]["data"]["estimate"]
    assert fast["calls_per_run"] == loop  # in a loop: the loop count
    assert fast["per_step_seconds"] == pytest.approx(2e-6 * loop, rel=1e-2)
    layer = got[18]["data"]["estimate"]
    assert layer["runs_per_step"] == per_layer
    assert layer["per_step_seconds"] == pytest.approx(2e-6 * per_layer, rel=1e-2)
    # no time in the entry: its kind's calibrated time
    device = got[28]
    assert device["data"]["estimate"]["per_call_seconds"] == pytest.approx(kind_seconds("device")[0], rel=1e-2)


def test_code_reached_only_through_a_compiled_region_says_so_and_ranks_lower(tmp_path):
    got = _findings(_project(tmp_path))
    device = got[28]["data"]["estimate"]
    assert device["traced"] is True
    assert device["rank_seconds"] < device["per_step_seconds"]
    assert "compiled by torch.compile" in device["text"]
    assert all(not f["data"]["estimate"]["traced"] for line, f in got.items() if line != 28)


def test_a_function_also_reached_eagerly_is_not_traced(tmp_path):
    work = _project(tmp_path)
    (work / "engine.py").write_text(
        (work / "engine.py").read_text().replace('return ext.fast_lookup("z")', "return inner()")
    )
    got = _findings(work)
    device = got[28]["data"]["estimate"]
    assert device["traced"] is False and device["frequency"] == "per-layer"


def test_a_hot_root_only_a_compiled_region_calls_is_traced(tmp_path):
    """A per-layer root pattern matches a block's forward that only the
    compiled model calls: its Python runs per step only in eager mode."""
    (tmp_path / "pyproject.toml").write_text(
        textwrap.dedent(PYPROJECT).replace(
            '{ pattern = "*.Model.forward", kind = "per-step" },',
            '{ pattern = "*.Model.forward", kind = "per-step" },\n    { pattern = "*.Block.forward", kind = "per-layer" },',
        )
    )
    (tmp_path / "ext.py").write_text("def device_query(): ...\ndef slow_lookup(k): ...\ndef fast_lookup(k): ...\n")
    (tmp_path / "engine.py").write_text(
        textwrap.dedent(
            """
            import ext


            def compiled_model(cls):
                return cls


            class Block:
                def forward(self, x):
                    return ext.device_query()


            class Eager:
                def forward(self, x):
                    return ext.device_query()


            @compiled_model
            class Model:
                def __init__(self):
                    self.block = Block()

                def forward(self, x):
                    return self.block.forward(x)


            class Runner:
                def __init__(self):
                    self.eager = Eager()

                def step(self):
                    return self.eager.forward(1)
            """
        ).lstrip()
    )
    got = _findings(tmp_path)
    block, eager = got[10]["data"]["estimate"], got[15]["data"]["estimate"]
    assert block["traced"] is True and block["rank_seconds"] < block["per_step_seconds"]
    assert eager["traced"] is False


OWNED = """
import ext


def compiled_model(cls):
    return cls


def make_layers(n, build):
    return [build() for _ in range(n)]


class Layer:
    def forward(self, x):
        return ext.device_query()


@compiled_model
class Model:
    def __init__(self):
        self.layers = make_layers(2, lambda: Layer())

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
"""


def _owned_project(tmp_path, extra: str = ""):
    (tmp_path / "pyproject.toml").write_text(
        textwrap.dedent(PYPROJECT).replace('{ pattern = "*.Model.forward", kind = "per-step" },', "")
    )
    (tmp_path / "ext.py").write_text("def device_query(): ...\ndef slow_lookup(k): ...\ndef fast_lookup(k): ...\n")
    (tmp_path / "engine.py").write_text(textwrap.dedent(OWNED).lstrip() + extra)
    return _findings(tmp_path)


def test_the_forward_of_a_module_only_a_compiled_module_builds_is_traced(tmp_path):
    """A per-layer root pattern matches the forward of layers that only the
    compiled model builds (through a factory and a lambda); the call graph
    does not follow `layer(x)` over the untyped list, but ownership says
    where that forward runs."""
    layer = _owned_project(tmp_path)[14]
    assert layer["data"]["estimate"]["traced"] is True
    assert "compiled by torch.compile" in layer["data"]["estimate"]["text"]


def test_a_module_also_built_outside_compiled_modules_is_not_traced(tmp_path):
    extra = "\n\nclass Runner:\n    def step(self):\n        return Layer().forward(1)\n"
    layer = _owned_project(tmp_path, extra)[14]
    assert layer["data"]["estimate"]["traced"] is False


def test_text_ranks_by_estimated_time_per_step_and_shows_the_estimate(tmp_path):
    work = _project(tmp_path)
    text = run_cli("check", ".", "--no-cache", cwd=work).stdout
    heads = [line for line in text.splitlines() if line.startswith("engine.py:")]
    order = [int(h.split(":")[1]) for h in heads]
    # 200 us per step, then 2 us x 32 layers, then 2 us x the loop count, then the traced call
    assert order == [10, 18, 12, 28], text
    assert text.count("  = estimate: ~") == 4


def test_frequency_is_configurable(tmp_path):
    work = _project(tmp_path, "\n[tool.cachelint.frequency]\nper-layer = 80\n")
    got = _findings(work)
    assert got[18]["data"]["estimate"]["runs_per_step"] == 80
    bad = _project(tmp_path, "\n[tool.cachelint.frequency]\nper-epoch = 3\n")
    proc = run_cli("check", ".", "--no-cache", cwd=bad)
    assert proc.returncode == 2 and "per-epoch" in proc.stderr


def test_min_cost_as_a_time_drops_findings_estimated_below_it(tmp_path):
    work = _project(tmp_path)
    everything = _findings(work)
    above = _findings(work, "--min-cost", "50us")
    assert set(above) == {k for k, f in everything.items() if f["data"]["estimate"]["per_step_seconds"] >= 50e-6}
    assert 10 in above and 12 not in above
    (work / "pyproject.toml").write_text(
        textwrap.dedent(PYPROJECT).replace('preset = "none"', 'preset = "none"\nmin-cost = "50us"')
    )
    assert set(_findings(work)) == set(above)
    proc = run_cli("check", ".", "--min-cost", "fast", cwd=work)
    assert proc.returncode == 2 and "time per step" in proc.stderr


def test_time_parsing_and_formatting():
    assert parse_time("20us") == pytest.approx(20e-6)
    assert parse_time("1.5 ms") == pytest.approx(1.5e-3)
    assert parse_time("300ns") == pytest.approx(300e-9)
    assert parse_time("µs") is None and parse_time("fast") is None and parse_time("-1ms") is None
    assert min_cost_setting("high", "x") == ("high", None)
    assert min_cost_setting("10us", "x") == ("low", pytest.approx(10e-6))
    with pytest.raises(ConfigError):
        min_cost_setting("medium", "x")
    assert format_seconds(1.23e-6) == "1.2 µs"
    assert format_seconds(38e-6) == "38 µs"
    assert format_seconds(1.3e-3) == "1.3 ms"
    assert format_seconds(120e-9) == "120 ns"


def test_every_catalog_kind_of_the_presets_has_a_calibrated_time():
    from cachelint.config import available_presets, load_preset

    kinds = {e["kind"] for n in available_presets() for e in load_preset(n).get("expensive-calls", []) if "kind" in e}
    missing = sorted(k for k in kinds if k != "declared-pure" and k not in cost_table()["kinds"])
    assert not missing


def test_every_measured_catalog_entry_is_an_entry_of_a_preset_of_its_kind():
    from cachelint.config import available_presets, load_preset

    kinds = {
        e["pattern"]: e.get("kind")
        for n in available_presets()
        for e in load_preset(n).get("expensive-calls", [])
        if "pattern" in e
    }
    entries = cost_table().get("entries", {})
    assert entries, "calibrate_cost.py measured no catalog entry"
    for pattern, row in entries.items():
        assert kinds.get(pattern) == row["kind"], pattern
        assert row["seconds"] > 0 and row["evidence"]


def test_a_call_of_a_measured_entry_is_priced_by_its_measurement_not_its_kind(monkeypatch):
    from cachelint import api
    from cachelint.config import CatalogEntry, Config, HotRoot
    from cachelint.facts import timing

    table = dict(cost_table())
    table["entries"] = {"ext.device_query": {"kind": "device", "seconds": 3e-3, "evidence": "a test"}}
    monkeypatch.setattr(timing, "cost_table", lambda: table)
    sources = {
        "ext.py": "def device_query(): ...\ndef other_query(): ...\n",
        "engine.py": "import ext\n\nclass Runner:\n    def step(self):\n"
        "        return ext.device_query(), ext.other_query()\n",
    }
    config = Config(
        preset="none",
        hot_roots=(HotRoot("*.Runner.step", "per-step"),),
        expensive_calls=(CatalogEntry("ext.device_query", "device"), CatalogEntry("ext.other_query", "device")),
    )
    found = {f.span.column: f.data["estimate"] for f in api.lint_sources(sources, config).findings}
    measured, other = found[15], found[35]
    assert measured["per_call_seconds"] == pytest.approx(3e-3)
    assert "measured on real calls of its catalog entry `ext.device_query`" in measured["basis"]
    assert other["per_call_seconds"] == pytest.approx(kind_seconds("device")[0])  # its kind's


def test_a_site_reached_through_calls_under_branches_counts_half_per_branch(tmp_path):
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT))
    (tmp_path / "ext.py").write_text("def slow_lookup(k): ...\ndef fast_lookup(k): ...\ndef device_query(): ...\n")
    engine = """
    import ext


    class Runner:
        def step(self, batch):
            if batch.prefill:
                self.prepare(batch)
            if batch.spec:
                if batch.draft:
                    self.draft(batch)
            self.always(batch)
            return batch

        def prepare(self, batch):
            return ext.slow_lookup("p")

        def draft(self, batch):
            return ext.slow_lookup("d")

        def always(self, batch):
            return ext.slow_lookup("a")
    """
    (tmp_path / "engine.py").write_text(textwrap.dedent(engine).lstrip())
    got = {f["function"].rsplit(".", 1)[-1]: f["data"]["estimate"] for f in _findings(tmp_path).values()}
    assert got["always"]["reach"] == 1 and got["always"]["per_step_seconds"] == pytest.approx(200e-6)
    assert got["prepare"]["reach"] == 0.5 and got["prepare"]["per_step_seconds"] == pytest.approx(100e-6)
    assert got["draft"]["reach"] == 0.25  # two branches around its call
    assert "reached through a call under a branch" in got["prepare"]["text"]


def test_measuring_some_baselines_replaces_only_their_lines_and_describes_them():
    import importlib.util
    import sys

    from .helpers import REPO

    spec = importlib.util.spec_from_file_location("calibrate_cost", REPO / "benchmarks" / "calibrate_cost.py")
    assert spec is not None and spec.loader is not None
    calib = importlib.util.module_from_spec(spec)
    sys.modules["calibrate_cost"] = calib  # dataclasses look their module up
    try:
        spec.loader.exec_module(calib)
    finally:
        del sys.modules["calibrate_cost"]
    old = textwrap.dedent(
        """\
        # cachelint cost calibration
        #   python benchmarks/calibrate_cost.py --toml x
        # [baseline] holds ordinary operations:
        #   python-call  a call of a small Python function
        # [kinds.<kind>] holds ...

        [baseline]
        attribute = 7e-09
        cache-wrap = 9e-06
        python-call = 2.8e-08

        [kinds.io]
        seconds = 1e-05
        """
    )
    new = "# head\n#   cache-wrap   applying functools.lru_cache to a function\n\n[baseline]\ncache-wrap = 1.1e-06\n"
    merged = calib.merge_baselines(
        old, new, {"cache-wrap": 1.1e-06}, "python benchmarks/calibrate_cost.py --baselines cache-wrap"
    )
    assert "cache-wrap = 1.1e-06" in merged and "cache-wrap = 9e-06" not in merged
    assert "attribute = 7e-09" in merged and "python-call = 2.8e-08" in merged
    assert "[kinds.io]\nseconds = 1e-05" in merged
    assert "#   cache-wrap   applying functools.lru_cache to a function" in merged
    assert "# and, for baselines cache-wrap: python benchmarks/calibrate_cost.py --baselines cache-wrap" in merged
    # measuring again leaves one description and one note
    again = calib.merge_baselines(
        merged, new, {"cache-wrap": 1.2e-06}, "python benchmarks/calibrate_cost.py --baselines cache-wrap"
    )
    assert again.count("applying functools.lru_cache") == 1 and again.count("# and, for baselines") == 1
    assert "cache-wrap = 1.2e-06" in again
