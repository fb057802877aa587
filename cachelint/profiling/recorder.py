"""A deterministic profiler limited to the analysed package's functions.

It counts, per function of the package, calls, total time (its calls'
duration, counted once for recursive calls) and own time (less the time of
the calls it made that are themselves measured), and per *call site* (the
calling function and line in the package, and the callee) the calls and their
total time. Inside a *step* (while a step function is running on the thread)
everything is also counted apart, so that a per-step figure leaves start-up
out.

Two drivers, one record:

* Python 3.12 and later: :mod:`sys.monitoring`. Code outside the package
  turns its events off at its first one (``DISABLE``) and runs at full
  speed, except the library functions the package calls, which are turned
  on again (see :class:`_Monitoring`).
* Python 3.10 and 3.11: :func:`sys.setprofile` (and
  :func:`threading.setprofile` for threads started meanwhile). Every call in
  the process, C calls included, reaches the callback, which returns at once
  for code outside the package.

Either way, the calls the package's code makes into Python or C code
outside it are timed as call sites too: that is where an expensive library
call shows.

For the functions in ``watched`` (what the static analysis found hot or
expensive), each call also records a fingerprint of its arguments and of
its result (:mod:`.fingerprint`), from which the report finds call sites
that repeat the same call with the same result.

A generator's or coroutine's every resumption counts as a call.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import CodeType
from typing import Any

from . import fingerprint as fp

MAX_DISTINCT = 256  # argument fingerprints kept per call site; beyond, calls are counted apart
# a call site whose first calls all had no fingerprint for one reason is not fingerprinted
# again: its later calls are counted under that reason (what bounds the overhead)
SETTLED = 32
_clock = time.perf_counter
# builtins that never cost more than a few hundred nanoseconds: their calls are not timed as call sites
_CHEAP = frozenset(
    id(f)
    for f in (len, isinstance, issubclass, getattr, hasattr, setattr, id, type, callable, min, max, abs, iter, next)
)
# nor are the methods of these builtin types (``list.append``, ``dict.get``, ``str.startswith``)
_CHEAP_RECEIVERS = frozenset((list, dict, set, frozenset, tuple, str, bytes, int, float))


@dataclass
class Defs:
    """Where the package's functions are: real path -> [(def line, name, qualified name)]."""

    files: dict[str, list[tuple[int, str, str]]]
    steps: frozenset[str] = frozenset()  # the functions one call of which is a step
    watched: frozenset[str] = frozenset()
    # per watched function: the names of its parameters, in order
    params: dict[str, tuple[str, ...]] = field(default_factory=dict)


class _Code:
    """What the recorder knows about one function of the package (shared by
    its code objects), and what was measured of it: ``stats`` is its entry
    of :attr:`Record.functions`, made at its first measured call."""

    __slots__ = ("params", "qualname", "stats", "step")

    def __init__(self, qualname: str, step: bool, params: tuple[str, ...] | None) -> None:
        self.qualname = qualname
        self.step = step
        self.params = params  # fingerprinted: the parameter names
        self.stats: list | None = None


_UNSEEN = _Code("", False, None)  # a code object not looked at yet


@dataclass
class Repeats:
    """A watched call site's calls by argument fingerprint, then by result fingerprint."""

    by_args: dict = field(default_factory=dict)  # args fp -> {result fp -> [calls, seconds]}
    unknown: dict = field(default_factory=dict)  # reason -> calls not fingerprinted
    overflow: int = 0  # calls past MAX_DISTINCT distinct argument fingerprints


class Record:
    """What one run measured (times in seconds, from :func:`time.perf_counter`)."""

    def __init__(self) -> None:
        # qualname -> [calls, total, own, step calls, step total, step own]
        self.functions: dict[str, list] = {}
        # (caller qualname, line, callee) -> [calls, total, step calls, step total]
        self.sites: dict[tuple[str, int, str], list] = {}
        self.repeats: dict[tuple[str, int, str], Repeats] = {}
        self.steps = 0


