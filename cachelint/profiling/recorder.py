"""A deterministic profiler limited to the analysed package's functions.

It counts, per function of the package, calls, total time (its calls'
duration, counted once for recursive calls) and own time (less the time of
the calls it made that are themselves measured), and per *call site* (the
calling function and line in the package, and the callee) the calls and their
total time. Inside a *step* (while a step function is running on the thread)
everything is also counted apart, so that a per-step figure leaves start-up
out.

Two drivers, one record:

* Python 3.12 and later: :mod:`sys.monitoring`. Call sites outside the
  package turn their ``CALL`` events off at their first one (``DISABLE``),
  so C calls made outside the package cost nothing; a Python function's
  start and return reach a callback that returns at once unless the package
  called it.
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
_clock = time.perf_counter
# builtins that never cost more than a few hundred nanoseconds: their calls are not timed as call sites
_CHEAP = frozenset(
    id(f)
    for f in (len, isinstance, issubclass, getattr, hasattr, setattr, id, type, callable, min, max, abs, iter, next)
)


@dataclass
class Defs:
    """Where the package's functions are: real path -> [(def line, name, qualified name)]."""

    files: dict[str, list[tuple[int, str, str]]]
    steps: frozenset[str] = frozenset()  # the functions one call of which is a step
    watched: frozenset[str] = frozenset()
    # per watched function: the names of its parameters, in order
    params: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass
class _Code:
    """What the recorder knows about one code object of the package."""

    qualname: str
    step: bool
    params: tuple[str, ...] | None  # fingerprinted: the parameter names


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
        self.fingerprinted = 0  # calls whose arguments and result were fingerprinted


class _Frame:
    __slots__ = ("args", "child", "fn", "key", "marker", "outer", "site", "start", "step")

    def __init__(self, key, fn, site, start, step, args, marker, outer) -> None:
        self.key = key  # the frame (setprofile) or code object (monitoring) that ends it
        self.fn = fn  # qualname of a package function, or None for a call out of the package
        self.site = site  # (caller, line, callee) or None
        self.start = start
        self.child = 0.0
        self.step = step  # inside a step
        self.args = args  # argument fingerprint, an Unfingerprinted, or None
        self.marker = marker  # a step function's own frame
        self.outer = outer  # the outermost frame of its function on the stack (recursion)


class Recorder:
    """Measures the package's functions while started; see the module's documentation."""

    def __init__(self, defs: Defs) -> None:
        self.defs = defs
        self.record = Record()
        # by id(): a code object hashes its whole bytecode on every lookup. The
        # code objects are kept alive (``_keep``), so an id is never reused.
        self._codes: dict[int, _Code | None] = {}
        self._keep: list[CodeType] = []
        self._real: dict[str, str | None] = {}
        self._local = threading.local()
        self._driver: Any = None

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
                out = _Code(q, q in self.defs.steps, params)
        self._codes[id(code)] = out
        self._keep.append(code)
        return out

    def in_package(self, code: CodeType) -> bool:
        """Whether a code object is in one of the package's files (a function, lambda or comprehension)."""
        if code.co_filename not in self._real:
            self.code(code)
        return self._real.get(code.co_filename) is not None

    # -- the stack ----------------------------------------------------------

    def _stack(self) -> list[_Frame]:
        try:
            return self._local.stack
        except AttributeError:
            s: list[_Frame] = []
            self._local.stack = s
            self._local.depth = 0  # step frames on the stack
            self._local.active = {}  # qualname -> its frames on the stack (recursion)
            return s

    def push(self, key, info: _Code | None, site, callee_locals: Callable[[], dict] | None) -> None:
        stack = self._stack()
        local = self._local
        fn = None
        marker = outer = False
        args: Any = None
        if info is not None:
            fn = info.qualname
            marker = info.step
            if marker:
                if local.depth == 0:
                    self.record.steps += 1
                local.depth += 1
            active = local.active
            n = active.get(fn, 0)
            outer = n == 0
            active[fn] = n + 1
            # fingerprints only where they count: in a step (or in every call when no step is named)
            if info.params is not None and callee_locals is not None and (local.depth or not self.defs.steps):
                args = fp.arguments(info.params, callee_locals())
        stack.append(_Frame(key, fn, site, _clock(), local.depth > 0, args, marker, outer))

    def pop(self, key, value: Any = None, raised: bool = False) -> None:
        stack = self._stack()
        if not stack or stack[-1].key is not key:
            return
        elapsed = _clock()
        f = stack.pop()
        elapsed -= f.start
        if stack:
            stack[-1].child += elapsed
        rec = self.record
        fn = f.fn
        if fn is not None:
            if f.marker:
                self._local.depth -= 1
            self._local.active[fn] -= 1
            s = rec.functions.get(fn)
            if s is None:
                s = rec.functions[fn] = [0, 0.0, 0.0, 0, 0.0, 0.0]
            own = elapsed - f.child
            s[0] += 1
            s[2] += own
            if f.outer:
                s[1] += elapsed
            if f.step:
                s[3] += 1
                s[5] += own
                if f.outer:
                    s[4] += elapsed
        site = f.site
        if site is not None:
            t = rec.sites.get(site)
            if t is None:
                t = rec.sites[site] = [0, 0.0, 0, 0.0]
            t[0] += 1
            t[1] += elapsed
            if f.step:
                t[2] += 1
                t[3] += elapsed
            if f.args is not None:
                self._repeat(f, value, raised, elapsed)

    def _repeat(self, f: _Frame, value: Any, raised: bool, elapsed: float) -> None:
        r = self.record.repeats.get(f.site)
        if r is None:
            r = self.record.repeats[f.site] = Repeats()
        if type(f.args) is fp.Unfingerprinted:
            reason = str(f.args)
        elif raised:
            reason = "raised an exception"
        elif value is None:  # a procedure: calling it again may be the point (it changes state)
            reason = "returned None"
        else:
            res = fp.result(value)
            if not fp.comparable(res):
                reason = fp.OPAQUE_REASON
            else:
                by_result = r.by_args.get(f.args)
                if by_result is None:
                    if len(r.by_args) >= MAX_DISTINCT:
                        r.overflow += 1
                        return
                    by_result = r.by_args[f.args] = {}
                slot = by_result.get(res)
                if slot is None:
                    slot = by_result[res] = [0, 0.0]
                slot[0] += 1
                slot[1] += elapsed
                self.record.fingerprinted += 1
                return
        r.unknown[reason] = r.unknown.get(reason, 0) + 1

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


