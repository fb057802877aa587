"""Stage 6: compute and write fixes.

Fixes are grouped by file and applied through the LibCST codemod in
``codemods/`` (formatting and comments kept, imports a fix leaves unused
removed). A file is written only if the rewritten code parses and compiles,
atomically (a temporary file in the same directory, then ``os.replace``, mode
kept), and only if it did not change on disk since it was read.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import os
import re
import stat
import tokenize
import warnings
from dataclasses import dataclass, field, replace

from ..files import TempFileError, atomic_write, read_bytes
from ..gcpause import gc_paused
from ..index.pool import fork_safe
from ..model import Applicability, Edit, EditKind, Finding, Span


@dataclass
class FileFix:
    path: str
    old: str
    new: str
    findings: list = field(default_factory=list)  # the findings it fixes
    error: str | None = None
    encoding: str = "utf-8"  # the file's, as read: the fix is written in it
    bom: bool = False

    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.old.splitlines(keepends=True),
                self.new.splitlines(keepends=True),
                fromfile=f"a/{self.path}",
                tofile=f"b/{self.path}",
            )
        )


def _read(path: str) -> tuple[bytes, str, str, bool]:
    data = read_bytes(path)
    enc, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    bom = data.startswith(b"\xef\xbb\xbf")
    text = data.decode("utf-8-sig" if bom else enc)
    return data, text, enc, bom


@contextlib.contextmanager
def _quiet():
    """Compiling the analysed code must not print its SyntaxWarnings
    (``x is 1``, ``1()``) as if they were cachelint's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def applicable(f: Finding, unsafe_fixes: bool) -> bool:
    return f.fix is not None and (f.fix.applicability is Applicability.SAFE or unsafe_fixes)


def compute_fixes(
    findings: list[Finding],
    unsafe_fixes: bool,
    digests: dict[str, str] | None = None,
    progress=None,
    texts: dict[str, str] | None = None,
    jobs: int | None = None,
) -> list[FileFix]:
    """``digests``: each file's :func:`~cachelint.index.walk.source_digest` when it
    was analysed; a file whose content differs now is not fixed (the
    findings' positions would be stale). ``texts``: files' current texts
    held in memory (an earlier fix pass's output), read instead of the disk.
    The files are rewritten on ``jobs`` cores (see :func:`_rewrite_all`)."""
    from ..files import source_digest

    by_path: dict[str, list[Finding]] = {}
    for f in findings:
        if applicable(f, unsafe_fixes):
            by_path.setdefault(f.path, []).append(f)
    out: list[FileFix] = []
    todo: list[FileFix] = []  # read and unchanged since the analysis: to rewrite
    for path in sorted(by_path):
        fs = sorted(by_path[path], key=lambda f: (f.span.line, f.span.column))
        text = (texts or {}).get(path)
        enc, bom = "utf-8", False
        if text is None:
            try:
                _, text, enc, bom = _read(path)
            except (OSError, SyntaxError, UnicodeDecodeError, LookupError) as e:
                out.append(FileFix(path, "", "", fs, f"cannot read: {e}"))
                continue
        expected = (digests or {}).get(path)
        if expected and source_digest(text) != expected:
            out.append(FileFix(path, text, text, [], "changed on disk since it was analysed; fix not written"))
            continue
        todo.append(FileFix(path, text, text, fs, encoding=enc, bom=bom))
    out.extend(_rewrite_all(todo, jobs, progress))
    return sorted(out, key=lambda ff: ff.path)


# below this many files to rewrite, a process pool costs more than it saves
PARALLEL_FILES = 2
_WORK: list[FileFix] = []  # the pool's input, inherited by forked workers (no pickling of findings)


def _rewrite_all(todo: list[FileFix], jobs: int | None, progress=None) -> list[FileFix]:
    """Each file's fixes applied (``FileFix.new``, and the findings applied).

    LibCST takes about a second for a file of a few thousand lines, and the
    files are independent: with several files and cores, forked workers
    rewrite them, largest first, and send back only the new text and which
    findings it applies. Without ``fork`` (or with one core), one by one.
    """
    from ..index.pool import default_jobs

    jobs = default_jobs() if jobs is None else jobs
    results: list | None = None
    if jobs > 1 and len(todo) >= PARALLEL_FILES:
        results = _rewrite_parallel(todo, jobs, progress)
    if results is None:
        results = []
        for ff in todo:
            results.append(_rewrite(ff))
            if progress is not None:
                progress.advance()
    out = []
    for ff, (code, applied, error) in zip(todo, results):
        if error is not None:
            out.append(FileFix(ff.path, ff.old, ff.old, [], error))
        else:
            out.append(
                FileFix(ff.path, ff.old, code, [ff.findings[i] for i in applied], encoding=ff.encoding, bom=ff.bom)
            )
    return out


