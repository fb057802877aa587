"""The on-disk cache: per-file indexes and whole-run results.

Two kinds of entries live under the cache directory (default
``.cachelint_cache`` at the project root, ignored by git through a
``.gitignore`` inside it):

``index/`` and ``packs/``
    One :class:`~cachelint.index.walk.FileIndex` per file, keyed by the file's
    content hash, its path and module name, and the tool fingerprint. Stored
    as ``marshal`` of plain tuples (about ten times faster to load than
    pickled dataclasses, and how the indexing workers send their results
    back), in packs of about 4 MB, found through a pack map (creating a file
    per entry cost 2.4 s of a cold run here). Each function's calls are
    marshalled apart, and a loaded index keeps them as bytes until they are
    read (about half of what loading costs, which a run that resolves a few
    calls against the whole program does not need).

``results/``
    One entry per *scope*: the tool fingerprint, the configuration, the lock
    file and the list of files analysed. It holds the content hash of every
    file and the raw findings of the last run over that scope, each with its
    suppression flag, and what the checks below need: whose calls the
    analysis read and by which code, the cache sites' callee names, the
    property reads parsed in hot functions, the hot functions' text digests,
    and the hot graph (roots, each walked function's edges, and what the
    rules asked of the hot paths).

Why not per-file results (ruff issue 5449): the findings in one file depend
on facts from others (a fill in ``config.py`` makes a call in
``scheduler.py`` a CL001 finding; a call edge in one module makes a function
in another hot). So results are cached for the whole run, and a run reuses
them only when

* every file's content is unchanged (the warm path), or
* every changed file's *interface* is unchanged: its index with line numbers
  replaced by their rank among the file's lines (so code moved up or down by
  an edit to a comment, a docstring or blank lines compares equal, while
  reordered, added or removed code does not), without its suppression
  comments. The analysis reads nothing else of a file, and compares lines of
  one file only with each other, so its result is then the same up to the
  changed files' line numbers. Those are remapped in the findings located in
  a changed file (span and fix edits); a finding that names a changed file
  anywhere else (its message, notes, fix text or data, e.g. the line of a
  fill in that file) cannot be remapped safely, and the run falls back to the
  full analysis. Suppression flags are recomputed for the changed files.
* or a changed file's interface differs only by *inert* functions added or
  removed (no calls, decorators, nested definitions, or writes other than
  to local names), each named nowhere else in any file's source or in the
  previous findings and matching no hot root: the analysis finds a function
  by its name or by scans that key on calls, attribute and global writes and
  decorators, so it cannot see them (see :func:`inert_difference`). A new
  helper nothing calls yet is the common case; it may make calls that
  neither whole-program scan over every call picks up (see below).
* or the calls of existing functions changed, and no walk of the previous
  analysis read those functions' calls: the walks that follow calls from
  function to function (hot paths, cost, purity, hoisting) note each
  function whose calls they read (:func:`~cachelint.index.walk.observing`), and
  the results entry keeps that set with the cache sites' callee names. The
  two scans that judge every call alone (a call assigned whole to an
  attribute may fill a cache site; a call by a site's callee name may use
  one) are re-run here on the added and removed calls (see
  :func:`_edited`). An edit of a function off the hot paths, most edits of a
  large tree, is this case.
* or such calls changed in functions the walks did read, but only walks
  that cannot see a call that is cheap and resolves to no function of the
  tree (INERT_READERS); the added and removed calls are resolved against the
  whole program, loaded from the cache without running any stage, and an
  edited hot function's text must give the property stage the same reads
  (:func:`_same_reads`). A call that is an edge of the call graph is
  allowed too: the hot-path walk is replayed over the edges the results
  entry keeps, and the functions that become hot are checked for what the
  rules would see in them and what they asked of the hot paths (see
  :func:`verify_edited`).

Each of these ways also requires the text of every other hot function in a
changed file to be unchanged (moved as a whole): the property stage parses hot
functions' text again for attribute reads, which no index keeps (see
:func:`hot_texts`).

In every other case the whole-program analysis runs again on the cached
indexes, re-indexing only the changed files.

Entries are written to a temporary file and renamed into place, so two runs
at once never see a half-written entry; each entry carries a checksum, and an
entry that is missing, truncated or corrupted is a miss.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import shutil
import sys
from pathlib import Path

from .. import __version__
from ..files import atomic_write
from ..index.codec import (
    _FI,
    _FI_ASSIGNS,
    _FI_CALLS,
    _FI_CLASSES,
    _FI_FUNCTIONS,
    _FI_SCANS,
    _FN,
    _FN_ASSIGNS,
    _FN_CALLS,
    _FN_PARAMS,
    _names,
    decode_index,
    encode_index,
)
from ..index.records import Assign, CallSite, ClassInfo, Param, observing, readers
from ..model import Applicability, Edit, EditKind, Finding, Fix, Span

FORMAT = 2
DEFAULT_DIR = ".cachelint_cache"
_MAGIC = b"CLC1"
_SUM = 16  # checksum bytes
_GITIGNORE = "# Automatically created by cachelint.\n*\n"
_MAP_KEY = "0" * 32
PACK_BYTES = 4 << 20
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by cachelint.\n"


def digest(data: bytes) -> str:
    # sha256 runs on the CPU's SHA extensions: twice as fast as blake2b here
    return hashlib.sha256(data).hexdigest()[:32]


_fingerprint: str | None = None


def tool_fingerprint() -> str:
    """Version, Python version and every source and preset file of cachelint.

    Hashing the package's own files (a few hundred kB) means an edited
    checkout never reads results a different analysis produced.
    """
    global _fingerprint
    if _fingerprint is None:
        h = hashlib.sha256()
        h.update(f"{__version__}|{FORMAT}|{sys.version}|{marshal.version}".encode())
        pkg = Path(__file__).parent
        for p in sorted(pkg.rglob("*")):
            if p.suffix in (".py", ".toml") and "__pycache__" not in p.parts:
                h.update(p.relative_to(pkg).as_posix().encode())
                try:
                    h.update(p.read_bytes())
                except OSError:
                    pass
        _fingerprint = h.hexdigest()[:32]
    return _fingerprint


# ----- storage -----------------------------------------------------------------


class Cache:
    """A cache directory. Every failure to read or write is a miss, never an error."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)
        self._dirs: set = set()
        self._ready = False
        self._map: dict | None = None  # entry key -> pack key
        self._packs: dict = {}  # pack key -> {entry key: marshalled index}
        self._pending: dict = {}
        self._pending_size = 0
        self._written: dict = {}  # entry key -> pack, not yet in the map

    def _base(self) -> Path:
        return self.root / f"v{FORMAT}"

    def path(self, kind: str, key: str) -> Path:
        return self._base() / kind / key[:2] / key

    def get(self, kind: str, key: str):
        try:
            with open(self.path(kind, key), "rb") as fh:
                data = fh.read()
        except OSError:
            return None
        return decode_entry(data)

    def put(self, kind: str, key: str, obj) -> None:
        self.put_body(kind, key, marshal.dumps(obj))

    def put_body(self, kind: str, key: str, body: bytes) -> None:
        """Write marshalled ``body`` atomically (temporary file, then rename)."""
        if not self._ensure():
            return
        target = self.path(kind, key)
        d = target.parent
        try:
            if d not in self._dirs:
                d.mkdir(parents=True, exist_ok=True)
                self._dirs.add(d)
            atomic_write(target, encode_entry(body), durable=False, prefix=".tmp-")
        except OSError:
            pass  # read-only or full disk, or removed by `cachelint clean`: just a miss next time

    # ----- index entries, in packs ---------------------------------------------
    #
    # Creating a file costs about 2 ms on this machine's busy disk, so a cold
    # run over 953 files spent 2.4 s creating one entry per file. Index entries
    # are written in packs of about 4 MB instead (a dict of entry key ->
    # marshalled index), found through a pack map (entry key -> pack). Packs are written once and never changed; the map is merged with
    # the one on disk and replaced atomically, so two runs at once can only
    # lose each other's map entries, which makes misses, not errors.

    def get_index(self, key: str):
        """The encoded index stored under ``key``, or None."""
        if self._map is None:
            m = self.get("packs", _MAP_KEY)
            self._map = m if isinstance(m, dict) else {}
        pk = self._map.get(key)
        if pk is None:
            return None
        pack = self._packs.get(pk)
        if pack is None:
            pack = self.get("index", pk)
            if not isinstance(pack, dict):
                pack = {}
            self._packs[pk] = pack
        body = pack.get(key)
        if not isinstance(body, bytes):
            return None
        try:
            return marshal.loads(body)
        except (EOFError, ValueError, TypeError):
            return None

    def add_index(self, key: str, body: bytes) -> None:
        """Queue a marshalled index; written in packs of about 4 MB (so that
        reading one entry back reads little, and the queue stays small)."""
        self._pending[key] = body
        self._pending_size += len(body)
        if self._pending_size > PACK_BYTES:
            self._write_pack()

    def _write_pack(self) -> None:
        pending, self._pending, self._pending_size = self._pending, {}, 0
        if pending:
            pk = digest("\0".join(sorted(pending)).encode())
            self.put("index", pk, pending)
            self._written.update(dict.fromkeys(pending, pk))

    def flush(self, live: set | None = None) -> None:
        """Write the queued indexes and point the pack map at them.

        ``live``: the entry keys this run used; when the map has grown to four
        times that (old versions of edited files), it keeps only those, and
        packs no longer in the map are removed.
        """
        self._write_pack()
        if not self._written:
            return
        written, self._written = self._written, {}
        current = self.get("packs", _MAP_KEY)
        m = current if isinstance(current, dict) else {}
        m.update(written)
        pruned = live is not None and len(m) > 4 * len(live) + 256
        if pruned:
            m = {k: v for k, v in m.items() if k in live or k in written}
        self.put("packs", _MAP_KEY, m)
        self._map = m
        if pruned:
            keep = set(m.values())
            try:
                for sub in (self._base() / "index").iterdir():
                    for f in sub.iterdir():
                        if f.name not in keep and not f.name.startswith(".tmp-"):
                            f.unlink()
            except OSError:
                pass

    def _ensure(self) -> bool:
        if self._ready:
            return True
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            for name, text in ((".gitignore", _GITIGNORE), ("CACHEDIR.TAG", _TAG)):
                p = self.root / name
                if not p.exists():  # atomically: another run may be reading it
                    atomic_write(p, text.encode("utf-8"), durable=False, prefix=".tmp-")
        except OSError:
            return False
        self._ready = True
        return True


