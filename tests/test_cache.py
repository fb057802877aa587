"""The on-disk cache: it may only ever return what a fresh run would.

Every cached run here is compared with a run that uses no cache, and the
``Result.cache`` status says which path served it (``hit``: nothing changed;
``remapped``: only line shifts in changed files; ``partial``: the whole-program
analysis re-ran on cached indexes; ``miss``: nothing reusable).
"""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cachelint import api
from cachelint.config import Config, find_config, load_config_file
from cachelint.discover.walk import discover
from cachelint.incremental import cache
from cachelint.index import pool
from cachelint.index.walk import index_source

from .helpers import REPO, run_cli

PYPROJECT = """
[tool.cachelint]
preset = "none"
hot-roots = ["*.Runner.step"]
expensive-calls = [
    {pattern = "*.Registry.max_len", pure = true, kind = "registry", why = "builds a processor"},
]
"""

CONFIG = """
class Registry:
    def max_len(self, model_config):
        ...

REGISTRY = Registry()


class ModelConfig:
    is_encoder_decoder: bool


class SchedulerConfig:
    max_encoder_len: int = 0


class EngineConfig:
    model_config: ModelConfig
    scheduler_config: SchedulerConfig

    def __post_init__(self):
        if self.model_config.is_encoder_decoder:
            self.scheduler_config.max_encoder_len = REGISTRY.max_len(self.model_config)
"""

# a CL001 finding here exists only because of the fill in config.py
USERS = """
from pkg.config import REGISTRY, EngineConfig


def max_encoder_len(config: EngineConfig) -> int:
    return REGISTRY.max_len(config.model_config)
"""

# CL002 in helpers.py exists only because runner.py makes it hot
RUNNER = """
from pkg.helpers import probe


class Runner:
    def __init__(self, model_config):
        self.model_config = model_config

    def step(self):
        return probe(self.model_config)
"""

HELPERS = """
from pkg.config import REGISTRY


def probe(model_config):
    return REGISTRY.max_len(model_config)
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    files = {"__init__.py": "", "config.py": CONFIG, "users.py": USERS, "runner.py": RUNNER, "helpers.py": HELPERS}
    for name, text in files.items():
        (root / "pkg" / name).write_text(text)
    monkeypatch.chdir(root)
    monkeypatch.delenv("CACHELINT_CACHE_DIR", raising=False)
    return root


def _config():
    return load_config_file(find_config(Path(".")))


def _key(findings) -> list:
    return [(f.code, f.path, f.span.line, f.span.column, f.span.end_line, f.message, f.fix) for f in findings]


def run(cache_dir, config=None, **kw) -> api.Result:
    """A cached run, checked against a fresh one."""
    config = config or _config()
    got = api.check(["."], config, cache_dir=cache_dir, **kw)
    fresh = api.check(["."], config, jobs=1)
    assert _key(got.findings) == _key(fresh.findings)
    return got


def _where(result) -> list:
    return sorted((f.code, f.path, f.span.line) for f in result.findings)


def test_hit_after_miss_and_the_directory_is_marked(project, tmp_path):
    d = tmp_path / "cache"
    first = run(d)
    assert first.cache == "miss"
    assert _where(first) == [("CL001", "pkg/users.py", 6), ("CL002", "pkg/helpers.py", 6)]
    second = run(d)
    assert second.cache == "hit"
    assert _key(second.findings) == _key(first.findings)
    assert (d / ".gitignore").read_text().strip().endswith("*")
    assert cache.is_cache_dir(d)


def test_changing_one_file_changes_a_finding_in_another(project, tmp_path):
    d = tmp_path / "cache"
    run(d)
    # the fill in config.py is what makes the call in users.py a finding
    cfg = project / "pkg" / "config.py"
    cfg.write_text(
        CONFIG.replace("self.scheduler_config.max_encoder_len = REGISTRY.max_len(self.model_config)", "pass")
    )
    r = run(d)
    assert r.cache == "partial"
    assert ("CL001", "pkg/users.py", 6) not in _where(r)
    cfg.write_text(CONFIG)
    assert ("CL001", "pkg/users.py", 6) in _where(run(d))
    # the call edge in runner.py is what makes helpers.py hot
    (project / "pkg" / "runner.py").write_text(RUNNER.replace("return probe(self.model_config)", "return None"))
    r = run(d)
    assert r.cache == "partial"
    assert _where(r) == [("CL001", "pkg/users.py", 6)]


def test_comment_edits_move_findings_without_reanalysis(project, tmp_path):
    d = tmp_path / "cache"
    run(d)
    users = project / "pkg" / "users.py"
    users.write_text("# a comment\n\n\n" + USERS)
    r = run(d)
    assert r.cache == "remapped"
    assert ("CL001", "pkg/users.py", 9) in _where(r)
    # an edit of the file a finding's fill lives in: the message names the fill,
    # so the finding is recomputed, not moved
    (project / "pkg" / "config.py").write_text("# header\n" + CONFIG)
    r = run(d)
    assert r.cache == "partial"
    # a suppression comment added: the same interface, the finding now suppressed
    users.write_text(
        "# a comment\n\n\n" + USERS.replace("config.model_config)\n", "config.model_config)  # noqa: CL001\n")
    )
    r = run(d)
    assert r.cache == "remapped"
    assert [f for f in r.findings if f.code == "CL001"] == []


def test_an_added_helper_nothing_calls_keeps_the_findings(project, tmp_path):
    """A function with no calls, no attribute or global writes and no
    decorators, whose name is written nowhere else, is invisible to the
    analysis: the findings are moved, not recomputed, and equal a fresh run."""
    d = tmp_path / "cache"
    run(d)
    runner = project / "pkg" / "runner.py"
    helper = "\n\ndef unused_helper(x, y=2):\n    total = x + y\n    return total\n"
    runner.write_text(RUNNER + helper)
    r = run(d)
    assert r.cache == "remapped"
    assert _where(r) == [("CL001", "pkg/users.py", 6), ("CL002", "pkg/helpers.py", 6)]
    # a method too, and above the code with findings: their lines move
    helpers = project / "pkg" / "helpers.py"
    helpers.write_text(
        HELPERS.replace("\n\ndef probe", "\n\nclass Box:\n    def size(self):\n        return 3\n\n\ndef probe")
    )
    r = run(d)
    assert r.cache == "partial"  # a new class is not an inert function
    # (before the last method: the class's own span is part of the interface)
    helpers.write_text(
        HELPERS.replace(
            "\n\ndef probe",
            "\n\nclass Box:\n    def area(self):\n        return 9\n\n    def size(self):\n        return 3\n\n\ndef probe",
        )
    )
    r = run(d)
    assert r.cache == "remapped"
    assert ("CL002", "pkg/helpers.py", 14) in _where(r)
    # and removed again
    runner.write_text(RUNNER)
    assert run(d).cache == "remapped"


def test_an_added_function_seen_by_name_or_with_calls_is_reanalysed(project, tmp_path):
    """The same shape of edit, where the new function changes what another
    file's findings are: a finding disappears and comes back in helpers.py."""
    d = tmp_path / "cache"
    run(d)
    runner = project / "pkg" / "runner.py"
    # a local `probe` shadows the imported one: helpers.probe is no longer hot
    runner.write_text(RUNNER + "\n\ndef probe(model_config):\n    return 0\n")
    r = run(d)
    assert r.cache == "partial"
    assert _where(r) == [("CL001", "pkg/users.py", 6)]
    runner.write_text(RUNNER)
    r = run(d)
    assert r.cache == "partial"
    assert ("CL002", "pkg/helpers.py", 6) in _where(r)
    # unreferenced, and its call is one no scan picks up: moved (and equal to a fresh run)
    runner.write_text(RUNNER + "\n\ndef fresh_helper(cfg):\n    return probe(cfg)\n")
    assert run(d).cache == "remapped"
    # unreferenced, but its call has a cache site's callee name (a use: a new CL001)
    runner.write_text("from pkg.config import REGISTRY, EngineConfig\n" + RUNNER)
    run(d)
    runner.write_text(
        "from pkg.config import REGISTRY, EngineConfig\n"
        + RUNNER
        + "\n\ndef fresh_helper(cfg: EngineConfig):\n    return REGISTRY.max_len(cfg.model_config)\n"
    )
    r = run(d)
    assert r.cache == "partial"
    assert ("CL001", "pkg/runner.py", 15) in _where(r)
    # unreferenced and call-free, but it writes an attribute (a writer other code may see)
    runner.write_text(RUNNER + "\n\ndef fresh_writer(cfg):\n    cfg.model_config = None\n")
    assert run(d).cache == "partial"
    # its name is only in a comment elsewhere: still re-analysed (a plain text search)
    runner.write_text(RUNNER + "\n\ndef quiet_helper(x):\n    return x\n")
    (project / "pkg" / "users.py").write_text("# quiet_helper\n" + USERS)
    assert run(d).cache == "partial"


