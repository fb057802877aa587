"""cachelint.lock: written by --fix, rebuilt by `cachelint lock`, checked by CL003/CL004.

The fixture projects ``fixtures/lock_*`` pin what each kind of change reports;
these tests cover the lock file itself and the `lock` command's workflow.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from cachelint.lock.lockfile import Invariant, LockError, Place, dumps, load, merge
from cachelint.rules import ALL_RULES, rule_reference

from .helpers import FIXTURES, REPO, run_cli

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _copy(case: str, tmp_path: Path) -> Path:
    dest = tmp_path / case
    shutil.copytree(FIXTURES / case / "before", dest)
    return dest


def _codes(cwd: Path) -> list[tuple[str, str, int]]:
    proc = run_cli("check", ".", "--output-format", "json", cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    return sorted((f["code"], f["path"], f["line"]) for f in json.loads(proc.stdout))


def _inv(**kw) -> Invariant:
    base = dict(
        attribute="Limits.n",
        holder="pkg.Limits",
        anchor="pkg.Config",
        target="self.limits.n",
        callee="pkg.probe",
        arguments=("self.model",),
        guard=("self.model.enc",),
        fill=Place("pkg", "Config.__post_init__"),
        at_construction=True,
        readers=(Place("pkg.b", "f"),),
    )
    base.update(kw)
    return Invariant(**base)


def test_dumps_is_stable_and_loads_back(tmp_path):
    a = _inv(readers=(Place("z", "g"), Place("a", "f")))
    b = _inv(attribute="A.x", target="self.a.x", holder="pkg.A")
    text = dumps([a, b])
    assert dumps([b, a]) == text  # order of input does not matter
    assert text.index('attribute = "A.x"') < text.index('attribute = "Limits.n"')
    p = tmp_path / "cachelint.lock"
    p.write_text(text)
    loaded = load(p)
    assert [x.attribute for x in loaded] == ["A.x", "Limits.n"]
    assert loaded[1].readers == (Place("a", "f"), Place("z", "g"))  # sorted
    assert loaded[1].line == text.splitlines().index("[[invariant]]", text.splitlines().index("[[invariant]]") + 1) + 1
    assert dumps(loaded) == text
    assert tomllib.loads(text)["version"] == 1


def test_merge_extends_readers_of_the_same_invariant():
    old = [_inv(readers=(Place("pkg.b", "f"),), known_reads=(Place("pkg.c", "g"),))]
    new = [_inv(readers=(Place("pkg.c", "g"),))]
    (merged,) = merge(old, new)
    assert merged.readers == (Place("pkg.b", "f"), Place("pkg.c", "g"))
    # a read that became a rewritten reader is no longer just "known"
    assert merged.known_reads == ()
    # the anchor's name does not matter for identity
    moved = _inv(target="config.limits.n", arguments=("config.model",))
    assert len(merge(old, [moved])) == 1


@pytest.mark.parametrize(
    "text,expected",
    [
        ("version = 1\n[[invariant]\n", "is not valid TOML"),
        ("version = 7\n", "lock version 7 is not supported"),
        ('version = 1\n[[invariant]]\nattribute = "A.x"\n', "invariant #1 is missing"),
    ],
)
def test_broken_lock_is_a_one_line_error(tmp_path, text, expected):
    (tmp_path / "pyproject.toml").write_text("[tool.cachelint]\n")
    (tmp_path / "m.py").write_text("x = 1\n")
    (tmp_path / "cachelint.lock").write_text(text)
    with pytest.raises(LockError, match=expected.split(" is")[0]):
        load(tmp_path / "cachelint.lock")
    proc = run_cli("check", ".", cwd=tmp_path)
    assert proc.returncode == 2
    assert expected in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_fixed_project_is_clean_and_lock_is_current(tmp_path):
    work = _copy("lock_written", tmp_path)
    proc = run_cli("check", ".", "--fix", "--unsafe-fixes", cwd=work)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "recorded what the rewrites rely on" in proc.stderr
    assert _codes(work) == []
    check = run_cli("lock", "--check", cwd=work)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "up to date" in check.stderr


def test_lock_accepts_a_moved_fill(tmp_path):
    work = _copy("lock_fill_moved", tmp_path)
    before = (work / "cachelint.lock").read_text()
    check = run_cli("lock", "--check", cwd=work)
    assert check.returncode == 1  # the recorded fill place is stale
    assert '-fill = { module = "pkg.config", function = "EngineConfig.__post_init__"' in check.stdout
    assert (work / "cachelint.lock").read_text() == before  # --check writes nothing
    proc = run_cli("lock", cwd=work)
    assert proc.returncode == 0, proc.stderr
    lock = tomllib.loads((work / "cachelint.lock").read_text())["invariant"][0]
    assert lock["fill"] == {"module": "pkg.config", "function": "fill_encoder_budget", "at_construction": True}
    # spelled from the new fill's point of view
    assert lock["target"] == "config.scheduler.encoder_budget"
    assert lock["guard"] == ["config.model.is_encoder_decoder", "config.model.pooling is None"]
    assert lock["arguments"] == ["config.model"]
    assert [r["function"] for r in lock["readers"]] == ["max_encoder_len", "Scheduler.schedule"]
    assert _codes(work) == []
    assert run_cli("lock", "--check", cwd=work).returncode == 0


def test_lock_records_an_accepted_new_reader(tmp_path):
    work = _copy("lock_new_reader", tmp_path)
    assert [c for c, _, _ in _codes(work)] == ["CL004"]
    assert run_cli("lock", cwd=work).returncode == 0
    lock = tomllib.loads((work / "cachelint.lock").read_text())["invariant"][0]
    assert {"module": "pkg.runner", "function": "encoder_tokens_left"} in lock["known_reads"]
    assert _codes(work) == []


def test_lock_refuses_to_paper_over_a_deleted_fill(tmp_path):
    work = _copy("lock_fill_deleted", tmp_path)
    before = (work / "cachelint.lock").read_text()
    proc = run_cli("lock", cwd=work)
    assert proc.returncode == 1
    assert "the fill `Registry.encoder_len(self.model)` is gone" in proc.stderr
    assert (work / "cachelint.lock").read_text() == before
    assert [c for c, _, _ in _codes(work)] == ["CL003"] * 3


def test_lock_drops_invariants_nobody_reads(tmp_path):
    work = _copy("lock_fill_deleted", tmp_path)
    # revert both readers to the call: the invariant no longer matters
    for rel, old, new in (
        ("pkg/runner.py", "return config.scheduler.encoder_budget\n", "return REGISTRY.encoder_len(config.model)\n"),
        (
            "pkg/scheduler.py",
            "budget = self.scheduler_config.encoder_budget",
            "budget = REGISTRY.encoder_len(self.config.model)",
        ),
    ):
        p = work / rel
        text = p.read_text().replace(old, new)
        p.write_text("from pkg.config import REGISTRY\n" + text)
    assert [c for c, _, _ in _codes(work)] == []
    assert run_cli("lock", "--check", cwd=work).returncode == 1  # stale entry
    assert run_cli("lock", cwd=work).returncode == 0
    assert "[[invariant]]" not in (work / "cachelint.lock").read_text()


def test_lock_without_a_lock_file_says_so(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.cachelint]\n")
    (tmp_path / "m.py").write_text("x = 1\n")
    proc = run_cli("lock", cwd=tmp_path)
    assert proc.returncode == 0
    assert "no lock at" in proc.stderr
    assert not (tmp_path / "cachelint.lock").exists()


def test_explain_prints_every_rule_and_the_reference_is_current():
    for r in ALL_RULES:
        proc = run_cli("explain", r.code.lower())
        assert proc.returncode == 0
        for section in ("## What it does", "## Why is this bad?", "## Example", "## Fix safety", "## Fix availability"):
            assert section in proc.stdout, (r.code, section)
    assert run_cli("explain", "CL999").returncode == 2
    ref = (REPO / "docs" / "rules.md").read_text(encoding="utf-8")
    assert ref == rule_reference(), "docs/rules.md is stale: run `cachelint explain --all > docs/rules.md`"
    proc = run_cli("explain", "--all")
    assert proc.stdout == ref


def test_cl003_is_an_error_and_cl004_a_warning(tmp_path):
    for case, code, severity in (("lock_fill_deleted", "CL003", "error"), ("lock_new_reader", "CL004", "warning")):
        proc = run_cli("check", ".", "--output-format", "json", cwd=_copy(case, tmp_path))
        got = json.loads(proc.stdout)
        assert got and {(f["code"], f["severity"]) for f in got} == {(code, severity)}
        assert all(f["fix"] is None for f in got)


def test_checking_some_files_does_not_report_fills_outside_them(tmp_path):
    work = _copy("lock_written", tmp_path)
    assert run_cli("check", ".", "--fix", "--unsafe-fixes", cwd=work).returncode == 0
    # only the readers: the fill's module and classes are not analysed
    proc = run_cli("check", "pkg/runner.py", "pkg/scheduler.py", "--output-format", "json", cwd=work)
    assert proc.returncode == 0, proc.stdout
    # the same files with the fill's module, after deleting the fill: reported
    cfg = work / "pkg" / "config.py"
    cfg.write_text(cfg.read_text().replace("self.scheduler.encoder_budget = REGISTRY.encoder_len(self.model)", "pass"))
    proc = run_cli("check", "pkg/config.py", "pkg/runner.py", "--output-format", "json", cwd=work)
    assert proc.returncode == 1
    assert {f["code"] for f in json.loads(proc.stdout)} == {"CL003"}


def test_an_opaque_fill_guard_round_trips(tmp_path):
    # `if A and not B: raise` before the fill: a condition cachelint keeps as
    # written (anchor included) must compare equal to itself after the lock
    shutil.copy(FIXTURES / "lock_written" / "before" / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    config = (FIXTURES / "lock_written" / "before" / "pkg" / "config.py").read_text()
    config = config.replace(
        "        if self.model.is_encoder_decoder and self.model.pooling is None:\n"
        "            self.scheduler.encoder_budget = REGISTRY.encoder_len(self.model)\n",
        "        if self.model.pooling and not self.model.is_encoder_decoder:\n"
        "            raise ValueError('unsupported')\n"
        "        self.scheduler.encoder_budget = REGISTRY.encoder_len(self.model)\n",
    )
    assert "raise ValueError" in config
    config += "\n\ndef budget(config: EngineConfig) -> int:\n    return REGISTRY.encoder_len(config.model)\n"
    (tmp_path / "pkg" / "config.py").write_text(config)
    assert run_cli("check", ".", "--fix", "--unsafe-fixes", cwd=tmp_path).returncode == 0
    lock = tomllib.loads((tmp_path / "cachelint.lock").read_text())["invariant"][0]
    assert lock["guard"] == ["not (self.model.pooling and (not self.model.is_encoder_decoder))"]
    assert _codes(tmp_path) == []
    assert run_cli("lock", "--check", cwd=tmp_path).returncode == 0
