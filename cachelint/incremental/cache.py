"""The on-disk cache: per-file indexes and whole-run results.

Two kinds of entries live under the cache directory (default
``.cachelint_cache`` at the project root, ignored by git through a
``.gitignore`` inside it, and marked by a ``CACHEDIR.TAG``):

``index/`` and ``packs/``
    One :class:`~cachelint.index.records.FileIndex` per file, keyed by the
    file's content hash, its path and module name, and the tool fingerprint.
    Stored as ``marshal`` of plain tuples (about ten times faster to load than
    pickled dataclasses, and how the indexing workers send their results
    back), in packs of about 4 MB, found through a pack map (creating a file
    per entry cost 2.4 s of a cold run here). Each function's calls are
    marshalled apart, and a loaded index keeps them as bytes until they are
    read (about half of what loading costs; the analysis reads the calls of
    about one function in eight).

``results/``
    One entry per *scope*: the tool fingerprint, the configuration, the lock
    file's content, the rules and the list of files analysed. It holds the
    content hash of every file and the raw findings of the last run over that
    scope, each with its suppression flag.

A file's index depends on that file alone, so it is reused whenever the
file's content is. The findings in one file depend on facts from others (a
fill in ``config.py`` makes a call in ``scheduler.py`` a CL001 finding; a
call edge in one module makes a function in another hot; ruff issue 5449),
so results are cached for the whole run and reused only when every file's
content is unchanged (the warm path). After any change, the changed files
are indexed again, every other index is loaded from the cache, and the
whole-program analysis and the rules run again: nothing needs to know what
the analysis reads.

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
from ..files import atomic_write, read_bytes
from ..gcpause import gc_paused
from ..index import pool, walk
from ..index.codec import decode_index, encode_index
from ..model import Applicability, Edit, EditKind, Finding, Fix, Span
from ..rules.runner import run_rules

FORMAT = 3
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
        pkg = _PACKAGE
        for p in fingerprinted_files():
            h.update(p.relative_to(pkg).as_posix().encode())
            try:
                h.update(p.read_bytes())
            except OSError:
                pass
        _fingerprint = h.hexdigest()[:32]
    return _fingerprint


# the cachelint package (this module is in its `incremental` subpackage)
_PACKAGE = Path(__file__).resolve().parent.parent


def fingerprinted_files() -> list[Path]:
    """Every source and preset file of the cachelint package, in order."""
    return [p for p in sorted(_PACKAGE.rglob("*")) if p.suffix in (".py", ".toml") and "__pycache__" not in p.parts]


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
        # the packs read are decoded by now: their bytes (about 25 MB on vLLM
        # 0.10.2) would otherwise stay through the analysis (get_index reads
        # a pack again if asked)
        self._packs.clear()
        self._write_pack()
        if not self._written:
            return
        written, self._written = self._written, {}
        current = self.get("packs", _MAP_KEY)
        m = current if isinstance(current, dict) else {}
        m.update(written)
        pruned = live is not None and len(m) > 4 * len(live) + 256
        if pruned and live is not None:
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
    summarise=None,
):
    """The unsuppressed findings of ``rules`` over ``files`` with ``config``;
    how the cache served them (``hit``: no file changed, the previous findings
    reused; ``partial``: some indexes from the cache, the analysis run again;
    ``miss``: every file indexed); and the
    :class:`~cachelint.facts.analysis.Analysis` when one was built (always
    with ``need_analysis``, which skips result reuse).

    ``make_analysis(indexes)`` builds the analysis (presets merged, the lock
    loaded); ``lock`` is the lock file's content hash ("-" for none).
    ``summarise(analysis)``, when given, is a plain value (builtins) about the
    run stored with its findings and returned fourth (the previous run's on a hit).
    """
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
    if not need_analysis:
        prev = cache.get("results", scope)
        try:
            if prev is not None and prev[0] == hashes:
                return [decode_finding(t) for t, s in zip(prev[1], prev[2]) if not s], "hit", None, prev[3]
        except (TypeError, ValueError, IndexError, KeyError):
            pass  # an entry of another shape: a miss
    keys = [_index_key(fp, sf, h) for sf, h in zip(files, hashes)]
    with gc_paused(freeze=True):  # millions of new objects, no cycles; the index lives for the run
        indexes: list = [None] * len(files)
        todo = []
        for i, sf in enumerate(files):
            if blobs[i] is None:
                indexes[i] = walk.index_file(sf.path, sf.module, sf.is_package)
                continue
            t = cache.get_index(keys[i])
            if t is not None:
                try:
                    indexes[i] = decode_index(t)
                    if progress is not None:
                        progress.advance()
                    continue
                except (TypeError, ValueError, IndexError):
                    pass
            todo.append(i)
        jobs = pool.default_jobs() if jobs is None else jobs
        done = None
        if jobs > 1 and len(todo) >= pool.PARALLEL_THRESHOLD:
            items = [(blobs[i], files[i].path, files[i].module, files[i].is_package) for i in todo]

            def store_local(k, fi):
                cache.add_index(keys[todo[k]], marshal.dumps(encode_index(fi)))

            def store_remote(k, body):
                cache.add_index(keys[todo[k]], body)

            done = pool.index_shared(items, jobs, store_local, store_remote, progress)
        if done is not None:
            for i, fi in zip(todo, done):
                indexes[i] = fi
        else:
            for i in todo:
                sf = files[i]
                fi = walk.index_bytes(blobs[i], sf.path, sf.module, sf.is_package)
                cache.add_index(keys[i], marshal.dumps(encode_index(fi)))
                indexes[i] = fi
                if progress is not None:
                    progress.advance()
        del blobs
        cache.flush(set(keys))
        how = "miss" if len(todo) == len(files) else "partial"
    if progress is not None:
        progress.stage("Analysing")
    analysis = make_analysis(indexes)
    raw, flags = run_rules(analysis, rules, jobs=jobs)
    summary = summarise(analysis) if summarise is not None else None
    cache.put("results", scope, (hashes, [encode_finding(f) for f in raw], flags, summary))
    # the analysis is returned, not dropped here: freeing the indexes one by
    # one takes a tenth of a second on vLLM (the CLI exits without freeing them)
    return [f for f, s in zip(raw, flags) if not s], how, analysis, summary
