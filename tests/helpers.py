"""Shared test helpers: configs for rule examples, running the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cachelint.config import CatalogEntry, Config, HotRoot

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"


def example_config(example, code: str | None = None) -> Config:
    kw = {"preset": example.preset}
    if code:
        kw["select"] = tuple(example.select) or (code,)
    if example.hot_roots:
        kw["hot_roots"] = tuple(HotRoot(r["pattern"], r.get("kind", "per-step")) for r in example.hot_roots)
    if example.expensive_calls:
        kw["extend_expensive_calls"] = tuple(
            CatalogEntry(e["pattern"], e.get("kind", "expensive"), bool(e.get("pure", False)), e.get("why", ""))
            for e in example.expensive_calls
        )
    return Config(**kw)


_CACHE_DIR: list = []


def _session_cache_dir() -> str:
    if not _CACHE_DIR:
        import atexit
        import shutil
        import tempfile

        d = tempfile.mkdtemp(prefix="cachelint-test-cache-")
        atexit.register(shutil.rmtree, d, True)
        _CACHE_DIR.append(d)
    return _CACHE_DIR[0]


def run_cli(*args: str, cwd: str | os.PathLike | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    # the cache goes to one directory per test session, never into the
    # checked trees (tests that exercise the default location set their own)
    env.setdefault("CACHELINT_CACHE_DIR", _session_cache_dir())
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-m", "cachelint", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