def encode_entry(body: bytes) -> bytes:
    return _MAGIC + hashlib.sha256(body).digest()[:_SUM] + body


def decode_entry(data: bytes):
    """The object stored in an entry, or None if it is truncated or corrupted."""
    head = len(_MAGIC) + _SUM
    if len(data) < head or data[: len(_MAGIC)] != _MAGIC:
        return None
    body = data[head:]
    if hashlib.sha256(body).digest()[:_SUM] != data[len(_MAGIC) : head]:
        return None
    try:
        return marshal.loads(body)
    except (EOFError, ValueError, TypeError):
        return None


def is_cache_dir(path: Path) -> bool:
    """Only a directory cachelint created may be removed by ``cachelint clean``."""
    try:
        return (path / "CACHEDIR.TAG").read_text(encoding="utf-8").find("cachelint") >= 0
    except OSError:
        return False


def clean(path: str | os.PathLike) -> bool:
    """Remove a cache directory; False if there was none. Refuses other directories."""
    p = Path(path)
    if not p.exists():
        return False
    if not p.is_dir() or not is_cache_dir(p):
        raise ValueError(f"{p} is not a cachelint cache directory (no CACHEDIR.TAG written by cachelint)")
    shutil.rmtree(p)
    return True


def default_cache_dir(project_root: Path) -> Path:
    env = os.environ.get("CACHELINT_CACHE_DIR")
    if env:
        return Path(env)
    return project_root / DEFAULT_DIR


# ----- index (de)serialization --------------------------------------------------
#
# A dataclass becomes the tuple of its fields in declaration order; the lists
# of nested dataclasses are converted explicitly. `attrgetter` does the
# flattening in C.


def _expanded(t: list) -> list:
    """An encoded index with each function's calls as a list of tuples, and
    its calls' positions by scan key as tuples, as the checks below read them
    (stored, they are marshalled bytes: see _enc_fn and encode_index)."""
    out = list(t)
    fns = []
    for f in t[_FI_FUNCTIONS]:
        if type(f[_FN_CALLS]) is bytes:
            f = list(f)
            f[_FN_CALLS] = marshal.loads(f[_FN_CALLS])
        fns.append(f)
    out[_FI_FUNCTIONS] = fns
    if type(t[_FI_SCANS]) is bytes:
        out[_FI_SCANS] = marshal.loads(t[_FI_SCANS])
    return out


# line-number slots, per record kind (columns are kept as they are)
_LINES_FN = tuple(_FN.index(n) for n in ("line", "end_line"))
_LINES_CLASS = tuple(_names(ClassInfo).index(n) for n in ("line", "end_line"))
_LINES_ASSIGN = tuple(_names(Assign).index(n) for n in ("line", "end_line"))
_LINES_CALL = tuple(_names(CallSite).index(n) for n in ("line", "end_line", "stmt_line"))
# not seen by the whole-program analysis: suppressions (applied per file after
# it), the line count, the source digest (the fixer's "changed since?" check);
# and not compared: the positions of calls by scan key (index.scan_keys), a
# function of the calls, which are compared
_FI_DROPPED = tuple(_FI.index(n) for n in ("suppressions", "n_lines", "digest", "scans") if n in _FI)


