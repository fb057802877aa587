"""cachelint: find expensive calls on inference-engine hot paths and rewrite
them to read values computed once, with fixes that are proven safe or marked
unsafe with the condition they rely on.

The pipeline, one module per stage: :mod:`~cachelint.discover` ->
:mod:`~cachelint.index` -> :mod:`~cachelint.program` and
:mod:`~cachelint.callgraph` -> :mod:`~cachelint.cachesites` and
:mod:`~cachelint.guards` -> :mod:`~cachelint.rules` -> :mod:`~cachelint.fixer`
-> :mod:`~cachelint.report`. :func:`cachelint.api.check` runs it all.
"""

__version__ = "0.1.0"
