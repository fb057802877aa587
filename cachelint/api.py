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
from collections.abc import Callable
from dataclasses import astuple, dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from .apply.fixer import FileFix
from .apply.passes import run_fix_passes
from .config import Config, HotRoot, resolve_presets
from .discover.walk import SourceFile, discover
from .index.pool import index_files
from .index.records import FileIndex
from .lock.lockfile import find_lock
from .model import Finding, HotCoverage
from .progress import Progress
from .rules import select_rules
from .rules.runner import run_rules
from .semantic.callgraph import HotPaths, HotStep, RootMatch, root_matches, why_hot

if TYPE_CHECKING:
    from .facts.analysis import Analysis
    from .profiling.evidence import CandidateRoot, MissedRepeat
    from .profiling.profile import Profile
    from .profiling.workload import Workload


@dataclass
class Result:
    findings: list[Finding]  # remaining (not fixed) findings, sorted
    fixed: list[Finding] = field(default_factory=list)
    file_fixes: list[FileFix] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # fixes that could not be written
    files: int = 0
    lock_path: str | None = None
    lock_written: bool = False  # --fix recorded new invariants in the lock
    cache: str = "off"  # off | hit | partial | miss: how the cache served this run
    # how much the hot-root patterns made hot (None: no selected rule needs hot paths)
    hot: HotCoverage | None = None
    vendored: list[str] = field(default_factory=list)  # vendored directories not analysed
    # with a profile: measured repeats no finding covers, and functions run per
    # step that no hot root reaches (see cachelint.profiling.evidence)
    missed_repeats: list[MissedRepeat] = field(default_factory=list)
    candidate_roots: list[CandidateRoot] = field(default_factory=list)
    # modules changed since the profile was taken: their measurements were left out
    profile_stale: list[str] = field(default_factory=list)
    # the configuration with its presets merged, resolved on first use (a
    # cache hit needs no presets: parsing them is a tenth of a warm run)
    _config: Config | None = field(default=None, repr=False)
    _resolve: Callable[[], Config] | None = field(default=None, repr=False, compare=False)

    @property
    def config(self) -> Config | None:
        if self._config is None and self._resolve is not None:
            self._config = self._resolve()
        return self._config


def _discover(paths: list[str], config: Config, vendored: list[str] | None = None) -> list[SourceFile]:
    """The files to analyse; the vendored directories skipped go to ``vendored``."""
    return discover(
        paths,
        exclude=config.exclude,
        respect_gitignore=config.respect_gitignore,
        vendored=config.vendored_globs(),
        skipped=vendored,
        src=config.source_roots(),
    )


def lock_location(paths: list[str], config: Config) -> Path:
    """Where cachelint.lock is (or will be written): see :func:`~cachelint.lock.lockfile.find_lock`."""
    return find_lock(Path(paths[0]) if paths else Path.cwd(), config.source)


def analyse(
    paths: list[str], config: Config, jobs: int | None = None, progress: Progress | None = None
) -> tuple[Analysis, list[SourceFile]]:
    files = _discover(paths, config)
    lock_path = lock_location(paths, config)
    if progress is not None:
        progress.stage("Indexing", len(files))
    indexes = index_files(files, jobs, progress)
    if progress is not None:
        progress.stage("Analysing")
    return _analysis(indexes, _resolve(config, files), lock_path), files


def _analysis(indexes: list[FileIndex], config: Config, lock_path: Path) -> Analysis:
    from .facts.analysis import Analysis
    from .lock.lockfile import load as load_lock

    invariants = load_lock(lock_path) if lock_path.is_file() else None
    return Analysis(indexes, config, invariants, str(lock_path))