def _records(t: list):
    """(record, line slots) for every positioned record of an (expanded) encoded index."""
    for c in t[_FI_CLASSES]:
        yield c, _LINES_CLASS
    for f in t[_FI_FUNCTIONS]:
        yield f, _LINES_FN
        for a in f[_FN_ASSIGNS]:
            yield a, _LINES_ASSIGN
        for c in f[_FN_CALLS]:
            yield c, _LINES_CALL
    for c in t[_FI_CALLS]:
        yield c, _LINES_CALL
    for a in t[_FI_ASSIGNS]:
        yield a, _LINES_ASSIGN


def index_lines(t: list) -> list[int]:
    """The sorted distinct line numbers an (expanded) encoded index mentions."""
    lines = set()
    for rec, slots in _records(t):
        for s in slots:
            lines.add(rec[s])
    return sorted(lines)


def _ordered(obj):
    """Equality that also sees order: dicts as item lists, sets sorted (marshal
    bytes are no canonical form: they depend on object sharing)."""
    t = type(obj)
    if t is dict:
        return ("d", [(_ordered(k), _ordered(v)) for k, v in obj.items()])
    if t is list or t is tuple:
        return [_ordered(x) for x in obj] if t is list else tuple(_ordered(x) for x in obj)
    if t is set or t is frozenset:
        return ("s", sorted(map(repr, obj)))
    return obj


def interface(t: list):
    """What the whole-program analysis can see of a file, up to line shifts.

    The encoded index with every line number replaced by its rank among the
    file's lines, without the suppression comments, the line count, the
    source digest and the calls' positions by scan key.
    Compare with ``==``.
    """
    t = _expanded(t)
    rank = {line: i for i, line in enumerate(index_lines(t))}

    def ranked(rec, slots):
        r = list(rec)
        for s in slots:
            r[s] = rank[r[s]]
        return r

    out = list(t)
    for i in _FI_DROPPED:
        out[i] = None
    out[_FI_CLASSES] = [ranked(c, _LINES_CLASS) for c in t[_FI_CLASSES]]
    fns = []
    for f in t[_FI_FUNCTIONS]:
        g = ranked(f, _LINES_FN)
        g[_FN_ASSIGNS] = [ranked(a, _LINES_ASSIGN) for a in f[_FN_ASSIGNS]]
        g[_FN_CALLS] = [ranked(c, _LINES_CALL) for c in f[_FN_CALLS]]
        fns.append(g)
    out[_FI_FUNCTIONS] = fns
    out[_FI_CALLS] = [ranked(c, _LINES_CALL) for c in t[_FI_CALLS]]
    out[_FI_ASSIGNS] = [ranked(a, _LINES_ASSIGN) for a in t[_FI_ASSIGNS]]
    return _ordered(out)


# ----- inert definitions ---------------------------------------------------------
#
# Adding a helper that nothing calls yet, or deleting one nothing calls any
# more, changes a file's interface but not the findings, provided the
# definition is *inert*: the analysis can reach a function record only by
# its name (a call, an import, a method lookup, a root glob) or by a scan
# over all functions, and every scan keys on calls, on assignments to
# attributes or globals, or on decorators (fills and uses of cache sites,
# attribute writers, call-graph edges, torch.compile roots). So a module-level
# function or a method with none of those, whose name is written nowhere
# else in the sources (a substring search over every file's bytes) or in
# the previous findings (fix texts name fresh attributes), cannot be seen.
# Nested definitions are never inert here: they change their parent's record.
# A new scan over all functions that keys on anything else (parameters,
# return expressions, attribute reads) must make _inert stricter; a new
# FunctionInfo field already does (it has to be empty, see _FN_OTHER).

_FN_QN, _FN_NAME, _FN_PARENT = _FN.index("qualname"), _FN.index("name"), _FN.index("parent_function")
_FN_DECOS, _FN_NESTED, _FN_GLOBALS = _FN.index("decorators"), _FN.index("nested"), _FN.index("global_names")
_FN_RET_ANN = _FN.index("returns_annotation")
_FI_DEFS = _FI.index("defs")
_CLASS_METHODS = _names(ClassInfo).index("methods")
_PARAM_ANN, _PARAM_DEFAULT = _names(Param).index("annotation"), _names(Param).index("default")
_A_TARGET, _A_KIND = _names(Assign).index("target"), _names(Assign).index("kind")
# assignments that bind a local name and nothing else (not "def", "import")
_LOCAL_KINDS = frozenset(
    {"assign", "annassign", "augassign", "for", "with", "unpack", "walrus", "del", "except", "match"}
)


def _has_call(e) -> bool:
    if type(e) is not tuple and type(e) is not list:
        return False
    if e and e[0] == "call":
        return True
    return any(_has_call(x) for x in e)


# the fields _inert knows; any other (a later addition) must be empty
_FN_KNOWN = frozenset(
    {
        "qualname", "name", "module", "path", "class_qualname", "parent_function", "line", "end_line", "column",
        "params", "decorators", "is_async", "assigns", "calls", "returns", "nested", "global_names",
        "returns_annotation", "under_type_checking",
    }
)  # fmt: skip
_FN_OTHER = tuple(i for i, n in enumerate(_FN) if n not in _FN_KNOWN)


def _inert(f: list, scan_free=None) -> bool:
    """An encoded function the analysis can only find by its name (see above).

    ``scan_free(call, f)``: whether the whole-program scans over every call
    pass that call by (see :func:`_edited`); without it, a function with
    calls is not inert."""
    if any(f[i] for i in _FN_OTHER):
        return False
    if f[_FN_PARENT] is not None or f[_FN_DECOS] or f[_FN_NESTED] or f[_FN_GLOBALS]:
        return False
    if f[_FN_CALLS] and (scan_free is None or not all(scan_free(c, f) for c in f[_FN_CALLS])):
        return False
    if not f[_FN_NAME].isidentifier() or not f[_FN_NAME].isascii():
        return False
    for a in f[_FN_ASSIGNS]:
        if a[_A_KIND] not in _LOCAL_KINDS or a[_A_TARGET][0] != "name":
            return False
    if _has_call(f[_FN_RET_ANN]):
        return False
    return not any(_has_call(p[_PARAM_ANN]) or _has_call(p[_PARAM_DEFAULT]) for p in f[_FN_PARAMS])


