"""The library API: the whole pipeline behind one call.

    discover -> index (parallel for large inputs) -> program, call graph,
    hot paths -> cache sites and uses -> rules -> suppressions -> fixes

``check()`` never raises for a bad source file (that is a CL000 finding); it
raises :class:`~cachelint.config.ConfigError` or
:class:`~cachelint.rules.UnknownRuleError` for bad configuration and
``FileNotFoundError`` for a path that does not exist.
"""

from __future__ import annotations

import gc
import marshal
import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from .config import Config, resolve_presets
from .discover import SourceFile, discover
from .fixer import FileFix, compute_fixes, write_fix
from .index import FileIndex, index_bytes, index_file
from .lockfile import find_lock
from .model import Finding
from .rules import select_rules
from .terminal import Progress

if TYPE_CHECKING:
    from .analysis import Analysis

# below this many files, a process pool costs more than it saves
PARALLEL_THRESHOLD = 64


@dataclass
class Result:
    findings: list[Finding]  # remaining (not fixed) findings, sorted
    fixed: list[Finding] = field(default_factory=list)
    file_fixes: list[FileFix] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # fixes that could not be written
    files: int = 0
    lock_path: str | None = None
    lock_written: bool = False  # --fix recorded new invariants in the lock
    cache: str = "off"  # off | hit | remapped | verified | partial | miss: how the cache served this run
    # the configuration with its presets merged, resolved on first use (a
    # cache hit needs no presets: parsing them is a tenth of a warm run)
    _config: Config | None = field(default=None, repr=False)
    _resolve: Callable[[], Config] | None = field(default=None, repr=False, compare=False)

    @property
    def config(self) -> Config | None:
        if self._config is None and self._resolve is not None:
            self._config = self._resolve()
        return self._config


