"""Colours and the progress indicator: only on a terminal, never in a pipe,
never with NO_COLOR; rich is not even imported for a pipe."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from .helpers import REPO, run_cli

ANSI = "\x1b["

USERS = """\
from pkg.config import Config, probe_encoder


def encoder_len(config: Config) -> int:
    if config.is_encoder_decoder:
        return probe_encoder(config)
    return 0
"""

CONFIG = """\
def probe_encoder(config) -> int:
    return 1500


class Cache:
    encoder_len: int = 0


class Config:
    is_encoder_decoder: bool = False
    cache: Cache

    def __init__(self):
        self.cache = Cache()
        if self.is_encoder_decoder:
            self.cache.encoder_len = probe_encoder(self)
"""


@pytest.fixture(scope="module")
def big_project(tmp_path_factory) -> Path:
    """Enough files for a progress indicator (terminal.PROGRESS_MIN_FILES)."""
    root = tmp_path_factory.mktemp("big")
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "config.py").write_text(CONFIG)
    for i in range(240):
        (pkg / f"users_{i:03}.py").write_text(USERS)
    (root / "pyproject.toml").write_text(
        '[tool.cachelint]\npreset = "none"\n'
        'extend-expensive-calls = [{ pattern = "*.probe_encoder", kind = "registry", pure = true }]\n'
    )
    return root


def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "CI", "TERM")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["TERM"] = "xterm-256color"
    env.update(extra)
    return env


def _run_in_pty(args: list[str], cwd: Path, env: dict) -> tuple[int, str]:
    """Run cachelint with stdout and stderr on a pseudo-terminal."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cachelint", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
    )
    os.close(slave)
    chunks: list[bytes] = []

    def reader():
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    rc = proc.wait(timeout=600)
    t.join(timeout=30)
    os.close(master)
    return rc, b"".join(chunks).decode("utf-8", "replace")


def test_terminal_gets_colour_and_progress(big_project):
    rc, out = _run_in_pty(["check", "."], big_project, _env())
    assert rc == 1
    assert ANSI in out
    assert "Indexing" in out  # the progress bar was drawn (then removed)
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out)
    assert "pkg/users_000.py:6:16: CL001 [*]" in plain
    assert "\x1b[1;31mCL001" in out  # the rule code in bold red


def test_no_color_is_respected_on_a_terminal(big_project):
    rc, out = _run_in_pty(["check", ".", "--output-format", "text"], big_project, _env(NO_COLOR="1"))
    assert rc == 1
    # NO_COLOR removes colour; the transient progress bar may still draw
    # (cursor movement, no colour codes)
    report = out[out.index("pkg/users_000.py") :]
    assert "\x1b[3" not in report and "\x1b[1m" not in report
    assert "pkg/users_000.py:6:16: CL001 [*]" in report


def test_ci_gets_no_progress_even_on_a_terminal(big_project):
    rc, out = _run_in_pty(["check", ".", "--color", "never"], big_project, _env(CI="true"))
    assert rc == 1
    assert "Indexing" not in out and ANSI not in out


def test_pipes_get_no_ansi_and_no_progress(big_project):
    proc = run_cli("check", ".", cwd=big_project)
    assert proc.returncode == 1
    assert ANSI not in proc.stdout and ANSI not in proc.stderr
    assert "Indexing" not in proc.stderr
    assert proc.stdout.count("CL001 [*]") == 240
    # FORCE_COLOR turns colour on in a pipe; NO_COLOR beats it; --color never beats both
    env = _env(FORCE_COLOR="1")
    forced = subprocess.run(
        [sys.executable, "-m", "cachelint", "check", "."], cwd=big_project, env=env, capture_output=True, text=True
    )
    assert ANSI in forced.stdout and "Indexing" not in forced.stderr
    env["NO_COLOR"] = "1"
    both = subprocess.run(
        [sys.executable, "-m", "cachelint", "check", "."], cwd=big_project, env=env, capture_output=True, text=True
    )
    assert ANSI not in both.stdout
    always = subprocess.run(
        [sys.executable, "-m", "cachelint", "check", ".", "--color", "always"],
        cwd=big_project,
        env=env,
        capture_output=True,
        text=True,
    )
    assert ANSI in always.stdout
    # colour never changes the text itself
    assert re.sub(r"\x1b\[[0-9;]*m", "", always.stdout) == proc.stdout


def test_rich_is_not_imported_for_a_pipe(big_project):
    code = (
        "import sys\n"
        "from cachelint.cli import main\n"
        "rc = main(['check', '.', '-q'])\n"
        "assert 'rich' not in sys.modules, 'rich imported'\n"
        "sys.exit(rc)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=big_project, env=_env(), capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    assert "rich imported" not in proc.stderr