def _trim(t: list, qualnames: set) -> list:
    """The encoded index without the functions ``qualnames`` (and the
    module-level names and class methods that name them)."""
    out = list(t)
    out[_FI_FUNCTIONS] = [f for f in t[_FI_FUNCTIONS] if f[_FN_QN] not in qualnames]
    out[_FI_DEFS] = {k: v for k, v in t[_FI_DEFS].items() if v not in qualnames}
    classes = []
    for c in t[_FI_CLASSES]:
        c = list(c)
        c[_CLASS_METHODS] = {k: v for k, v in c[_CLASS_METHODS].items() if v not in qualnames}
        classes.append(c)
    out[_FI_CLASSES] = classes
    return out


def inert_difference(old_t: list, new_t: list, scan_free=None):
    """(old, new, added, removed) when two encoded indexes of a file differ
    only by added and removed inert functions: both without them, and the
    encoded records added and removed. None otherwise (or nothing changed)."""
    old_fns = [f[_FN_QN] for f in old_t[_FI_FUNCTIONS]]
    new_fns = [f[_FN_QN] for f in new_t[_FI_FUNCTIONS]]
    if len(set(old_fns)) != len(old_fns) or len(set(new_fns)) != len(new_fns):
        return None  # a name defined twice: which one wins is the analysis's business
    added_qn, removed_qn = set(new_fns) - set(old_fns), set(old_fns) - set(new_fns)
    if not added_qn and not removed_qn:
        return None
    added = [f for f in new_t[_FI_FUNCTIONS] if f[_FN_QN] in added_qn]
    removed = [f for f in old_t[_FI_FUNCTIONS] if f[_FN_QN] in removed_qn]
    if not all(_inert(f, scan_free) for f in added + removed):
        return None
    return _trim(old_t, removed_qn), _trim(new_t, added_qn), added, removed


# ----- edited calls of functions the analysis did not follow -----------------------
#
# Most edits of a large tree change the body of a function off every hot
# path. The whole-program analysis reads a function's calls in two ways:
# walks that follow calls from function to function (the hot paths, the
# cost, purity and hoisting checks), and two scans that judge every call of
# every function alone by a key (cachesites: a call assigned whole to an
# attribute may fill a cache site; a call whose name is a site's callee may
# be a use of it). `FunctionInfo.calls` notes which functions the walks read
# (cachelint.index.walk.observing) and the results entry keeps them with the
# sites' keys. A function whose calls no walk read, whose other fields are
# unchanged, and whose added and removed calls no scan would pick up cannot
# change any finding: its calls are dropped from both indexes before the
# interfaces are compared.

_FI_IMPORTS = _FI.index("imports")
_C_FUNC, _C_ASSIGNED = _names(CallSite).index("func"), _names(CallSite).index("assigned_to")


def _scanner(site_keys: set, module_imports: dict):
    """``scan_free(call, f)`` for one file: whether neither scan over every
    call would pick up the encoded ``call`` of the encoded function ``f``."""
    from ..index.scans import function_imports, use_keys

    def scan_free(call, f) -> bool:
        t = call[_C_ASSIGNED]
        if t is not None and t[0] == "attr":
            return False
        local = function_imports(Assign(*a) for a in f[_FN_ASSIGNS])
        return not any(k in site_keys for k in use_keys(call[_C_FUNC], local, module_imports))

    return scan_free


def _unlined(call) -> tuple:
    c = list(call)
    for s in _LINES_CALL:
        c[s] = None
    return _ordered(c)


# Readers of a function's calls (cachelint.index.walk.readers) for which the cache
# can tell an added or removed call apart from one they would act on. For
# each, what the call must not be (see _locally_inert and verify_edited):
#
# * the hot-path walk's edges (callgraph): a call that resolves to a function
#   of the tree that is not @cache'd is an edge, which verify_edited follows
#   by replaying the walk (EDGE_READERS);
# * CL002's scan of hot functions: a call with a cost (a catalog entry other
#   than declared-pure, or a body in the tree that walks a config) is a site;
# * the fill-once idiom (idioms._slots): ``D.setdefault``, ``D.update`` and
#   ``D.__setitem__`` fill a memo dict, which changes which other calls of the
#   function run once;
# * the config-walk cost (cost.walks_config): ``getattr``/``hasattr`` probes
#   count, and calls into the tree are followed.
#
# A function read by any other reader (purity, hoisting, the catalogued-call
# reach, ...) is re-analysed when its calls change.
INERT_READERS = frozenset(
    {
        "callgraph:edges_of",
        "cl002_expensive_call_on_hot_path:call_sites",
        "idioms:_slots",
        "cost:CostModel.walks_config",
    }
)


def _locally_inert(call) -> bool:
    """What the readers of INERT_READERS decide from an encoded call alone:
    it fills no memo dict (the idiom's own method names) and probes no config
    attribute (the config walk's own probe names)."""
    from ..facts.cost import PROBES
    from ..semantic.idioms import MEMO_FILL_METHODS

    func = call[_C_FUNC]
    if func[0] == "attr" and func[2] in MEMO_FILL_METHODS:
        return False
    return not (func[0] == "name" and func[1] in PROBES)


def _edited(old_t: list, new_t: list, observed: dict, scan_free):
    """(old, new, checks): both without the calls of the functions whose calls
    changed, when each such function is unobserved, or read only by
    INERT_READERS, and each call added or removed is scan-free; None
    otherwise (or no function's calls changed).

    ``checks``: (qualname, encoded calls added or removed, encoded old calls,
    encoded new calls) of each observed one, whose calls still have to be
    shown inert against the whole program (:func:`verify_edited`)."""
    new_fns = {f[_FN_QN]: f for f in new_t[_FI_FUNCTIONS]}
    if len(new_fns) != len(new_t[_FI_FUNCTIONS]) or len({f[_FN_QN] for f in old_t[_FI_FUNCTIONS]}) != len(
        old_t[_FI_FUNCTIONS]
    ):
        return None  # a name defined twice: records would be paired by name alone
    dropped = set()
    checks = []
    for f in old_t[_FI_FUNCTIONS]:
        g = new_fns.get(f[_FN_QN])
        if g is None:
            continue
        a, b = [_unlined(c) for c in f[_FN_CALLS]], [_unlined(c) for c in g[_FN_CALLS]]
        if a == b:
            continue
        changed = _multiset_difference(a, b, f[_FN_CALLS]) + _multiset_difference(b, a, g[_FN_CALLS])
        for c in changed:
            if not scan_free(c, g):
                return None
        read_by = observed.get(f[_FN_QN])
        if read_by is not None:
            if not set(read_by) <= INERT_READERS or not all(_locally_inert(c) for c in changed):
                return None
            checks.append((f[_FN_QN], changed, f[_FN_CALLS], g[_FN_CALLS]))
        dropped.add(f[_FN_QN])
    if not dropped:
        return None

    def drop(t: list) -> list:
        out = list(t)
        fns = []
        for f in t[_FI_FUNCTIONS]:
            if f[_FN_QN] in dropped:
                f = list(f)
                f[_FN_CALLS] = []
            fns.append(f)
        out[_FI_FUNCTIONS] = fns
        return out

    return drop(old_t), drop(new_t), checks