def _rewrite(ff: FileFix) -> tuple[str, list[int], str | None]:
    """(new text, indexes of the findings applied, error) for one file."""
    from codemods._common import FixError

    try:
        with _quiet():
            code, fixed = _apply_atomically(ff.old, ff.findings, ff.path)
    except FixError as e:
        return ff.old, [], f"fix skipped: {e}"
    except (RecursionError, MemoryError) as e:
        return ff.old, [], f"fix skipped: {type(e).__name__} in the rewriter"
    done = {id(f) for f in fixed}
    return code, [i for i, f in enumerate(ff.findings) if id(f) in done], None


def _rewrite_nth(i: int) -> tuple[str, list[int], str | None]:
    return _rewrite(_WORK[i])


def _rewrite_parallel(todo: list[FileFix], jobs: int, progress=None) -> list | None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    if "fork" not in multiprocessing.get_all_start_methods() or not fork_safe():
        return None  # the caller rewrites serially
    results: list = [None] * len(todo)
    _WORK[:] = todo
    try:
        with ProcessPoolExecutor(
            max_workers=min(jobs, len(todo)), mp_context=multiprocessing.get_context("fork")
        ) as pool:
            order = sorted(range(len(todo)), key=lambda i: -len(todo[i].old))
            futures = {pool.submit(_rewrite_nth, i): i for i in order}
            for fut in as_completed(futures):
                results[futures[fut]] = fut.result()
                if progress is not None:
                    progress.advance()
    except (OSError, RuntimeError, EOFError):  # no working pool here (BrokenProcessPool is a RuntimeError)
        return None
    finally:
        _WORK.clear()
    return results


def _apply_atomically(text: str, fs: list[Finding], path: str) -> tuple[str, list[Finding]]:
    """Apply the findings' fixes to one file, each all or nothing.

    Equal edits of several findings (two reads of one hoisted value) are
    applied once. When some edit of a finding does not apply (an overlap with
    another finding's edit, a place that cannot be found), that finding is
    dropped and the file is rewritten from the original without it, so no
    fix is ever half applied.
    """
    live = list(fs)
    while live:
        edits = list(dict.fromkeys(e for f in live for e in f.fix.edits))  # type: ignore[union-attr]  # all have fixes
        code, applied = apply_file_edits(text, edits, path)
        done = set(applied)
        partial = [f for f in live if not all(e in done for e in f.fix.edits)]  # type: ignore[union-attr]
        if not partial:
            return code, live
        gone = {id(f) for f in partial}
        live = [f for f in live if id(f) not in gone]
    return text, []


_NAMED = (EditKind.ADD_DECORATOR, EditKind.ADD_IMPORT)


def _run_command(command_cls, code: str, edits: list[Edit], path: str):
    """Run one codemod command over ``code``: (new code, edits it applied)."""
    import libcst as cst
    from libcst.codemod import CodemodContext

    from codemods._common import FixError

    try:
        module = cst.parse_module(code)
    except Exception as exc:
        raise FixError(f"{path}: cannot parse source: {exc}") from exc
    cmd = command_cls(CodemodContext(filename=path), edits)
    cmd.source = code
    try:
        out = cmd.transform_module(module)
    except FixError:
        raise
    except Exception as exc:
        raise FixError(f"{path}: rewriting failed: {exc!r}") from exc
    return (out.code, cmd.applied) if cmd.applied else (code, [])


def apply_file_edits(text: str, edits: list[Edit], path: str):
    """Apply edits of every kind to one file's text: the position-based ones
    (replace, insert statements) in one :class:`~codemods.hoist.HoistCommand`
    pass over the original positions, then the name-based ones (decorators,
    imports) with :class:`~codemods.memoize.MemoizeCommand`. Replacements
    alone in a very large file go through :func:`_apply_windowed`.

    Returns ``(code, applied edits)``; raises ``FixError``.
    """
    from codemods.hoist import HoistCommand
    from codemods.memoize import MemoizeCommand
    from codemods.replace_expression import apply_edits

    positional = [e for e in edits if e.kind not in _NAMED]
    named = [e for e in edits if e.kind in _NAMED]
    applied: list[Edit] = []
    code = text
    if positional and all(e.kind is EditKind.REPLACE for e in positional):
        if len(code) >= WINDOW_MIN_CHARS:
            result = _apply_windowed(code, positional, path)
        else:
            result = apply_edits(code, positional, filename=path)
        code, applied = result.code, list(result.applied)
    elif positional:
        code, done = _run_command(HoistCommand, code, positional, path)
        applied = list(done)
    if named:
        code, done = _run_command(MemoizeCommand, code, named, path)
        applied.extend(done)
    return code, applied


def _inside(path: str, roots: list[str]) -> bool:
    for root in roots:
        r = os.path.realpath(root)
        if path == r or path.startswith(r.rstrip(os.sep) + os.sep):
            return True
    return False


