"""The on-disk cache: it may only ever return what a fresh run would.

Every cached run here is compared with a run that uses no cache, and the
``Result.cache`` status says which path served it (``hit``: no file changed,
the whole-run result reused; ``partial``: the changed files indexed again,
the other indexes loaded from the cache, the whole-program analysis re-run;
``miss``: nothing reusable).
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
from cachelint.config import find_config, load_config_file
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


DESCRIBE = """

def describe(config: EngineConfig):
    text = str(config.model_config)
    return text
"""


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


def test_every_edit_reruns_the_analysis_and_equals_a_fresh_run(project, tmp_path):
    """A comment, a helper nothing calls, a call in a function off the hot
    paths, a call in the hot root, a call that adds an edge: each is a
    ``partial`` run (only the edited file indexed again) equal to a fresh one;
    undoing the edit is a hit again only once the files are as cached."""
    d = tmp_path / "cache"
    runner = project / "pkg" / "runner.py"
    users = project / "pkg" / "users.py"
    base = "from pkg.config import REGISTRY, EngineConfig\n" + RUNNER + DESCRIBE
    runner.write_text(base)
    assert run(d).cache == "miss"
    edits = [
        (users, "# a comment\n\n\n" + USERS),
        (runner, base + "\n\ndef unused_helper(x, y=2):\n    return x + y\n"),
        (runner, base.replace("    text = str(", "    print(len(str(config)))\n    text = str(")),
        (runner, base.replace("        return probe(", "        self.model_config.check()\n        return probe(")),
        (runner, base.replace("        return probe(", "        describe(self.model_config)\n        return probe(")),
        # a use of the cache site (the fill in config.py): a new CL001 finding
        (runner, base.replace("    text = str(", "    REGISTRY.max_len(config.model_config)\n    text = str(")),
    ]
    for path, text in edits:
        before = path.read_text()
        path.write_text(text)
        r = run(d)
        assert r.cache == "partial", text
        path.write_text(before)
        assert run(d).cache == "partial"  # the previous result was replaced
        assert run(d).cache == "hit"
    runner.write_text(edits[-1][1])
    assert ("CL001", "pkg/runner.py", 15) in _where(run(d))
    # a suppression comment: the same index but its suppressions, the finding gone
    users.write_text(USERS.replace("config.model_config)\n", "config.model_config)  # noqa: CL001\n"))
    r = run(d)
    assert r.cache == "partial" and ("CL001", "pkg/users.py", 6) not in _where(r)


def test_only_changed_files_are_indexed_again(project, tmp_path, monkeypatch):
    from cachelint.index import walk

    d = tmp_path / "cache"
    run(d)
    indexed: list = []
    real = walk.index_bytes
    monkeypatch.setattr(
        walk, "index_bytes", lambda data, path, *a, **k: indexed.append(path) or real(data, path, *a, **k)
    )
    (project / "pkg" / "helpers.py").write_text("# edited\n" + HELPERS)
    r = api.check(["."], _config(), cache_dir=d, jobs=1)
    assert r.cache == "partial" and indexed == ["pkg/helpers.py"]


def test_fix_builds_the_analysis(project, tmp_path):
    d = tmp_path / "cache"
    run(d)
    assert run(d).cache == "hit"
    # --fix records what each rewrite relies on in cachelint.lock: it needs the
    # analysis itself, so it never takes the result from the cache
    r = api.check(["."], _config(), fix=True, unsafe_fixes=True, cache_dir=d)
    assert r.cache == "partial" and r.fixed and r.lock_written
    assert (project / "cachelint.lock").is_file()
    assert run(d).cache == "partial"  # the lock and the fixed file changed
    assert run(d).cache == "hit"


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
    assert [_expanded(cache.encode_index(fi)) for fi in parallel] == [
        _expanded(cache.encode_index(fi)) for fi in serial
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


def test_fingerprint_covers_the_whole_package():
    """An edit anywhere in cachelint (the indexer's guards, a preset) must
    invalidate cached indexes and findings, not only an edit of the cache."""
    files = {p.relative_to(REPO).as_posix() for p in cache.fingerprinted_files()}
    assert {"cachelint/index/walk.py", "cachelint/facts/cachesites.py", "cachelint/presets/vllm.toml"} <= files
    assert "cachelint/incremental/cache.py" in files


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


def _expanded(t: list) -> list:
    """An encoded index with each function's calls and the scan positions
    unmarshalled (stored, they are marshalled bytes: see codec._enc_fn)."""
    from cachelint.index.codec import _FI_FUNCTIONS, _FI_SCANS, _FN_CALLS

    out = list(t)
    out[_FI_FUNCTIONS] = [
        [
            *f[:_FN_CALLS],
            marshal.loads(f[_FN_CALLS]) if type(f[_FN_CALLS]) is bytes else f[_FN_CALLS],
            *f[_FN_CALLS + 1 :],
        ]
        for f in t[_FI_FUNCTIONS]
    ]
    if type(t[_FI_SCANS]) is bytes:
        out[_FI_SCANS] = marshal.loads(t[_FI_SCANS])
    return out


def test_loaded_calls_stay_marshalled_until_read():
    """An index loaded from the cache keeps each function's calls as the
    bytes they were stored as until something reads them (the analysis reads
    about one function's calls in eight): reading gives the same CallSites,
    and encoding an index that was never read gives back the stored bytes."""
    from cachelint.index.codec import _FI_FUNCTIONS, _FN_CALLS

    src = "def f(x):\n    g(x)\n    return h(x, k=1)\n\ndef g(x):\n    pass\n"
    fi = index_source(src, "m.py", "m", False)
    stored = marshal.dumps(cache.encode_index(fi))
    loaded = cache.decode_index(marshal.loads(stored))
    f, g = loaded.functions
    assert type(f.__dict__["calls"]) is bytes and type(g.__dict__["calls"]) is bytes
    again = cache.encode_index(loaded)  # the stored bytes, nothing unpacked to re-encode
    assert [h[_FN_CALLS] for h in again[_FI_FUNCTIONS]] == [f.__dict__["calls"], g.__dict__["calls"]]
    assert again == marshal.loads(stored)
    assert f.calls == fi.functions[0].calls and len(f.calls) == 2
    assert type(f.__dict__["calls"]) is list
    assert g.calls == [] and type(g.__dict__["calls"]) is list
    assert loaded == fi
    # unpacked and encoded again: the same calls (marshal bytes are no canonical form)
    assert _expanded(cache.encode_index(loaded)) == _expanded(marshal.loads(stored))


@pytest.mark.vllm
def test_incremental_runs_on_vllm_equal_fresh_runs(tmp_path):
    """Edits of real files in vLLM 0.10.2 (the benchmark's: a comment, a call
    in a method off the hot paths, a call in the per-step root, and a comment
    in the file holding the fills that messages name): each a ``partial`` run
    whose JSON equals a fresh run's; then a hit that equals it too."""
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
        assert got.stdout == fresh.stdout

    both("miss")
    both("hit")
    sched = work / "vllm" / "v1" / "core" / "sched" / "scheduler.py"
    sched.write_text("# one\n# two\n\n" + sched.read_text())
    both("partial")
    for name in ("shutdown", "schedule"):
        assert _insert_first(sched, name, 'logger.debug("edited")')
        both("partial")
    assert _insert_first(sched, "schedule", "self.has_finished_requests()")
    both("partial")
    config = work / "vllm" / "config" / "__init__.py"
    config.write_text("# one\n" + config.read_text())
    both("partial")
    both("hit")


def _insert_first(path: Path, name: str, statement: str) -> bool:
    """Insert ``statement`` before the first statement of the function
    ``name`` of ``path`` (after its docstring)."""
    import ast

    text = path.read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            body = node.body
            if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]  # the docstring
            lines = text.splitlines(keepends=True)
            lines.insert(body[0].lineno - 1, " " * body[0].col_offset + statement + "\n")
            path.write_text("".join(lines), encoding="utf-8")
            return True
    return False