def _merge_lines(linemap: dict, pairs: dict | None) -> bool:
    """Add old line -> new line ``pairs`` to ``linemap``; False if there are
    none or a line would move to two places."""
    if pairs is None:
        return False
    return all(linemap.setdefault(a, b) == b for a, b in pairs.items())


def _paired_lines(old_calls: list, new_calls: list) -> dict | None:
    """old line -> new line for the calls an edit left as they were, paired
    in order (the longest matching runs); None if a line would move to two."""
    import difflib

    a = [repr(_unlined(c)) for c in old_calls]
    b = [repr(_unlined(c)) for c in new_calls]
    out: dict = {}
    for i, j, n in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks():
        for k in range(n):
            for s in _LINES_CALL:
                x, y = old_calls[i + k][s], new_calls[j + k][s]
                if out.setdefault(x, y) != y:
                    return None
    return out


class _NoSites:
    """The cache analysis for a cost model that only has to show calls cheap:
    a question that needs it comes from a call that is no cheap one."""

    def __getattr__(self, name):
        raise _Refused(name)


class _Refused(Exception):
    pass


# the readers of an edited function that may see it gain or lose an edge: the
# walk itself (replayed, see below), CL002's scan and the fill-once idiom
# (neither follows a call); a config walk follows calls into the tree
EDGE_READERS = frozenset({"callgraph:edges_of", "cl002_expensive_call_on_hot_path:call_sites", "idioms:_slots"})


def hot_graph(analysis) -> tuple | None:
    """What the results entry keeps of the hot paths: the roots, every walked
    function's edges, and what the rules asked (see :class:`HotPaths`)."""
    hot = analysis.__dict__.get("hot")
    if hot is None:
        return None
    roots = [(qn, r.kind) for qn, r in hot.roots.items()]
    return roots, hot.edges, hot.callers_read, sorted(hot.absent)


def verify_edited(analysis, checks: list, graph, watch, observed: dict, files, blobs):
    """Whether the calls edited in functions the analysis read (``checks``,
    see :func:`_edited`) leave every finding as it was, checked against the
    whole program without running any stage: (the hot graph, the readers
    and property reads to add, the hot texts to add) if so, None otherwise.

    * Each added or removed call is cheap for CL002's scan (no catalog entry
      other than declared-pure, no config walk in a body in the tree).
    * A call that is an edge (it resolves to a function of the tree that is
      not @cache'd) is allowed only in a function read by EDGE_READERS alone,
      when the previous run kept its hot graph (``graph``, see
      :func:`hot_graph`). The walk is replayed over the kept edges, with the
      edited functions' and newly reached functions' edges resolved again:
      every function hot before keeps its chain and kind; the callers lists
      the rules read are the same; no function that became hot was asked
      about (a finding in it, a writer hoisting looked at); and none of them
      has a call CL002 would report or a read of an expensive property.
    """
    from ..facts.cost import CostModel
    from ..facts.properties import named_in, watched_reads
    from ..files import decode_source, split_lines
    from ..index.expr import dotted
    from ..index.records import observing, readers
    from ..rules.cl002_expensive_call_on_hot_path import call_sites
    from ..semantic.callgraph import edges_of, resolve_call, walk
    from ..semantic.idioms import is_cached_function

    p = analysis.program
    costs = CostModel(p, analysis.catalog, _NoSites())
    edited: dict = {}
    with observing() as seen:
        try:
            for qn, changed, old_calls, new_calls in checks:
                f = p.functions.get(qn)
                if f is None:
                    return None
                ctx = p.context(f)
                for t in changed:
                    c = CallSite(*t)
                    target = resolve_call(p, f, c)
                    edge = target is not None and not is_cached_function(target)
                    if edge and (graph is None or not set(observed.get(qn, ())) <= EDGE_READERS):
                        return None
                    names = p.callee_names(p.canon(c.func, ctx), dotted(c.func))
                    if costs.call_cost(names, target) is not None:
                        return None
                edited[qn] = (old_calls, new_calls)
            if graph is None:
                return None, readers(seen), {}, {}
            roots, old_edges, callers_read, absent = graph
            old_chains, old_kinds, _, old_callers = walk(roots, old_edges.__getitem__)

            def edges_for(qn: str) -> list:
                if qn in edited or qn not in old_edges:
                    return edges_of(p, p.functions[qn])
                return old_edges[qn]

            chains, kinds, edges, callers = walk(roots, edges_for)
            if any(chains.get(qn) != chain or kinds[qn] != old_kinds[qn] for qn, chain in old_chains.items()):
                return None
            new_hot = [qn for qn in chains if qn not in old_chains]
            if not set(new_hot).isdisjoint(absent):
                return None

            def call_key(caller: str, i: int, old: bool):
                if caller not in edited:
                    return caller, i
                return caller, repr(_unlined(edited[caller][0 if old else 1][i]))

            for callee, limit in callers_read.items():
                a = [call_key(g, i, True) for g, i in old_callers.get(callee, ())[:limit]]
                b = [call_key(g, i, False) for g, i in callers.get(callee, ())[:limit]]
                if a != b:
                    return None
            if new_hot and watch is None:
                return None  # the property stage did not run: what it would see is unknown
            by_path: dict = {}
            for qn in new_hot:
                f = p.functions[qn]
                if call_sites(p, costs, f, set(), True):
                    return None  # a call CL002 may report (covered or not by CL001)
                by_path.setdefault(f.path, []).append(f)
            parsed: dict = {}
            texts: dict = {}
            where = {sf.path: i for i, sf in enumerate(files)}
            for path, fns in by_path.items():
                i = where.get(path)
                data = blobs[i] if i is not None else None
                if data is None:
                    return None
                # the property stage's step for each (hot_property_reads)
                in_file = named_in(data, watch[0])
                lines = None
                for f in fns:
                    if not in_file or f.under_type_checking:
                        continue
                    if lines is None:
                        lines = split_lines(decode_source(data))
                    reads = watched_reads(lines, f, in_file)
                    if reads:
                        return None  # a read of an expensive property's name
                    if reads is not None:
                        parsed[f.qualname] = reads
                texts[path] = _text_digests(data, fns)
        except _Refused:
            return None
        except (SyntaxError, UnicodeDecodeError, LookupError):
            return None
    return (roots, edges, callers_read, absent), readers(seen), parsed, texts


# line slots of a read (cachelint.index.walk.function_reads)
_LINES_READ = (2, 4, 8)


