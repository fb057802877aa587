"""The command line: a thin layer over :mod:`cachelint.api`.

    cachelint check [PATHS] [--fix] [--unsafe-fixes] [--diff] ...
    cachelint lock [PATHS] [--check]
    cachelint hot-paths [PATHS] [--why QUALNAME] [--all]
    cachelint explain CODE | --all
    cachelint rules
    cachelint callgraph [PATHS] [--output-format json]
    cachelint profile [PATHS] [--step PATTERN] [-o FILE] -- SCRIPT [ARGS] | -m MODULE [ARGS]
    cachelint clean [--cache-dir DIR]

``cachelint PATHS --fix`` is short for ``cachelint check PATHS --fix``.
Exit codes follow ruff: 0 no findings, 1 findings (or, with ``--diff``,
changes), 2 usage, configuration or internal error. argparse, not click: a
pre-commit hook starts this on every commit, so imports stay light.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import __version__

DEFAULT_CACHE_DIR = ".cachelint_cache"  # cache.DEFAULT_DIR, without importing it here

COMMANDS = ("check", "lock", "hot-paths", "callgraph", "profile", "explain", "rules", "version", "clean")


def _usage_error(e: Exception) -> int:
    """Print a configuration or path error the way every command does; exit status 2."""
    if isinstance(e, FileNotFoundError):
        print(f"cachelint: error: no such file or directory: {e.args[0] if e.args else e}", file=sys.stderr)
    else:
        print(f"cachelint: error: {e}", file=sys.stderr)
    return 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cachelint", description="Find and remove expensive work on hot paths.")
    p.add_argument("--version", action="version", version=f"cachelint {__version__}")
    sub = p.add_subparsers(dest="command")

    c = sub.add_parser("check", help="check paths (default command)")
    c.add_argument("paths", nargs="*", default=None, help="files or directories (default: .)")
    c.add_argument("--fix", action="store_true", help="apply fixes")
    c.add_argument(
        "--exit-non-zero-on-fix",
        action="store_true",
        help="with --fix: exit 1 when a file was changed, even if no findings remain (pre-commit's fix hook)",
    )
    c.add_argument(
        "--project-root",
        default=None,
        metavar="DIR",
        help="analyse the whole of DIR (it feeds the call graph and cache sites) but report and fix only PATHS "
        "(the pre-commit hooks pass the changed files)",
    )
    c.add_argument("--unsafe-fixes", action="store_true", default=None, help="include unsafe fixes")
    c.add_argument("--no-unsafe-fixes", dest="unsafe_fixes", action="store_false", help="never apply unsafe fixes")
    c.add_argument("--diff", action="store_true", help="print the fixes as a diff instead of writing them")
    c.add_argument(
        "--add-noqa",
        action="store_true",
        help="add a `# noqa: CODE` comment for each current finding (as ruff does), then exit",
    )
    c.add_argument("--select", default=None, help="comma-separated rule codes or prefixes")
    c.add_argument("--ignore", default=None, help="comma-separated rule codes or prefixes to skip")
    c.add_argument("--extend-select", default=None, help=argparse.SUPPRESS)
    c.add_argument(
        "--output-format",
        choices=("text", "concise", "json", "sarif", "github"),
        default="text",
        help="text (with code frames), concise (one line per finding), json, sarif (SARIF 2.1.0), "
        "github (GitHub Actions annotations)",
    )
    c.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour text output: auto (a terminal, unless NO_COLOR is set), always, never",
    )
    c.add_argument("--statistics", action="store_true", help="count findings per rule")
    c.add_argument(
        "--show-fixes",
        action="store_true",
        help="text output: show each fix as a diff; with --fix: list what was fixed, per file and rule",
    )
    c.add_argument(
        "--min-cost",
        default=None,
        metavar="LEVEL",
        help='"high" or "low": the catalog entries CL002 reports; or a time per step ("10us", "1ms"):'
        " drop findings estimated below it (default: the min-cost setting, else high)",
    )
    c.add_argument(
        "--include-vendored",
        action="store_true",
        default=None,
        help="analyse vendored directories too (third_party/, vendor/, _vendor/, bundled copies; see `vendored`)",
    )
    c.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    c.add_argument(
        "--require-hot-paths",
        action="store_true",
        help="exit 2 when no function was analysed as hot (no hot-root pattern matched) while CL002 is selected",
    )
    c.add_argument("--config", default=None, help="path to a pyproject.toml or cachelint.toml")
    c.add_argument("--preset", default=None, help="auto, none, or preset names (e.g. vllm)")
    c.add_argument(
        "--profile",
        default=None,
        metavar="FILE",
        help="a profile from `cachelint profile`: findings carry the time measured at their sites and rank by it;"
        " the text output adds measured repeats no finding covers and candidate hot roots (the cache is not used)",
    )
    c.add_argument("--no-chain", action="store_true", help="text output: omit hot-path chains")
    c.add_argument("--quiet", "-q", action="store_true", help="no summary line")
    c.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=None,
        help=(
            "processes for indexing, and (above 1) two for the rules"
            " (default: the cores the load average leaves free, plus one; serial below 64 files)"
        ),
    )
    c.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    c.add_argument(
        "--cache-dir",
        default=None,
        help=f"cache directory (default: {DEFAULT_CACHE_DIR} at the project root, or $CACHELINT_CACHE_DIR)",
    )

    k = sub.add_parser("lock", help="rebuild cachelint.lock from the code and the existing lock (source untouched)")
    k.add_argument("paths", nargs="*", default=["."], help="files or directories (default: .)")
    k.add_argument("--check", action="store_true", help="write nothing; exit 1 if the lock is out of date")
    k.add_argument("--config", default=None, help="path to a pyproject.toml or cachelint.toml")
    k.add_argument("--preset", default=None, help="auto, none, or preset names (e.g. vllm)")

    h = sub.add_parser(
        "hot-paths",
        help="list each hot-root pattern, the functions it matched and how many functions each reaches",
    )
    h.add_argument("paths", nargs="*", default=["."], help="files or directories (default: .)")
    h.add_argument(
        "--why",
        default=None,
        metavar="QUALNAME",
        help="print the chain from a hot root that makes QUALNAME hot (a qualified name, or its tail: Scheduler.step)",
    )
    h.add_argument("--all", action="store_true", help="list every function each pattern matched (default: 10)")
    h.add_argument("--output-format", choices=("text", "json"), default="text")
    h.add_argument("--config", default=None, help="path to a pyproject.toml or cachelint.toml")
    h.add_argument("--preset", default=None, help="auto, none, or preset names (e.g. vllm)")
    h.add_argument("--jobs", "-j", type=int, default=None, help="processes for indexing")

    g = sub.add_parser("callgraph", help="print the call graph cachelint builds (each function and its callees)")
    g.add_argument("paths", nargs="*", default=["."], help="files or directories (default: .)")
    g.add_argument(
        "--output-format",
        choices=("text", "json"),
        default="text",
        help="text (each caller, then its callees indented) or json ({caller: [callee, ...]}, PyCG's callgraph.json)",
    )
    g.add_argument("--no-external", action="store_true", help="list only callees defined in the analysed files")
    g.add_argument("--config", default=None, help="path to a pyproject.toml or cachelint.toml")
    g.add_argument("--jobs", "-j", type=int, default=None, help="processes for indexing")

    pr = sub.add_parser(
        "profile",
        help="run a workload measured (limited to the analysed package) and write a profile for `check --profile`",
        usage="cachelint profile [PATHS] [--step PATTERN] [-o FILE] [--no-fingerprints] -- SCRIPT [ARGS] | -m MODULE [ARGS]",
    )
    pr.add_argument("paths", nargs="*", default=["."], help="the package's source: files or directories (default: .)")
    pr.add_argument(
        "--step",
        action="append",
        default=[],
        metavar="PATTERN",
        help="qualified-name glob of the function one call of which is a step (repeatable; "
        "default: the per-step hot roots of the configuration)",
    )
    pr.add_argument(
        "--output",
        "-o",
        default="cachelint-profile.json",
        metavar="FILE",
        help="the profile file to write (default: cachelint-profile.json)",
    )
    pr.add_argument(
        "--no-fingerprints",
        dest="fingerprints",
        action="store_false",
        help="measure time and calls only, no argument and result fingerprints (less overhead)",
    )
    pr.add_argument("--quiet", "-q", action="store_true", help="print nothing but the workload's own output")
    pr.add_argument("--config", default=None, help="path to a pyproject.toml or cachelint.toml")
    pr.add_argument("--preset", default=None, help="auto, none, or preset names (e.g. vllm)")
    pr.add_argument("--jobs", "-j", type=int, default=None, help="processes for indexing")

    e = sub.add_parser("explain", help="print a rule's documentation")
    e.add_argument("code", nargs="?", help="rule code, e.g. CL003")
    e.add_argument("--all", action="store_true", help="every rule, as the Markdown rule reference")
    sub.add_parser("rules", help="list the rules")
    sub.add_parser("version", help="print the version")
    cl = sub.add_parser("clean", help="remove the cache directory")
    cl.add_argument("paths", nargs="*", default=["."], help="where to look for the project root (default: .)")
    cl.add_argument("--cache-dir", default=None, help="the cache directory to remove")
    cl.add_argument("--config", default=None, help=argparse.SUPPRESS)
    return p


def _split(s: str | None) -> tuple[str, ...] | None:
    if s is None:
        return None
    return tuple(x.strip().upper() for x in s.split(",") if x.strip())


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in COMMANDS and argv[0] not in ("-h", "--help", "--version")):
        argv = ["check"] + argv
    workload: list[str] = []
    if argv[0] == "profile" and "--" in argv:  # the workload's own arguments are not ours
        cut = argv.index("--")
        argv, workload = argv[:cut], argv[cut + 1 :]
    try:
        args = _parser().parse_args(argv)
    except SystemExit as e:  # argparse: 2 on usage errors, 0 for --help
        return int(e.code or 0)
    try:
        if args.command == "profile":
            return _profile(args, workload)
        if args.command == "explain":
            return _explain(args.code, args.all)
        if args.command == "lock":
            return _lock(args)
        if args.command == "hot-paths":
            return _hot_paths(args)
        if args.command == "clean":
            return _clean(args)
        if args.command == "rules":
            return _rules()
        if args.command == "callgraph":
            return _callgraph(args)
        if args.command == "version":
            print(f"cachelint {__version__}")
            return 0
        return _check(args)
    except KeyboardInterrupt:
        print("cachelint: interrupted", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 1
    except Exception as e:  # a bug in cachelint: exit 2, never 1 (which means "findings")
        if os.environ.get("CACHELINT_DEBUG"):
            raise
        print(
            f"cachelint: internal error: {type(e).__name__}: {e} "
            "(this is a bug; set CACHELINT_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 2


def run() -> None:
    """The process entry point (the ``cachelint`` script, ``python -m cachelint``).

    :func:`main`, then exit without tearing the heap down: the analysis is
    millions of objects, some in reference cycles (function contexts and
    their program), and the interpreter's final collection and teardown cost
    0.4 to 0.5 s on vLLM, a fifth of a cold run, to free memory the
    operating system takes back anyway (mypy exits this way for the same
    reason). Output is flushed first; nothing else is pending by then (fixes
    and cache entries are written and renamed, the worker pool is shut down).
    """
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # the reader went away (e.g. `| head`), as main() treats it
        code = code or 1
    os._exit(code)


def _explain(code: str | None, everything: bool = False) -> int:
    from .rules import BY_CODE, rule_reference

    if everything:
        print(rule_reference(), end="")
        return 0
    if not code:
        print("cachelint: explain needs a rule code or --all", file=sys.stderr)
        return 2
    rule = BY_CODE.get(code.upper())
    if rule is None:
        print(f"cachelint: unknown rule `{code}` (known: {', '.join(BY_CODE)})", file=sys.stderr)
        return 2
    print(rule.documentation(), end="")
    return 0


def _rules() -> int:
    from .rules import ALL_RULES

    for r in ALL_RULES:
        print(f"{r.code}  {r.name:<30} fix: {r.fix_availability:<9} {r.summary}")
    return 0


def _callgraph(args) -> int:
    import json

    from .api import call_graph
    from .config import ConfigError

    try:
        graph = call_graph(args.paths, _load_config(args), jobs=args.jobs, external=not args.no_external)
    except (ConfigError, FileNotFoundError) as e:
        return _usage_error(e)
    if args.output_format == "json":
        sys.stdout.write(json.dumps(graph, indent=2) + "\n")
        return 0
    lines = []
    for caller, callees in graph.items():
        lines.append(caller)
        lines.extend(f"    -> {c}" for c in callees)
    sys.stdout.write("\n".join(lines) + ("\n" if lines else ""))
    n = sum(len(c) for c in graph.values())
    print(f"{len(graph)} functions and modules, {n} call edges", file=sys.stderr)
    return 0


def _load_config(args, start: str | None = None):
    from .config import Config, find_config, load_config_file

    if args.config:
        return load_config_file(Path(args.config))
    if start is None:
        start = args.paths[0] if args.paths else None
    found = find_config(Path(start) if start else Path.cwd())
    return load_config_file(found) if found else Config()


def _cache_dir(args, cfg, paths) -> Path:
    from .incremental.cache import default_cache_dir, project_root

    if args.cache_dir:
        return Path(args.cache_dir)
    return default_cache_dir(project_root(paths, cfg))


def _clean(args) -> int:
    from .config import ConfigError
    from .incremental.cache import clean

    try:
        paths = args.paths or ["."]
        d = _cache_dir(args, _load_config(args, paths[0]), paths)
        removed = clean(d)
    except (ConfigError, ValueError, OSError) as e:
        print(f"cachelint: error: {e}", file=sys.stderr)
        return 2
    print(f"Removed {d}" if removed else f"No cache at {d}", file=sys.stderr)
    return 0


def _lock(args) -> int:
    import difflib

    from .api import rebuild_lock
    from .config import ConfigError
    from .lock.lockfile import LockError

    try:
        cfg = _load_config(args).with_overrides(preset=args.preset)
        path, old, new, errors = rebuild_lock(args.paths, cfg, write=not args.check)
    except (ConfigError, LockError, FileNotFoundError) as e:
        return _usage_error(e)
    for err in errors:
        print(f"cachelint: error: {err}", file=sys.stderr)
    if old is None:
        print(
            f"cachelint: no lock at {path}; `cachelint check --fix` writes one when it rewrites a call", file=sys.stderr
        )
        return 0
    if new == old:
        print(f"{path}: up to date", file=sys.stderr)
        return 1 if errors else 0
    if args.check:
        sys.stdout.writelines(
            difflib.unified_diff(
                old.splitlines(True), new.splitlines(True), fromfile=f"a/{path.name}", tofile=f"b/{path.name}"
            )
        )
        print(f"{path}: out of date; run `cachelint lock`", file=sys.stderr)
        return 1
    print(f"{path}: rebuilt", file=sys.stderr)
    return 1 if errors else 0


def _hot_paths(args) -> int:
    """Exit 0, or with --why: 0 when the function is hot, 1 when it is not, 2 when no function has that name."""
    from .api import hot_paths_report
    from .config import ConfigError
    from .output import hotpaths

    try:
        cfg = _load_config(args).with_overrides(preset=args.preset)
        report = hot_paths_report(args.paths, cfg, jobs=args.jobs)
    except (ConfigError, FileNotFoundError) as e:
        return _usage_error(e)
    as_json = args.output_format == "json"
    if args.why is None:
        if as_json:
            sys.stdout.write(hotpaths.roots_json(report.roots, report.coverage, report.presets, report.files))
        else:
            sys.stdout.write(hotpaths.roots_text(report.roots, report.coverage, report.presets, report.files, args.all))
        return 0
    names = report.lookup(args.why)
    if not names:
        print(f"cachelint: error: no function `{args.why}` in the analysed files", file=sys.stderr)
        return 2
    if len(names) > 1:
        shown = "\n    ".join(names[:20]) + ("\n    ..." if len(names) > 20 else "")
        print(f"cachelint: error: `{args.why}` names {len(names)} functions; give one:\n    {shown}", file=sys.stderr)
        return 2
    qn = names[0]
    steps = report.why(qn)
    root = report.root(steps[0].qualname) if steps else None
    render = hotpaths.why_json if as_json else hotpaths.why_text
    sys.stdout.write(render(qn, steps, report.kind(qn), root, None if steps else report.cold_pattern(qn)))
    return 0 if steps else 1


def _profile(args, argv: list[str]) -> int:
    """Exit with the workload's own exit code (2 for cachelint's usage or configuration errors)."""
    from .api import profile
    from .config import ConfigError
    from .output.profile import summary_text
    from .output.terminal import progress_for
    from .profiling.workload import Workload

    if not argv or argv == ["-m"]:
        print(
            "cachelint: error: give the workload after `--`: a script and its arguments, or -m MODULE", file=sys.stderr
        )
        return 2
    work = Workload(argv[1], tuple(argv[2:]), True) if argv[0] == "-m" else Workload(argv[0], tuple(argv[1:]))
    if not work.module and not Path(work.target).is_file():
        return _usage_error(FileNotFoundError(work.target))
    say = (lambda msg: None) if args.quiet else (lambda msg: print(f"cachelint: {msg}", file=sys.stderr, flush=True))

    def started(functions: int, watched: int) -> None:
        what = f"{watched} of them fingerprinted" if args.fingerprints else "no fingerprints"
        say(f"profiling `{' '.join(work.argv)}`: {functions} functions of the package measured, {what}")

    progress = progress_for(sys.stderr) if not args.quiet else None
    try:
        cfg = _load_config(args).with_overrides(preset=args.preset)
        result = profile(
            work,
            args.paths,
            cfg,
            steps=tuple(args.step),
            fingerprints=args.fingerprints,
            jobs=args.jobs,
            progress=progress,
            started=started,
        )
    except (ConfigError, FileNotFoundError) as e:
        return _usage_error(e)
    finally:
        if progress is not None:
            progress.close()
    try:
        result.write(args.output)
    except OSError as e:
        print(f"cachelint: error: cannot write the profile {args.output}: {e}", file=sys.stderr)
        return 2
    if not args.quiet:
        sys.stderr.write(summary_text(result, args.output))
    return result.exit_code


def _check(args) -> int:
    from .api import check
    from .config import ConfigError, min_cost_setting
    from .lock.lockfile import LockError
    from .output.report import fixed_summary, statistics, summary, to_json, to_text
    from .output.terminal import colour_enabled, progress_for, write_coloured
    from .profiling.profile import ProfileError
    from .rules import UnknownRuleError

    paths = args.paths or ["."]
    report_only = None
    if args.project_root is not None:
        report_only = args.paths or None
        paths = [args.project_root]
    progress = progress_for(sys.stderr)
    try:
        cfg = _load_config(args, paths[0])
        select = _split(args.select)
        if args.extend_select:
            select = (select or cfg.select) + (_split(args.extend_select) or ())  # `or ()`: for the type checker
        min_cost, min_time = (None, None)
        if args.min_cost is not None:
            min_cost, min_time = min_cost_setting(args.min_cost, "--min-cost")
        cfg = cfg.with_overrides(
            select=select,
            ignore=_split(args.ignore),
            preset=args.preset,
            min_cost=min_cost,
            min_time=min_time,
            include_vendored=args.include_vendored,
        )
        cache_dir = None if args.no_cache or os.environ.get("CACHELINT_NO_CACHE") else _cache_dir(args, cfg, paths)
        fix = args.fix or args.diff
        if args.add_noqa and fix:
            print("cachelint: error: --add-noqa cannot be combined with --fix or --diff", file=sys.stderr)
            return 2
        if report_only is not None:
            missing = [p for p in report_only if not os.path.lexists(p)]
            if missing:
                raise FileNotFoundError(missing[0])
        measured = None
        if args.profile is not None:
            from .profiling.profile import Profile

            measured = Profile.read(args.profile)
        result = check(
            paths,
            cfg,
            fix=fix,
            unsafe_fixes=args.unsafe_fixes,
            write=not args.diff,
            jobs=args.jobs,
            report_only=report_only,
            progress=progress,
            cache_dir=cache_dir,
            profile=measured,
        )
        if os.environ.get("CACHELINT_CACHE_STATUS"):
            print(f"cachelint: cache {result.cache}", file=sys.stderr)
    except (ConfigError, UnknownRuleError, LockError, FileNotFoundError, ProfileError) as e:
        return _usage_error(e)
    finally:
        progress.close()
    unsafe = bool(args.unsafe_fixes if args.unsafe_fixes is not None else cfg.unsafe_fixes)
    out = sys.stdout
    for err in result.errors:
        print(f"cachelint: warning: {err}", file=sys.stderr)
    if result.profile_stale:
        n = len(result.profile_stale)
        shown = ", ".join(result.profile_stale[:3]) + (f" and {n - 3} more" if n > 3 else "")
        print(
            f"cachelint: warning: {n} module{'s' if n != 1 else ''} changed since the profile was taken "
            f"({shown}); {'their' if n != 1 else 'its'} measurements are left out",
            file=sys.stderr,
        )
    # nothing analysed as hot: CL002 checked nothing. A warning and no "All checks
    # passed!"; the status still follows the findings (CL001, CL003 and CL004 ran,
    # and ruff too warns and exits 0 when it had nothing to check), unless
    # --require-hot-paths makes it exit 2; `hot-roots = []` says it on purpose
    vacuous = result.hot is not None and result.hot.vacuous
    no_hot_message = _no_hot_paths_warning(result, args.require_hot_paths) if vacuous else ""
    if vacuous and (args.require_hot_paths or not args.quiet):
        print(no_hot_message, file=sys.stderr)
    vacuous = vacuous and args.require_hot_paths

    if result.vendored and not args.quiet:
        shown = ", ".join(result.vendored[:3]) + (
            f" and {len(result.vendored) - 3} more" if len(result.vendored) > 3 else ""
        )
        n = len(result.vendored)
        print(
            f"cachelint: skipped {n} vendored director{'ies' if n != 1 else 'y'} ({shown}); "
            "--include-vendored analyses them",
            file=sys.stderr,
        )
    if result.lock_written and not args.quiet:
        print(f"cachelint: recorded what the rewrites rely on in {result.lock_path}; commit it", file=sys.stderr)
    if args.diff:
        for ff in result.file_fixes:
            out.write(ff.diff())
        n = sum(len(ff.findings) for ff in result.file_fixes)
        if not args.quiet:
            print(f"Would fix {n} finding{'s' if n != 1 else ''}.", file=sys.stderr)
        if vacuous:
            return 2
        return 1 if result.file_fixes and not args.exit_zero else 0
    findings = result.findings
    if args.add_noqa:
        from .api import add_noqa

        added, problems = add_noqa(findings, roots=list(paths))
        for p in problems:
            print(f"cachelint: warning: {p}", file=sys.stderr)
        print(f"Added {added} noqa directive{'s' if added != 1 else ''}.", file=sys.stderr)
        return 2 if vacuous else 0
    fmt = args.output_format
    if fmt == "json":
        out.write(to_json(findings))
    elif fmt in ("sarif", "github", "concise"):
        from .output import formats

        if fmt == "sarif":
            out.write(formats.to_sarif(findings))
        elif fmt == "github":
            out.write(formats.to_github(findings))
            if no_hot_message:  # shown on the pull request, not only in the log
                out.write("::warning title=cachelint::" + no_hot_message.split(": ", 2)[2] + "\n")
        else:
            out.write(formats.to_concise(findings, unsafe))
            if not args.quiet:
                out.write(summary(findings, len(result.fixed), unsafe, result.hot))
    else:
        if args.statistics:
            text = statistics(findings, unsafe)
        else:
            text = to_text(findings, unsafe, show_chain=not args.no_chain, frames=True, show_fixes=args.show_fixes)
            if args.show_fixes and args.fix:
                text = fixed_summary(result.fixed) + text
            if measured is not None and (result.missed_repeats or result.candidate_roots):
                from .output.profile import report_text

                text += "\n" + report_text(result.missed_repeats, result.candidate_roots, measured)
            if not args.quiet:
                text += summary(findings, len(result.fixed), unsafe, result.hot)
        if colour_enabled(out, args.color):
            write_coloured(text, out)
        else:
            out.write(text)
    if vacuous:
        return 2
    if args.exit_zero:
        return 0
    if args.exit_non_zero_on_fix and result.fixed:
        return 1
    return 1 if findings else 0


def _no_hot_paths_warning(result, strict: bool) -> str:
    from .config import available_presets

    cov = result.hot
    cfg = result.config
    presets = ", ".join(cfg.active_presets) if cfg is not None and cfg.active_presets else "none"
    if cov.patterns == 0:
        why = f"no hot-root pattern is configured (presets: {presets})"
    else:
        why = f"none of the {cov.patterns} hot-root pattern{'s' if cov.patterns != 1 else ''} matched a function (presets: {presets})"
    engines = ", ".join(p for p in available_presets() if p != "python")
    return (
        f"cachelint: {'error' if strict else 'warning'}: no function was analysed as hot: {why}, "
        "so CL002 checked nothing. Configure `hot-roots` in [tool.cachelint] (`hot-roots = []` to "
        f"say there are none) or use a preset (`--preset NAME`; engines: {engines}); "
        "see `cachelint hot-paths`."
    )
