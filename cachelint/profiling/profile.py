"""The profile file: what ``cachelint profile`` measured, as typed records and JSON.

Functions and call sites are named by the qualified names cachelint's own
index gives them (``vllm.v1.core.sched.scheduler.Scheduler.schedule``), so a
profile of an installed package and a check of a copy of its source line up
wherever the source is the same; ``sources`` holds each measured module's
source digest, and ``check --profile`` leaves out the measurements of a
module whose source changed since (their lines may have moved). Times are seconds. ``step_*`` figures count
only what ran inside a step (see :mod:`.recorder`); ``steps`` is how many
steps there were (0 when no step function was named or matched).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..files import atomic_write

SCHEMA = 1


class ProfileError(Exception):
    """A profile file that cannot be read."""


@dataclass(frozen=True)
class FunctionTime:
    qualname: str
    calls: int
    total: float  # seconds in its calls, counted once for recursive calls
    own: float  # less the measured calls it made
    step_calls: int
    step_total: float
    step_own: float


@dataclass(frozen=True)
class SiteTime:
    """Calls made at one line of a package function to one callee."""

    caller: str
    line: int
    callee: str
    calls: int
    total: float
    step_calls: int
    step_total: float


@dataclass(frozen=True)
class Repeat:
    """A call site whose calls repeat with the same argument and result fingerprints."""

    caller: str
    line: int
    callee: str
    calls: int  # fingerprinted calls
    distinct: int  # distinct (arguments, result) pairs among them
    repeated: int  # calls - distinct: the calls a memo would have served
    repeated_seconds: float  # their time
    varied: int  # argument fingerprints seen with more than one result
    # calls not fingerprinted, by reason (`argument `x` is a list`, ...)
    unknown: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Profile:
    workload: list
    python: str
    backend: str  # sys.monitoring | sys.setprofile
    wall_seconds: float
    steps: int
    step_functions: list  # the qualified names that count as a step
    fingerprints: bool
    watched: int  # functions whose calls were fingerprinted
    functions: list = field(default_factory=list)  # [FunctionTime]
    sites: list = field(default_factory=list)  # [SiteTime]
    repeats: list = field(default_factory=list)  # [Repeat]
    exit_code: int = 0
    # module -> digest of its source as profiled (what check --profile compares)
    sources: dict = field(default_factory=dict)
    schema: int = SCHEMA

    def per_step(self, seconds: float) -> float:
        """A time over the steps (over the whole run when there were none)."""
        return seconds / self.steps if self.steps else seconds

    def write(self, path: str | Path) -> None:
        atomic_write(path, (json.dumps(asdict(self), indent=1) + "\n").encode(), durable=False)

    @classmethod
    def read(cls, path: str | Path) -> Profile:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise
        except (OSError, ValueError) as e:
            raise ProfileError(f"{path}: not a cachelint profile ({e})") from None
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise ProfileError(f"{path}: not a cachelint profile of schema {SCHEMA}")
        try:
            data["functions"] = [FunctionTime(**x) for x in data.get("functions", [])]
            data["sites"] = [SiteTime(**x) for x in data.get("sites", [])]
            data["repeats"] = [Repeat(**x) for x in data.get("repeats", [])]
            return cls(**data)
        except TypeError as e:
            raise ProfileError(f"{path}: a malformed cachelint profile ({e})") from None