DESCRIBE = """

def describe(config: EngineConfig):
    text = str(config.model_config)
    return text
"""


def test_an_edited_function_no_walk_follows_keeps_the_findings(project, tmp_path):
    """Calls added to or removed from a function whose calls no part of the
    analysis followed (nothing hot reaches it): the findings are moved, not
    recomputed, and equal a fresh run. A call a whole-program scan picks up
    (a use of a cache site) re-runs the analysis and adds its finding."""
    d = tmp_path / "cache"
    runner = project / "pkg" / "runner.py"
    base = "from pkg.config import REGISTRY, EngineConfig\n" + RUNNER + DESCRIBE
    runner.write_text(base)
    run(d)
    edited = base.replace("    text = str(", "    print(len(str(config)))\n    text = str(")
    runner.write_text(edited)
    r = run(d)
    assert r.cache == "remapped"
    # the same kind of edit in the hot function: the walks read its calls, but
    # only walks that cannot see a call resolving nowhere (see the tests below)
    runner.write_text(
        edited.replace("        return probe(", "        self.model_config.check()\n        return probe(")
    )
    assert run(d).cache == "verified"
    # one that resolves to a function of the tree: an edge of the hot paths,
    # replayed over the kept edges (describe becomes hot, with nothing in it
    # to report; see the test of edges below)
    runner.write_text(
        edited.replace("        return probe(", "        describe(self.model_config)\n        return probe(")
    )
    assert run(d).cache == "verified"
    runner.write_text(edited)
    assert run(d).cache == "partial"  # describe is no longer hot
    runner.write_text(base)  # and removed again
    assert run(d).cache == "remapped"
    # a use of the cache site (the fill in config.py): a new CL001 finding
    runner.write_text(base.replace("    text = str(", "    REGISTRY.max_len(config.model_config)\n    text = str("))
    r = run(d)
    assert r.cache == "partial"
    assert ("CL001", "pkg/runner.py", 15) in _where(r)


HOT_PYPROJECT = PYPROJECT.replace(
    "expensive-calls = [\n",
    'expensive-calls = [\n    {pattern = "os.listdir", kind = "io", why = "reads a directory"},\n',
)

HOT_RUNNER = """
import os

from pkg.config import REGISTRY, EngineConfig
from pkg.helpers import probe


class Settings:
    @property
    def limit(self) -> int:
        return REGISTRY.max_len(self)


def cold_probe(model_config):
    return REGISTRY.max_len(model_config)


class Runner:
    def __init__(self, config: EngineConfig, settings: Settings):
        self.config = config
        self.settings = settings
        self.memo = {}

    def step(self, other):
        first = probe(self.config.model_config)
        n = REGISTRY.max_len(self.config.model_config)
        return first, n, other.limit
"""


