"""The rules' checks on two cores (``rules/parallel.py``): the same findings in
the same order as on one, and a failure in the child costs only time."""

from __future__ import annotations

import os
import time

import pytest

from cachelint import api
from cachelint.config import Config, find_config, load_config_file
from cachelint.model import Finding, Span
from cachelint.rules import parallel, select_rules
from cachelint.rules.parallel import check_all, shared_facts
from cachelint.rules.runner import run_rules

from .helpers import FIXTURES

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork") or os.name != "posix", reason="forks"),
    # these tests fork on purpose beside the test runner's idle threads
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning"),
]


@pytest.fixture(autouse=True)
def _one_thread(request, monkeypatch):
    """The test runner's own threads (pytest-xdist's) would keep the rules
    serial: the tests here fork as a single-threaded cachelint would."""
    if "threads" not in request.node.name:
        monkeypatch.setattr(parallel, "fork_safe", lambda: True)


def _analysis(name: str):
    tree = FIXTURES / name / "before"
    found = find_config(tree)
    config = load_config_file(found) if found is not None else Config()
    analysis, _ = api.analyse([str(tree)], config, jobs=1)
    return analysis


def _key(findings):
    return [(f, sorted(f.data.items(), key=repr)) for f in findings]


@pytest.mark.parametrize("name", ["nested_classes", "syntax_error", "model_runner", "scheduler"])
def test_forked_checks_give_the_serial_findings_in_the_serial_order(name):
    rules = select_rules()
    serial = check_all(_analysis(name), rules, jobs=1)
    forked = check_all(_analysis(name), rules, jobs=2, threshold=0)
    assert serial and _key(forked) == _key(serial)
    # and through run_rules (merging, suppressions), forked by default above the threshold only
    a = _analysis(name)
    assert run_rules(a, rules, jobs=2) == run_rules(_analysis(name), rules, jobs=1)


class _Slow:
    """A rule that takes a while and records which process ran it."""

    code = "CL990"
    reads = ("hot",)
    log = ""

    def check(self, analysis):
        time.sleep(0.05)
        with open(self.log, "a") as f:
            f.write(f"{os.getpid()} {type(self).__name__}\n")
        return [Finding(self.code, "x.py", Span(1, 0, 1, 1), type(self).__name__)]


def _slow_rules(tmp_path, n: int, extra=()):
    log = str(tmp_path / "ran.log")
    rules = [type(f"Slow{i}", (_Slow,), {"log": log}) for i in range(n)]
    return [*rules, *extra], log


def _ran(log: str) -> list[tuple[int, str]]:
    with open(log) as f:
        return [(int(p), name) for p, name in (line.split() for line in f)]


def test_both_processes_take_rules_and_each_rule_runs_once(tmp_path):
    rules, log = _slow_rules(tmp_path, 8)
    out = check_all(_analysis("nested_classes"), rules, jobs=2, threshold=0)
    assert [f.message for f in out] == [r.__name__ for r in rules]
    ran = _ran(log)
    assert sorted(name for _, name in ran) == sorted(r.__name__ for r in rules)
    assert len({pid for pid, _ in ran}) == 2 and os.getpid() in {pid for pid, _ in ran}


def test_serial_with_one_job_or_a_small_program(tmp_path):
    rules, log = _slow_rules(tmp_path, 4)
    check_all(_analysis("nested_classes"), rules, jobs=1, threshold=0)
    check_all(_analysis("nested_classes"), rules, jobs=2)  # fewer files than the threshold
    assert {pid for pid, _ in _ran(log)} == {os.getpid()}


def test_a_rule_failing_in_the_child_runs_again_here(tmp_path):
    parent = os.getpid()

    class FailsInChild:
        code = "CL991"
        reads = ("hot",)

        def check(self, analysis):
            if os.getpid() != parent:
                raise RuntimeError("only in the child")
            return [Finding("CL991", "x.py", Span(1, 0, 1, 1), "made here")]

    # enough slow rules that the child is busy when FailsInChild comes up either way
    rules, _ = _slow_rules(tmp_path, 6, extra=[FailsInChild] * 3)
    out = check_all(_analysis("nested_classes"), rules, jobs=2, threshold=0)
    assert [f.message for f in out] == [r.__name__ for r in rules[:6]] + ["made here"] * 3


def test_a_failing_rule_raises_here_as_without_the_fork(tmp_path, monkeypatch):
    class Fails:
        code = "CL992"

        def check(self, analysis):
            raise ValueError("broken rule")

    children = []
    real_fork = os.fork

    def fork():
        pid = real_fork()
        if pid:
            children.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork)
    rules, _ = _slow_rules(tmp_path, 3, extra=[Fails])
    with pytest.raises(ValueError, match="broken rule"):
        check_all(_analysis("nested_classes"), rules, jobs=2, threshold=0)
    assert len(children) == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(children[0], os.WNOHANG)  # the child was reaped


def test_a_child_that_dies_leaves_its_rules_to_this_process(tmp_path):
    parent = os.getpid()

    class DiesInChild(_Slow):
        def check(self, analysis):
            if os.getpid() != parent:
                os._exit(3)
            return super().check(analysis)

    rules, log = _slow_rules(tmp_path, 4)
    dying = type("DiesInChild", (DiesInChild,), {"log": log})
    rules = [dying, *rules, dying]
    out = check_all(_analysis("nested_classes"), rules, jobs=2, threshold=0)
    # every rule's findings, in order: what the dead child ran was run again here
    assert [f.message for f in out] == [r.__name__ for r in rules]
    assert {pid for pid, name in _ran(log) if name == "DiesInChild"} == {parent}


def test_facts_read_by_two_rules_are_computed_before_the_fork():
    analysis = _analysis("model_runner")

    class A:
        reads = ("hot", "cost", "removable_names")

    class B:
        reads = ("hot", "cost", "bodies")

    assert sorted(shared_facts(analysis, [A, B])) == ["cost", "hot"]  # a method is not a fact to compute
    assert "hot" in analysis.__dict__ and "bodies" not in analysis.__dict__


def test_serial_while_other_threads_run(tmp_path):
    import threading

    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        rules, log = _slow_rules(tmp_path, 4)
        check_all(_analysis("nested_classes"), rules, jobs=2, threshold=0)
    finally:
        stop.set()
        other.join()
    assert {pid for pid, _ in _ran(log)} == {os.getpid()}


def test_indexing_is_serial_while_other_threads_run(monkeypatch):
    import threading

    from cachelint.discover.walk import discover
    from cachelint.index import pool

    files = discover([str(FIXTURES / "model_runner" / "before")])
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert pool.index_shared([(None, f.path, f.module, f.is_package) for f in files], 2) is None
        assert len(pool.index_files(files, jobs=2)) == len(files)  # serially
    finally:
        stop.set()
        other.join()
    got = pool.index_shared([(None, f.path, f.module, f.is_package) for f in files], 2)
    assert got is not None and len(got) == len(files)  # one thread: a pool