def _resolve(config: Config, files: list[SourceFile]) -> Config:
    tops = {sf.module.split(".")[0] for sf in files if sf.module}
    return resolve_presets(config, tops)


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
    profile: Profile | None = None,
) -> Result:
    """Check ``paths``. With ``cache_dir``, reuse and update the on-disk cache there.

    ``report_only``: files or directories; the whole of ``paths`` is
    analysed (it feeds the call graph and the cache sites) but only findings
    in these are reported and fixed (the pre-commit hook's mode).

    ``profile`` (from :func:`profile`): findings carry what it measured at
    their sites and rank by it, and the result lists measured repeats no
    finding covers and candidate hot roots. The cache is not used then."""
    try:
        config = config or Config()
        rules = select_rules(config.select, config.ignore)
        vendored: list[str] = []
        files = _discover(paths, config, vendored)
        lock_path = lock_location(paths, config)
        resolved: list[Config] = []

        def resolve() -> Config:
            if not resolved:
                resolved.append(_resolve(config, files))
            return resolved[0]

        def make_analysis(indexes: list[FileIndex]) -> Analysis:
            return _analysis(indexes, resolve(), lock_path)

        def summarise(analysis: Analysis) -> tuple | None:
            """The hot coverage as a tuple (stored in the cache with the findings)."""
            if not any(r.needs_hot_paths for r in rules):
                return None
            cfg = analysis.config
            declared_empty = cfg.hot_roots == () and not cfg.extend_hot_roots
            return astuple(analysis.hot.coverage(cfg.roots, declared_empty))

        # fixing needs the analysis: the lock records what each rewrite relies on,
        # and the fixer checks each file against the digest it was analysed at
        need_analysis = fix
        stale: list[str] = []
        if profile is not None:
            cache_dir = None  # the findings then depend on the profile too

        if progress is not None:
            progress.stage("Indexing", len(files))
        if cache_dir is not None:
            from .incremental.cache import Cache, cached_findings

            findings, how, analysis, cov = cached_findings(
                files,
                config,
                make_analysis,
                rules,
                Cache(cache_dir),
                jobs,
                lock_hash(lock_path),
                need_analysis,
                progress,
                summarise,
            )
        else:
            indexes = index_files(files, jobs, progress)
            if progress is not None:
                progress.stage("Analysing")
            analysis = make_analysis(indexes)
            measure = None
            if profile is not None:
                from .profiling.evidence import attach, current

                profile, stale = current(profile, analysis)
                measure = partial(attach, profile=profile)
            raw, flags = run_rules(analysis, rules, measure, jobs)
            findings, how, cov = [f for f, s in zip(raw, flags) if not s], "off", summarise(analysis)
        findings = _reported(findings, report_only)
        result = Result(
            findings=findings,
            files=len(files),
            cache=how,
            lock_path=str(lock_path),
            hot=HotCoverage(*cov) if cov else None,
            vendored=vendored,
            _resolve=resolve,
        )
        if profile is not None and analysis is not None:
            from .profiling.evidence import candidate_roots, unreported_repeats

            result.missed_repeats = unreported_repeats(analysis, profile, findings)
            result.candidate_roots = candidate_roots(analysis, profile)
            result.profile_stale = stale
        if unsafe_fixes is None:
            unsafe_fixes = config.unsafe_fixes  # presets never set it
        if fix and analysis is not None:
            handed, analysis = [analysis], None  # run_fix_passes holds the only reference
            done = run_fix_passes(
                handed,
                findings,
                rules,
                unsafe_fixes=bool(unsafe_fixes),
                write=write,
                roots=list(paths),
                reported=lambda raw: _reported(raw, report_only),
                progress=progress,
                jobs=jobs,
            )
            result.findings, result.fixed, result.file_fixes = done.findings, done.fixed, done.file_fixes
            result.errors.extend(done.errors)
            result.lock_written = done.lock_written
        return result
    finally:
        # the index and the analysis were frozen out of the GC's reach for the
        # run (gc_paused); back in the oldest generation, what the caller
        # drops is collected again (a cheap list splice, no collection)
        gc.unfreeze()


def profile(
    workload: Workload,
    paths: list[str],
    config: Config | None = None,
    *,
    steps: tuple[str, ...] = (),
    fingerprints: bool = True,
    jobs: int | None = None,
    progress: Progress | None = None,
    started: Callable[[int, int], None] | None = None,
) -> Profile:
    """Run ``workload`` measured, limited to the functions of ``paths`` (see :mod:`cachelint.profiling`).

    The package is analysed first: to name its functions as the findings
    name them, to find the steps (the functions ``steps`` matches, else the
    per-step hot roots) and the functions whose calls are fingerprinted (the
    hot ones and those the cost model finds expensive; none without
    ``fingerprints``). The analysis is dropped before the workload starts.
    ``started(functions, watched)`` is called just before it does.
    Raises ``FileNotFoundError`` for a missing script or path."""
    from .profiling.evidence import defs_for, source_digests, step_functions
    from .profiling.workload import run, to_profile

    try:
        config = config or Config()
        analysis, _files = analyse(paths, config, jobs, progress)
        step_set = step_functions(analysis, steps)
        defs = defs_for(analysis, step_set, fingerprints)
        sources = source_digests(analysis)
        del analysis, _files
    finally:
        gc.unfreeze()
    gc.collect()
    if progress is not None:
        progress.close()
    if started is not None:
        started(sum(len(v) for v in defs.files.values()), len(defs.watched))
    code, rec, wall = run(workload, defs)
    return to_profile(workload, rec, wall, code, sorted(step_set), sources)


