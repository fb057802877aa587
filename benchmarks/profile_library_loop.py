"""What measuring costs code outside the package: a loop of library calls, unmeasured and measured.

    python3.11 benchmarks/profile_library_loop.py      # the sys.setprofile backend
    python3.12 benchmarks/profile_library_loop.py      # the sys.monitoring backend

Run from the checkout (it imports cachelint from it). The loop calls a Python
function and a few builtins, none of them in the "package" (the recorder is
given an empty one), so every event is one cachelint ignores. Prints the
nanoseconds an iteration takes unmeasured, under a ``sys.setprofile`` hook
that does nothing, and under cachelint's recorder; the median of five runs of
200,000 iterations each.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cachelint.profiling.recorder import Defs, Recorder

N = 200_000


def f(x: list) -> int:
    return len(x) + abs(-1)


def work(n: int) -> None:
    items = [1, 2]
    for _ in range(n):
        f(items)
        items.append(1)
        items.pop()


def per_iteration(start, stop) -> float:
    runs = []
    for _ in range(5):
        start()
        t = time.perf_counter()
        work(N)
        dt = time.perf_counter() - t
        stop()
        runs.append(dt / N * 1e9)
    return statistics.median(runs)


def main() -> None:
    rec = Recorder(Defs({}))
    rows = [
        ("unmeasured", per_iteration(lambda: None, lambda: None)),
        (
            "no-op sys.setprofile hook",
            per_iteration(lambda: sys.setprofile(lambda *a: None), lambda: sys.setprofile(None)),
        ),
        (f"cachelint's recorder ({rec.backend})", per_iteration(rec.start, rec.stop)),
    ]
    print(f"Python {sys.version.split()[0]}, ns per iteration (median of 5 x {N:,}):")
    for label, ns in rows:
        print(f"  {label:<40} {ns:8.0f}")


if __name__ == "__main__":
    main()