# A measured frame on a thread's stack is a list (cheaper to make than an object):
KEY = 0  # the frame (setprofile), code object or (code, offset) (monitoring) that ends it
INFO = 1  # the package function's _Code, or None for a call out of the package
SITE = 2  # (caller, line, callee) or None
START = 3  # the clock at its start
CHILD = 4  # the time of the measured frames it called
STEP = 5  # inside a step
ARGS = 6  # argument fingerprint, an Unfingerprinted reason, or None
OUTER = 7  # the outermost frame of its function on the stack (recursion)


class _Thread:
    """One thread's measuring state: its stack of measured frames."""

    __slots__ = ("active", "depth", "stack")

    def __init__(self) -> None:
        self.stack: list[list] = []  # measured frames, see KEY ... OUTER
        self.depth = 0  # step frames on the stack
        self.active: dict[_Code, int] = {}  # function -> its frames on the stack (recursion)


class Recorder:
    """Measures the package's functions while started; see the module's documentation."""

    def __init__(self, defs: Defs) -> None:
        self.defs = defs
        self.record = Record()
        # by id(): a code object hashes its whole bytecode on every lookup. The
        # code objects are kept alive (``_keep``), so an id is never reused.
        self._codes: dict[int, _Code | None] = {}
        self._infos: dict[str, _Code] = {}  # qualname -> its _Code
        self._keep: list[CodeType] = []
        self._real: dict[str, str | None] = {}
        self._local = threading.local()
        self._driver: Any = None
        self._settled: dict[tuple, fp.Unfingerprinted] = {}  # see SETTLED

    # -- code objects -----------------------------------------------------

    def code(self, code: CodeType) -> _Code | None:
        """The package function a code object is, or None (outside the package, or a lambda)."""
        try:
            return self._codes[id(code)]
        except KeyError:
            pass
        out = None
        real = self._real.get(code.co_filename, "")
        if real == "":
            real = os.path.realpath(code.co_filename) if code.co_filename[:1] != "<" else None
            real = real if real in self.defs.files else None
            self._real[code.co_filename] = real
        if real is not None:
            best = None
            for line, name, qualname in self.defs.files[real]:
                # co_firstlineno is the first decorator's line; the def follows it
                if name == code.co_name and line >= code.co_firstlineno and (best is None or line < best[0]):
                    best = (line, qualname)
            if best is not None:
                q = best[1]
                params = self.defs.params.get(q) if q in self.defs.watched else None
                out = self._infos.get(q)
                if out is None:  # one per function, whichever of its code objects runs
                    out = self._infos[q] = _Code(q, q in self.defs.steps, params)
        self._codes[id(code)] = out
        self._keep.append(code)
        return out

    def in_package(self, code: CodeType) -> bool:
        """Whether a code object is in one of the package's files (a function, lambda or comprehension)."""
        if code.co_filename not in self._real:
            self.code(code)
        return self._real.get(code.co_filename) is not None

    # -- the stack ----------------------------------------------------------

    def thread(self) -> _Thread:
        """This thread's stack (made on its first use)."""
        try:
            return self._local.state
        except AttributeError:
            t = self._local.state = _Thread()
            return t

    def push(self, t: _Thread, key, info: _Code | None, site, callee_locals: Callable[[], dict] | None) -> None:
        outer = False
        args: Any = None
        if info is not None:
            if info.step:
                if t.depth == 0:
                    self.record.steps += 1
                t.depth += 1
            active = t.active
            n = active.get(info, 0)
            outer = n == 0
            active[info] = n + 1
            # fingerprints only where they count: at a call site of the package, in a step
            # (or in every call when no step is named)
            if (
                info.params is not None
                and callee_locals is not None
                and site is not None
                and (t.depth or not self.defs.steps)
            ):
                args = self._settled.get(site)
                if args is None:
                    args = fp.arguments(info.params, callee_locals())
        t.stack.append([key, info, site, _clock(), 0.0, t.depth > 0, args, outer])

    def pop(self, t: _Thread, value: Any = None, raised: bool = False) -> None:
        """End the frame on top of ``t``'s stack (the caller checked that its key ended)."""
        elapsed = _clock()
        stack = t.stack
        f = stack.pop()
        elapsed -= f[START]
        if stack:
            stack[-1][CHILD] += elapsed
        info, site, step = f[INFO], f[SITE], f[STEP]
        if info is not None:
            if info.step:
                t.depth -= 1
            t.active[info] -= 1
            s = info.stats
            if s is None:
                s = info.stats = self.record.functions.setdefault(info.qualname, [0, 0.0, 0.0, 0, 0.0, 0.0])
            own = elapsed - f[CHILD]
            if step:
                s[3] += 1
                s[5] += own
                if f[OUTER]:
                    s[4] += elapsed
            s[0] += 1
            s[2] += own
            if f[OUTER]:
                s[1] += elapsed
        if site is not None:
            sites = self.record.sites
            c = sites.get(site)
            if c is None:
                c = sites[site] = [0, 0.0, 0, 0.0]
            c[0] += 1
            c[1] += elapsed
            if step:
                c[2] += 1
                c[3] += elapsed
            if f[ARGS] is not None:
                self._repeat(site, f[ARGS], value, raised, elapsed)

    def _repeat(self, site: tuple, args: Any, value: Any, raised: bool, elapsed: float) -> None:
        r = self.record.repeats.get(site)
        if r is None:
            r = self.record.repeats[site] = Repeats()
        if type(args) is fp.Unfingerprinted:
            reason = str(args)
        elif raised:
            reason = "raised an exception"
        elif value is None:  # a procedure: calling it again may be the point (it changes state)
            reason = "returned None"
        else:
            res = fp.result(value)
            if res is None:
                reason = fp.OPAQUE_REASON
            else:
                by_result = r.by_args.get(args)
                if by_result is None:
                    if len(r.by_args) >= MAX_DISTINCT:
                        r.overflow += 1
                        return
                    by_result = r.by_args[args] = {}
                slot = by_result.get(res)
                if slot is None:
                    slot = by_result[res] = [0, 0.0]
                slot[0] += 1
                slot[1] += elapsed
                return
        n = r.unknown[reason] = r.unknown.get(reason, 0) + 1
        if n >= SETTLED and not r.by_args and len(r.unknown) == 1:
            # every call so far failed the same way: the rest are counted without fingerprints
            self._settled[site] = fp.Unfingerprinted(reason)

    # -- running ------------------------------------------------------------

    def start(self) -> None:
        self._driver = _Monitoring(self) if hasattr(sys, "monitoring") else _SetProfile(self)
        self._driver.start()

    def stop(self) -> None:
        if self._driver is not None:
            self._driver.stop()
            self._driver = None

    @property
    def backend(self) -> str:
        return "sys.monitoring" if hasattr(sys, "monitoring") else "sys.setprofile"