def _reported(findings: list[Finding], report_only: list[str] | None) -> list[Finding]:
    """The findings to report, sorted: with ``report_only``, those in the given
    files and those about the project itself (a broken invariant of
    cachelint.lock, reported at the lock)."""
    if report_only is not None:
        inside = _within(report_only)
        findings = [f for f in findings if inside(f.path) or not f.path.endswith(".py")]
    return sorted(findings, key=lambda f: (f.path, f.span.line, f.span.column, f.code))


def lock_hash(lock_path: Path) -> str:
    """Content hash of ``cachelint.lock``: an input of the analysis (CL003, CL004)."""
    from .incremental.cache import digest

    try:
        return digest(lock_path.read_bytes())
    except OSError:
        return "-"


def rebuild_lock(paths: list[str], config: Config | None = None, *, write: bool = True, jobs: int | None = None):
    """``cachelint lock``: the lock as the code now has it (source untouched).

    Returns (path, old text or None, new text, errors). Invariants whose
    readers are gone are dropped; one whose fill is gone is kept as it was
    and reported, since only restoring the fill or reverting the readers
    resolves it.
    """
    from .facts.invariants import InvariantCheck
    from .lock.lockfile import dumps
    from .lock.lockfile import write as write_lock

    config = config or Config()
    analysis, _ = analyse(paths, config, jobs)
    assert analysis.lock_path is not None  # analyse() always locates the lock
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


def call_graph(
    paths: list[str], config: Config | None = None, *, jobs: int | None = None, external: bool = True
) -> dict[str, list[str]]:
    """cachelint's call graph of ``paths`` (``cachelint callgraph``):
    ``{caller: [callee, ...]}`` of module-qualified names, the format of
    PyCG's ``callgraph.json``; a module's top-level code is the caller named
    as the module, a nested function ``outer.<locals>.inner``. With
    ``external``, callees outside the tree appear by their qualified name
    (``builtins.len``). Sorted by caller; callees in the order of their
    first call."""
    from .semantic.callgraph import call_graph as build
    from .semantic.program import Program

    config = config or Config()
    files = _discover(paths, config)
    cfg = _resolve(config, files)  # the presets' custom ops and call methods are edges, as in `check`
    try:
        program = Program(index_files(files, jobs), None, None, cfg.custom_op_registrars, cfg.call_methods)
        graph = build(program, external=external)
    finally:
        gc.unfreeze()
    return dict(sorted(graph.items()))


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


@dataclass
class HotPathsReport:
    """What ``cachelint hot-paths`` shows: each hot-root pattern, the functions
    it matched and how many functions each reaches, and how to ask why a
    function is hot."""

    files: int
    presets: tuple[str, ...]
    roots: list[RootMatch]
    coverage: HotCoverage
    hot: HotPaths = field(repr=False)
    cold: tuple[str, ...] = ()  # the cold-functions patterns in force

    def lookup(self, name: str) -> list[str]:
        """The functions ``name`` names: its exact qualified name, else every
        function whose qualified name ends with ``.name`` (``Scheduler.schedule``)."""
        assert self.hot.program is not None
        functions = self.hot.program.functions
        if name in functions:
            return [name]
        tail = "." + name
        return sorted(qn for qn in functions if qn.endswith(tail))

    def why(self, qualname: str) -> list[HotStep] | None:
        """The chain from a root to ``qualname`` (None: not hot)."""
        return why_hot(self.hot, qualname)

    def kind(self, qualname: str) -> str | None:
        return self.hot.kind(qualname)

    def cold_pattern(self, qualname: str) -> str | None:
        """The ``cold-functions`` pattern that keeps ``qualname`` out of the hot paths, if any."""
        from .globs import GlobSet

        i = GlobSet(list(self.cold)).first(qualname) if self.cold else -1
        return self.cold[i] if i >= 0 else None

    def root(self, qualname: str) -> HotRoot | None:
        return self.hot.roots.get(qualname)


def hot_paths_report(paths: list[str], config: Config | None = None, *, jobs: int | None = None) -> HotPathsReport:
    """The hot roots of ``paths`` under ``config``, what they matched and reach (no rule runs)."""
    try:
        config = config or Config()
        analysis, files = analyse(paths, config, jobs)
        cfg = analysis.config
        hot = analysis.hot
        declared_empty = cfg.hot_roots == () and not cfg.extend_hot_roots
        return HotPathsReport(
            len(files),
            cfg.active_presets,
            root_matches(hot, cfg.roots),
            hot.coverage(cfg.roots, declared_empty),
            hot,
            cfg.cold,
        )
    finally:
        gc.unfreeze()


def add_noqa(findings: list[Finding], roots: list[str] | None = None) -> tuple[int, list[str]]:
    """``--add-noqa``: a ``# noqa: CODE`` comment for each finding (see
    :mod:`cachelint.apply.noqa`); the number added and any problems."""
    from .apply.noqa import add_noqa as _add

    return _add(findings, roots)
