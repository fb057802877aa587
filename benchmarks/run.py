"""Time cachelint against ruff on real vLLM trees, side by side in one run.

    python benchmarks/run.py                      # 0.10.2 and 0.33.0, 5 rounds each
    python benchmarks/run.py --versions 0.10.2 --rounds 3 --no-write

Run it with the interpreter cachelint is installed in (e.g. ``.venv/bin/python``);
cachelint runs from this checkout. ruff is a benchmark-only dependency:
``--ruff PATH`` uses an existing binary, otherwise the script installs a pinned
ruff into ``benchmarks/.venv-ruff`` with pip on first use.

For each vLLM version (fetched from PyPI by ``tests/vllm_source.py``) the tree
is copied to a temporary directory, and every round runs, one after another on
that copy:

    ruff        ruff check --select ALL --no-cache (the reference)
    no-cache    cachelint check --no-cache (reads and writes nothing)
    no-cache-j1 the same on one core, and no-cache-j2 on two (what the pool buys;
                without -j, cachelint uses the cores its load average leaves free)
    cold        cachelint check with an empty cache directory (writes it)
    warm        the same again, nothing changed (the whole-run result reused)
    edit-text   after adding comment lines at the top of one file
    edit-body   after adding a call to the body of an existing function off
                the hot paths (``Scheduler.shutdown``, called elsewhere): the
                everyday edit
    edit-hot    after adding a call to the body of the per-step root
                (``Scheduler.schedule``)
    fix         cachelint check --fix --unsafe-fixes --no-cache on a fresh copy
                of the tree (every fix pass; compared with no-cache: at most 3x
                its time and its peak memory plus 200 MB)

After any edit the cache indexes the changed file again, loads every other
index, and runs the whole-program analysis and the rules again (the findings
in one file depend on facts from others); only an unchanged tree reuses the
previous findings. The three edits differ in what the analysis then finds,
not in what the cache does.

Every edit scenario changes one file; the edits accumulate over the rounds.

Interleaving the scenarios inside each round spreads the noise of a shared
machine over all of them; ratios to ruff's median from the same run are what
to compare. Peak memory is the largest resident set of any one process of the
command (``wait4``'s ``ru_maxrss``). Results replace the end of ``docs/benchmarks.md``
(below its results mark); the method above it stays.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
RUFF_VERSION = "0.17.6"
EDIT_FILE = "vllm/v1/core/sched/scheduler.py"  # a large, central file with findings
TARGETS = {
    # version -> scenario -> (limit, unit) ; "x" = times ruff's median
    "0.10.2": {
        "cold": (2.0, "x"),
        "warm": (0.5, "s"),
        **dict.fromkeys(("edit-text", "edit-body", "edit-hot"), (0.8, "s")),
    },
    "*": {"cold": (2.0, "x"), "fix": (3.0, "x no-cache")},
}
FIX_EXTRA_MB = 200  # the fix run's peak may exceed no-cache's by this much
MEMORY_TARGET_MB = 300


def ruff_binary(given: str | None) -> str:
    if given:
        return given
    venv = REPO / "benchmarks" / ".venv-ruff"
    exe = venv / ("Scripts" if os.name == "nt" else "bin") / "ruff"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = venv / ("Scripts" if os.name == "nt" else "bin") / "pip"
        subprocess.run([str(pip), "install", "-q", "--disable-pip-version-check", f"ruff=={RUFF_VERSION}"], check=True)
    return str(exe)


def timed(cmd: list[str], cwd: Path, env: dict) -> tuple[float, float, str]:
    """Wall time (s), peak RSS of any process of the command (MB), stderr."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{stderr}")
    return wall, usage.ru_maxrss / 1024, stderr


def insert_call(path: Path, function: str, r: int, statement: str | None = None) -> None:
    """Add ``statement`` (default ``logger.debug(...)``) as the first
    statement of the method ``function`` in ``path`` (after its docstring)."""
    import ast

    text = path.read_text(encoding="utf-8")
    node = next(
        n
        for n in ast.walk(ast.parse(text))
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == function
    )
    body = (
        node.body[1:]
        if isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
        else node.body
    )
    lines = text.splitlines(keepends=True)
    statement = statement or f'logger.debug("benchmark round %d", {r})'
    lines.insert(body[0].lineno - 1, " " * body[0].col_offset + statement + "\n")
    path.write_text("".join(lines), encoding="utf-8")