def _external_name(code: CodeType) -> str:
    mod = os.path.splitext(os.path.basename(code.co_filename))[0]
    return f"{mod}.{getattr(code, 'co_qualname', code.co_name)}"


def _c_name(fn: Any) -> str:
    mod = getattr(fn, "__module__", None)
    owner = getattr(fn, "__self__", None)
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    if mod is None and owner is not None and not isinstance(owner, type(sys)):
        mod = type(owner).__module__
        name = f"{type(owner).__qualname__}.{name.rpartition('.')[2]}"
    return f"{mod}.{name}" if mod else str(name)


def _external_names() -> Callable[[CodeType], str]:
    """:func:`_external_name`, remembered per code object (kept alive by the memo)."""
    memo: dict[int, tuple[CodeType, str]] = {}

    def ext_name(code: CodeType) -> str:
        hit = memo.get(id(code))
        if hit is None:
            hit = memo[id(code)] = (code, _external_name(code))
        return hit[1]

    return ext_name


def _c_names() -> Callable[[Any], str]:
    """:func:`_c_name`, remembered: for callables that outlive their calls
    (functions of modules, classes) by identity, and for methods bound to an
    object (``tensor.view``, new at each call) by the object's type and the
    method's name."""
    memo: dict[int, str] = {}
    bound: dict[tuple, str] = {}
    module = type(sys)

    def c_name(fn: Any) -> str:
        name = memo.get(id(fn))
        if name is not None:
            return name
        owner = getattr(fn, "__self__", None)
        if owner is None or type(owner) is module or isinstance(fn, type):
            name = memo[id(fn)] = _c_name(fn)  # the object lives as long as its module
            return name
        key = (type(owner), getattr(fn, "__name__", None))
        name = bound.get(key)
        if name is None:
            name = bound[key] = _c_name(fn)
        return name

    return c_name