def _same_reads(watch, qualnames: list, new_fi, data: bytes) -> dict | None:
    """(old line -> new line, {function: its new reads}) for the property
    reads of the edited hot functions ``qualnames``, when the property stage
    would find the same reads in their new text, up to line numbers; None
    otherwise.

    ``watch``: the previous run's (watched names, {function: reads parsed})
    (:func:`cachelint.facts.properties.hot_property_reads`): a function it did not
    parse had no ``.name`` for a watched name in its text, so no reads."""
    from ..facts.properties import watched_reads
    from ..files import decode_source, split_lines

    names, parsed = watch
    try:
        lines = split_lines(decode_source(data))
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return None
    fns = {f.qualname: f for f in new_fi.functions}
    out: dict = {}
    moved: dict = {}
    for qn in qualnames:
        f = fns.get(qn)
        if f is None:
            return None
        old = parsed.get(qn, [])
        if old is None:
            return None  # its file could not be read then
        new = watched_reads(lines, f, names) or []
        if len(old) != len(new):
            return None
        for a, b in zip(old, new):
            if [x for k, x in enumerate(a) if k not in _LINES_READ] != [
                x for k, x in enumerate(b) if k not in _LINES_READ
            ]:
                return None
            for k in _LINES_READ:
                if out.setdefault(a[k], b[k]) != b[k]:
                    return None
        if qn in parsed:
            moved[qn] = new
    return out, moved


def _multiset_difference(a: list, b: list, calls: list) -> list:
    """The encoded ``calls`` (``a`` is them without lines) not matched in ``b``."""
    left: dict = {}
    for x in b:
        k = repr(x)
        left[k] = left.get(k, 0) + 1
    out = []
    for x, c in zip(a, calls):
        k = repr(x)
        if left.get(k, 0):
            left[k] -= 1
        else:
            out.append(c)
    return out


# ----- findings (de)serialization ------------------------------------------------


def _span(s: Span) -> tuple:
    return (s.line, s.column, s.end_line, s.end_column)


def encode_finding(f: Finding) -> tuple:
    fix = None
    if f.fix is not None:
        fix = (
            f.fix.applicability.value,
            tuple(
                (
                    _span(e.span),
                    e.replacement,
                    e.remove_names,
                    e.kind.value,
                    e.target,
                    tuple(_span(a) for a in e.anchors),
                )
                for e in f.fix.edits
            ),
            f.fix.message,
            f.fix.relies_on,
        )
    return (f.code, f.path, _span(f.span), f.message, f.function, f.hot_path, fix, f.notes, f.data)


def decode_finding(t) -> Finding:
    code, path, span, message, function, hot_path, fix, notes, data = t
    fx = None
    if fix is not None:
        fx = Fix(
            Applicability(fix[0]),
            tuple(
                Edit(Span(*s), r, tuple(rm), EditKind(k), t, tuple(Span(*a) for a in an))
                for s, r, rm, k, t, an in fix[1]
            ),
            fix[2],
            tuple(fix[3]),
        )
    return Finding(
        code,
        path,
        Span(*span),
        message,
        function,
        tuple(hot_path) if hot_path is not None else None,
        fx,
        tuple(notes),
        data,
    )


def _strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for v in obj:
            yield from _strings(v)


def text_of(t) -> list[str]:
    """Every free-text and data string of an encoded finding (not its location)."""
    _, _, _, message, _, _, fix, notes, data = t
    out = [message, *notes]
    if fix is not None:
        out.append(fix[2])
        out.extend(fix[3])
        out.extend(e[1] for e in fix[1])  # the replacement or statement text
    out.extend(_strings(data))
    return out


def mentions(text: str, path: str, module: str) -> bool:
    if path and path in text:
        return True
    return bool(module) and (module + "." in text or text == module or f"`{module}`" in text)


def remap_finding(t, linemap: dict) -> tuple | None:
    """The finding with its span and fix edits moved by ``linemap``; None if a line is unknown."""
    code, path, span, message, function, hot_path, fix, notes, data = t

    def mv(s):
        a, b = linemap.get(s[0]), linemap.get(s[2])
        if a is None or b is None:
            raise KeyError(s)
        return (a, s[1], b, s[3])

    try:
        span = mv(span)
        if fix is not None:
            fix = (
                fix[0],
                tuple((mv(s), r, rm, k, t, tuple(mv(a) for a in an)) for s, r, rm, k, t, an in fix[1]),
                fix[2],
                fix[3],
            )
    except KeyError:
        return None
    return (code, path, span, message, function, hot_path, fix, notes, data)


# ----- the cached run -------------------------------------------------------------

# more changed files than this: the full analysis is as cheap as checking interfaces
REMAP_MAX = 32


def project_root(paths: list[str], config) -> Path:
    """Where the cache lives: where ``cachelint.lock`` lives (the configuration
    file's directory, else the nearest ancestor of the first path with a lock,
    a ``pyproject.toml`` or a ``.git``, else the current directory)."""
    from ..lock.lockfile import find_lock

    return find_lock(Path(paths[0]) if paths else Path.cwd(), getattr(config, "source", None)).parent


def _index_key(fp: str, sf, content: str) -> str:
    return digest(f"{fp}|{sf.path}|{sf.module}|{int(sf.is_package)}|{content}".encode("utf-8", "surrogatepass"))