@contextmanager
def gc_paused(freeze: bool = False):
    """The cyclic GC off for a block, then as it was before.

    Blocks that pause it nest (the cached run pauses it around the pool,
    which pauses it again): re-enabling it on the way out of an inner one
    left it on with a fresh index of millions of objects and no freeze yet,
    and the next allocations paid a full collection (0.5 s of a cold run on
    vLLM 0.10.2).

    With ``freeze``, what the block built lives for the run (the index, the
    analysis) and is frozen out of the GC's reach before the GC is back on:
    everything allocated while it was off counts as generation 0, and the
    first allocation after would have the GC scan it all (0.3 to 0.45 s on
    vLLM 0.10.2). :func:`check` unfreezes it at the end.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if was:
            gc.enable()


def _index_one(sf: SourceFile) -> FileIndex:
    return index_file(sf.path, sf.module, sf.is_package)


def _index_chunk(chunk: list[SourceFile], progress: Progress | None = None) -> list[FileIndex]:
    # ASTs are millions of short-lived container objects: with the cyclic GC
    # on, its generation-2 passes over them cost more than parsing (8.5 s vs
    # 2.9 s for vLLM's ast.parse alone). Nothing here creates cycles.
    with gc_paused():
        if progress is None:
            return [_index_one(sf) for sf in chunk]
        out = []
        for sf in chunk:
            out.append(_index_one(sf))
            progress.advance()
        return out


def _encoded_chunk(chunk: list[tuple], spool: str | None = None) -> list[bytes] | str:
    """Worker: index (data, path, module, is_package) items, return marshalled tuples.

    A 20 MB pickle of dataclasses took longer to send back and load than the
    second core saved; marshal of plain tuples is about five times cheaper on
    both ends (see :mod:`cachelint.cache`), and the bytes are cache entries.

    With ``spool`` (a directory), they are written to a file there and its
    path returned instead: a result sent through the pool's pipe (64 KB at a
    time) blocks this worker until the parent's result thread reads it, and
    that thread waits for the GIL while the parent indexes. Workers sat idle
    0.8 s of a 6.5 s run on vLLM 0.33.0 that way.
    """
    from .cache import encode_index

    with gc_paused():
        out = []
        for data, path, module, is_package in chunk:
            if data is None:
                fi = index_file(path, module, is_package)
            else:
                fi = index_bytes(data, path, module, is_package)
            out.append(marshal.dumps(encode_index(fi)))
    if spool is None:
        return out
    fd, name = tempfile.mkstemp(dir=spool, prefix="chunk-")
    with os.fdopen(fd, "wb") as fh:
        fh.write(marshal.dumps(out))
    return name


def _chunk_result(result) -> list[bytes]:
    """What :func:`_encoded_chunk` returned: the marshalled indexes."""
    if isinstance(result, list):
        return result
    try:
        with open(result, "rb") as fh:
            return marshal.loads(fh.read())
    finally:
        os.unlink(result)


def default_jobs() -> int:
    """Processes for indexing when ``-j`` is not given.

    The pool costs about a fifth more CPU than indexing alone (the index has
    to be sent back), so it pays only while cores are not all taken. Measured
    on 2 cores (docs/benchmarks.md): two processes beat one at a load average
    of 1.5 to 4 and lost to it at 5 to 7 (vLLM 0.10.2). With the small
    chunks of index_shared, two beat one by 1.39x (0.10.2) and 1.49x (0.33.0)
    at loads of 0.8 to 1.6. The rule: as many processes as the load average
    leaves cores free, plus one, as ``make -l`` limits its jobs by the load.
    """
    cores = max(1, min(os.cpu_count() or 1, 8))
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):  # not on this platform
        return cores
    return max(1, min(cores, int(cores - load) + 2))


def index_files(files: list[SourceFile], jobs: int | None = None, progress: Progress | None = None) -> list[FileIndex]:
    with gc_paused(freeze=True):  # the index lives for the whole run
        return _index_files(files, jobs, progress)


def _index_files(files: list[SourceFile], jobs: int | None, progress: Progress | None = None) -> list[FileIndex]:
    jobs = default_jobs() if jobs is None else jobs
    if jobs <= 1 or len(files) < PARALLEL_THRESHOLD:
        return _index_chunk(files, progress)
    out = index_shared([(None, sf.path, sf.module, sf.is_package) for sf in files], jobs, progress=progress)
    return _index_chunk(files) if out is None else out


def _index_item(item: tuple) -> FileIndex:
    data, path, module, is_package = item
    if data is None:
        return index_file(path, module, is_package)
    return index_bytes(data, path, module, is_package)


def index_shared(
    items: list[tuple], jobs: int, on_local=None, on_remote=None, progress: Progress | None = None
) -> list[FileIndex] | None:
    """Index ``(data, path, module, is_package)`` items on ``jobs`` cores: this
    process and ``jobs - 1`` workers. None if there is no multiprocessing.

    The items are dealt into chunks (see :func:`_chunk_plan`), all submitted to the pool; this
    process takes chunks from the end of the queue for itself as long as it
    can cancel them before a worker starts them (work stealing with the
    standard library). Workers send back marshalled tuples, not pickled
    dataclasses: a 20 MB pickle took longer to send and load than the second
    core saved; and in files of a temporary directory, not through the pool's
    pipe (see :func:`_encoded_chunk`). ``on_local(i, fi)`` / ``on_remote(i, body)`` see each result
    (e.g. to store it in the cache).
    """
    # here, not at the top: 15 ms of start-up that a cached run does not need
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from .cache import decode_index

    chunks = _chunk_plan([_item_size(item) for item in items], jobs)
    out: list = [None] * len(items)
    ctx = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
    try:
        spool_dir = tempfile.TemporaryDirectory(prefix="cachelint-")
    except OSError:  # no temporary directory: through the pipe
        spool_dir = None
    spool = spool_dir.name if spool_dir is not None else None
    was_enabled = gc.isenabled()
    gc.disable()  # see _index_chunk; decoding allocates as much
    try:
        with ProcessPoolExecutor(max_workers=max(1, jobs - 1), mp_context=ctx) as pool:
            futures = [pool.submit(_encoded_chunk, [items[i] for i in c], spool) for c in chunks]
            taken = 0  # worker results decoded, from the front

            def take(block: bool) -> None:
                # decoding between stolen chunks, not all at the end, keeps
                # this process's tail (decoding while the workers sit idle) short
                nonlocal taken
                while taken < len(futures):
                    fut, chunk = futures[taken], chunks[taken]
                    if not block and not fut.done():
                        return
                    taken += 1
                    if fut.cancelled():
                        continue
                    for i, body in zip(chunk, _chunk_result(fut.result())):
                        if on_remote is not None:
                            on_remote(i, body)
                        out[i] = decode_index(marshal.loads(body), unpack_scans=True)
                    if progress is not None:
                        progress.advance(len(chunk))

            for fut, chunk in zip(reversed(futures), reversed(chunks)):
                take(block=False)
                if not fut.cancel():
                    break  # a worker has it (and everything before it)
                for i in chunk:
                    fi = _index_item(items[i])
                    out[i] = fi
                    if on_local is not None:
                        on_local(i, fi)
                    if progress is not None:
                        progress.advance()
            take(block=True)
    except (OSError, RuntimeError, ImportError, ValueError, EOFError):  # no multiprocessing here: stay serial
        return None
    finally:
        if spool_dir is not None:
            spool_dir.cleanup()
        if was_enabled:  # see gc_paused
            gc.enable()
    return out


# Chunks are small where the workers (from the front of the queue) and this
# process (from the back) meet: the middle, with one worker. The pool queues
# one chunk beyond those its workers run, and this process stops stealing at
# the first chunk it cannot cancel, then waits for those: with 96 equal
# chunks, that wait was 0.3 to 0.45 s of a cold run on vLLM 0.33.0, with
# this core idle. Where they meet moves with the load of each process, and
# bytes are a rough measure of a file's cost (they met at 40 to 48 % of the
# bytes here), so the middle 40 % is all small chunks; toward the ends they
# grow, which keeps their number (and the cost of each) low.
_CHUNK_MIN = 1 / 400  # of the whole work: the size of the middle chunks
_CHUNK_MIDDLE = 0.2  # small chunks this far (of the work) either side of where they meet
_CHUNK_SLOPE = 0.25  # growth of chunk size with distance beyond that
_FILE_COST = 2_000  # bytes' worth of fixed work per file (open, hash, encode)


def _chunk_plan(sizes: list[int], jobs: int = 2) -> list[list[int]]:
    """Item indices in chunks, the largest files first: each chunk's share
    of the work grows with its distance from where ``jobs - 1`` workers and
    this process are expected to meet, ``1 - 1 / jobs`` of the way (see above)."""
    meet = 1 - 1 / max(jobs, 2)
    order = sorted(range(len(sizes)), key=lambda i: sizes[i], reverse=True)
    cost = [sizes[i] + _FILE_COST for i in order]
    total = sum(cost)
    chunks = []
    done = 0
    k = 0
    while k < len(order):
        x = done / total
        want = total * max(_CHUNK_MIN, _CHUNK_SLOPE * (abs(x - meet) - _CHUNK_MIDDLE))
        start, got = k, 0
        while k < len(order) and (got < want or k == start):
            got += cost[k]
            k += 1
        chunks.append(order[start:k])
        done += got
    return chunks


def _item_size(item: tuple) -> int:
    if item[0] is not None:
        return len(item[0])
    return _size(item[1])


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _suppressed(f: Finding, fi: FileIndex | None) -> bool:
    if fi is None or not fi.suppressions:
        return False
    for line in range(f.span.line, f.span.end_line + 1):
        if line in fi.suppressions:
            codes = fi.suppressions[line]
            if codes is None or f.code in codes:
                return True
    return False


def lock_location(paths: list[str], config: Config) -> Path:
    """Where cachelint.lock is (or will be written): see :func:`~cachelint.lockfile.find_lock`."""
    return find_lock(Path(paths[0]) if paths else Path.cwd(), config.source)


def analyse(
    paths: list[str], config: Config, jobs: int | None = None, progress: Progress | None = None
) -> tuple[Analysis, list[SourceFile]]:
    files = discover(paths, exclude=config.exclude, respect_gitignore=config.respect_gitignore)
    lock_path = lock_location(paths, config)
    if progress is not None:
        progress.stage("Indexing", len(files))
    indexes = index_files(files, jobs, progress)
    if progress is not None:
        progress.stage("Analysing")
    return _analysis(indexes, _resolve(config, files), lock_path), files


def _analysis(indexes: list[FileIndex], config: Config, lock_path: Path) -> Analysis:
    from .analysis import Analysis
    from .lockfile import load as load_lock

    invariants = load_lock(lock_path) if lock_path.is_file() else None
    return Analysis(indexes, config, invariants, str(lock_path))


def _resolve(config: Config, files: list[SourceFile]) -> Config:
    tops = {sf.module.split(".")[0] for sf in files if sf.module}
    return resolve_presets(config, tops)


def run_rules(analysis: Analysis, rules) -> tuple[list[Finding], list[bool]]:
    """Every rule's findings over the whole program, and whether each is suppressed.

    With the cyclic GC paused: the analysis builds memos, contexts and
    findings that live for the run, and the collections its allocations
    triggered (about 700 on vLLM 0.33.0) took 0.4 to 0.5 s of its 1.8 to 2.1 s.
    What it built is then frozen out of the GC's reach, as the index is (see
    :func:`gc_paused`): else the first collection after would scan it all.
    """
    with gc_paused(freeze=True):
        findings: list[Finding] = []
        for rule_cls in rules:
            findings.extend(rule_cls().check(analysis))
        by_path = analysis.program.modules_by_path
        return findings, [_suppressed(f, by_path.get(f.path)) for f in findings]


def check(
    paths: list[str],
    config: Config | None = None,
    *,
    fix: bool = False,
    unsafe_fixes: bool | None = None,
    write: bool = True,
    jobs: int | None = None,
    report_only: list[str] | None = None,
    progress: Progress | None = None,
    cache_dir: str | os.PathLike | None = None,
) -> Result:
    """Check ``paths``. With ``cache_dir``, reuse and update the on-disk cache there.

    ``report_only``: files or directories; the whole of ``paths`` is
    analysed (it feeds the call graph and the cache sites) but only findings
    in these are reported and fixed (the pre-commit hook's mode)."""
    try:
        config = config or Config()
        rules = select_rules(config.select, config.ignore)
        files = discover(paths, exclude=config.exclude, respect_gitignore=config.respect_gitignore)
        lock_path = lock_location(paths, config)
        resolved: list[Config] = []

        def resolve() -> Config:
            if not resolved:
                resolved.append(_resolve(config, files))
            return resolved[0]

        def make_analysis(indexes: list[FileIndex]) -> Analysis:
            return _analysis(indexes, resolve(), lock_path)

        # fixing needs the analysis: the lock records what each rewrite relies on,
        # and the fixer checks each file against the digest it was analysed at
        need_analysis = fix
        if progress is not None:
            progress.stage("Indexing", len(files))
        if cache_dir is not None:
            from .cache import Cache, cached_findings

            findings, how, analysis = cached_findings(
                files,
                config,
                make_analysis,
                rules,
                Cache(cache_dir),
                jobs,
                lock_hash(lock_path),
                need_analysis,
                progress,
                resolve=resolve,
            )
        else:
            indexes = index_files(files, jobs, progress)
            if progress is not None:
                progress.stage("Analysing")
            analysis = make_analysis(indexes)
            raw, flags = run_rules(analysis, rules)
            findings, how = [f for f, s in zip(raw, flags) if not s], "off"
        if report_only is not None:
            # findings in the given files, and those about the project itself
            # (a broken invariant of cachelint.lock, reported at the lock)
            inside = _within(report_only)
            findings = [f for f in findings if inside(f.path) or not f.path.endswith(".py")]
        findings.sort(key=lambda f: (f.path, f.span.line, f.span.column, f.code))
        result = Result(findings=findings, files=len(files), cache=how, lock_path=str(lock_path), _resolve=resolve)
        if unsafe_fixes is None:
            unsafe_fixes = config.unsafe_fixes  # presets never set it
        if fix:
            # Like ruff, fix until nothing changes: a fix can enable another (a
            # value hoisted into __init__ becomes a cached attribute that CL001
            # then has other readers use). Each pass after the first re-analyses.
            for n in range(MAX_FIX_PASSES):
                by_path = analysis.program.modules_by_path if analysis is not None else {}
                digests = {path: fi.digest for path, fi in by_path.items()}
                if progress is not None:
                    progress.stage("Fixing", len({f.path for f in findings if f.fix is not None}))
                file_fixes = compute_fixes(findings, unsafe_fixes, digests, progress)
                fixed_ids: set = set()
                for ff in file_fixes:
                    if ff.error:
                        result.errors.append(f"{ff.path}: {ff.error}")
                        continue
                    if write:
                        err = write_fix(ff, roots=list(paths))
                        if err:
                            result.errors.append(err)
                            continue
                    fixed_ids.update(id(f) for f in ff.findings)
                changed = [ff for ff in file_fixes if not ff.error and ff.new != ff.old]
                result.file_fixes.extend(changed)
                fixed_now = [f for f in findings if id(f) in fixed_ids]
                result.fixed.extend(fixed_now)
                result.findings = [f for f in findings if id(f) not in fixed_ids]
                if write and analysis is not None:
                    _record_invariants(analysis, result, fixed_now)
                if not write or not changed or n + 1 == MAX_FIX_PASSES:
                    break
                analysis, findings = _reanalyse(paths, config, rules, jobs, report_only, lock_path)
                result.findings = findings
        return result
    finally:
        # the index and the analysis were frozen out of the GC's reach for the
        # run (gc_paused); back in the oldest generation, what the caller
        # drops is collected again (a cheap list splice, no collection)
        gc.unfreeze()


# fix passes at most (each after the first re-analyses the tree)
MAX_FIX_PASSES = 10


def _reanalyse(paths, config: Config, rules, jobs, report_only, lock_path: Path) -> tuple[Analysis, list[Finding]]:
    """A fresh analysis after a fix pass wrote files (no cache: the tree just changed)."""
    files = discover(paths, exclude=config.exclude, respect_gitignore=config.respect_gitignore)
    analysis = _analysis(index_files(files, jobs), _resolve(config, files), lock_path)
    raw, flags = run_rules(analysis, rules)
    findings = [f for f, s in zip(raw, flags) if not s]
    if report_only is not None:
        inside = _within(report_only)
        findings = [f for f in findings if inside(f.path) or not f.path.endswith(".py")]
    findings.sort(key=lambda f: (f.path, f.span.line, f.span.column, f.code))
    return analysis, findings


def lock_hash(lock_path: Path) -> str:
    """Content hash of ``cachelint.lock``: an input of the analysis (CL003, CL004)."""
    from .cache import digest

    try:
        return digest(lock_path.read_bytes())
    except OSError:
        return "-"


def _record_invariants(analysis: Analysis, result: Result, fixed: list[Finding]) -> None:
    """Write or extend cachelint.lock with what the applied CL001 fixes rely on."""
    from .invariants import from_uses
    from .lockfile import merge
    from .lockfile import write as write_lock

    spans = {(f.path, f.span.line, f.span.column) for f in fixed if f.code == "CL001"}
    if not spans:
        return
    uses = [u for u in analysis.cache_analysis.uses() if (u.function.path, u.call.line, u.call.column) in spans]
    new = from_uses(analysis.program, uses)
    if not new or analysis.lock_path is None:
        return
    path = Path(analysis.lock_path)
    try:
        result.lock_written = write_lock(path, merge(analysis.invariants or [], new)) or result.lock_written
    except OSError as e:
        result.errors.append(f"{path}: cannot write the lock: {e}")


def rebuild_lock(paths: list[str], config: Config | None = None, *, write: bool = True, jobs: int | None = None):
    """``cachelint lock``: the lock as the code now has it (source untouched).

    Returns (path, old text or None, new text, errors). Invariants whose
    readers are gone are dropped; one whose fill is gone is kept as it was
    and reported, since only restoring the fill or reverting the readers
    resolves it.
    """
    from .invariants import InvariantCheck
    from .lockfile import dumps
    from .lockfile import write as write_lock

    config = config or Config()
    analysis, _ = analyse(paths, config, jobs)
    path = Path(analysis.lock_path)
    old_text = path.read_text(encoding="utf-8") if path.is_file() else None
    check = InvariantCheck(analysis.program, analysis.invariants or [])
    out, errors = [], []
    for inv in analysis.invariants or []:
        new, err = check.rebuild(inv)
        if err:
            errors.append(err)
        if new is not None:
            out.append(new)
    new_text = dumps(out)
    if write and analysis.invariants is not None and new_text != old_text:
        write_lock(path, out)
    return path, old_text, new_text, errors


def _within(paths: list[str]):
    """A predicate: is a path one of ``paths`` or inside one of them."""
    files: set[str] = set()
    dirs: list[str] = []
    for p in paths:
        real = os.path.realpath(p)
        if os.path.isdir(real):
            dirs.append(real.rstrip(os.sep) + os.sep)
        else:
            files.add(real)

    def inside(path: str) -> bool:
        real = os.path.realpath(path)
        return real in files or any(real.startswith(d) for d in dirs)

    return inside


def lint_sources(sources: dict[str, str], config: Config | None = None, **kw) -> Result:
    """Check in-memory modules (tests, examples): written to a temp dir first."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="cachelint-") as d:
        for rel, code in sources.items():
            p = Path(d, rel)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(code, encoding="utf-8")
        cwd = os.getcwd()
        os.chdir(d)
        try:
            res = check(["."], config, **kw)
            fixed = {rel: Path(d, rel).read_text(encoding="utf-8") for rel in sources}
        finally:
            os.chdir(cwd)
    res.sources_after = fixed  # type: ignore[attr-defined]
    return res
