"""A ``--fix`` run killed (SIGKILL, no chance to clean up) at random moments
while it writes fixes leaves every file either exactly as it was or exactly
as fixed, never truncated or mixed; a later run finishes the job."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .helpers import FIXTURES, REPO

N_FILES = 80
KILLS = 2  # kills that land while files are being written
MAX_ATTEMPTS = 6


def _module(i: int) -> str:
    uses = "".join(
        f"""
def use_{i}_{j}(config: Config) -> int:
    if config.is_encoder_decoder and config.pooling is None:
        return probe_encoder(config) + {j}
    return 0
"""
        for j in range(3)
    )
    filler = "".join(f"\n\ndef filler_{i}_{k}(x):\n    return [x, {k}, 'text {k}']\n" for k in range(5))
    return f"from pkg.config import Config, probe_encoder\n{uses}{filler}"


def _make_project(root: Path) -> None:
    shutil.copytree(FIXTURES / "guards" / "before", root)
    (root / "pkg" / "users.py").unlink()
    for i in range(N_FILES):
        (root / "pkg" / f"m{i:03}.py").write_text(_module(i))


def _sources(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / "pkg").glob("m*.py"))}


def _cmd() -> list[str]:
    return [sys.executable, "-m", "cachelint", "check", ".", "--fix", "-q", "--output-format", "concise"]


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(REPO))


def _mtimes(pkg: Path) -> dict[str, int]:
    out = {}
    for e in os.scandir(pkg):
        try:
            out[e.name] = e.stat().st_mtime_ns
        except FileNotFoundError:  # a temporary file renamed away meanwhile
            pass
    return out


@pytest.mark.slow
def test_sigkill_during_fix_leaves_every_file_old_or_new(tmp_path):
    rng = random.Random(20240611)
    reference = tmp_path / "reference"
    _make_project(reference)
    original = _sources(reference)
    done = subprocess.run(_cmd(), cwd=reference, env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    fixed = _sources(reference)
    assert all(fixed[name] != original[name] for name in original)  # every file gets a fix
    assert all(b"config.cache.encoder_len + 2" in data for data in fixed.values())

    work = tmp_path / "work"
    _make_project(work)
    pkg = work / "pkg"
    mid_run_kills = 0
    for attempt in range(MAX_ATTEMPTS):
        if _sources(work) == fixed:  # a run finished before the kill: start over
            shutil.rmtree(work)
            _make_project(work)
        start = _mtimes(pkg)
        proc = subprocess.Popen(_cmd(), cwd=work, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # wait until it starts writing (a temporary file or a changed file),
        # then let it run a random little while and kill it
        deadline = time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < deadline:
            now = _mtimes(pkg)
            if any(n.startswith(".cachelint-") and n not in start for n in now) or any(
                now.get(k) != v for k, v in start.items()
            ):
                break
            time.sleep(0.002)
        time.sleep(rng.uniform(0, 0.04))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        current = _sources(work)
        assert set(current) == set(original)
        n_new = 0
        for name, data in current.items():
            assert data in (original[name], fixed[name]), f"{name} is neither old nor new after kill {attempt}"
            n_new += data == fixed[name]
        if proc.returncode == -signal.SIGKILL and 0 < n_new < len(original):
            mid_run_kills += 1
        # a killed run may leave its temporary file behind, nothing else
        strays = {p.name for p in pkg.iterdir()} - set(current) - {"__init__.py", "config.py", "__pycache__"}
        assert all(s.startswith(".cachelint-") and s.endswith(".tmp") for s in strays), strays
        if mid_run_kills >= KILLS:
            break
    assert mid_run_kills >= 1, "no kill landed while files were being written"
    # a run to the end completes the fix: the same result as the uninterrupted run
    proc = subprocess.run(_cmd(), cwd=work, env=_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _sources(work) == fixed
