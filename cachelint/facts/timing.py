"""What one call costs in seconds: the calibrated table and its units.

``calibration.toml`` (the time of an ordinary operation and of each
catalogued kind, written by ``benchmarks/calibrate_cost.py``) and
``frequency.toml`` (how often each hot kind runs per step, what a loop
counts for), read once; :class:`~cachelint.facts.cost.CostModel` times call
sites with them and :mod:`~cachelint.facts.estimate` turns the times into
time per step.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

# a call under a condition (or past an early return) counts for this share of its time
CONDITIONAL = 0.5
# what one call costs (written by benchmarks/calibrate_cost.py) and how often sites run
CALIBRATION_FILE = Path(__file__).with_name("calibration.toml")
FREQUENCY_FILE = Path(__file__).with_name("frequency.toml")


@functools.cache
def cost_table() -> dict:
    """``calibration.toml`` (``baseline``, ``kinds``) with ``frequency.toml``
    (``frequency``, ``loop``), as one table (memoized: do not mutate)."""
    out: dict = {}
    for path in (CALIBRATION_FILE, FREQUENCY_FILE):
        with path.open("rb") as fh:
            out.update(tomllib.load(fh))
    return out


def baseline(name: str) -> float:
    """Seconds of an ordinary operation: ``python-call``, ``attribute``, ``dict-lookup``, ``small-build``."""
    return float(cost_table()["baseline"][name])


def kind_seconds(kind: str) -> tuple[float, str]:
    """Seconds per call of a catalogued callee of ``kind``, and the evidence;
    a kind not calibrated takes the median of the calibrated kinds."""
    kinds = cost_table()["kinds"]
    row = kinds.get(kind)
    if row is None:
        values = sorted(float(r["seconds"]) for r in kinds.values())
        return values[len(values) // 2], f"kind `{kind}` is not calibrated: the median of the calibrated kinds"
    return float(row["seconds"]), str(row.get("evidence", ""))


def compute_floor() -> float:
    """Seconds per call from which a pure looping body of the tree is expensive
    work in itself: ``compute-floor-calls`` small Python calls."""
    return float(cost_table()["body"]["compute-floor-calls"]) * baseline("python-call")


def entry_seconds(pattern: str | None) -> float | None:
    """Seconds per call measured for one catalog entry (``[entries]`` of
    ``calibration.toml``: real calls that entry matches), or None."""
    if pattern is None:
        return None
    row = cost_table().get("entries", {}).get(pattern)
    return None if row is None else float(row["seconds"])


def format_seconds(s: float) -> str:
    """``1.2 µs``, ``38 µs``, ``1.3 ms``, ``120 ns``: two significant figures at most."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            v = s / scale
            return f"{v:.1f} {unit}" if v < 10 else f"{v:.0f} {unit}"
    v = s / 1e-9
    return f"{v:.0f} ns" if v >= 1 else "<1 ns"


@dataclass(frozen=True, slots=True)
class Timing:
    """What one call costs, in seconds, and why that much (``basis``)."""

    seconds: float
    basis: str
