"""Where the whole-program analysis spends its time: each shared fact, then each rule.

Indexes ``PATH`` first (not timed), then computes the analysis's facts one at
a time in the order the rules first need them, then runs each default rule
alone on one core, printing the seconds of each step; then the same rules
again on a fresh analysis through ``run_rules`` with ``--jobs`` (two cores by
default), with the time the analysis takes there. Each rule's time is what
it adds after the facts before it: a fact a rule is the first to read is
counted under that rule. The cyclic GC is off, as in a run of cachelint::

    .venv/bin/python benchmarks/analysis_stages.py ~/.cache/cachelint-tests/src/vllm-0.33.0/vllm
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cachelint import api
from cachelint.config import Config
from cachelint.rules import select_rules
from cachelint.rules.runner import run_rules

FACTS = ("hot", "compiled", "estimates", "cache_analysis", "cached_call_spans")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("path")
    ap.add_argument("--jobs", type=int, default=2, help="cores for the second pass (default 2)")
    args = ap.parse_args()
    config = Config()
    rules = select_rules(config.select, config.ignore)
    gc.disable()

    analysis, files = api.analyse([args.path], config)
    print(f"{len(files)} files indexed")
    total = 0.0
    for name in FACTS:
        start = time.perf_counter()
        getattr(analysis, name)
        took = time.perf_counter() - start
        total += took
        print(f"  fact {name:26s} {took:7.3f} s")
    for rule in rules:
        start = time.perf_counter()
        n = len(list(rule().check(analysis)))
        took = time.perf_counter() - start
        total += took
        print(f"  rule {rule.code} {rule.name:29s} {took:7.3f} s  {n} findings")
    print(f"one core: {total:.3f} s")

    analysis, _ = api.analyse([args.path], config)
    start = time.perf_counter()
    run_rules(analysis, rules, jobs=args.jobs)
    print(f"run_rules with jobs={args.jobs}: {time.perf_counter() - start:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
