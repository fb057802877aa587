"""Running a user's workload (a script or a module, with its arguments) in this process, measured.

The workload runs as ``python SCRIPT ARGS`` or ``python -m MODULE ARGS``
would run it: ``__main__``, its own ``sys.argv`` and ``sys.path[0]``. Its
output goes where it would; its exit status (``sys.exit``, an uncaught
exception: 1, with the traceback printed) is returned, not raised.
"""

from __future__ import annotations

import runpy
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from .profile import FunctionTime, Profile, Repeat, SiteTime
from .recorder import Defs, Record, Recorder


@dataclass(frozen=True)
class Workload:
    target: str  # a script's path, or a module's name
    args: tuple[str, ...] = ()
    module: bool = False

    @property
    def argv(self) -> list[str]:
        return (["-m"] if self.module else []) + [self.target, *self.args]


def _exit_code(e: SystemExit) -> int:
    if e.code is None:
        return 0
    if isinstance(e.code, int):
        return e.code
    print(e.code, file=sys.stderr)
    return 1


def run(workload: Workload, defs: Defs) -> tuple[int, Recorder, float]:
    """Run ``workload`` under a :class:`Recorder`: (exit code, the recorder, wall seconds)."""
    if not workload.module and not Path(workload.target).is_file():
        raise FileNotFoundError(workload.target)
    rec = Recorder(defs)
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    code = 0
    start = time.perf_counter()
    try:
        if workload.module:
            sys.argv = [workload.target, *workload.args]
            sys.path.insert(0, str(Path.cwd()))
            rec.start()
            runpy.run_module(workload.target, run_name="__main__", alter_sys=True)
        else:
            sys.argv = [workload.target, *workload.args]
            sys.path.insert(0, str(Path(workload.target).resolve().parent))
            rec.start()
            runpy.run_path(workload.target, run_name="__main__")
    except SystemExit as e:
        code = _exit_code(e)
    except KeyboardInterrupt:
        code = 130
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        rec.stop()
        wall = time.perf_counter() - start
        sys.argv, sys.path[:] = saved_argv, saved_path
    return code, rec, wall


def to_profile(
    workload: Workload,
    rec: Recorder,
    wall: float,
    code: int,
    step_functions: list[str],
    sources: tuple[dict[str, str], dict[str, str]] = ({}, {}),
) -> Profile:
    """The profile file's records from what ``rec`` measured. ``sources``:
    (qualname -> module, module -> source digest), from
    :func:`~.evidence.source_digests`, for the digests of the modules measured."""
    r: Record = rec.record
    # sorted() and list() copy each table at once: a thread of the workload that outlived it may
    # still end a measured call (see _SetProfile.stop)
    functions = [
        FunctionTime(q, s[0], _sig(s[1]), _sig(s[2]), s[3], _sig(s[4]), _sig(s[5]))
        for q, s in sorted(r.functions.items(), key=lambda kv: -kv[1][1])
    ]
    sites = [
        SiteTime(k[0], k[1], k[2], s[0], _sig(s[1]), s[2], _sig(s[3]))
        for k, s in sorted(r.sites.items(), key=lambda kv: -kv[1][1])
    ]
    repeats = []
    for k, rep in list(r.repeats.items()):
        groups = [list(by.values()) for by in list(rep.by_args.values())]
        calls = sum(slot[0] for by in groups for slot in by)
        distinct = sum(len(by) for by in groups)
        varied = sum(1 for by in groups if len(by) > 1)
        repeated = calls - distinct
        seconds = 0.0
        for by in groups:
            for n, t in by:
                if n > 1:
                    seconds += t * (n - 1) / n  # all but the first call of each
        unknown = dict(rep.unknown)
        if rep.overflow:
            unknown["more distinct arguments than recorded"] = rep.overflow
        repeats.append(Repeat(k[0], k[1], k[2], calls, distinct, repeated, _sig(seconds), varied, unknown))
    repeats.sort(key=lambda x: (-x.repeated_seconds, -x.repeated, x.caller, x.line))
    module_of, digests = sources
    measured = {module_of.get(f.qualname) for f in functions} | {module_of.get(s.caller) for s in sites}
    source = {m: digests[m] for m in sorted(x for x in measured if x) if m in digests}
    return Profile(
        workload=workload.argv,
        python=sys.version.split()[0],
        backend=rec.backend,
        wall_seconds=_sig(wall),
        steps=r.steps,
        step_functions=sorted(step_functions),
        fingerprints=bool(rec.defs.watched),
        watched=len(rec.defs.watched),
        functions=functions,
        sites=sites,
        repeats=repeats,
        exit_code=code,
        sources=source,
    )


def _sig(x: float) -> float:
    return float(f"{x:.4g}")
