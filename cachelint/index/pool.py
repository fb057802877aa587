"""Indexing many files on several cores: this process and a pool of workers.

Workers send back marshalled indexes (see :mod:`cachelint.index.codec`); this
process steals chunks from the end of the queue while the workers take them
from the front.
"""

from __future__ import annotations

import marshal
import os
import tempfile
import threading

from ..discover.walk import SourceFile
from ..gcpause import gc_paused
from ..progress import Progress
from .codec import decode_index, encode_index
from .records import FileIndex
from .walk import index_bytes, index_file

# below this many files, a process pool costs more than it saves
PARALLEL_THRESHOLD = 64


def fork_safe() -> bool:
    """No other thread started through :mod:`threading` runs in this process,
    so a fork leaves none of their locks held in the child (a lock a thread
    holds at the fork stays held there; CPython warns of it from 3.12 on). A
    library caller with such threads gets serial work. Threads started below
    :mod:`threading` (``_thread``, native code) are not seen: CPython's own
    warning counts those too."""
    return threading.active_count() == 1


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
    both ends (see :mod:`cachelint.incremental.cache`), and the bytes are cache entries.

    With ``spool`` (a directory), they are written to a file there and its
    path returned instead: a result sent through the pool's pipe (64 KB at a
    time) blocks this worker until the parent's result thread reads it, and
    that thread waits for the GIL while the parent indexes. Workers sat idle
    0.8 s of a 6.5 s run on vLLM 0.33.0 that way.
    """
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

    chunks = _chunk_plan([_item_size(item) for item in items], jobs)
    out: list = [None] * len(items)
    ctx = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
    if ctx is not None and not fork_safe():
        return None  # the callers index serially
    try:
        spool_dir = tempfile.TemporaryDirectory(prefix="cachelint-")
    except OSError:  # no temporary directory: through the pipe
        spool_dir = None
    spool = spool_dir.name if spool_dir is not None else None
    try:
        # the GC paused (see _index_chunk): decoding allocates as much as indexing
        with gc_paused(), ProcessPoolExecutor(max_workers=max(1, jobs - 1), mp_context=ctx) as pool:
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