def _in_step(r) -> list:
    return sorted((f.code, f.span.line, f.span.column) for f in r.findings if f.function == "pkg.runner.Runner.step")


def test_an_edit_of_a_hot_function_is_verified_against_the_whole_program(project, tmp_path, monkeypatch):
    """A call added to a hot function that resolves to no function of the
    tree and matches no catalog entry changes no finding: the findings are
    moved (a CL001 use in the edited function too; the property stage finds
    the same read of a watched name, moved) after checking the call against
    the whole program, and equal a fresh run. A call that is an edge, a
    catalog match, a memo fill, or a new property read re-runs the analysis,
    and each that adds a finding adds it; so does any edit of a hot function
    with a CL002 finding (hoisting reads its text)."""
    (project / "pyproject.toml").write_text(HOT_PYPROJECT)
    runner = project / "pkg" / "runner.py"
    runner.write_text(HOT_RUNNER)
    d = tmp_path / "cache"
    base = run(d)
    before = _in_step(base)
    assert [c for c, _, _ in before] == ["CL001"]  # a use of the fill in config.py

    def recorded_reads() -> list:
        """What the results entry keeps of the property stage in step (see _same_reads)."""
        (entry,) = [
            cache.decode_entry(p.read_bytes()) for p in (d / f"v{cache.FORMAT}" / "results").rglob("*") if p.is_file()
        ]
        names, parsed = entry[6]
        assert names == ["limit"]
        return parsed["pkg.runner.Runner.step"]

    # `other.limit` names the expensive property: step's text is parsed (the
    # read resolves to no getter, so it is no finding)
    line = next(i for i, text in enumerate(HOT_RUNNER.split("\n"), 1) if "other.limit" in text)
    assert [(r[1], r[2]) for r in recorded_reads()] == [(("attr", ("name", "other"), "limit"), line)]

    def edit(statement: str, text: str = HOT_RUNNER) -> str:
        edited = text.replace("        first = probe(", f"        {statement}\n        first = probe(")
        runner.write_text(edited)
        return edited

    one = edit('print("step")')
    r = run(d)
    assert r.cache == "verified"
    assert _in_step(r) == [(c, line + 1, col) for c, line, col in before]  # moved with the text
    assert [r[2] for r in recorded_reads()] == [line + 1]  # the read, recorded at its new line
    edit('print("again")', one)  # a second edit: the recorded lines are the moved ones
    r = run(d)
    assert r.cache == "verified"
    assert _in_step(r) == [(c, line + 2, col) for c, line, col in before]
    runner.write_text(HOT_RUNNER)
    assert run(d).cache == "verified"  # removed again

    # an edge: cold_probe becomes hot, and its catalogued call a CL002 finding
    edit("cold_probe(self.config.model_config)")
    r = run(d)
    assert r.cache == "partial" and any(f.function == "pkg.runner.cold_probe" for f in r.findings)
    runner.write_text(HOT_RUNNER)
    run(d)
    # a catalogued call the tree does not define: a CL002 finding in step
    edit('print(os.listdir("."))')
    r = run(d)
    assert r.cache == "partial" and len(_in_step(r)) == len(before) + 1
    runner.write_text(HOT_RUNNER)
    run(d)
    # a memo fill: which other calls run once may change
    edit("self.memo.setdefault(0, 0)")
    assert run(d).cache == "partial"
    runner.write_text(HOT_RUNNER)
    run(d)
    # a read of the expensive property: the property stage finds more
    edit("print(self.settings.limit)")
    r = run(d)
    assert r.cache == "partial"
    assert [f.code for f in r.findings if f.data.get("property_read")] == ["CL002"]
    runner.write_text(HOT_RUNNER)
    run(d)
    # a hot function with a CL002 finding (probe's catalogued call)
    helpers = project / "pkg" / "helpers.py"
    helpers.write_text(HELPERS.replace("    return REGISTRY", '    print("probe")\n    return REGISTRY'))
    assert run(d).cache == "partial"
    helpers.write_text(HELPERS)
    run(d)

    # both checks carry weight: without the whole-program one the edge is
    # missed (the cached run differs from the fresh one); with no reader
    # known inert, the harmless edit re-runs the analysis
    with monkeypatch.context() as m:
        m.setattr(cache, "verify_edited", lambda analysis, checks, *rest: (None, {}, {}, {}))
        edit("cold_probe(self.config.model_config)")
        with pytest.raises(AssertionError):
            run(d)
    runner.write_text(HOT_RUNNER)
    run(d)
    with monkeypatch.context() as m:
        m.setattr(cache, "INERT_READERS", frozenset())
        edit('print("step")')
        assert run(d).cache == "partial"


EDGE_RUNNER = """
import os

from pkg.config import REGISTRY, EngineConfig


def describe(config):
    return str(config)


def cold_use(config: EngineConfig):
    return REGISTRY.max_len(config.model_config)


class Settings:
    @property
    def limit(self) -> int:
        return REGISTRY.max_len(self)


def peek(settings: Settings):
    return settings.limit


class Runner:
    def __init__(self, config: EngineConfig, root: str, settings: Settings):
        self.config = config
        self.root = root
        self.settings = settings

    def step(self, batch):
        return self.helper(self.root)

    def helper(self, root):
        return os.listdir(root)

    def set_root(self, root):
        self.root = root
"""


def test_an_added_edge_is_replayed_over_the_kept_hot_graph(project, tmp_path, monkeypatch):
    """A call added to a hot function that is an edge of the call graph: the
    walk is replayed over the edges the last run kept. A function that
    becomes hot with nothing to report keeps the findings (verified), and is
    hot for the next run's checks. One with a finding that named it off the
    hot paths, one that reads an expensive property, one CL002 asked about
    (does a hot function write this attribute?), or a new caller whose
    argument CL002 follows (is the call the same on every run?) re-runs the
    analysis. Without the record of what the rules asked of the hot paths,
    the last two would be missed."""
    (project / "pyproject.toml").write_text(HOT_PYPROJECT)
    runner = project / "pkg" / "runner.py"
    runner.write_text(EDGE_RUNNER)
    d = tmp_path / "cache"
    base = run(d)
    (helper,) = [f for f in base.findings if f.function == "pkg.runner.Runner.helper"]
    assert "its inputs are the same on every run" in helper.message  # `root` is `self.root`, set in __init__ only
    (cold,) = [f for f in base.findings if f.function == "pkg.runner.cold_use"]
    assert cold.code == "CL001" and cold.hot_path is None

    def step(statement: str) -> None:
        runner.write_text(
            EDGE_RUNNER.replace("        return self.helper(", f"        {statement}\n        return self.helper(")
        )

    # describe becomes hot; nothing in it is expensive, nobody asked about it
    step("describe(self.config)")
    r = run(d)
    assert r.cache == "verified"
    assert [(f.code, f.function) for f in r.findings] == [(f.code, f.function) for f in base.findings]
    # and it is hot now: an expensive call added there is a new finding
    runner.write_text(
        runner.read_text().replace("    return str(config)", '    return str(config) + str(os.listdir("."))')
    )
    r = run(d)
    assert r.cache == "partial"
    assert any(f.code == "CL002" and f.function == "pkg.runner.describe" for f in r.findings)
    runner.write_text(EDGE_RUNNER)
    run(d)

    def reanalysed(statement: str) -> list:
        """The findings with ``statement`` added to step, which must re-run
        the analysis (then the edit is undone)."""
        step(statement)
        r = run(d)
        assert r.cache == "partial", statement
        runner.write_text(EDGE_RUNNER)
        run(d)
        return r.findings

    def in_function(findings: list, qn: str) -> list:
        return [f for f in findings if f.function == qn]

    # cold_use's CL001 finding asked for its hot path: now it has one
    (cold,) = in_function(reanalysed("cold_use(self.config)"), "pkg.runner.cold_use")
    assert cold.hot_path == ("pkg.runner.Runner.step", "pkg.runner.cold_use")
    # a second call of helper, with the root's per-call argument: helper's
    # `root` varies now, and its call is no longer the same on every run
    assert not in_function(reanalysed("self.helper(batch)"), "pkg.runner.Runner.helper")
    # peek reads the expensive property `limit`: a CL002 finding once hot
    peek = in_function(reanalysed("peek(self.settings)"), "pkg.runner.peek")
    assert [(f.code, f.data["property_read"]) for f in peek] == [("CL002", True)]
    # set_root writes `self.root`, which helper's argument comes from: were
    # it hot, the argument would vary (CL002 asked whether it is)
    assert not in_function(reanalysed("self.set_root(batch)"), "pkg.runner.Runner.helper")

    # the record carries the weight: without it both edits are verified, and
    # the cached runs differ from the fresh ones
    hot_graph = cache.hot_graph
    monkeypatch.setattr(cache, "hot_graph", lambda analysis: hot_graph(analysis)[:2] + ({}, []))
    run(d.parent / "blind")
    for statement in ("self.set_root(batch)", "self.helper(batch)"):
        step(statement)
        with pytest.raises(AssertionError):
            run(d.parent / "blind")
        runner.write_text(EDGE_RUNNER)
        run(d.parent / "blind")


def test_the_inert_readers_name_code_that_reads_calls(project, tmp_path):
    """INERT_READERS and EDGE_READERS name readers as ``index.readers`` tags
    them: each must be a function of cachelint that still exists (a renamed
    one would silently turn reuse off), and a run over the test project
    notes them."""
    import importlib

    assert cache.EDGE_READERS <= cache.INERT_READERS
    for tag in cache.INERT_READERS:
        module, qualname = tag.split(":")
        found = list((REPO / "cachelint").rglob(f"{module}.py"))
        assert len(found) == 1, (tag, found)
        obj = importlib.import_module(".".join(found[0].relative_to(REPO).with_suffix("").parts))
        parts = qualname.split(".")
        if "<locals>" in parts:
            parts = parts[: parts.index("<locals>")]
        for part in parts:
            obj = getattr(obj, part)
        assert callable(obj), tag
    from cachelint.index.records import observing, readers
    from cachelint.rules import select_rules

    (project / "pyproject.toml").write_text(HOT_PYPROJECT)
    (project / "pkg" / "runner.py").write_text(HOT_RUNNER)
    config = _config()
    with observing() as seen:
        analysis, _ = api.analyse(["."], config, jobs=1)
        api.run_rules(analysis, select_rules(config.select, config.ignore))
    tags = {t for ts in readers(seen).values() for t in ts}
    assert {"callgraph:edges_of", "cl002_expensive_call_on_hot_path:call_sites"} <= tags


WALKED_CONFIG = (
    CONFIG.replace("class Registry:", "class Registry:\n    def rebuild(self, settings):\n        ...\n")
    + """
from pkg.derive import derive


class Settings:
    name: str

    @property
    def limit(self) -> int:
        return derive(self)
"""
)

# in a file of its own: findings name config.py's module, and an edit of a
# file a finding names always re-runs the analysis
DERIVE = """
from pkg.config import REGISTRY


def derive(settings):
    return 0
"""


def test_an_edited_function_a_cost_walk_followed_is_reanalysed(project, tmp_path):
    """``derive`` is not hot, but the cost of the property ``limit`` is judged
    by walking into it: a catalogued call added there (no cache site's
    callee, so no scan picks it up) makes a hot read of ``limit`` a CL002
    finding, so the edit re-runs the analysis."""
    (project / "pyproject.toml").write_text(
        PYPROJECT.replace(
            "expensive-calls = [", 'expensive-calls = [\n    {pattern = "*.Registry.rebuild", kind = "processor"},'
        )
    )
    (project / "pkg" / "config.py").write_text(WALKED_CONFIG)
    (project / "pkg" / "derive.py").write_text(DERIVE)
    runner = project / "pkg" / "runner.py"
    runner.write_text(PROPERTY_RUNNER.replace("        return n\n", "        return n + self.settings.limit\n"))
    d = tmp_path / "cache"
    assert [f for f in run(d).findings if f.path == "pkg/runner.py"] == []
    (project / "pkg" / "derive.py").write_text(
        DERIVE.replace("    return 0\n", "    REGISTRY.rebuild(settings)\n    return 0\n")
    )
    r = run(d)
    assert r.cache == "partial"
    assert ("CL002", "pkg/runner.py", 13) in _where(r)


PROPERTY_CONFIG = (
    CONFIG
    + """

class Settings:
    name: str

    @property
    def max_len(self) -> int:
        return REGISTRY.max_len(self)
"""
)

PROPERTY_RUNNER = """
from pkg.config import Settings


class Runner:
    def __init__(self, settings: Settings):
        self.settings = settings

    def step(self):
        n = 0
        for i in range(3):
            n += i
        return n
"""


def test_a_bare_property_read_in_a_hot_function_is_not_remapped(project, tmp_path):
    """The property stage parses hot functions' text again for attribute
    reads, which the index does not keep: a line that only reads an
    expensive property changes no interface, yet adds a finding."""
    (project / "pkg" / "config.py").write_text(PROPERTY_CONFIG)
    runner = project / "pkg" / "runner.py"
    runner.write_text(PROPERTY_RUNNER)
    d = tmp_path / "cache"
    assert [f for f in run(d).findings if f.path == "pkg/runner.py"] == []
    runner.write_text(
        PROPERTY_RUNNER.replace("        return n\n", "        self.settings.max_len\n        return n\n")
    )
    r = run(d)
    assert r.cache == "partial"
    assert ("CL002", "pkg/runner.py", 13) in _where(r)
    runner.write_text(
        PROPERTY_RUNNER.replace(
            "        for i in range(3):",
            "        while self.settings.max_len:\n            break\n        for i in range(3):",
        )
    )
    r = run(d)
    assert r.cache == "partial"
    assert ("CL002", "pkg/runner.py", 11) in _where(r)
    # lines added above the hot function: its text is the same, the read moves
    runner.write_text("# a comment\n" + runner.read_text())
    r = run(d)
    assert r.cache == "remapped"
    assert ("CL002", "pkg/runner.py", 12) in _where(r)


def test_configuration_and_lock_file_invalidate(project, tmp_path):
    d = tmp_path / "cache"
    assert run(d).cache == "miss"
    cfg = _config()
    narrowed = cfg.with_overrides(select=("CL002",))
    r = run(d, narrowed)
    assert r.cache == "partial"  # same indexes, new whole-run result
    assert _where(r) == [("CL002", "pkg/helpers.py", 6)]
    # a configuration file edit (no hot roots): different findings, never the cached ones
    (project / "pyproject.toml").write_text(PYPROJECT.replace('hot-roots = ["*.Runner.step"]', "hot-roots = []"))
    r = run(d)
    assert _where(r) == [("CL001", "pkg/users.py", 6)]
    (project / "pyproject.toml").write_text(PYPROJECT)
    assert run(d).cache == "hit"
    # the lock file is an input of the analysis
    (project / "cachelint.lock").write_text("# lock v1\n")
    assert run(d).cache == "partial"
    assert run(d).cache == "hit"
    (project / "cachelint.lock").write_text("# lock v2\n")
    assert run(d).cache == "partial"


def test_corrupted_entries_are_misses(project, tmp_path):
    d = tmp_path / "cache"
    expected = _key(run(d).findings)
    entries = sorted(p for p in d.rglob("*") if p.is_file() and p.parent.parent.name in ("index", "results", "packs"))
    assert {p.parent.parent.name for p in entries} == {"index", "results", "packs"}
    for i, p in enumerate(entries):
        data = p.read_bytes()
        if i % 3 == 0:
            p.write_bytes(data[: len(data) // 2])  # truncated
        elif i % 3 == 1:
            p.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))  # one bit flipped
        else:
            p.write_bytes(b"")  # empty
    r = run(d)
    assert r.cache in ("miss", "partial")
    assert _key(r.findings) == expected
    # a well-formed entry of the wrong shape is a miss too
    for p in d.rglob("*"):
        if p.is_file() and p.parent.parent.name in ("index", "results", "packs"):
            p.write_bytes(cache.encode_entry(marshal.dumps(["not", "an", "entry"])))
    assert _key(run(d).findings) == expected
    assert run(d).cache == "hit"


