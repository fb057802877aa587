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


def run_cli(
    *args: str, cwd: str | os.PathLike | None = None, timeout: int = 600, in_process: bool = True
) -> subprocess.CompletedProcess:
    """``cachelint ARGS`` in ``cwd``: its exit status, standard output and error.

    By default in this process (:func:`cachelint.cli.main` with the working
    directory, environment and streams swapped for the call): the
    interpreter's start and the import of libcst, about 0.6 s a run, are paid
    once per test worker, not once per run. ``CACHELINT_DEBUG`` is set for
    the call, so a bug in cachelint is not turned into main's one-line message:
    its traceback lands in ``stderr`` with exit status 2, as in a process of
    its own. ``in_process=False`` starts ``python -m cachelint`` instead (the
    vLLM-sized runs, which should not grow a test worker's heap, and anything
    that tests the process itself).
    """
    env = dict(os.environ)
    # the cache goes to one directory per test session, never into the
    # checked trees (tests that exercise the default location set their own)
    env.setdefault("CACHELINT_CACHE_DIR", _session_cache_dir())
    if not in_process:
        env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
        return subprocess.run(
            [sys.executable, "-m", "cachelint", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    return _run_in_process(list(args), cwd, {**env, "CACHELINT_DEBUG": "1"})


def _run_in_process(args: list[str], cwd, env: dict) -> subprocess.CompletedProcess:
    import contextlib
    import io
    import traceback

    from cachelint.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    try:
        os.environ.clear()
        os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except Exception:
                traceback.print_exc()
                code = 2
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(["cachelint", *args], code, out.getvalue(), err.getvalue())
