"""The speed-ups must not change answers: each fast path against the plain one.

(Speed itself is measured by ``benchmarks/run.py``, never by a timed test.)
"""

from __future__ import annotations

import fnmatch
import random
import re

import pytest

from cachelint.config import Config, resolve_presets
from cachelint.discover.walk import discover, module_name_for
from cachelint.globs import GlobSet, literal_runs
from cachelint.semantic.program import Program

from .helpers import REPO


def _preset_patterns() -> list[str]:
    cfg = resolve_presets(Config(preset="python,vllm"), set())
    return [e.pattern for e in cfg.catalog] + [r.pattern for r in cfg.roots]


def test_globset_agrees_with_fnmatch_on_the_presets():
    extra = ["*", "a*", "*b", "[!x]*y", "x[ab]*", "*[*]*", "a]b*", "x[]ab]y*", "a[b*", "p?q.*", "*.[a-c]x"]
    patterns = _preset_patterns() + extra
    rng = random.Random(6)
    names = []
    for p in patterns:
        # names built from each pattern, so that most patterns do match something
        for fill in ("", "x", "mod.sub", "a.b.c"):
            names.append(p.replace("*", fill).replace("?", "k").replace("[!a]", "b").replace("[", "").replace("]", ""))
    alphabet = "ab.xy_*[]?"
    names += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8))) for _ in range(2000)]
    gs = GlobSet(patterns)
    # fnmatchcase(n, p), each pattern compiled once (Python 3.10 keeps only 256 in its cache)
    compiled = [re.compile(fnmatch.translate(p)).match for p in patterns]
    for n in names:
        expected = next((i for i, match in enumerate(compiled) if match(n)), -1)
        assert gs.first(n) == expected, (n, expected, gs.first(n))


def test_literal_runs_skip_classes_and_wildcards():
    assert literal_runs("x[]ab]y*") == ["x", "y", ""]
    assert literal_runs("*ModelRegistry.is_*") == ["", "ModelRegistry.is_", ""]
    assert literal_runs("a[b*") == ["a[b", ""]  # an unclosed bracket is literal


def test_discovery_module_names_match_the_unmemoized_climb():
    files = discover([str(REPO / "cachelint"), str(REPO / "tests")])
    assert len(files) > 20
    from pathlib import Path

    for sf in files:
        assert (sf.module, sf.is_package) == module_name_for(Path(sf.path)), sf.path


def test_self_attribute_writers_match_a_plain_scan():
    from cachelint.index.walk import index_source

    paths = [
        REPO / "cachelint" / n
        for n in ("semantic/program.py", "facts/cachesites.py", "config.py", "apply/fixer.py", "incremental/cache.py")
    ]
    program = Program([index_source(p.read_text(), str(p), f"cachelint.{p.stem}", False) for p in paths])
    checked = 0
    for cq in program.classes:
        mro = set(program.mro(cq))
        attrs = {a.target[2] for f in program.functions.values() for a in f.assigns if a.target[0] == "attr"}
        for attr in attrs:
            plain = [
                (f, a)
                for f, a in program.writers(attr)
                if f.class_qualname in mro and f.self_name and a.target[1] == ("name", f.self_name)
            ]
            got = program.self_attr_writers(cq, attr)
            assert [(f.qualname, a.line) for f, a in got] == [(f.qualname, a.line) for f, a in plain]
            checked += bool(plain)
    assert checked > 20


def test_rules_run_with_the_gc_paused_and_check_lets_the_run_go(tmp_path, monkeypatch):
    """run_rules pauses the cyclic GC and freezes what the analysis built (its
    collections took a fifth of the analysis on vLLM 0.33.0); check() puts the
    frozen objects back in the GC's reach before returning, or raising."""
    import gc
    import shutil

    from cachelint import api
    from cachelint.rules import select_rules

    from .helpers import FIXTURES

    shutil.copytree(FIXTURES / "aliasing" / "before", tmp_path / "before")
    config = Config()
    seen = []

    class Probe:
        code = "CL999"

        def check(self, analysis):
            seen.append(gc.isenabled())
            return []

    was = gc.isenabled()
    gc.enable()
    try:
        analysis, _ = api.analyse([str(tmp_path / "before")], config, jobs=1)
        frozen = gc.get_freeze_count()
        api.run_rules(analysis, [*select_rules(config.select, config.ignore), Probe])
        assert seen == [False] and gc.isenabled()
        assert gc.get_freeze_count() > frozen
        result = api.check([str(tmp_path / "before")], config, jobs=1)
        assert result.files and gc.get_freeze_count() == 0
        real = api.run_rules

        def failing(analysis, rules, measure=None, jobs=1):
            real(analysis, rules, measure, jobs)  # frozen the index and the analysis
            assert gc.get_freeze_count() > 0
            raise RuntimeError("a rule failed")

        monkeypatch.setattr(api, "run_rules", failing)
        with pytest.raises(RuntimeError):
            api.check([str(tmp_path / "before")], config, jobs=1)
        assert gc.get_freeze_count() == 0
    finally:
        if not was:
            gc.disable()


def test_chunk_plan_deals_every_file_once_and_keeps_the_middle_small():
    from cachelint.index.pool import _CHUNK_MIN, _FILE_COST, _chunk_plan

    rng = random.Random(7)
    for n in (0, 1, 2, 5, 60, 3000):
        sizes = [int(rng.paretovariate(1.2) * 2_000) for _ in range(n)]
        for jobs in (2, 3, 8):
            chunks = _chunk_plan(sizes, jobs)
            assert sorted(i for c in chunks for i in c) == list(range(n))
            assert all(chunks)
            flat = [i for c in chunks for i in c]
            assert [sizes[i] for i in flat] == sorted(sizes, reverse=True)  # largest first
            if n < 3000:
                continue
            # where the workers and this process meet (1 - 1/jobs of the
            # work, give or take a fifth), no chunk is more than the minimum
            # share plus one file: the wait at the end of the pool is short
            cost = [sizes[i] + _FILE_COST for i in flat]
            total, meet, done, k = sum(cost), 1 - 1 / jobs, 0, 0
            biggest_mid = biggest = 0
            for c in chunks:
                w = sum(cost[k : k + len(c)])
                biggest = max(biggest, w)
                if abs(done / total - meet) < 0.18 and abs((done + w) / total - meet) < 0.18:
                    biggest_mid = max(biggest_mid, w - cost[k + len(c) - 1])
                done += w
                k += len(c)
            assert biggest_mid <= _CHUNK_MIN * total
            assert biggest > 10 * _CHUNK_MIN * total  # and bigger ones away from it
            assert len(chunks) < 0.6 / _CHUNK_MIN
