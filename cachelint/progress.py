"""The progress interface every stage reports to (a no-op by default); the
terminal's indicator is :class:`cachelint.output.terminal.TerminalProgress`."""

from __future__ import annotations


class Progress:
    """What the pipeline reports: stages with an optional total, and steps."""

    def stage(self, label: str, total: int | None = None) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass
