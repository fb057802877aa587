"""cachelint: find expensive calls on inference-engine hot paths and rewrite
them to read values computed once, with fixes that are proven safe or marked
unsafe with the condition they rely on.

The pipeline, one module per stage: :mod:`~cachelint.discover.walk` ->
:mod:`~cachelint.index.walk` -> :mod:`~cachelint.semantic.program` and
:mod:`~cachelint.semantic.callgraph` -> :mod:`~cachelint.facts.cachesites` and
:mod:`~cachelint.semantic.guards` -> :mod:`~cachelint.rules` -> :mod:`~cachelint.apply.fixer`
-> :mod:`~cachelint.output.report`. :func:`cachelint.api.check` runs it all.
"""

__version__ = "0.1.0"
