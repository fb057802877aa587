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
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .analysis import Analysis
from .config import Config, resolve_presets
from .discover import SourceFile, discover
from .fixer import FileFix, compute_fixes, write_fix
from .index import FileIndex, index_file
from .invariants import from_uses
from .lockfile import find_lock, merge
from .lockfile import load as load_lock
from .lockfile import write as write_lock
from .model import Finding
from .rules import select_rules
from .terminal import Progress

# below this many files, a process pool costs more than it saves
PARALLEL_THRESHOLD = 64


@dataclass
class Result:
    findings: list[Finding]  # remaining (not fixed) findings, sorted
    fixed: list[Finding] = field(default_factory=list)
    file_fixes: list[FileFix] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # fixes that could not be written
    files: int = 0
    config: Config | None = None
    lock_path: str | None = None
    lock_written: bool = False  # --fix recorded new invariants in the lock


def _index_one(sf: SourceFile) -> FileIndex:
    return index_file(sf.path, sf.module, sf.is_package)


def _index_chunk(chunk: list[SourceFile], progress: Progress | None = None) -> list[FileIndex]:
    # ASTs are millions of short-lived container objects: with the cyclic GC
    # on, its generation-2 passes over them cost more than parsing (8.5 s vs
    # 2.9 s for vLLM's ast.parse alone). Nothing here creates cycles.
    gc.disable()
    try:
        if progress is None:
            return [_index_one(sf) for sf in chunk]
        out = []
        for sf in chunk:
            out.append(_index_one(sf))
            progress.advance()
        return out
    finally:
        gc.enable()


def index_files(files: list[SourceFile], jobs: int | None = None, progress: Progress | None = None) -> list[FileIndex]:
    indexes = _index_files(files, jobs, progress)
    gc.freeze()  # the index lives for the whole run: keep it out of GC passes
    return indexes


def _index_files(files: list[SourceFile], jobs: int | None, progress: Progress | None = None) -> list[FileIndex]:
    # Serial by default: measured on vLLM 0.10.2 with 2 cores, sending the
    # index back from the workers (a 20 MB pickle) costs more than the second
    # core saves (5.2 s serial vs 6.1 s with two workers). `-j N` opts in.
    jobs = jobs or 1
    if jobs <= 1 or len(files) < PARALLEL_THRESHOLD:
        return _index_chunk(files, progress)
    # large files first, then dealt round-robin so the workers finish together
    order = sorted(files, key=lambda sf: _size(sf.path), reverse=True)
    chunks = [order[i::jobs * 4] for i in range(jobs * 4)]
    out: dict[str, FileIndex] = {}
    gc.disable()  # unpickling the workers' results allocates as much as parsing
    try:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for result in pool.map(_index_chunk, chunks):
                for fi in result:
                    out[fi.path] = fi
                if progress is not None:
                    progress.advance(len(result))
    except (OSError, RuntimeError):  # no multiprocessing here: stay serial
        return _index_chunk(files)
    finally:
        gc.enable()
    return [out[sf.path] for sf in files]


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
    return find_lock(Path(paths[0]) if paths else Path.cwd(), config.source)


def analyse(
    paths: list[str], config: Config, jobs: int | None = None, progress: Progress | None = None
) -> tuple[Analysis, list[SourceFile]]:
    files = discover(paths, exclude=config.exclude, respect_gitignore=config.respect_gitignore)
    lock_path = lock_location(paths, config)
    invariants = load_lock(lock_path) if lock_path.is_file() else None
    if progress is not None:
        progress.stage("Indexing", len(files))
    indexes = index_files(files, jobs, progress)
    if progress is not None:
        progress.stage("Analysing")
    tops = {sf.module.split(".")[0] for sf in files if sf.module}
    config = resolve_presets(config, tops)
    return Analysis(indexes, config, invariants, str(lock_path)), files


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
) -> Result:
    """``report_only``: files or directories; the whole of ``paths`` is
    analysed (it feeds the call graph and the cache sites) but only findings
    in these are reported and fixed (the pre-commit hook's mode)."""
    config = config or Config()
    rules = select_rules(config.select, config.ignore)
    analysis, files = analyse(paths, config, jobs, progress)
    findings: list[Finding] = []
    for rule_cls in rules:
        findings.extend(rule_cls().check(analysis))
    by_path = analysis.program.modules_by_path
    findings = [f for f in findings if not _suppressed(f, by_path.get(f.path))]
    if report_only is not None:
        # findings in the given files, and those about the project itself
        # (a broken invariant of cachelint.lock, reported at the lock)
        inside = _within(report_only)
        findings = [f for f in findings if inside(f.path) or not f.path.endswith(".py")]
    findings.sort(key=lambda f: (f.path, f.span.line, f.span.column, f.code))
    result = Result(findings=findings, files=len(files), config=analysis.config)
    if unsafe_fixes is None:
        unsafe_fixes = analysis.config.unsafe_fixes
    if fix:
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
        result.file_fixes = [ff for ff in file_fixes if not ff.error and ff.new != ff.old]
        result.fixed = [f for f in findings if id(f) in fixed_ids]
        result.findings = [f for f in findings if id(f) not in fixed_ids]
        if write:
            _record_invariants(analysis, result)
    result.lock_path = analysis.lock_path
    return result


def _record_invariants(analysis: Analysis, result: Result) -> None:
    """Write or extend cachelint.lock with what the applied CL001 fixes rely on."""
    spans = {(f.path, f.span.line, f.span.column) for f in result.fixed if f.code == "CL001"}
    if not spans:
        return
    uses = [u for u in analysis.cache_analysis.uses() if (u.function.path, u.call.line, u.call.column) in spans]
    new = from_uses(analysis.program, uses)
    if not new or analysis.lock_path is None:
        return
    path = Path(analysis.lock_path)
    try:
        result.lock_written = write_lock(path, merge(analysis.invariants or [], new))
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