def test_unwritable_cache_is_no_error(project, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = api.check(["."], _config(), cache_dir=blocker / "cache")  # cannot be created
    assert _where(r) == _where(api.check(["."], _config()))


def test_parallel_indexing_equals_serial(project, monkeypatch):
    for i in range(12):
        (project / "pkg" / f"extra_{i}.py").write_text(HELPERS.replace("probe", f"probe_{i}") + f"\nX = {i}\n")
    files = discover(["."])
    monkeypatch.setattr(pool, "PARALLEL_THRESHOLD", 4)
    serial = pool.index_files(files, jobs=1)
    # workers hand their results over in files of a temporary directory,
    # removed afterwards (see pool._encoded_chunk)
    import tempfile

    spool = project.parent / "tmp"
    spool.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool))
    spooled = []
    real = pool._chunk_result
    monkeypatch.setattr(pool, "_chunk_result", lambda r: spooled.append(isinstance(r, str)) or real(r))
    parallel = pool.index_files(files, jobs=2)
    assert parallel == serial
    assert spooled and all(spooled) and list(spool.iterdir()) == []
    assert [cache._expanded(cache.encode_index(fi)) for fi in parallel] == [
        cache._expanded(cache.encode_index(fi)) for fi in serial
    ]
    a = api.check(["."], _config(), jobs=1)
    b = api.check(["."], _config(), jobs=2)
    assert _key(a.findings) == _key(b.findings) and a.findings
    # the workers' indexes and this process's go into packs
    d = project.parent / "cache"
    cold = api.check(["."], _config(), jobs=2, cache_dir=d)
    assert cold.cache == "miss" and _key(cold.findings) == _key(a.findings)
    assert len([p for p in (d / f"v{cache.FORMAT}" / "index").rglob("*") if p.is_file()]) == 1  # small: one pack
    c = cache.Cache(d)
    fp = cache.tool_fingerprint()
    for sf, fi in zip(files, serial):
        h = cache.digest(Path(sf.path).read_bytes())
        assert cache.decode_index(c.get_index(cache._index_key(fp, sf, h))) == fi
    (project / "pkg" / "results.py").write_text("")  # a new file: new scope, indexes reused
    warm = api.check(["."], _config(), jobs=2, cache_dir=d)
    assert warm.cache == "partial" and _key(warm.findings) == _key(a.findings)


def test_index_round_trip(project):
    sources = [
        REPO / "cachelint" / "semantic" / "program.py",
        REPO / "cachelint" / "index" / "walk.py",
        REPO / "cachelint" / "cli.py",
    ]
    for p in sources:
        fi = index_source(p.read_text(), str(p), "m", False)
        t = cache.encode_index(fi)
        assert cache.decode_index(marshal.loads(marshal.dumps(t))) == fi


def _iface(src: str):
    return cache.interface(cache.encode_index(index_source(src, "m.py", "m", False)))


def test_interface_sees_order_not_line_shifts():
    base = "def f(self):\n    a = x\n    g(a)\n"
    assert _iface(base) == _iface("# c\n\n" + base)
    assert _iface(base) == _iface(base.replace("    g(a)\n", "    # note\n\n    g(a)\n"))
    assert _iface(base) == _iface(base + "# trailing\n")
    # the assignment moved after the call: same assigns and calls, other order
    assert _iface(base) != _iface("def f(self):\n    g(a)\n    a = x\n")
    assert _iface(base) != _iface(base.replace("g(a)", "g( a)"))  # columns are kept
    assert _iface(base) != _iface(base.replace("a = x", "a = y"))


# ----- the command line ----------------------------------------------------------------


def _cli(project, *args, env=None):
    e = dict(os.environ)
    e.pop("CACHELINT_CACHE_DIR", None)
    e.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "cachelint", *args],
        cwd=project,
        env={**e, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_default_cache_dir_no_cache_and_clean(project):
    default = project / cache.DEFAULT_DIR
    nocache = _cli(project, "check", "pkg", "--no-cache", "--output-format", "json")
    assert nocache.returncode == 1, nocache.stderr
    assert not default.exists()
    cached = _cli(project, "check", "pkg", "--output-format", "json", env={"CACHELINT_CACHE_STATUS": "1"})
    assert "cachelint: cache miss" in cached.stderr
    assert json.loads(cached.stdout) == json.loads(nocache.stdout)
    assert default.is_dir() and (default / ".gitignore").is_file()
    again = _cli(project, "check", "pkg", "--output-format", "json", env={"CACHELINT_CACHE_STATUS": "1"})
    assert "cachelint: cache hit" in again.stderr and again.stdout == cached.stdout
    # a git status of the project does not see the cache
    assert (default / ".gitignore").read_text().splitlines()[-1] == "*"
    proc = _cli(project, "clean")
    assert proc.returncode == 0 and not default.exists()
    assert _cli(project, "clean").returncode == 0  # nothing to remove is fine


def test_cli_cache_dir_flag_and_clean_refuses_other_directories(project, tmp_path):
    d = tmp_path / "elsewhere"
    proc = _cli(project, "check", ".", "--cache-dir", str(d))
    assert proc.returncode == 1 and cache.is_cache_dir(d)
    assert not (project / cache.DEFAULT_DIR).exists()
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "data.txt").write_text("keep me")
    proc = _cli(project, "clean", "--cache-dir", str(precious))
    assert proc.returncode == 2 and "not a cachelint cache" in proc.stderr
    assert (precious / "data.txt").read_text() == "keep me"
    assert _cli(project, "clean", "--cache-dir", str(d)).returncode == 0 and not d.exists()


def test_two_runs_at_once_share_a_cache(project, tmp_path):
    for i in range(70):  # above the parallel threshold: workers write entries too
        (project / "pkg" / f"extra_{i}.py").write_text(USERS + f"\nX = {i}\n")
    d = str(tmp_path / "shared")
    expected = run_cli("check", ".", "--no-cache", "--output-format", "json", cwd=project).stdout
    for _ in range(3):
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "cachelint", "check", ".", "--output-format", "json", "--cache-dir", d],
                cwd=project,
                env={**os.environ, "PYTHONPATH": str(REPO)},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(3)
        ]
        outs = [p.communicate(timeout=120) for p in procs]
        for p, (out, err) in zip(procs, outs):
            assert p.returncode == 1, err
            assert out == expected
        (project / "pkg" / "extra_0.py").write_text(USERS + f"\nX = {_}\n# changed\n")
        expected = run_cli("check", ".", "--no-cache", "--output-format", "json", cwd=project).stdout


