"""Pausing the cyclic garbage collector around blocks that allocate millions of
acyclic objects (ASTs, indexes, the analysis): the one helper for it."""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def gc_paused(freeze: bool = False):
    """The cyclic GC off for a block, then as it was before.

    Blocks that pause it nest (the cached run pauses it around the pool,
    which pauses it again): re-enabling it on the way out of an inner one
    left it on with a fresh index of millions of objects and no freeze yet,
    and the next allocations paid a full collection (0.5 s of a cold run on
    vLLM 0.10.2).

    With ``freeze``, what the block built lives for the run (the index, the
    analysis) and is frozen out of the GC's reach before the GC is back on:
    everything allocated while it was off counts as generation 0, and the
    first allocation after would have the GC scan it all (0.3 to 0.45 s on
    vLLM 0.10.2). :func:`check` unfreezes it at the end.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if was:
            gc.enable()
