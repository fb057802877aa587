"""The pre-commit hooks of ``.pre-commit-hooks.yaml``, run by the real
``pre-commit`` tool against a temporary git repository that uses this
checkout (its current files, committed into a scratch hook repository) as the
hook repository. pre-commit pip-installs the hook repository into its own
environment once per test session (libcst and rich come from PyPI)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .helpers import REPO

CONFIG_PY = """\
from dataclasses import dataclass, field


def probe_encoder(config: "Config") -> int:
    return 1500


@dataclass
class Cache:
    encoder_len: int = 0


@dataclass
class Config:
    is_encoder_decoder: bool = False
    cache: Cache = field(default_factory=Cache)

    def __post_init__(self):
        if self.is_encoder_decoder:
            self.cache.encoder_len = probe_encoder(self)
"""

USERS_PY = """\
from pkg.config import Config, probe_encoder


def encoder_len(config: Config) -> int:
    if config.is_encoder_decoder:
        return probe_encoder(config)
    return 0
"""

PYPROJECT = """\
[tool.cachelint]
preset = "none"
extend-expensive-calls = [{ pattern = "*.probe_encoder", kind = "registry", pure = true }]
"""


def _git(cwd: Path, *args: str) -> str:
    env = dict(os.environ)
    env.update(
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def _pre_commit_env(home: Path) -> dict:
    env = dict(os.environ)
    env["PRE_COMMIT_HOME"] = str(home)
    env.pop("PYTHONPATH", None)
    env["PRE_COMMIT_COLOR"] = "never"
    env.update(
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    return env


@pytest.fixture(scope="module")
def hook_env(tmp_path_factory):
    """A scratch git repository with this checkout's files (committed and
    not), and a PRE_COMMIT_HOME with the hooks installed from it once."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    base = tmp_path_factory.mktemp("precommit")
    hook_repo = base / "hook-repo"
    hook_repo.mkdir()
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            check=True,
            capture_output=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for rel in filter(None, listed):
        src = REPO / rel
        if rel.startswith(("fixtures/", "tests/", "docs/")) or not src.is_file():
            continue
        dest = hook_repo / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)
    assert (hook_repo / ".pre-commit-hooks.yaml").is_file()
    _git(hook_repo, "init", "-q")
    _git(hook_repo, "add", "-A")
    _git(hook_repo, "commit", "-q", "-m", "hooks")
    rev = _git(hook_repo, "rev-parse", "HEAD").strip()
    return {"home": base / "pre-commit-home", "repo": hook_repo, "rev": rev}


@pytest.fixture
def project(tmp_path, hook_env) -> Path:
    proj = tmp_path / "proj"
    (proj / "pkg").mkdir(parents=True)
    (proj / "pkg" / "__init__.py").write_text("")
    (proj / "pkg" / "config.py").write_text(CONFIG_PY)
    (proj / "pkg" / "users.py").write_text(USERS_PY)
    (proj / "pkg" / "more_users.py").write_text(USERS_PY)
    (proj / "pyproject.toml").write_text(PYPROJECT)
    (proj / ".pre-commit-config.yaml").write_text(
        textwrap.dedent(
            f"""\
            repos:
              - repo: {hook_env["repo"]}
                rev: {hook_env["rev"]}
                hooks:
                  - id: cachelint
                  - id: cachelint-fix
                    stages: [manual]
            """
        )
    )
    _git(proj, "init", "-q")
    _git(proj, "add", "-A")
    _git(proj, "commit", "-q", "-m", "initial")
    return proj