def cache_status(stderr: str) -> str:
    for line in stderr.splitlines():
        if line.startswith("cachelint: cache "):
            return line.split()[-1]
    return "?"


def bench_version(version: str, rounds: int, ruff: str) -> dict:
    from vllm_source import vllm_source

    src = vllm_source(version)
    work = Path(tempfile.mkdtemp(prefix=f"cachelint-bench-{version}-"))
    try:
        shutil.copytree(src / "vllm", work / "vllm")
        files = list((work / "vllm").rglob("*.py"))
        n_lines = sum(p.read_bytes().count(b"\n") for p in files)
        edit = work / EDIT_FILE
        original = edit.read_bytes()
        cache = work / "cache"
        env = dict(os.environ)
        env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
        env["CACHELINT_CACHE_STATUS"] = "1"
        env.pop("CACHELINT_CACHE_DIR", None)
        env.pop("CACHELINT_NO_CACHE", None)
        # as installed: bytecode compiled once, not on every run
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        cl = [sys.executable, "-m", "cachelint", "check", "vllm", "-q", "--cache-dir", str(cache)]
        scenarios = {
            "ruff": [ruff, "check", "--select", "ALL", "--no-cache", "-q", "--exit-zero", "vllm"],
            "no-cache": cl + ["--no-cache"],
            "no-cache-j1": cl + ["--no-cache", "-j", "1"],
            "no-cache-j2": cl + ["--no-cache", "-j", "2"],
            "cold": cl,
            "warm": cl,
            "edit-text": cl,
            "edit-body": cl,
            "edit-hot": cl,
            "fix": [*cl, "--no-cache", "--fix", "--unsafe-fixes"],
        }
        fix_tree = work / "fix-copy"
        results: dict = {k: {"wall": [], "rss": [], "status": [], "load": []} for k in scenarios}
        # one untimed run of each tool: file system cache, .pyc files
        timed(scenarios["ruff"], work, env)
        timed(scenarios["no-cache"], work, env)
        for r in range(rounds):
            for name, cmd in scenarios.items():
                if name == "cold":
                    shutil.rmtree(cache, ignore_errors=True)
                    edit.write_bytes(original)
                elif name == "edit-text":
                    edit.write_bytes(f"# benchmark round {r}\n#\n".encode() * (r + 1) + original)
                elif name == "edit-body":
                    insert_call(edit, "shutdown", r)
                elif name == "edit-hot":
                    insert_call(edit, "schedule", r)
                elif name == "fix":
                    shutil.rmtree(fix_tree, ignore_errors=True)
                    shutil.copytree(src / "vllm", fix_tree / "vllm")
                load = os.getloadavg()[0]
                wall, rss, stderr = timed(cmd, fix_tree if name == "fix" else work, env)
                res = results[name]
                res["wall"].append(wall)
                res["rss"].append(rss)
                res["status"].append(cache_status(stderr) if name != "ruff" else "")
                res["load"].append(load)
                print(
                    f"  {version} round {r + 1}/{rounds} {name:<10} {wall:6.2f} s {rss:6.0f} MB {res['status'][-1]}",
                    flush=True,
                )
        edit.write_bytes(original)
        profile = _profile(work, env) if PROFILE else None
        return {"files": len(files), "lines": n_lines, "results": results, "profile": profile}
    finally:
        shutil.rmtree(work, ignore_errors=True)


PROFILE = False


