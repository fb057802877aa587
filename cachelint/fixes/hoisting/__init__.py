"""Fixes for expensive calls that no attribute caches yet (CL002): hoist to
``__init__``, hoist to a local, memoize (see :mod:`.planner`)."""

from .planner import HoistPlanner
from .site import Site

__all__ = ["HoistPlanner", "Site"]
