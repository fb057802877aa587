"""File indexes as marshal-able plain tuples, and back.

A dataclass becomes the tuple of its fields in declaration order; the lists
of nested dataclasses are converted explicitly. `attrgetter` does the
flattening in C. ``marshal`` of plain tuples is about ten times faster to load
than pickled dataclasses: it is how the indexing workers send their results
back and how the on-disk cache stores them.
"""

from __future__ import annotations

import marshal
from dataclasses import fields
from operator import attrgetter

from .records import Assign, CallSite, ClassInfo, FileIndex, FunctionInfo, Param


def _names(cls) -> list[str]:
    return [f.name for f in fields(cls)]


_get_param = attrgetter(*_names(Param))


_get_assign = attrgetter(*_names(Assign))


_get_call = attrgetter(*_names(CallSite))


_get_class = attrgetter(*_names(ClassInfo))


_FN = _names(FunctionInfo)


# every field but the calls (read from __dict__ by _enc_fn, as loaded)
_get_fn = attrgetter(*(n if n not in ("calls", "implicit_calls") else "qualname" for n in _FN))
_FN_PARAMS, _FN_ASSIGNS, _FN_CALLS = _FN.index("params"), _FN.index("assigns"), _FN.index("calls")
_FN_IMPLICIT = _FN.index("implicit_calls")


_FI = _names(FileIndex)


# every field but the scans (read from __dict__ by encode_index, as loaded)
_get_fi = attrgetter(*(n if n != "scans" else "path" for n in _FI))
_FI_CLASSES, _FI_FUNCTIONS = _FI.index("classes"), _FI.index("functions")
_FI_CALLS, _FI_ASSIGNS = _FI.index("module_calls"), _FI.index("module_assigns")
_FI_IMPLICIT = _FI.index("module_implicit_calls")


_FI_SCANS = _FI.index("scans")


def _enc_fn(f: FunctionInfo) -> list:
    t = list(_get_fn(f))
    t[_FN_PARAMS] = [_get_param(p) for p in f.params]
    t[_FN_ASSIGNS] = [_get_assign(a) for a in f.assigns]
    calls = f.__dict__["calls"]  # not f.calls: encoding reads nothing for the analysis
    # marshalled apart: loading an index leaves them as bytes until they are
    # read (records._Packed)
    t[_FN_CALLS] = calls if type(calls) is bytes else marshal.dumps([_get_call(c) for c in calls])
    implicit = f.__dict__["implicit_calls"]
    t[_FN_IMPLICIT] = implicit if type(implicit) is bytes else marshal.dumps([_get_call(c) for c in implicit])
    return t


def encode_index(fi: FileIndex) -> list:
    t = list(_get_fi(fi))
    t[_FI_CLASSES] = [_get_class(c) for c in fi.classes]
    t[_FI_FUNCTIONS] = [_enc_fn(f) for f in fi.functions]
    t[_FI_CALLS] = [_get_call(c) for c in fi.module_calls]
    t[_FI_ASSIGNS] = [_get_assign(a) for a in fi.module_assigns]
    t[_FI_IMPLICIT] = [_get_call(c) for c in fi.module_implicit_calls]
    scans = fi.__dict__["scans"]  # as loaded, if it was (see records._Packed)
    # marshalled apart, like the calls: loaded as one bytes object per file,
    # unpacked on first read (records._Packed)
    t[_FI_SCANS] = marshal.dumps(scans) if type(scans) is tuple else scans
    return t


def _dec_fn(t: list) -> FunctionInfo:
    t[_FN_PARAMS] = [Param(*p) for p in t[_FN_PARAMS]]
    t[_FN_ASSIGNS] = [Assign(*a) for a in t[_FN_ASSIGNS]]
    calls = t[_FN_CALLS]
    if type(calls) is not bytes:  # a list of tuples
        t[_FN_CALLS] = [CallSite(*c) for c in calls]
    implicit = t[_FN_IMPLICIT]
    if type(implicit) is not bytes:
        t[_FN_IMPLICIT] = [CallSite(*c) for c in implicit]
    return FunctionInfo(*t)


def decode_index(t: list, unpack_scans: bool = False) -> FileIndex:
    """The FileIndex of an encoded one. Its functions' calls stay marshalled
    until read (see _enc_fn and records._Packed): the analysis reads those
    of about one function in eight (vLLM 0.33.0: 5,000 of 42,000), the hot
    paths' and the cache-site scans' hits. With ``unpack_scans``, the
    positions of the calls by scan key are unpacked now (every analysis
    reads them all, see index.scan_hits): the indexing pool's results, decoded
    while the workers still run, which keeps that work off the serial part."""
    t = list(t)
    if unpack_scans and type(t[_FI_SCANS]) is bytes:
        t[_FI_SCANS] = marshal.loads(t[_FI_SCANS])
    t[_FI_CLASSES] = [ClassInfo(*c) for c in t[_FI_CLASSES]]
    t[_FI_FUNCTIONS] = [_dec_fn(list(f)) for f in t[_FI_FUNCTIONS]]
    t[_FI_CALLS] = [CallSite(*c) for c in t[_FI_CALLS]]
    t[_FI_ASSIGNS] = [Assign(*a) for a in t[_FI_ASSIGNS]]
    t[_FI_IMPLICIT] = [CallSite(*c) for c in t[_FI_IMPLICIT]]
    return FileIndex(*t)
