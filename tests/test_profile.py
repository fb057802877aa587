"""`cachelint profile` and `check --profile` on a workload of our own (fixtures/profile).

The fixture engine runs 20 steps. On each, `Engine.step` rebuilds the same
processor (`get_processor`, which the fixture's configuration marks
expensive: a CL002 finding) and the same small tuple (`special_ids`, which
nothing marks: a repeat the static pass misses), calls `Sampler.jitter`
alike with a different result each time (the control: never a repeat),
calls the library's `textwrap.shorten` (which the workload called first),
and calls `on_step` by name (a function run per step that no hot root
reaches, as `_tally`, which it calls, is not).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cachelint.facts.estimate import rank_of
from cachelint.profiling import fingerprint as fp
from cachelint.profiling.profile import Profile, ProfileError

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "profile"


def cachelint(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "cachelint", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("profile")
    shutil.copytree(FIXTURE, d, dirs_exist_ok=True)
    return d


@pytest.fixture(scope="module")
def profiled(project) -> tuple[subprocess.CompletedProcess, Profile]:
    r = cachelint("profile", "enginelet", "-o", "prof.json", "--", "run_steps.py", "20", "--fail", cwd=project)
    return r, Profile.read(project / "prof.json")


def _repeat(profile: Profile, callee_tail: str):
    found = [r for r in profile.repeats if r.callee.endswith(callee_tail)]
    assert len(found) == 1, profile.repeats
    return found[0]


def test_the_workload_runs_as_itself(profiled):
    r, profile = profiled
    assert r.returncode == 3, r.stderr  # its own exit status
    assert r.stdout == "tokens [8, 14, 18, 23, 33]\n"  # its own output, nothing of ours
    assert profile.exit_code == 3
    assert profile.workload == ["run_steps.py", "20", "--fail"]
    assert profile.backend == ("sys.monitoring" if sys.version_info >= (3, 12) else "sys.setprofile")


def test_steps_and_functions_are_measured(profiled):
    _, profile = profiled
    assert profile.steps == 20
    assert profile.step_functions == ["enginelet.engine.Engine.step"]
    by_name = {f.qualname: f for f in profile.functions}
    assert by_name["enginelet.engine.Engine.step"].step_calls == 20
    assert by_name["enginelet.config.ModelConfig.get_processor"].step_calls == 20
    # start-up is not a step: the engine was built outside one
    assert by_name["enginelet.engine.Engine.__init__"].step_calls == 0
    assert by_name["enginelet.engine.Engine.__init__"].calls == 1
    step = by_name["enginelet.engine.Engine.step"]
    assert step.step_total >= by_name["enginelet.config.ModelConfig.get_processor"].step_total > 0
    assert step.own < step.total
    # calls out of the package are call sites too: a builtin (`sum` in _tally), and a
    # library function that the workload called first, before the package did
    assert any(s.caller.endswith("Engine._tally") and s.callee.endswith("sum") for s in profile.sites)
    (shorten,) = [s for s in profile.sites if s.callee == "textwrap.shorten"]
    assert (shorten.caller, shorten.step_calls) == ("enginelet.engine.Engine.step", 20)


def test_a_repeated_identical_call_is_found_and_timed(profiled):
    _, profile = profiled
    r = _repeat(profile, "ModelConfig.get_processor")
    assert (r.caller, r.calls, r.distinct, r.repeated, r.varied) == ("enginelet.engine.Engine.step", 20, 1, 19, 0)
    assert r.repeated_seconds > 0
    assert _repeat(profile, "ModelConfig.special_ids").repeated == 19


def test_calls_whose_results_differ_are_not_repeats(profiled):
    _, profile = profiled
    r = _repeat(profile, "Sampler.jitter")
    assert r.calls == 20
    # the same arguments every time (the engine unchanged), with 20 results: nothing to memoize
    assert (r.repeated, r.varied, r.distinct) == (0, 1, 20)


def test_a_call_that_writes_state_is_not_a_repeat(profiled):
    """Events.take drains a queue (through Buffer.drain): equal empty results, but not the same call."""
    _, profile = profiled
    assert not [r for r in profile.repeats if r.callee.endswith("Events.take")]
    assert any(f.qualname.endswith("Events.take") and f.step_calls == 20 for f in profile.functions)


def test_the_summary_names_the_repeat(profiled):
    r, _ = profiled
    assert "20 steps (calls of Engine.step)" in r.stderr
    assert "Engine.step:44 -> enginelet.config.ModelConfig.get_processor (19 of 20 calls)" in r.stderr
    assert "Sampler.jitter (" not in r.stderr


def test_check_with_a_profile_carries_the_measured_time(project, profiled):
    r = cachelint("check", "enginelet", "--profile", "prof.json", "--output-format", "json", cwd=project)
    assert r.returncode == 1, r.stderr
    (f,) = json.loads(r.stdout)
    assert (f["code"], f["line"]) == ("CL002", 44)
    m = f["data"]["measured"]
    assert m["steps"] == 20 and m["calls_per_step"] == 1
    assert m["per_step_seconds"] > 0 and "per step" in m["text"]
    assert "estimate" in f["data"]  # the estimate stays beside it
    # the profile never makes a fix safe
    plain = cachelint("check", "enginelet", "--no-cache", "--output-format", "json", cwd=project)
    assert json.loads(plain.stdout)[0]["fix"] == f["fix"]
    assert "measured" not in json.loads(plain.stdout)[0]["data"]


def test_check_with_a_profile_lists_what_the_static_pass_missed(project, profiled):
    r = cachelint("check", "enginelet", "--profile", "prof.json", cwd=project)
    out = r.stdout
    assert "= measured: " in out
    missed = out.split("Measured repeated identical calls with no finding (1):", 1)[1]
    assert "`enginelet.config.ModelConfig.special_ids` from `enginelet.engine.Engine.step`: 19 of 20" in missed
    assert "missed by the static pass: unknown cost" in missed
    assert "get_processor" not in missed.split("Functions measured")[0]  # a finding covers it
    # on_step, not also the _tally it calls: adding on_step makes both hot
    roots = out.split("Functions measured on every step that no hot root reaches (1):", 1)[1]
    assert 'extend-hot-roots = [{ pattern = "enginelet.engine.Engine.on_step", kind = "per-step" }]' in roots


def test_min_cost_reads_the_measured_time(project, profiled):
    # measured at hundreds of µs, estimated at a few µs: a floor between keeps it
    kept = cachelint(
        "check", "enginelet", "--profile", "prof.json", "--min-cost", "50us", "--output-format", "json", cwd=project
    )
    dropped = cachelint(
        "check", "enginelet", "--no-cache", "--min-cost", "50us", "--output-format", "json", cwd=project
    )
    assert [f["line"] for f in json.loads(kept.stdout)] == [44]
    assert json.loads(dropped.stdout) == []
    gone = cachelint(
        "check", "enginelet", "--profile", "prof.json", "--min-cost", "10s", "--output-format", "json", cwd=project
    )
    assert json.loads(gone.stdout) == []


def test_without_fingerprints_only_time_is_measured(project):
    r = cachelint(
        "profile", "enginelet", "-q", "--no-fingerprints", "-o", "bare.json", "--", "run_steps.py", "5", cwd=project
    )
    assert r.returncode == 0 and r.stderr == ""
    profile = Profile.read(project / "bare.json")
    assert profile.steps == 5 and profile.watched == 0 and profile.repeats == []


def test_a_named_step_and_a_module_workload(project):
    (project / "stepper.py").write_text("from enginelet.engine import Engine\ne = Engine()\ne.step()\ne.step()\n")
    r = cachelint(
        "profile", "enginelet", "-q", "--step", "*.Sampler.jitter", "-o", "m.json", "--", "-m", "stepper", cwd=project
    )
    assert r.returncode == 0, r.stderr
    profile = Profile.read(project / "m.json")
    assert profile.workload == ["-m", "stepper"]
    assert profile.step_functions == ["enginelet.engine.Sampler.jitter"] and profile.steps == 2


def test_usage_errors(project, tmp_path):
    assert cachelint("profile", "enginelet", cwd=project).returncode == 2
    missing = cachelint("profile", "enginelet", "--", "nope.py", cwd=project)
    assert missing.returncode == 2 and "no such file or directory: nope.py" in missing.stderr
    (tmp_path / "bad.json").write_text("{}")
    bad = cachelint("check", "enginelet", "--profile", str(tmp_path / "bad.json"), cwd=project)
    assert bad.returncode == 2 and "not a cachelint profile" in bad.stderr
    with pytest.raises(ProfileError):
        Profile.read(tmp_path / "bad.json")


# ----- fingerprints --------------------------------------------------------------------------------


class Cfg:
    def __init__(self, n: int) -> None:
        self.n = n
        self.names = ["a"]


class FakeTensor:
    def __init__(self) -> None:
        self.shape = (2,)

    def data_ptr(self) -> int:
        return 0


def test_argument_fingerprints():
    c = Cfg(1)
    before = fp.argument("c", c)
    assert fp.argument("c", c) == before
    c.n = 2  # rebinding an attribute is a new version
    assert fp.argument("c", c) != before
    assert fp.argument("c", Cfg(2)) != fp.argument("c", c)  # another object
    assert fp.argument("k", (1, "a", None)) == fp.argument("k", (1, "a", None))
    for value, what in (([1], "list"), ({}, "dict"), (FakeTensor(), "FakeTensor"), (object(), "object")):
        assert fp.argument("x", value) == f"argument `x` is a {what}"
        assert type(fp.argument("x", value)) is fp.Unfingerprinted
    big = Cfg(0)
    big.__dict__.update({f"a{i}": i for i in range(fp.ATTRIBUTES)})
    assert fp.argument("big", big) == f"argument `big` has more than {fp.ATTRIBUTES} attributes"
    assert fp.arguments(("a", "b"), {"a": 1, "b": [2]}) == "argument `b` is a list"


def test_result_fingerprints():
    # a new, equal object each call is the same result
    assert fp.result(Cfg(1)) == fp.result(Cfg(1))
    assert fp.result(Cfg(1)) != fp.result(Cfg(2))
    assert fp.result({i: str(i) for i in range(100)}) == fp.result({i: str(i) for i in range(100)})
    assert fp.result([1, 2]) != fp.result([1, 2, 3])
    assert fp.result(FakeTensor()) is None  # not comparable
    assert fp.result(object()) is None
    assert fp.result([1, FakeTensor()]) is None
    assert fp.result((1, Cfg(3))) is not None


def test_ranking_prefers_the_measured_time():
    estimated = {"estimate": {"rank_seconds": 1e-3, "per_step_seconds": 1e-3}}
    measured = {"estimate": {"rank_seconds": 1e-3, "per_step_seconds": 1e-3}, "measured": {"per_step_seconds": 2e-6}}
    assert rank_of(measured) == 2e-6 < rank_of(estimated)


def test_a_site_that_never_fingerprints_stops_trying(tmp_path):
    """After SETTLED calls that all had a list argument, the site's later calls are counted, not fingerprinted."""
    import importlib.util

    from cachelint.profiling.recorder import SETTLED, Defs, Recorder

    src = tmp_path / "pkgmod.py"
    src.write_text("def h(xs):\n    return len(xs)\n\n\ndef run(n):\n    for i in range(n):\n        h([i])\n")
    spec = importlib.util.spec_from_file_location("pkgmod", src)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    real = os.path.realpath(src)
    defs = Defs({real: [(1, "h", "pkgmod.h"), (5, "run", "pkgmod.run")]}, watched=frozenset({"pkgmod.h"}))
    defs.params["pkgmod.h"] = ("xs",)
    rec = Recorder(defs)
    rec.start()
    try:
        mod.run(SETTLED * 3)
    finally:
        rec.stop()
    (r,) = rec.record.repeats.values()
    assert r.unknown == {"argument `xs` is a list": SETTLED * 3}
    assert rec._settled == {("pkgmod.run", 7, "pkgmod.h"): "argument `xs` is a list"}
    assert rec.record.functions["pkgmod.h"][0] == SETTLED * 3