def cached_findings(
    files,
    config,
    make_analysis,
    rules,
    cache: Cache,
    jobs,
    lock: str,
    need_analysis: bool = False,
    progress=None,
    resolve=None,
):
    """The unsuppressed findings of ``rules`` over ``files`` with ``config``,
    served from ``cache`` when that is provably the same result; how (``hit``:
    nothing changed, ``remapped``: only line shifts in changed files,
    ``verified``: remapped after checking calls edited in functions the
    analysis read against the whole program (see :func:`verify_edited`),
    ``partial``: whole-program analysis re-run, some indexes from the cache,
    ``miss``); and the :class:`~cachelint.facts.analysis.Analysis` when one was built
    (always with ``need_analysis``, which skips result reuse).

    ``make_analysis(indexes)`` builds the analysis (presets merged, the lock
    loaded); ``lock`` is the lock file's content hash ("-" for none);
    ``resolve()`` returns the configuration with its presets merged (for
    the hot roots: without it, added functions always re-run the analysis).
    """
    from ..files import read_bytes
    from ..gcpause import gc_paused
    from ..index.pool import default_jobs, index_shared
    from ..index.walk import index_bytes, index_file
    from ..rules.runner import run_rules

    fp = tool_fingerprint()
    blobs: list = []
    hashes: list[str] = []
    for sf in files:
        try:
            data = read_bytes(sf.path)  # a FIFO named *.py is unreadable, not a hang
            blobs.append(data)
            hashes.append(digest(data))
        except OSError as e:  # indexed again every run: a CL000 finding
            blobs.append(None)
            hashes.append("!" + digest(repr(e).encode()))
    scope = digest(
        marshal.dumps(
            # the presets are package files (in the fingerprint), chosen by the
            # files' top-level packages: resolving them is not needed for the key
            (fp, repr(config), lock, [r.code for r in rules], [(sf.path, sf.module, sf.is_package) for sf in files])
        )
    )
    prev = None if need_analysis else cache.get("results", scope)
    try:
        if prev is not None and prev[0] == hashes:
            return [decode_finding(t) for t, s in zip(prev[1], prev[2]) if not s], "hit", None
    except (TypeError, ValueError, IndexError, KeyError):
        prev = None
    with gc_paused(freeze=True):  # millions of new objects, no cycles; the index lives for the run
        # with a lock, CL003/CL004 also read attribute reads from the sources,
        # which the interface does not cover: no remapping then
        remapped = None
        if prev is not None and lock == "-":
            try:
                roots = None if resolve is None else (lambda: [r.pattern for r in resolve().roots])
                remapped = _remap(files, blobs, hashes, prev, cache, fp, roots)
            except (TypeError, ValueError, IndexError, KeyError, AttributeError):  # an entry of another shape
                remapped = None
            if remapped is not None and not remapped[2]:
                return _reuse(cache, scope, files, hashes, prev, remapped, fp, "remapped")

        indexes: list = [None] * len(files)
        todo = []
        for i, sf in enumerate(files):
            if blobs[i] is None:
                indexes[i] = index_file(sf.path, sf.module, sf.is_package)
                continue
            t = cache.get_index(_index_key(fp, sf, hashes[i]))
            if t is not None:
                try:
                    indexes[i] = decode_index(t)
                    if progress is not None:
                        progress.advance()
                    continue
                except (TypeError, ValueError, IndexError):
                    pass
            todo.append(i)
        jobs = default_jobs() if jobs is None else jobs
        done = None
        if jobs > 1 and len(todo) >= _parallel_threshold():
            items = [(blobs[i], files[i].path, files[i].module, files[i].is_package) for i in todo]

            keys = [_index_key(fp, files[i], hashes[i]) for i in todo]

            def store_local(k, fi):
                cache.add_index(keys[k], marshal.dumps(encode_index(fi)))

            def store_remote(k, body):
                cache.add_index(keys[k], body)

            done = index_shared(items, jobs, store_local, store_remote, progress)
        if done is not None:
            for i, fi in zip(todo, done):
                indexes[i] = fi
        else:
            for i in todo:
                sf = files[i]
                fi = index_bytes(blobs[i], sf.path, sf.module, sf.is_package)
                cache.add_index(_index_key(fp, sf, hashes[i]), marshal.dumps(encode_index(fi)))
                indexes[i] = fi
                if progress is not None:
                    progress.advance()
        cache.flush({_index_key(fp, sf, h) for sf, h in zip(files, hashes)})
        how = "miss" if len(todo) == len(files) else "partial"
    if remapped is not None:
        # calls edited in functions the analysis read: inert against the
        # whole program? (a few lookups, where the analysis takes seconds)
        checked = make_analysis(indexes)
        try:
            v = verify_edited(checked, remapped[2], prev[7], remapped[4], prev[4], files, blobs)
        except (TypeError, ValueError, IndexError, KeyError, AttributeError):
            v = None
        if v is not None:
            graph, seen, parsed, texts = v
            enc, flags, checks, hot, watch = remapped
            for path, more in texts.items():
                hot[path] = hot.get(path, []) + more
            if parsed:
                watch = (watch[0], {**watch[1], **parsed})
            observed = dict(prev[4])
            for qn, tags in seen.items():
                observed[qn] = sorted(set(observed.get(qn, ())) | set(tags))
            verified = (enc, flags, checks, hot, watch)
            findings, how, _ = _reuse(cache, scope, files, hashes, prev, verified, fp, "verified", observed, graph)
            # returned, not dropped here: freeing the indexes one by one took
            # 0.1 s of this path on vLLM (the CLI exits without freeing them)
            return findings, how, checked
    if progress is not None:
        progress.stage("Analysing")
    with observing() as observed:  # whose calls the analysis follows (see _edited)
        analysis = make_analysis(indexes)  # a fresh one: verify_edited filled memos
        raw, flags = run_rules(analysis, rules)
    texts = hot_texts(analysis, files, blobs)
    del blobs
    ca = analysis.__dict__.get("cache_analysis")  # not computed: the scan of uses never ran
    keys = sorted(ca.by_name) if ca is not None else []
    entry = (
        hashes, [encode_finding(f) for f in raw], flags, texts, readers(observed), keys, analysis.property_watch,
        hot_graph(analysis),
    )  # fmt: skip
    cache.put("results", scope, entry)
    return [f for f, s in zip(raw, flags) if not s], how, analysis


def _reuse(cache: Cache, scope: str, files, hashes, prev, remapped, fp: str, how: str, observed=None, graph=None):
    enc, flags, _, hot, watch = remapped
    if observed is None:
        observed, graph = prev[4], prev[7]
    cache.flush({_index_key(fp, sf, h) for sf, h in zip(files, hashes)})
    cache.put("results", scope, (hashes, enc, flags, hot, observed, prev[5], watch, graph))
    return [decode_finding(t) for t, s in zip(enc, flags) if not s], how, None


def _text_digest(lines: list[bytes], line: int, end_line: int) -> str:
    return digest(b"".join(lines[line - 1 : end_line]))


def _byte_lines(data: bytes) -> list[bytes]:
    """The file's lines as Python numbers them: ``bytes.splitlines`` breaks at
    \\r\\n, \\r and \\n only, and source encodings keep those bytes (the
    text need not be decoded to compare it)."""
    return data.splitlines(keepends=True)


def hot_texts(analysis, files, blobs) -> dict:
    """path -> [(qualname, digest of its lines)] for every hot function.

    The analysis reads more of a file than its index in one place: the
    property stage parses the text of hot functions again for attribute
    reads, which the index does not keep (a bare ``self.config.prop`` line
    adds no call and no assignment). So a file whose interface is unchanged
    is remapped only if the text of each of its hot functions is unchanged
    too (moved, as a whole, by lines added above it).
    """
    hot = analysis.__dict__.get("hot")  # not computed: nothing read these texts
    if hot is None:
        return {}
    functions = analysis.program.functions
    by_path: dict = {}
    for qn in hot.chains:
        f = functions.get(qn)
        if f is not None:
            by_path.setdefault(f.path, []).append(f)
    where = {sf.path: i for i, sf in enumerate(files)}
    out: dict = {}
    for path, fns in by_path.items():
        i = where.get(path)
        data = blobs[i] if i is not None else None
        if data is None:
            continue
        out[path] = _text_digests(data, fns)
    return out