def _profile(work: Path, env: dict) -> str:
    """The functions with the most own time in one serial, uncached run (cProfile)."""
    out = work / "profile.out"
    # through cli.main(): `python -m cachelint` leaves with os._exit, before
    # cProfile could write its output
    script = work / "profile_main.py"
    script.write_text("import sys\nfrom cachelint.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(out), str(script), "check", "vllm", "-q", "--no-cache", "-j", "1"],
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    import io
    import pstats

    buf = io.StringIO()
    stats = pstats.Stats(str(out), stream=buf)
    stats.sort_stats("tottime").print_stats(20)
    lines = buf.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("ncalls"))
    return "\n".join(
        line.replace(str(REPO) + "/", "").replace(sys.prefix, "<python>") for line in lines[start:] if line.strip()
    )


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def render(data: dict, rounds: int, ruff: str, started: str, elapsed: float) -> str:
    ruff_version = subprocess.run([ruff, "--version"], capture_output=True, text=True).stdout.strip()
    out = [
        "## Results",
        "",
        "Written by `python benchmarks/run.py` (do not edit by hand). The machine is shared",
        "with other jobs (2 cores): absolute times move with its load, so compare the ratios",
        "to ruff, which ran interleaved with cachelint in the same rounds.",
        "",
        f"- date: {started} UTC, {elapsed / 60:.1f} min; cachelint commit `{_git('rev-parse', '--short', 'HEAD')}`"
        f"{' (uncommitted changes)' if _git('status', '--porcelain', '--untracked-files=no') else ''}",
        f"- {platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores, {ruff_version}",
        f"- {rounds} rounds per version; median (min-max) wall time; peak = largest resident set of one process",
        "",
    ]
    for version, d in data.items():
        res = d["results"]
        ruff_med = statistics.median(res["ruff"]["wall"])
        base = {"x": ruff_med, "x no-cache": statistics.median(res["no-cache"]["wall"])}
        targets = {**TARGETS["*"], **TARGETS.get(version, {})}
        out += [
            f"### vLLM {version} ({d['files']} files, {d['lines']:,} lines)",
            "",
            "| scenario | median s | min-max s | x ruff | peak MB | cache | target | met |",
            "| --- | ---: | ---: | ---: | ---: | --- | --- | --- |",
        ]
        for name, r in res.items():
            med = statistics.median(r["wall"])
            ratio = med / ruff_med
            peak = max(r["rss"])
            statuses = sorted(set(r["status"]) - {""})
            target, met = "", ""
            if name in targets:
                limit, unit = targets[name]
                value = med / base[unit] if unit in base else med
                target = f"<= {limit:g}{' x ruff' if unit == 'x' else ' ' + unit}"
                met = "yes" if value <= limit else "**no**"
            if name == "fix":
                limit_mb = max(res["no-cache"]["rss"]) + FIX_EXTRA_MB
                target += f"; <= {limit_mb:.0f} MB (no-cache + {FIX_EXTRA_MB})"
                met += f"; {'yes' if peak <= limit_mb else '**no**'}"
            elif name != "ruff" and version in TARGETS:
                mem_ok = peak <= MEMORY_TARGET_MB
                target += f"{'; ' if target else ''}<= {MEMORY_TARGET_MB} MB"
                met += f"{'; ' if met else ''}{'yes' if mem_ok else '**no**'}"
            out.append(
                f"| {name} | {med:.2f} | {min(r['wall']):.2f}-{max(r['wall']):.2f} | {ratio:.2f} | {peak:.0f} "
                f"| {', '.join(statuses)} | {target} | {met} |"
            )
        loads = [x for r in res.values() for x in r["load"]]
        out += ["", f"Load average (1 min) before the runs: {min(loads):.1f} to {max(loads):.1f}.", ""]
        if d.get("profile"):
            out += [
                "Where the time goes: one serial `--no-cache` run under cProfile (which",
                "slows Python code more than C code such as `compile`, the `ast` parser):",
                "",
                "```",
                d["profile"],
                "```",
                "",
            ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--versions", nargs="+", default=["0.10.2", "0.33.0"])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--ruff", default=None, help="ruff binary (default: install ruff into benchmarks/.venv-ruff)")
    ap.add_argument("--output", default=str(REPO / "docs" / "benchmarks.md"))
    ap.add_argument("--no-write", action="store_true", help="print the report, do not write it")
    ap.add_argument("--profile", action="store_true", help="add a cProfile summary of one serial run per version")
    args = ap.parse_args(argv)
    global PROFILE
    PROFILE = args.profile
    ruff = ruff_binary(args.ruff)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    t0 = time.monotonic()
    data = {v: bench_version(v, args.rounds, ruff) for v in args.versions}
    text = render(data, args.rounds, ruff, started, time.monotonic() - t0)
    print(text)
    if not args.no_write:
        write_results(Path(args.output), text)
    return 0


RESULTS_MARK = "<!-- benchmarks/run.py writes everything below this line. -->"


def write_results(path: Path, text: str) -> None:
    """Replace what follows ``RESULTS_MARK`` in ``path`` (the method above it stays);
    a file without the mark gets it, then the results."""
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    head = old.split(RESULTS_MARK, 1)[0] if RESULTS_MARK in old else old
    path.write_text(head.rstrip("\n") + "\n\n" + RESULTS_MARK + "\n\n" + text.strip("\n") + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