def test_a_thread_that_outlives_the_workload(project):
    """A daemon thread still stepping when the workload ends: the profile is written all the same."""
    (project / "threaded.py").write_text(
        "import threading\n"
        "from enginelet.engine import Engine\n"
        "def spin():\n"
        "    e = Engine(vocab_size=50)\n"
        "    while True:\n"
        "        e.step()\n"
        "threading.Thread(target=spin, daemon=True).start()\n"
        "e = Engine(vocab_size=50)\n"
        "for _ in range(200):\n"
        "    e.step()\n"
    )
    r = cachelint("profile", "enginelet", "-q", "-o", "t.json", "--", "threaded.py", cwd=project)
    assert r.returncode == 0, r.stderr
    profile = Profile.read(project / "t.json")
    assert profile.steps >= 200  # the main thread's steps, and some of the other's


def test_a_module_changed_since_the_profile_is_left_out(project, profiled, tmp_path):
    """Its lines may have moved: check --profile warns and attaches nothing measured there."""
    copy = tmp_path / "changed"
    shutil.copytree(project, copy)
    engine = copy / "enginelet" / "engine.py"
    engine.write_text("# a line that moves every other one down\n" + engine.read_text())
    r = cachelint("check", "enginelet", "--profile", "prof.json", "--output-format", "json", cwd=copy)
    (f,) = json.loads(r.stdout)
    assert f["line"] == 45 and "measured" not in f["data"]
    assert "1 module changed since the profile was taken (enginelet.engine); its measurements are left out" in r.stderr
    same = cachelint("check", "enginelet", "--profile", "prof.json", "--output-format", "json", cwd=project)
    assert "changed since the profile" not in same.stderr