@pytest.mark.vllm
def test_incremental_runs_on_vllm_equal_fresh_runs(tmp_path):
    """Edits of real files: a comment in the file with the seed finding (moved),
    a helper nothing calls added to it (moved), a comment in the file holding
    the fill (named in messages: recomputed); each result equals a fresh run."""
    import shutil

    from .vllm_source import vllm_source

    work = tmp_path / "v"
    shutil.copytree(vllm_source("0.10.2") / "vllm", work / "vllm")
    d = str(tmp_path / "cache")
    env = {"CACHELINT_CACHE_STATUS": "1"}

    def both(status: str) -> None:
        got = _cli(work, "check", "vllm", "--output-format", "json", "--cache-dir", d, env=env)
        assert f"cachelint: cache {status}" in got.stderr, got.stderr
        fresh = _cli(work, "check", "vllm", "--output-format", "json", "--no-cache", "-j", "1")
        assert got.returncode == fresh.returncode == 1
        assert json.loads(got.stdout) == json.loads(fresh.stdout)

    assert _cli(work, "check", "vllm", "-q", "--cache-dir", d).returncode == 1
    sched = work / "vllm" / "v1" / "core" / "sched" / "scheduler.py"
    sched.write_text("# one\n# two\n\n" + sched.read_text())
    both("remapped")
    # a helper nothing calls yet (the benchmark's edit-code): still moved, not recomputed
    sched.write_text(sched.read_text() + "\n\ndef _cachelint_test_helper(x):\n    return x + 1\n")
    both("remapped")
    config = work / "vllm" / "config" / "__init__.py"
    config.write_text("# one\n" + config.read_text())
    both("partial")


def _insert_first(path: Path, line: int, statement: str) -> bool:
    """Insert ``statement`` before the first statement of the function defined
    at ``line`` of ``path`` (after its docstring); False if there is no such
    statement on a line of its own."""
    import ast

    text = path.read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if line not in (node.lineno, *(dec.lineno for dec in node.decorator_list[:1])):
            continue
        body = node.body
        if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring
        if not body or body[0].lineno == node.lineno or getattr(body[0], "decorator_list", None):
            return False
        lines = text.splitlines(keepends=True)
        lines.insert(body[0].lineno - 1, " " * body[0].col_offset + statement + "\n")
        path.write_text("".join(lines), encoding="utf-8")
        return True
    return False


@pytest.mark.vllm
def test_edits_of_functions_no_walk_follows_equal_fresh_runs_on_vllm(tmp_path):
    """Real edits of function bodies in vLLM 0.10.2, each checked against a
    fresh run: a catalogued device call added to functions whose calls no
    walk of the analysis read (moved when no finding names the file), a call
    by a cache site's callee name (re-analysed: a use), and a call added to
    a hot function and to one off the hot paths that a walk read (both
    re-analysed), a call that resolves nowhere added to hot functions
    whose readers are all INERT_READERS (verified, at least once), and a
    call of a method that is not hot added to such a function (a new edge:
    verified at least once)."""
    import random
    import shutil

    from cachelint.index.records import observing, readers
    from cachelint.rules import select_rules

    from .vllm_source import vllm_source

    work = tmp_path / "v"
    shutil.copytree(vllm_source("0.10.2") / "vllm", work / "vllm")
    d = str(tmp_path / "cache")
    env = {"CACHELINT_CACHE_STATUS": "1"}
    cwd = os.getcwd()
    os.chdir(work)
    try:
        config = Config()  # no configuration file: the defaults, as the CLI runs
        with observing() as observed:
            analysis, _ = api.analyse(["vllm"], config, jobs=1)
            api.run_rules(analysis, select_rules(config.select, config.ignore))
    finally:
        os.chdir(cwd)
    functions = analysis.program.functions
    keys = sorted(analysis.cache_analysis.by_name)
    free = [qn for qn, f in functions.items() if qn not in observed and not f.under_type_checking]
    assert len(free) > len(functions) // 2  # most of the tree: what makes the reuse worth having
    hot = [qn for qn in analysis.hot.chains if functions[qn].calls and "<locals>" not in qn]
    walked = [qn for qn in observed if qn in functions and qn not in analysis.hot.chains and "<locals>" not in qn]
    assert keys and hot and walked

    edited: set = set()  # files whose lines moved: the recorded lines there are stale

    def edit(candidates: list, statement: str):
        """Edit the first candidate that takes the statement; its cache status."""
        for qn in candidates:
            f = functions[qn]
            text = statement(qn) if callable(statement) else statement
            if f.path in edited or not _insert_first(Path(work, f.path), f.line, text):
                continue
            edited.add(f.path)
            got = _cli(work, "check", "vllm", "--output-format", "json", "--cache-dir", d, env=env)
            fresh = _cli(work, "check", "vllm", "--output-format", "json", "--no-cache", "-j", "1")
            assert got.returncode == fresh.returncode == 1, got.stderr
            assert json.loads(got.stdout) == json.loads(fresh.stdout), (qn, text)
            return got.stderr.split("cachelint: cache ")[1].split()[0]
        raise AssertionError(f"no candidate takes {statement!r}")

    assert _cli(work, "check", "vllm", "-q", "--cache-dir", d).returncode == 1
    rng = random.Random(6)
    rng.shuffle(free)
    statuses = [edit(free[k::4], "torch.cuda.get_device_capability()") for k in range(4)]
    assert "remapped" in statuses, statuses
    assert edit(free, f"{keys[0]}()") == "partial"
    assert edit(hot, "torch.cuda.get_device_capability()") == "partial"
    # off the hot paths, but a cost, purity or hoisting walk read its calls
    assert edit(sorted(walked), "torch.cuda.get_device_capability()") == "partial"
    # hot, read only by readers that cannot see a call resolving nowhere
    tags = readers(observed)
    inert_hot = [qn for qn in hot if set(tags[qn]) <= cache.INERT_READERS]
    assert inert_hot
    rng.shuffle(inert_hot)
    statuses = [edit(inert_hot[k::3], "_cachelint_unknown.note()") for k in range(3)]
    assert "verified" in statuses, statuses
    # an edge: such a hot method calls a method of its class that is not hot
    # (replayed over the kept hot graph; verified when the callee has nothing
    # to report and nothing asked about it)
    cold_callee: dict = {}
    for qn in inert_hot:
        f = functions[qn]
        ci = analysis.program.classes.get(f.class_qualname or "")
        if ci is None or f.self_name != "self" or not set(tags[qn]) <= cache.EDGE_READERS:
            continue
        for name, m in sorted(ci.methods.items()):
            g = functions.get(m)
            cold = g is not None and m not in analysis.hot.chains and not g.decorators
            if cold and not name.startswith("_") and [x.name for x in g.params] == ["self"]:
                cold_callee[qn] = name
                break
    edges = sorted(cold_callee)
    rng.shuffle(edges)
    statuses = [edit(edges[k::3], lambda qn: f"self.{cold_callee[qn]}()") for k in range(3)]
    assert "verified" in statuses, statuses


