"""Bad input and faults: every kind of broken file is a clear per-file finding
(CL000) or a one-line error with exit 2, never a traceback, and the other
files are still checked and fixed; fixes keep encodings, BOMs, line endings
and modes, are atomic, and are never written over a file that changed."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cachelint import api
from cachelint.config import Config, load_config_file

from .helpers import FIXTURES, REPO, run_cli

FIXED_CALL = "config.cache.encoder_len"


@pytest.fixture
def project(tmp_path) -> Path:
    """The guards fixture: 7 CL001 findings in pkg/users.py, 4 of them safe."""
    dest = tmp_path / "proj"
    shutil.copytree(FIXTURES / "guards" / "before", dest)
    return dest


def _json(proc) -> list[dict]:
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def _by_path(findings: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for f in findings:
        out.setdefault(f["path"], []).append(f)
    return out


def test_broken_files_are_findings_and_the_rest_is_still_checked(project):
    bad = project / "pkg" / "bad"
    bad.mkdir()
    (bad / "syntax.py").write_text("def f(:\n    pass\n")
    (bad / "nul.py").write_bytes(b"x = 1\ny = 2\0\n")
    (bad / "undecodable.py").write_bytes(b"# -*- coding: utf-8 -*-\nx = '\xff\xfe'\n")
    (bad / "unknown_codec.py").write_bytes(b"# coding: klingon\nx = 1\n")
    (bad / "empty.py").write_bytes(b"")
    (bad / "deep.py").write_text("x = " + "(" * 300 + "1" + ")" * 300 + "\n")
    (bad / "loop_a.py").symlink_to("loop_b.py")
    (bad / "loop_b.py").symlink_to("loop_a.py")
    (bad / "dangling.py").symlink_to("nowhere.py")
    (bad / "dirloop").mkdir()
    (bad / "dirloop" / "again").symlink_to("..")
    os.mkfifo(bad / "fifo.py")  # would block a plain open()
    proc = run_cli("check", ".", "--output-format", "json", cwd=project, timeout=120)
    assert proc.returncode == 1
    found = _by_path(_json(proc))
    # the good file's 7 findings are all still there
    assert len(found.pop("pkg/users.py")) == 7
    expect = {
        "pkg/bad/syntax.py": (1, 7, "SyntaxError"),
        "pkg/bad/nul.py": (2, 6, "null bytes"),
        "pkg/bad/undecodable.py": (2, 6, "UnicodeDecodeError"),
        "pkg/bad/unknown_codec.py": (1, 1, "unknown encoding: klingon"),
        "pkg/bad/loop_a.py": (1, 1, "Too many levels of symbolic links"),
        "pkg/bad/loop_b.py": (1, 1, "Too many levels of symbolic links"),
        "pkg/bad/dangling.py": (1, 1, "No such file"),
    }
    for path, (line, col, text) in expect.items():
        [f] = found.pop(path)
        assert f["code"] == "CL000" and (f["line"], f["column"]) == (line, col), f
        assert text in f["message"], f
    # empty file: nothing; deep nesting: analysed or reported, never a crash;
    # the FIFO and the directory loop: skipped
    assert set(found) <= {"pkg/bad/deep.py"}
    # the fixes to the good file are still written
    proc = run_cli("check", ".", "--fix", "-q", cwd=project, timeout=120)
    assert "Traceback" not in proc.stderr
    assert (project / "pkg/users.py").read_text().count(FIXED_CALL) == 4


def test_file_name_that_is_not_utf8_in_every_format(project):
    (project / "pkg").joinpath(os.fsdecode(b"caf\xe9.py")).write_bytes(b"def f(:\n")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = {}
    for fmt in ("text", "concise", "json", "sarif", "github"):
        proc = subprocess.run(
            [sys.executable, "-m", "cachelint", "check", ".", "--output-format", fmt],
            cwd=project,
            env=env,
            capture_output=True,
        )
        err = proc.stderr.decode("utf-8", "replace")
        assert proc.returncode == 1, (fmt, err)
        assert "Traceback" not in err and "internal error" not in err, (fmt, err)
        out[fmt] = proc.stdout.decode("utf-8", "surrogateescape")
    sarif = json.loads(out["sarif"])
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in sarif["runs"][0]["results"]}
    assert "pkg/caf%E9.py" in uris  # the bytes on disk, percent-encoded


def test_explicitly_named_broken_paths(project):
    (project / "loop.py").symlink_to("loop.py")
    proc = run_cli("check", "loop.py", "pkg", "--output-format", "json", cwd=project)
    found = _by_path(_json(proc))
    assert found["loop.py"][0]["code"] == "CL000"
    assert len(found["pkg/users.py"]) == 7
    proc = run_cli("check", "missing.py", cwd=project)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "cachelint: error: no such file or directory: missing.py"


def _fixable_variant(project: Path, transform) -> Path:
    users = project / "pkg" / "users.py"
    users.write_bytes(transform(users.read_bytes()))
    return users


def test_bom_is_kept_after_a_fix(project):
    users = _fixable_variant(project, lambda b: b"\xef\xbb\xbf" + b)
    proc = run_cli("check", ".", "--fix", cwd=project)
    assert "4 fixed" in proc.stdout, proc.stdout + proc.stderr
    data = users.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and not data[3:].startswith(b"\xef\xbb\xbf")
    assert data.decode("utf-8-sig").count(FIXED_CALL) == 4


def test_crlf_is_kept_after_a_fix(project):
    users = _fixable_variant(project, lambda b: b.replace(b"\n", b"\r\n"))
    proc = run_cli("check", ".", "--fix", "--unsafe-fixes", cwd=project)
    assert "7 fixed" in proc.stdout, proc.stdout + proc.stderr
    data = users.read_bytes()
    assert FIXED_CALL.encode() in data
    assert data.count(b"\n") == data.count(b"\r\n") > 10  # no bare LF introduced
    # the unused import went, with its own CRLF
    assert data.startswith(b"from pkg.config import Config\r\n")


def test_latin1_file_is_fixed_in_its_encoding(project):
    def to_latin1(b: bytes) -> bytes:
        text = "# -*- coding: latin-1 -*-\n# Grüße\n" + b.decode()
        return text.encode("latin-1")

    users = _fixable_variant(project, to_latin1)
    # positions shift by the two header lines; the fix still applies
    proc = run_cli("check", ".", "--fix", cwd=project)
    assert "4 fixed" in proc.stdout, proc.stdout + proc.stderr
    data = users.read_bytes()
    assert b"# Gr\xfc\xdfe" in data  # still latin-1
    assert data.decode("latin-1").count(FIXED_CALL) == 4


def test_mode_is_kept_and_no_temp_files_left(project):
    users = project / "pkg" / "users.py"
    users.chmod(0o754)
    before = {p.name for p in users.parent.iterdir()}
    run_cli("check", ".", "--fix", cwd=project)
    assert stat.S_IMODE(users.stat().st_mode) == 0o754
    assert users.read_text().count(FIXED_CALL) == 4
    assert {p.name for p in users.parent.iterdir()} == before


def test_symlinked_file_is_fixed_through_the_link_only_inside_the_paths(project, tmp_path):
    # a link inside the tree to a file inside the tree: the link stays a link
    real = project / "pkg" / "users.py"
    os.rename(real, project / "pkg" / "real_users.py")
    real.symlink_to("real_users.py")
    run_cli("check", ".", "--fix", cwd=project)
    assert real.is_symlink()
    assert (project / "pkg" / "real_users.py").read_text().count(FIXED_CALL) == 4
    # a link to a file outside the given paths is reported, never written
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(FIXTURES / "guards" / "before" / "pkg" / "users.py", outside / "users.py")
    real.unlink()
    (project / "pkg" / "real_users.py").unlink()
    real.symlink_to(outside / "users.py")
    original = (outside / "users.py").read_text()
    proc = run_cli("check", ".", "--fix", cwd=project)
    assert "outside the checked paths; fix not written" in proc.stderr
    assert (outside / "users.py").read_text() == original
    assert real.is_symlink()


def test_file_changed_after_analysis_is_not_fixed(project, monkeypatch, capsys):
    from cachelint.apply import fixer, passes

    users = project / "pkg" / "users.py"
    original_compute = fixer.compute_fixes

    def edit_then_compute(*args, **kw):
        users.write_text(users.read_text() + "\n# edited by someone else\n")
        return original_compute(*args, **kw)

    monkeypatch.setattr(passes, "compute_fixes", edit_then_compute)
    monkeypatch.chdir(project)
    res = api.check(["."], load_config_file(project / "pyproject.toml"), fix=True)
    assert res.fixed == []
    assert any("changed on disk since it was analysed" in e for e in res.errors)
    assert FIXED_CALL not in users.read_text()
    assert users.read_text().endswith("# edited by someone else\n")


def test_file_changed_between_fix_and_write_is_not_written(project, monkeypatch):
    from cachelint.apply import fixer, passes

    users = project / "pkg" / "users.py"
    original_write = fixer.write_fix

    def edit_then_write(ff, roots=None):
        Path(ff.path).write_text(ff.old + "# late edit\n")
        return original_write(ff, roots)

    monkeypatch.setattr(passes, "write_fix", edit_then_write)
    monkeypatch.chdir(project)
    res = api.check(["."], load_config_file(project / "pyproject.toml"), fix=True)
    assert any("changed on disk since it was read; fix not written" in e for e in res.errors)
    assert users.read_text().endswith("# late edit\n") and FIXED_CALL not in users.read_text()


def test_unreadable_file_real_permissions(project):
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        pytest.skip("root reads any file; the injected-fault test below covers this path")
    secret = project / "pkg" / "secret.py"
    secret.write_text("x = 1\n")
    secret.chmod(0)
    try:
        found = _by_path(_json(run_cli("check", ".", "--output-format", "json", cwd=project)))
    finally:
        secret.chmod(0o644)
    assert "Permission denied" in found["pkg/secret.py"][0]["message"]
    assert len(found["pkg/users.py"]) == 7


def test_unreadable_file_injected_fault(project, monkeypatch):
    """The same failure injected at the OS boundary (works as root too)."""
    from cachelint import files as index

    secret = project / "pkg" / "secret.py"
    secret.write_text("x = 1\n")
    real_open = os.open

    def deny(path, flags, *a, **kw):
        if str(path).endswith("secret.py"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *a, **kw)

    monkeypatch.setattr(index.os, "open", deny)
    monkeypatch.chdir(project)
    res = api.check(["."], load_config_file(project / "pyproject.toml"))
    by = {}
    for f in res.findings:
        by.setdefault(f.path, []).append(f)
    assert "Permission denied" in by["pkg/secret.py"][0].message
    assert len(by["pkg/users.py"]) == 7


@pytest.mark.slow
def test_five_megabyte_file_is_checked_and_fixed(project):
    users = project / "pkg" / "users.py"
    head = users.read_text()
    # generated code of the usual shape, with long lines (a data table, say)
    # so parsing 5 MB stays quick enough for CI
    text = "x" * 300
    filler = "".join(
        f"def helper_{i}(x, y):\n    total = x + y * {i}\n    return [total, '{text} {i}', {{'k': {i}}}]\n\n\n"
        for i in range(14000)
    )
    users.write_text(head + "\n\n" + filler)
    assert users.stat().st_size > 5 * 1024 * 1024
    proc = run_cli("check", ".", "--fix", "--output-format", "concise", cwd=project, timeout=600)
    assert "Traceback" not in proc.stderr
    assert "Found 7 findings (4 fixed, 3 remaining)." in proc.stdout, proc.stdout + proc.stderr
    text = users.read_text()
    assert text.count(FIXED_CALL) == 4 and text.endswith(filler)
    compile(text, str(users), "exec")


def test_broken_configuration_is_one_line_and_exit_2(project):
    pyproject = project / "pyproject.toml"
    cases = {
        "[tool.cachelint\n": "invalid TOML",
        "[tool.cachelint]\nselect = 3\n": "select",
        '[tool.cachelint]\nselect = ["XX9"]\n': "unknown rule selector `XX9`",
    }
    for text, needle in cases.items():
        pyproject.write_text(text)
        proc = run_cli("check", ".", cwd=project)
        assert proc.returncode == 2, (text, proc.stdout, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("cachelint: error: ") and needle in lines[0], proc.stderr
    pyproject.write_bytes(b"[tool.cachelint]\nselect = ['\xff']\n")  # not UTF-8
    proc = run_cli("check", ".", cwd=project)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "args",
    [("check", ".", "--select", "CL999"), ("check", ".", "--ignore", "NOPE"), ("explain", "CL999")],
)
def test_unknown_rule_code(project, args):
    proc = run_cli(*args, cwd=project)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "unknown rule" in lines[0] and "Traceback" not in proc.stderr


def test_never_writes_outside_the_given_paths_and_never_imports_them(tmp_path):
    """The checked tree sits in a read-only parent; its modules would leave a
    marker file if imported or executed. cachelint writes only fixes, inside
    the tree, and nothing else anywhere under the parent."""
    parent = tmp_path / "ro"
    shutil.copytree(FIXTURES / "guards" / "before", parent / "proj")
    marker = tmp_path / "imported-marker"
    for mod in ("config.py", "users.py", "__init__.py"):
        p = parent / "proj" / "pkg" / mod
        p.write_text(f"open({str(marker)!r}, 'w').write('executed')\n" + p.read_text())

    def snapshot() -> dict[str, bytes]:
        return {str(p.relative_to(tmp_path)): p.read_bytes() for p in sorted(parent.rglob("*")) if p.is_file()}

    before = snapshot()
    parent.chmod(0o555)
    try:
        env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1", HOME=str(tmp_path / "home"))
        proc = subprocess.run(
            [sys.executable, "-m", "cachelint", "check", "proj", "--fix", "--unsafe-fixes"],
            cwd=parent,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        parent.chmod(0o755)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not marker.exists()
    after = snapshot()
    changed = {k for k in after if k in before and before[k] != after[k]}
    assert changed == {"ro/proj/pkg/users.py"}
    assert set(before) <= set(after)  # nothing removed
    new = set(after) - set(before)
    # nothing new outside the given path; inside it, no temporary file or
    # source is left (an on-disk analysis cache inside the tree would be fine)
    assert all(k.startswith("ro/proj/") for k in new), new
    assert not any(k.endswith((".py", ".tmp")) for k in new), new


def test_config_object_of_the_api_is_not_needed_for_bad_files(tmp_path):
    # the library API never raises for a bad source file
    (tmp_path / "a.py").write_bytes(b"\xff\xfe\x00garbage")
    (tmp_path / "b.py").write_text("def f(:\n")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        res = api.check(["."], Config(preset="none"))
    finally:
        os.chdir(cwd)
    assert sorted((f.path, f.code) for f in res.findings) == [("a.py", "CL000"), ("b.py", "CL000")]


def test_syntax_warnings_of_the_analysed_code_are_not_printed(project):
    users = project / "pkg" / "users.py"
    users.write_text(users.read_text() + "\n\ndef odd(x):\n    return 1() if x is 1 else x\n")
    proc = run_cli("check", ".", "--fix", "--unsafe-fixes", "-q", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SyntaxWarning" not in proc.stderr, proc.stderr
    assert users.read_text().count(FIXED_CALL) == 7
