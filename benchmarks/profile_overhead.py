"""How much `cachelint profile` slows a workload down: the CPU engine's decode steps, measured and not.

    python benchmarks/profile_overhead.py [--python ENGINE_PYTHON] [--rounds 3] [--models llama whisper] [--floor]

Runs ``tests/engine/profile_decode.py`` (the tiny models' decode steps, which
prints its mean wall time per step) in the engine venv (``nox -s
engine_current`` makes it), interleaved in each round: plainly, under
``cachelint profile --no-fingerprints`` and under ``cachelint profile``.
Prints a Markdown table of the median time per step and its ratio to the
plain run, per model, and the profile files' sizes. ``--floor`` adds two
references: the workload under a ``sys.setprofile`` hook that does nothing,
and under ``cProfile``. The workload's start-up
(building the engine) is not in the time per step; the static analysis that
``profile`` runs first is not either.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("CACHELINT_TEST_CACHE", Path.home() / ".cache" / "cachelint-tests"))
WORKLOAD = REPO / "tests" / "engine" / "profile_decode.py"
# the references of --floor: the workload run under a hook that does nothing, or under cProfile
FLOOR = {
    "no-op hook": "import sys, runpy; sys.setprofile(lambda *a: None); "
    "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')",
    "cProfile": "import sys, runpy, cProfile; p = cProfile.Profile(); p.enable(); "
    "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')",
}
STEP = re.compile(r"^(\w+): (\d+) engine steps, ([\d.]+) ms per step$", re.M)


def run(python: str, cwd: Path, variant: str, models: list[str], out: Path) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    if variant == "plain":
        cmd = [python, str(WORKLOAD), *models]
    elif variant in FLOOR:
        cmd = [python, "-c", FLOOR[variant], str(WORKLOAD), *models]
    else:
        cmd = [python, "-m", "cachelint", "profile", "vllm", "-q", "--step", "*.LLMEngine.step", "-o", str(out)]
        cmd += ["--no-fingerprints"] if variant == "time only" else []
        cmd += ["--", str(WORKLOAD), *models]
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        sys.exit(f"{variant}: exit {proc.returncode}\n{proc.stderr[-3000:]}")
    return {m: float(ms) for m, _, ms in STEP.findall(proc.stdout)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", default=str(CACHE / "engine" / "nox" / "engine_current" / "bin" / "python"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models", nargs="+", default=["llama", "whisper"])
    ap.add_argument("--floor", action="store_true", help="also run under a no-op profile hook and under cProfile")
    args = ap.parse_args()
    where = subprocess.run(
        [args.python, "-c", "import importlib.util as u; print(u.find_spec('vllm').submodule_search_locations[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    cwd = Path(where).parent
    variants = ["plain", "time only", "fingerprints"] + (list(FLOOR) if args.floor else [])
    times: dict[tuple[str, str], list[float]] = {}
    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for v in variants:
                out = Path(tmp) / f"{v.replace(' ', '-')}.json"
                for model, ms in run(args.python, cwd, v, args.models, out).items():
                    times.setdefault((model, v), []).append(ms)
                if out.exists():
                    sizes[v] = out.stat().st_size
                print(f"round {r + 1}: {v} done", file=sys.stderr)
    shown = variants[1:]
    print("| model | plain ms/step | " + " | ".join(f"{v} ms/step | x plain" for v in shown) + " |")
    print("| --- | ---: | " + " | ".join("---: | ---:" for _ in shown) + " |")
    for model in args.models:
        base = statistics.median(times[(model, "plain")])
        cells = []
        for v in shown:
            m = statistics.median(times[(model, v)])
            cells.append(f"{m:.2f} | {m / base:.2f}")
        print(f"| {model} | {base:.2f} | " + " | ".join(cells) + " |")
    print()
    print(f"Rounds: {args.rounds}; each cell the median. Runs per variant (ms/step):")
    for (model, v), xs in sorted(times.items()):
        print(f"- {model}, {v}: {', '.join(f'{x:.2f}' for x in xs)}")
    for v, n in sizes.items():
        print(f"- profile file, {v}: {n / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