def _c_names() -> Callable[[Any], str]:
    """:func:`_c_name`, remembered for callables that outlive their calls (functions of modules, classes)."""
    memo: dict[int, str] = {}
    module = type(sys)

    def c_name(fn: Any) -> str:
        name = memo.get(id(fn))
        if name is None:
            name = _c_name(fn)
            owner = getattr(fn, "__self__", None)
            if owner is None or type(owner) is module or isinstance(fn, type):
                memo[id(fn)] = name  # the object lives as long as its module
        return name

    return c_name


class _SetProfile:
    """The driver for Python 3.10 and 3.11.

    Every event of the process reaches :meth:`event` (a closure over local
    names: the most frequent events, C calls and returns outside the
    package, cost one dictionary lookup or one comparison)."""

    def __init__(self, rec: Recorder) -> None:
        self.rec = rec
        self.event = self._make()

    def start(self) -> None:
        threading.setprofile(self.event)
        sys.setprofile(self.event)

    def stop(self) -> None:
        sys.setprofile(None)
        threading.setprofile(None)

    def _make(self) -> Callable:
        rec = self.rec
        codes = rec._codes
        local = rec._local
        stack_of = rec._stack
        push, pop = rec.push, rec.pop
        unseen = _UNSEEN
        cheap = _CHEAP
        c_name = _c_names()

        def event(frame, event: str, arg) -> None:
            if event == "c_return" or event == "c_exception":
                stack = getattr(local, "stack", None)
                if stack and stack[-1].key is arg:
                    pop(arg)
            elif event == "c_call":
                caller = codes.get(id(frame.f_code))
                if caller is not None and id(arg) not in cheap:
                    stack_of()
                    push(arg, None, (caller.qualname, frame.f_lineno, c_name(arg)), None)
            elif event == "return":
                stack = getattr(local, "stack", None)
                if stack and stack[-1].key is frame:
                    pop(frame, arg)
            elif event == "call":
                code = frame.f_code
                info = codes.get(id(code), unseen)
                if info is unseen:
                    info = rec.code(code)
                back = frame.f_back
                caller = codes.get(id(back.f_code)) if back is not None else None
                if info is None:  # outside the package: timed only as a call site of the package
                    if caller is None or rec.in_package(code):
                        return
                    push(frame, None, (caller.qualname, back.f_lineno, _external_name(code)), None)
                    return
                site = (caller.qualname, back.f_lineno, info.qualname) if caller is not None else None
                push(frame, info, site, (lambda: frame.f_locals) if info.params is not None else None)

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
        frame = sys._getframe(1)
        back = frame.f_back
        caller = rec._codes.get(id(back.f_code)) if back is not None else None
        if info is None:
            if id(code) not in self.called:
                return sys.monitoring.DISABLE  # type: ignore[attr-defined]
            if caller is not None and back is not None:  # called by the package: time it as the call site
                rec.push(code, None, (caller.qualname, back.f_lineno, _external_name(code)), None)
            return None
        site = (caller.qualname, back.f_lineno, info.qualname) if caller is not None and back is not None else None
        rec.push(code, info, site, (lambda: frame.f_locals) if info.params is not None else None)
        return None

    def return_event(self, code: CodeType, offset: int, value):
        stack = getattr(self.rec._local, "stack", None)
        if stack and stack[-1].key is code:
            self.rec.pop(code, value)
            return None
        if self.rec._codes.get(id(code)) is None and id(code) not in self.called:
            return sys.monitoring.DISABLE  # type: ignore[attr-defined]
        return None

    def unwind_event(self, code: CodeType, offset: int, exc) -> None:
        # PY_UNWIND cannot be turned off; it is rare
        stack = getattr(self.rec._local, "stack", None)
        if stack and stack[-1].key is code:
            self.rec.pop(code, None, raised=True)

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
        if id(callable_) in _CHEAP:
            return None
        line = sys._getframe(1).f_lineno or 0
        rec.push((code, offset), None, (caller.qualname, line, self.c_name(callable_)), None)
        return None

    def c_return_event(self, code: CodeType, offset: int, callable_, arg0) -> None:
        stack = getattr(self.rec._local, "stack", None)
        if stack and stack[-1].key == (code, offset):
            self.rec.pop(stack[-1].key)