# LibCST needs about 600 bytes of memory and 40 us per byte of source for a
# whole-module rewrite with positions (a 5 MB file: over 3 GB and minutes), so
# a file this large is rewritten one top-level statement at a time.
WINDOW_MIN_CHARS = 1_000_000
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def _apply_windowed(text: str, edits: list, path: str):
    """Apply ``edits`` to a large module by running the codemod only on the
    top-level statements that contain them (each one parses on its own).
    Imports a fix leaves unused are kept: finding them needs the whole
    module's scopes. Returns the codemod's result type."""
    import ast

    from codemods._common import ApplyResult, FixError, _first_line
    from codemods.replace_expression import apply_edits

    try:
        with gc_paused():  # an AST is millions of objects and no cycles
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise FixError(f"{path}: cannot parse source: {e}") from e
    lines = _LINE.findall(text)
    ranges: list[list[int]] = []
    for stmt in tree.body:
        start = _first_line(stmt)
        end = stmt.end_lineno or stmt.lineno
        if ranges and start <= ranges[-1][1]:  # `a = 1; b = 2` share a line
            ranges[-1][1] = max(ranges[-1][1], end)
        else:
            ranges.append([start, end])
    out_lines = list(lines)
    applied, unmatched = [], []
    for start, end in ranges:
        inside = [e for e in edits if start <= e.span.line and e.span.end_line <= end]
        if not inside:
            continue
        shifted = [
            replace(
                e,
                span=Span(e.span.line - start + 1, e.span.column, e.span.end_line - start + 1, e.span.end_column),
                remove_names=(),
            )
            for e in inside
        ]
        chunk = "".join(lines[start - 1 : end])
        result = apply_edits(chunk, shifted, filename=path)
        done = {id(x) for x in result.applied}
        applied += [orig for orig, new in zip(inside, shifted) if id(new) in done]
        unmatched += [orig for orig, new in zip(inside, shifted) if id(new) not in done]
        out_lines[start - 1 : end] = [result.code] + [""] * (end - start)
    placed = {id(e) for e in applied} | {id(e) for e in unmatched}
    unmatched += [e for e in edits if id(e) not in placed]
    code = "".join(out_lines) if applied else text
    return ApplyResult(code=code, applied=applied, unmatched=unmatched)


def encode_fix(ff: FileFix, enc: str, bom: bool) -> tuple[bytes, str | None]:
    """The bytes of the fixed file, in its encoding ``enc`` (with a BOM if it
    had one), or an error when the rewritten code does not compile or cannot
    be written in that encoding: what ``--fix`` would write, or why not."""
    try:
        with _quiet():
            compile(ff.new, ff.path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        return b"", f"{ff.path}: rewritten code does not compile ({type(e).__name__}: {e}); fix not written"
    try:
        payload = ff.new.encode(enc if not bom else "utf-8")
    except UnicodeEncodeError as e:
        return b"", f"{ff.path}: the fix cannot be written in the file's encoding {enc} ({e}); fix not written"
    return (b"\xef\xbb\xbf" + payload if bom else payload), None


def check_fix(ff: FileFix, roots: list[str] | None = None) -> tuple[bytes, str | None]:
    """What :func:`write_fix` would write for ``ff`` (read from the texts in
    memory, not the disk), or the error for which it would not: ``--diff``."""
    err = _outside(ff.path, roots)
    if err is not None:
        return b"", err
    return encode_fix(ff, ff.encoding, ff.bom)


def _outside(path: str, roots: list[str] | None) -> str | None:
    """Why ``path`` is not written: it resolves (a symbolic link) outside ``roots``."""
    target = os.path.realpath(path)
    if roots is not None and not _inside(target, roots):
        return f"{path}: links to {target}, outside the checked paths; fix not written"
    return None


def write_fix(ff: FileFix, roots: list[str] | None = None) -> str | None:
    """Write one fixed file atomically. Returns an error message or None.

    The new content goes to a temporary file in the same directory, is
    flushed to disk, gets the old file's mode (and owner, where allowed), and
    replaces the file with one ``os.replace``: a reader, or a crash at any
    moment, sees the old file or the new one, never a mix. A symbolic link
    stays a link: the file it points to is rewritten, but only if that file
    lies inside ``roots`` (the paths cachelint was given), since cachelint
    never writes outside them.
    """
    err = _outside(ff.path, roots)
    if err is not None:
        return err
    target = os.path.realpath(ff.path)
    try:
        _, text, enc, bom = _read(target)
    except (OSError, SyntaxError, UnicodeDecodeError, LookupError) as e:
        return f"{ff.path}: cannot re-read before writing: {e}"
    if text != ff.old:
        return f"{ff.path}: changed on disk since it was read; fix not written"
    if ff.new == ff.old:
        return None
    payload, err = encode_fix(ff, enc, bom)
    if err is not None:
        return err
    try:
        st = os.stat(target)
    except OSError as e:
        return f"{ff.path}: cannot write next to the file: {e}; fix not written"
    try:
        atomic_write(target, payload, mode=stat.S_IMODE(st.st_mode), owner=(st.st_uid, st.st_gid), prefix=".cachelint-")
    except TempFileError as e:
        return f"{ff.path}: cannot write next to the file: {e}; fix not written"
    except OSError as e:
        return f"{ff.path}: cannot write the fix: {e}; file left unchanged"
    return None
