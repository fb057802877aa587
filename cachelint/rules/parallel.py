"""The rules' checks on more than one core: one analysis, forked.

The whole-program analysis (hot paths, cache sites, every rule) runs in one
process after the indexes are built, and its rules read the same analysis
without writing to it. On vLLM 0.33.0 the rules take about two thirds of the
analysis, on one core while the other sits idle. With ``jobs`` above 1, the
facts that two or more of the selected rules read (their ``reads``) are
computed first, then the process forks once: the child and this process
take rules from one queue (a pipe holding each rule's number as one byte; a
read of one byte from a pipe is atomic, so no rule is taken twice), the
child sends its findings back pickled, and the findings come out in the
order of ``rules`` whichever process made them: the output does not depend
on the split.

The child reads the analysis as it was at the fork (copy-on-write pages of
this process). A rule that fails in the child, or a child that dies, costs
nothing but time: this process runs that rule itself, so an error is raised
where it would be without the fork. Serial where ``os.fork`` is missing or
unsafe (not Linux, or other threads running: a library caller's), for small
programs (fewer files than the indexing pool needs), and with ``jobs`` at 1.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
from collections import Counter
from functools import cached_property
from typing import TYPE_CHECKING

from ..index.pool import PARALLEL_THRESHOLD, default_jobs, fork_safe
from ..model import Finding

if TYPE_CHECKING:
    from ..facts.analysis import Analysis


def check_all(analysis: Analysis, rules, jobs: int | None = 1, threshold: int = PARALLEL_THRESHOLD) -> list[Finding]:
    """Every rule's findings, rule by rule in the order of ``rules``
    (``jobs``: None for as many as the load leaves free, as for indexing)."""
    if jobs is None:
        jobs = default_jobs()
    if jobs <= 1 or len(rules) < 2 or len(analysis.program.indexes) < threshold or not _can_fork():
        return [f for r in rules for f in r().check(analysis)]
    shared_facts(analysis, rules)
    per_rule = _forked(analysis, rules)
    return [f for found in per_rule for f in found]


def _can_fork() -> bool:
    # macOS forks, but system libraries there may not survive it in the child;
    # and a process with other threads is never forked: a lock one of them
    # holds at the fork stays held in the child (CPython warns from 3.12 on)
    return hasattr(os, "fork") and sys.platform.startswith("linux") and fork_safe()


def shared_facts(analysis: Analysis, rules) -> list[str]:
    """Compute the cached facts that two or more of ``rules`` read, so that
    the processes share them instead of each computing its own; their names."""
    counts = Counter(name for r in rules for name in set(getattr(r, "reads", ())))
    done = []
    for name, n in counts.items():
        if n >= 2 and _is_cached(type(analysis), name):
            getattr(analysis, name)
            done.append(name)
    return done


def _is_cached(cls: type, name: str) -> bool:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return isinstance(klass.__dict__[name], cached_property)
    return False


def _forked(analysis: Analysis, rules) -> list[list[Finding]]:
    n = len(rules)
    if n > 255:  # one byte per rule in the queue
        return [list(r().check(analysis)) for r in rules]
    tasks_r, tasks_w = os.pipe()
    os.write(tasks_w, bytes(range(n)))  # far below a pipe's buffer
    os.close(tasks_w)  # both processes see the end of the queue
    results_r, results_w = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        for fd in (tasks_r, results_r, results_w):
            os.close(fd)
        return [list(r().check(analysis)) for r in rules]
    if pid == 0:  # the child: never returns
        _child(analysis, rules, tasks_r, results_w, results_r)
    os.close(results_w)
    mine: dict[int, list[Finding]] = {}
    theirs: dict[int, list[Finding] | None] = {}
    try:
        while b := os.read(tasks_r, 1):
            mine[b[0]] = list(rules[b[0]]().check(analysis))
        with os.fdopen(results_r, "rb") as r:
            results_r = -1
            data = r.read()
        theirs = _loads(data)
    finally:
        os.close(tasks_r)
        if results_r != -1:
            os.close(results_r)
            os.kill(pid, signal.SIGKILL)  # this process failed: the child's work is not wanted
        os.waitpid(pid, 0)
    out = []
    for i, rule in enumerate(rules):
        found = mine.get(i)
        if found is None:
            found = theirs.get(i)
        if found is None:  # failed or never run in the child: here, as without the fork
            found = list(rule().check(analysis))
        out.append(found)
    return out


def _loads(data: bytes) -> dict:
    try:
        got = pickle.loads(data) if data else {}
    except Exception:  # a child killed while writing
        return {}
    return got if isinstance(got, dict) else {}


def _child(analysis: Analysis, rules, tasks_r: int, results_w: int, results_r: int) -> None:
    code = 0
    try:
        os.close(results_r)
        out: dict[int, list[Finding] | None] = {}
        while b := os.read(tasks_r, 1):
            try:
                out[b[0]] = list(rules[b[0]]().check(analysis))
            except BaseException:  # the parent runs it again and raises there
                out[b[0]] = None
                break
        data = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(results_w, "wb") as w:
            w.write(data)
    except BaseException:
        code = 1
    finally:
        # no exit handlers, no flushing of buffers this process inherited
        os._exit(code)