def _pre_commit(proj: Path, hook_env, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=proj,
        env=_pre_commit_env(hook_env["home"]),
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.slow
def test_check_hook_reports_only_passed_files_with_whole_program_facts(project, hook_env):
    # users.py alone holds no cache site: finding it needs config.py's fill,
    # which the hook still analyses although pre-commit did not pass it
    proc = _pre_commit(project, hook_env, "run", "cachelint", "--files", "pkg/users.py")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "pkg/users.py:6:16: CL001 [*]" in proc.stdout
    assert "more_users.py" not in proc.stdout  # same finding, file not passed
    # a file without findings passes, although the repository has some
    proc = _pre_commit(project, hook_env, "run", "cachelint", "--files", "pkg/config.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Passed" in proc.stdout
    # a commit through the installed git hook is refused while findings remain
    assert _pre_commit(project, hook_env, "install").returncode == 0
    (project / "pkg" / "users.py").write_text(USERS_PY + "\n# touched\n")
    _git(project, "add", "pkg/users.py")
    env = _pre_commit_env(hook_env["home"])
    commit = subprocess.run(["git", "commit", "-m", "touch"], cwd=project, env=env, capture_output=True, text=True)
    assert commit.returncode != 0
    assert "pkg/users.py:6:16: CL001" in commit.stdout + commit.stderr


@pytest.mark.slow
def test_fix_hook_fixes_passed_files_and_fails_when_it_changed_them(project, hook_env):
    proc = _pre_commit(project, hook_env, "run", "cachelint-fix", "--hook-stage", "manual", "--files", "pkg/users.py")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    fixed = (project / "pkg" / "users.py").read_text()
    assert "return config.cache.encoder_len" in fixed
    assert "probe_encoder" not in fixed  # the import it left unused is gone
    assert (project / "pkg" / "more_users.py").read_text() == USERS_PY  # not passed: untouched
    # nothing left to fix: the same hook now passes
    proc = _pre_commit(project, hook_env, "run", "cachelint-fix", "--hook-stage", "manual", "--files", "pkg/users.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (project / "pkg" / "users.py").read_text() == fixed


@pytest.mark.slow
def test_exit_non_zero_on_fix_and_project_root_from_the_cli(tmp_path):
    from .helpers import FIXTURES, run_cli

    for flag, expected in (((), 0), (("--exit-non-zero-on-fix",), 1)):
        proj = tmp_path / f"p{expected}"
        shutil.copytree(FIXTURES / "guards" / "before", proj)
        proc = run_cli("check", ".", "--fix", "--unsafe-fixes", *flag, cwd=proj)
        assert "7 fixed, 0 remaining" in proc.stdout
        assert proc.returncode == expected
    # nothing to fix: exit 0 even with the flag
    assert run_cli("check", ".", "--fix", "--exit-non-zero-on-fix", "--unsafe-fixes", cwd=proj).returncode == 0
    # --project-root: fixes only in the listed files; a missing listed file is an error
    proj = tmp_path / "scoped"
    (proj / "pkg").mkdir(parents=True)
    (proj / "pkg" / "__init__.py").write_text("")
    (proj / "pkg" / "config.py").write_text(CONFIG_PY)
    (proj / "pkg" / "users.py").write_text(USERS_PY)
    (proj / "pkg" / "more_users.py").write_text(USERS_PY)
    (proj / "pyproject.toml").write_text(PYPROJECT)
    proc = run_cli("check", "--project-root", ".", "--fix", "pkg/more_users.py", cwd=proj)
    assert proc.returncode == 0 and "1 fixed" in proc.stdout, proc.stdout + proc.stderr
    assert (proj / "pkg" / "users.py").read_text() == USERS_PY
    assert "config.cache.encoder_len" in (proj / "pkg" / "more_users.py").read_text()
    proc = run_cli("check", "--project-root", ".", "pkg/gone.py", cwd=proj)
    assert proc.returncode == 2 and "no such file or directory: pkg/gone.py" in proc.stderr


def test_project_level_findings_are_kept_when_reporting_only_some_files(tmp_path):
    """A broken invariant of cachelint.lock is reported at the lock, which
    pre-commit never passes: the hook must still report it."""
    from .helpers import FIXTURES, run_cli

    proj = tmp_path / "proj"
    shutil.copytree(FIXTURES / "guards" / "before", proj)
    assert run_cli("check", ".", "--fix", "-q", cwd=proj).returncode == 1  # unsafe ones remain
    assert (proj / "cachelint.lock").is_file()
    config = proj / "pkg" / "config.py"
    text = config.read_text()
    config.write_text(text[: text.index("    def __post_init__")].rstrip() + "\n")  # the fill is gone
    proc = run_cli("check", "--project-root", ".", "pkg/__init__.py", "--output-format", "concise", cwd=proj)
    assert proc.returncode == 1
    lines = [line for line in proc.stdout.splitlines() if ": CL" in line]
    assert len(lines) == 1 and lines[0].startswith("cachelint.lock:") and " CL003 " in lines[0], proc.stdout