class _SetProfile:
    """The driver for Python 3.10 and 3.11.

    Every event of the process reaches a closure made for its thread, over
    local names and that thread's own stack: the most frequent events, C
    calls and returns outside the package, cost a comparison or a
    dictionary lookup. A thread started while measuring gets its own closure
    at its first event."""

    def __init__(self, rec: Recorder) -> None:
        self.rec = rec
        self.running = [True]  # read by every thread's closure: a thread that outlives stop() unhooks itself

    def start(self) -> None:
        def first_event(frame, event: str, arg) -> None:
            handler = self._make(self.rec.thread())
            sys.setprofile(handler)
            handler(frame, event, arg)

        threading.setprofile(first_event)
        sys.setprofile(self._make(self.rec.thread()))

    def stop(self) -> None:
        self.running[0] = False
        sys.setprofile(None)
        threading.setprofile(None)

    def _make(self, t: _Thread) -> Callable:
        rec = self.rec
        codes = rec._codes
        stack = t.stack
        push, pop = rec.push, rec.pop
        unseen = _UNSEEN
        cheap = _CHEAP
        cheap_receivers = _CHEAP_RECEIVERS
        c_name = _c_names()
        ext_name = _external_names()
        running = self.running

        def event(frame, event: str, arg) -> None:
            # most frequent first: returns and calls of Python functions, then C calls
            if event == "return":
                if stack and stack[-1][KEY] is frame:
                    pop(t, arg)
            elif event == "call":
                if not running[0]:  # measuring stopped: this thread outlived it (3.11 cannot unhook it from outside)
                    sys.setprofile(None)
                    return
                code = frame.f_code
                info = codes.get(id(code), unseen)
                if info is unseen:
                    info = rec.code(code)
                back = frame.f_back
                caller = codes.get(id(back.f_code)) if back is not None else None
                if info is None:  # outside the package: timed only as a call site of the package
                    if caller is None or rec.in_package(code):
                        return
                    push(t, frame, None, (caller.qualname, back.f_lineno, ext_name(code)), None)
                    return
                site = (caller.qualname, back.f_lineno, info.qualname) if caller is not None else None
                push(t, frame, info, site, (lambda: frame.f_locals) if info.params is not None else None)
            elif event == "c_return" or event == "c_exception":
                if stack and stack[-1][KEY] is arg:
                    pop(t)
            else:  # c_call
                caller = codes.get(id(frame.f_code))
                if (
                    caller is not None
                    and id(arg) not in cheap
                    and type(getattr(arg, "__self__", None)) not in cheap_receivers
                ):
                    push(t, arg, None, (caller.qualname, frame.f_lineno, c_name(arg)), None)

        return event