def _text_digests(data: bytes, fns: list) -> list:
    """[(qualname, digest of its lines)] for functions ``fns`` of a file."""
    lines = _byte_lines(data)
    return [(f.qualname, _text_digest(lines, f.line, f.end_line)) for f in fns]


def _parallel_threshold() -> int:
    from ..index.pool import PARALLEL_THRESHOLD

    return PARALLEL_THRESHOLD


def _unseen(inert: list, blobs: list, old_findings: list, root_patterns: list) -> bool:
    """Whether added and removed inert functions are invisible to the analysis:
    each name is written in the sources only where an added function defines
    it, in no previous finding, and no qualified name is a hot root."""
    from ..globs import GlobSet

    roots = GlobSet(list(root_patterns))
    texts = []
    for t in old_findings:
        texts.extend(text_of(t))
        texts.append(t[4] or "")  # the function
        texts.extend(t[5] or ())  # the hot path
    defined: dict = {}
    for f, is_added in inert:
        defined[f[_FN_NAME]] = defined.get(f[_FN_NAME], 0) + int(is_added)
    for f, _ in inert:
        if roots.first(f[_FN_QN]) >= 0:
            return False
    for name, n in defined.items():
        if any(name in x for x in texts):
            return False
        needle = name.encode("ascii")
        if sum(b.count(needle) for b in blobs if b is not None) != n:
            return False
    return True


def _remap(files, blobs, hashes, prev, cache: Cache, fp: str, roots=None):
    """The previous findings moved to the changed files' new lines, as
    (findings, flags, checks, hot texts, property reads), or None when a changed file's
    interface changed (beyond inert functions added or removed, see
    :func:`inert_difference`, and calls edited, see :func:`_edited`) or a
    finding names a changed file.

    ``checks``: calls edited in functions the analysis read, still to be
    shown inert against the whole program (:func:`verify_edited`) before the
    findings may be used. ``roots()``: the hot-root globs (the resolved
    configuration's); without it, any change of an interface is a change."""
    from ..index.walk import index_bytes
    from ..rules.runner import suppressed as _suppressed

    old_hashes, old_findings, old_flags, hot, observed, site_keys, watch, _graph = prev
    site_keys = set(site_keys)
    if len(old_hashes) != len(hashes):
        return None
    changed = [i for i, (a, b) in enumerate(zip(old_hashes, hashes)) if a != b]
    if len(changed) > REMAP_MAX:
        return None
    info = {}
    inert: list = []  # (encoded function, added?) across the changed files
    checks: list = []
    hot = dict(hot)
    for i in changed:
        sf = files[i]
        if blobs[i] is None or old_hashes[i].startswith("!"):
            return None
        old_t = cache.get_index(_index_key(fp, sf, old_hashes[i]))
        if old_t is None:
            return None
        key = _index_key(fp, sf, hashes[i])
        new_t = cache.get_index(key)
        if new_t is None:
            new_t = encode_index(index_bytes(blobs[i], sf.path, sf.module, sf.is_package))
            cache.add_index(key, marshal.dumps(new_t))
        new_fi = decode_index(new_t)
        old_t, new_t = _expanded(old_t), _expanded(new_t)
        old_i, new_i = old_t, new_t
        edited: list = []  # checks of this file
        if interface(old_t) != interface(new_t):
            if roots is None:
                return None
            scan_free = _scanner(site_keys, new_t[_FI_IMPORTS])
            # the calls of functions edited? (see _edited)
            e = _edited(old_i, new_i, observed, scan_free)
            if e is not None:
                old_i, new_i, edited = e
            # inert functions added or removed? (see inert_difference)
            diff = inert_difference(old_i, new_i, scan_free)
            if diff is not None:
                old_i, new_i, added, removed = diff
                inert.extend((f, True) for f in added)
                inert.extend((f, False) for f in removed)
            if interface(old_i) != interface(new_i):
                return None
        linemap = dict(zip(index_lines(old_i), index_lines(new_i)))  # both expanded above
        edited_qns = {qn for qn, _, _, _ in edited}
        for _, _, old_calls, new_calls in edited:
            if not _merge_lines(linemap, _paired_lines(old_calls, new_calls)):
                return None
        checks.extend(edited)
        if sf.path in hot:
            # the hot functions' texts now, kept for the next run (see hot_texts)
            byte_lines = _byte_lines(blobs[i])
            fns = {f.qualname: f for f in new_fi.functions}
            now = [
                (qn, _text_digest(byte_lines, fns[qn].line, fns[qn].end_line) if qn in fns else None)
                for qn, _ in hot[sf.path]
            ]
            if any(d != n for (qn, d), (_, n) in zip(hot[sf.path], now) if qn not in edited_qns):
                return None  # another hot function's text changed
            # the same text, moved as a whole: every line of it moves alike
            # (a finding on a property read sits on a line the index may not have)
            old_spans = {f[_FN_QN]: (f[_LINES_FN[0]], f[_LINES_FN[1]]) for f in old_t[_FI_FUNCTIONS]}
            for qn, _ in hot[sf.path]:
                if qn in edited_qns:
                    continue
                a, b = old_spans.get(qn, (0, -1))
                shift = fns[qn].line - a
                for line in range(a, b + 1):
                    linemap.setdefault(line, line + shift)
            edited_hot = [qn for qn, _ in hot[sf.path] if qn in edited_qns]
            if edited_hot and watch is not None:
                # an edited hot function's text: the property stage must find
                # the same reads in it, moved (see _same_reads)
                moved = _same_reads(watch, edited_hot, new_fi, blobs[i])
                if moved is None or not _merge_lines(linemap, moved[0]):
                    return None
                watch = (watch[0], {**watch[1], **moved[1]})  # at their new lines, for the next run
            hot[sf.path] = now
        info[sf.path] = (linemap, new_fi, sf.module, edited_qns)
    if inert and not _unseen(inert, blobs, old_findings, roots()):
        return None
    enc, flags = [], []
    for t, flag in zip(old_findings, old_flags):
        texts = text_of(t)
        for path, (_, _, module, _) in info.items():
            if any(mentions(x, path, module) for x in texts):
                return None
        if t[1] in info:
            linemap, fi, _, edited_qns = info[t[1]]
            if t[4] in edited_qns and t[0] != "CL001":
                # CL002's hoisting reads more of a function's text than the
                # sites (is it a generator?): an edited one's sites are redone.
                # CL001 judges a use by its call, guard and the function's
                # assignments, all unchanged up to lines.
                return None
            t = remap_finding(t, linemap)
            if t is None:
                return None
            flag = _suppressed(decode_finding(t), fi)
        enc.append(t)
        flags.append(bool(flag))
    return enc, flags, checks, hot, watch