def test_fix_builds_the_analysis_and_a_lock_turns_remapping_off(project, tmp_path):
    d = tmp_path / "cache"
    run(d)
    assert run(d).cache == "hit"
    # --fix records what each rewrite relies on in cachelint.lock: it needs the
    # analysis itself, so it never takes the result from the cache
    r = api.check(["."], _config(), fix=True, unsafe_fixes=True, cache_dir=d)
    assert r.cache == "partial" and r.fixed and r.lock_written
    assert (project / "cachelint.lock").is_file()
    # CL003/CL004 read attribute reads from the sources, beyond the interface:
    # with a lock, a comment edit re-runs the analysis instead of moving findings
    run(d)
    users = project / "pkg" / "users.py"
    users.write_text("# moved\n" + users.read_text())
    assert run(d).cache == "partial"


def test_index_packs_are_found_through_the_map_and_pruned(tmp_path, monkeypatch):
    monkeypatch.setattr(cache, "PACK_BYTES", 1000)  # many small packs
    d = tmp_path / "cache"
    c = cache.Cache(d)
    old = [f"{i:032x}" for i in range(300)]
    for k in old:
        c.add_index(k, marshal.dumps(["old", k]))
    c.flush(live=set(old))
    assert len([p for p in (d / f"v{cache.FORMAT}" / "index").rglob("*") if p.is_file()]) > 5
    fresh = cache.Cache(d)  # another run: reads the map from disk
    assert fresh.get_index(old[7]) == ["old", old[7]]
    assert fresh.get_index(old[299]) == ["old", old[299]]
    assert len(fresh._packs) == 2  # only the packs holding those two
    assert fresh.get_index("f" * 32) is None
    new = "e" * 32
    fresh.add_index(new, marshal.dumps(["new"]))
    fresh.flush(live={new})  # the map outgrew what runs use: only live entries stay
    packs = [p for p in (d / f"v{cache.FORMAT}" / "index").rglob("*") if p.is_file()]
    assert len(packs) == 1
    again = cache.Cache(d)
    assert again.get_index(new) == ["new"] and again.get_index(old[7]) is None


def test_loaded_calls_stay_marshalled_until_read():
    """An index loaded from the cache keeps each function's calls as the
    bytes they were stored as until something reads them (the verified path
    loads every index and reads a handful): reading gives the same CallSites,
    through the observed descriptor or the scans' accessor, and encoding an
    index that was never read gives back the stored bytes."""
    from cachelint.index.records import observing, scanned_calls

    src = "def f(x):\n    g(x)\n    return h(x, k=1)\n\ndef g(x):\n    pass\n"
    fi = index_source(src, "m.py", "m", False)
    stored = marshal.dumps(cache.encode_index(fi))
    loaded = cache.decode_index(marshal.loads(stored))
    f, g = loaded.functions
    assert type(f.__dict__["calls"]) is bytes and type(g.__dict__["calls"]) is bytes
    again = cache.encode_index(loaded)  # the stored bytes, nothing unpacked to re-encode
    assert [h[cache._FN_CALLS] for h in again[cache._FI_FUNCTIONS]] == [f.__dict__["calls"], g.__dict__["calls"]]
    assert type(f.__dict__["calls"]) is bytes
    assert again == marshal.loads(stored)
    with observing() as seen:
        assert f.calls == fi.functions[0].calls and len(f.calls) == 2
    assert set(seen) == {"m.f"}
    assert scanned_calls(g) == [] and type(g.__dict__["calls"]) is list
    assert loaded == fi
    # unpacked and encoded again: the same calls (marshal bytes are no canonical form)
    assert cache._expanded(cache.encode_index(loaded)) == cache._expanded(marshal.loads(stored))


def test_observing_notes_reads_of_calls_per_thread_and_not_scans():
    """What the cache's observed set relies on: reading ``f.calls`` notes
    ``f`` in the innermost ``observing()`` of this thread only; building an
    index and the scans' ``scanned_calls`` note nothing."""
    import threading

    from cachelint.index.records import observing, readers, scanned_calls

    fi = index_source("def f():\n    g()\n\ndef g():\n    pass\n", "m.py", "m", False)
    f, g = fi.functions
    seen_there: dict = {}

    def elsewhere():
        with observing() as s:
            assert g.calls == []
            seen_there["s"] = set(s)

    def reader_of_calls(fn):
        return len(fn.calls)

    with observing() as seen:
        assert len(scanned_calls(f)) == 1
        assert seen == {}
        assert reader_of_calls(f) == 1
        t = threading.Thread(target=elsewhere)
        t.start()
        t.join()
        with observing() as inner:
            assert g.calls == []
    assert set(seen) == {"m.f"} and set(inner) == {"m.g"} and seen_there["s"] == {"m.g"}
    # each note names the code that read the calls (what INERT_READERS lists)
    assert readers(seen) == {
        "m.f": ["test_cache:test_observing_notes_reads_of_calls_per_thread_and_not_scans.<locals>.reader_of_calls"]
    }
    with observing() as seen:
        index_source("def h():\n    f()\n", "n.py", "n", False)
    assert seen == {}