class _Monitoring:
    """The driver for Python 3.12 and later (PEP 669).

    Code outside the package turns its events off at its first one
    (``DISABLE``), so it runs at full speed, with one exception: a Python
    function outside the package that the package's code calls (seen at the
    ``CALL``) joins ``called``, and all events are turned on again
    (``restart_events``) so that its start and return reach the callbacks
    from then on. That happens once per such function, mostly at start-up."""

    def __init__(self, rec: Recorder) -> None:
        self.rec = rec
        self.tool: int | None = None
        self.c_name = _c_names()
        self.ext_name = _external_names()
        self.called: set[int] = set()  # ids of code objects outside the package it calls (kept in rec._keep)

    def _events(self) -> list[tuple[int, Callable]]:
        e = sys.monitoring.events  # type: ignore[attr-defined]
        return [
            (e.PY_START, self.start_event),
            (e.PY_RESUME, self.start_event),
            (e.PY_RETURN, self.return_event),
            (e.PY_YIELD, self.return_event),
            (e.PY_UNWIND, self.unwind_event),
            (e.CALL, self.call_event),
            (e.C_RETURN, self.c_return_event),
            (e.C_RAISE, self.c_return_event),
        ]

    def start(self) -> None:
        mon = sys.monitoring  # type: ignore[attr-defined]
        for tool in (mon.PROFILER_ID, 3, 4, 5):
            try:
                mon.use_tool_id(tool, "cachelint")
            except ValueError:
                continue
            self.tool = tool
            break
        if self.tool is None:
            raise RuntimeError("no sys.monitoring tool id is free")
        mask = 0
        for event, callback in self._events():
            mon.register_callback(self.tool, event, callback)
            mask |= event
        mon.set_events(self.tool, mask)

    def stop(self) -> None:
        mon = sys.monitoring  # type: ignore[attr-defined]
        if self.tool is None:
            return
        mon.set_events(self.tool, 0)
        for event, _ in self._events():
            mon.register_callback(self.tool, event, None)
        mon.free_tool_id(self.tool)
        self.tool = None

    def start_event(self, code: CodeType, offset: int):
        rec = self.rec
        info = rec._codes.get(id(code), _UNSEEN)
        if info is _UNSEEN:
            info = rec.code(code)
        if info is None and id(code) not in self.called:
            return sys.monitoring.DISABLE  # type: ignore[attr-defined]
        frame = sys._getframe(1)
        back = frame.f_back
        caller = rec._codes.get(id(back.f_code)) if back is not None else None
        if info is None:
            if caller is not None and back is not None:  # called by the package: time it as the call site
                rec.push(rec.thread(), code, None, (caller.qualname, back.f_lineno, self.ext_name(code)), None)
            return None
        site = (caller.qualname, back.f_lineno, info.qualname) if caller is not None and back is not None else None
        rec.push(rec.thread(), code, info, site, (lambda: frame.f_locals) if info.params is not None else None)
        return None

    def return_event(self, code: CodeType, offset: int, value):
        t = self.rec.thread()
        if t.stack and t.stack[-1][KEY] is code:
            self.rec.pop(t, value)
            return None
        if self.rec._codes.get(id(code)) is None and id(code) not in self.called:
            return sys.monitoring.DISABLE  # type: ignore[attr-defined]
        return None

    def unwind_event(self, code: CodeType, offset: int, exc) -> None:
        # PY_UNWIND cannot be turned off; it is rare
        t = self.rec.thread()
        if t.stack and t.stack[-1][KEY] is code:
            self.rec.pop(t, None, raised=True)

    def call_event(self, code: CodeType, offset: int, callable_, arg0):
        rec = self.rec
        caller = rec._codes.get(id(code), _UNSEEN)
        if caller is _UNSEEN:
            caller = rec.code(code)
        if caller is None:
            return sys.monitoring.DISABLE  # type: ignore[attr-defined]
        callee = getattr(callable_, "__code__", None)
        if type(callee) is CodeType:
            if id(callee) not in self.called and not rec.in_package(callee):
                self.called.add(id(callee))
                rec._keep.append(callee)
                sys.monitoring.restart_events()  # type: ignore[attr-defined]
            return None
        if id(callable_) in _CHEAP or type(getattr(callable_, "__self__", None)) in _CHEAP_RECEIVERS:
            return None
        line = sys._getframe(1).f_lineno or 0
        rec.push(rec.thread(), (code, offset), None, (caller.qualname, line, self.c_name(callable_)), None)
        return None

    def c_return_event(self, code: CodeType, offset: int, callable_, arg0) -> None:
        t = self.rec.thread()
        if t.stack and t.stack[-1][KEY] == (code, offset):
            self.rec.pop(t)
