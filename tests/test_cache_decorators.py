"""Cache decorators are configuration: ``cache-decorators`` replaces the
list, ``extend-cache-decorators`` adds to it, and engine presets add the
engine's own (SGLang's ``@cache_once``). A call into a function so decorated
runs its body once per arguments: no hot-path edge, no CL002 on its body."""

from __future__ import annotations

import pytest

from cachelint.api import lint_sources
from cachelint.config import ConfigError, HotRoot, parse_table, resolve_presets

SOURCES = {
    "eng/__init__.py": "",
    "eng/utils.py": (
        "import functools\nimport inspect\n\n\n"
        "def memo_once(fn):\n"
        "    result = {}\n\n"
        "    @functools.wraps(fn)\n"
        "    def wrapper(*args):\n"
        "        if args not in result:\n"
        "            result[args] = fn(*args)\n"
        "        return result[args]\n\n"
        "    return wrapper\n\n\n"
        "@memo_once\n"
        "def accepted(fn):\n"
        "    return tuple(inspect.signature(fn).parameters)\n"
    ),
    "eng/runner.py": (
        "from eng import utils\n"
        "from eng.utils import accepted\n\n\n"
        "class Runner:\n"
        "    def __init__(self, model):\n"
        "        self.model = model\n\n"
        "    def step(self, batch):\n"
        "        if 'x' in accepted(self.model.forward):\n"
        "            return self.model.forward(batch, x=1)\n"
        "        return self.model.forward(batch)\n"
    ),
}


def _findings(extra: str = "", preset: str = "python"):
    table = {"preset": preset, "hot-roots": ["*.Runner.step"]}
    if extra:
        key, value = extra.split("=", 1)
        table[key] = [v.strip() for v in value.split(",")]
    cfg = parse_table(table, "test")
    res = lint_sources(SOURCES, cfg)
    return [(f.code, f.function) for f in res.findings], res


def test_an_unknown_memoizing_decorator_leaves_its_body_hot():
    found, res = _findings()
    assert found == [("CL002", "eng.utils.accepted")]
    assert res.hot.functions == 2  # step and the decorated helper


@pytest.mark.parametrize(
    "extra",
    [
        "extend-cache-decorators=memo_once",
        "extend-cache-decorators=memo_*",  # a glob on the last name
        "extend-cache-decorators=memo_once, lru_cache",
        "cache-decorators=memo_once",  # replaces the list
    ],
)
def test_a_configured_decorator_makes_the_call_run_once(extra):
    found, res = _findings(extra)
    assert found == []
    assert res.hot.functions == 1  # the decorated helper is no longer reached per call
    assert "memo_once" in res.config.decorators or "memo_*" in res.config.decorators


def test_dotted_entries_match_the_decorator_as_spelled():
    src = dict(SOURCES)
    src["eng/utils.py"] = (
        src["eng/utils.py"]
        .replace("@memo_once\n", "@utils_memo.memo_once\n")
        .replace("import inspect\n", "import inspect\n\nfrom eng import utils as utils_memo\n")
    )
    cfg = parse_table({"preset": "python", "hot-roots": ["*.Runner.step"]}, "t")
    assert [f.function for f in lint_sources(src, cfg).findings] == ["eng.utils.accepted"]
    cfg = parse_table(
        {"preset": "python", "hot-roots": ["*.Runner.step"], "extend-cache-decorators": ["utils_memo.memo_once"]}, "t"
    )
    assert lint_sources(src, cfg).findings == []
    cfg = parse_table(
        {"preset": "python", "hot-roots": ["*.Runner.step"], "extend-cache-decorators": ["other.memo_once"]}, "t"
    )
    assert [f.function for f in lint_sources(src, cfg).findings] == ["eng.utils.accepted"]


def test_replacing_the_list_drops_the_defaults():
    cfg = resolve_presets(parse_table({"cache-decorators": ["memo_once"]}, "t"), set())
    assert cfg.decorators == ("memo_once",)
    cfg = resolve_presets(parse_table({"extend-cache-decorators": ["memo_once"]}, "t"), set())
    assert cfg.decorators[:2] == ("cache", "lru_cache") and cfg.decorators[-1] == "memo_once"
    with pytest.raises(ConfigError, match="cache-decorators"):
        parse_table({"cache-decorators": "x" and 3}, "t")


def test_engine_presets_add_their_decorators():
    cfg = resolve_presets(parse_table({}, "t"), {"sglang"})
    assert {"cache_once", "lru_cache_frozenset"} <= set(cfg.decorators)
    assert "cache_once" not in resolve_presets(parse_table({}, "t"), {"mypkg"}).decorators
    # the preset's decorator applies to a tree the preset was chosen for
    src = {
        k.replace("eng/", "sglang/"): v.replace("eng", "sglang").replace("memo_once", "cache_once")
        for k, v in SOURCES.items()
    }
    cfg = parse_table({"extend-hot-roots": ["*.Runner.step"]}, "t").with_overrides(
        extend_hot_roots=(HotRoot("*.Runner.step"),)
    )
    res = lint_sources(src, cfg)
    assert res.config.active_presets == ("python", "sglang")
    assert res.findings == []
    res = lint_sources(src, cfg.with_overrides(preset="python"))
    assert [f.function for f in res.findings] == ["sglang.utils.accepted"]
