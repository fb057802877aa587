"""Terminal niceties: colours and a progress indicator, through ``rich``.

Both are decided here and nowhere else, and ``rich`` is imported only when
one of them is actually shown, so a pre-commit hook or a CI job (output to a
pipe) never pays for the import:

* colour: on when the stream is a terminal (and ``TERM`` is not ``dumb``),
  never when ``NO_COLOR`` is set to anything non-empty (https://no-color.org),
  forced on by a non-empty ``FORCE_COLOR`` or ``--color always``.
* progress: on stderr, only when stderr is a terminal, not in CI (``CI`` set),
  and only for runs of at least ``PROGRESS_MIN_FILES`` files; transient (it
  disappears when the run ends), so it never ends up in a log.
"""

from __future__ import annotations

import os
import re
import sys
from typing import TYPE_CHECKING, TextIO

from ..progress import Progress

if TYPE_CHECKING:
    from rich.progress import Progress as Bar
    from rich.progress import TaskID

PROGRESS_MIN_FILES = 200


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def colour_enabled(stream: TextIO, choice: str = "auto") -> bool:
    if choice == "never":
        return False
    if choice == "always":
        return True
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return _isatty(stream) and os.environ.get("TERM") != "dumb"


def progress_enabled(stream: TextIO) -> bool:
    if os.environ.get("CI") or os.environ.get("TERM") == "dumb":
        return False
    return _isatty(stream)


# --- colour ------------------------------------------------------------------

_STYLES = (
    # finding header: path:line:col: CODE [*]
    (re.compile(r"^(?P<path>[^\s|=][^\n]*?):(?P<pos>\d+:\d+):", re.MULTILINE), {"path": "bold", "pos": "dim"}),
    (
        re.compile(r"^[^\s|=][^\n]*?:\d+:\d+: (?P<code>[A-Z]+\d+)(?: (?P<fix>\[\*\]))?", re.MULTILINE),
        {"code": "bold red", "fix": "cyan"},
    ),
    # code frame gutter and carets
    (re.compile(r"^(?P<gutter> *\d* \|)", re.MULTILINE), {"gutter": "bold blue"}),
    (
        re.compile(r"^ *\| *(?P<carets>\^+)(?P<label> [A-Z]+\d+)?$", re.MULTILINE),
        {"carets": "bold red", "label": "bold red"},
    ),
    # notes under a finding
    (re.compile(r"^(?P<eq>  =) (?P<what>hot path|fix)", re.MULTILINE), {"eq": "bold blue", "what": "bold"}),
    (
        re.compile(r"^  = fix \((?P<safe>safe)\)|^  = fix \((?P<unsafe>unsafe)\)", re.MULTILINE),
        {"safe": "green", "unsafe": "yellow"},
    ),
    # summary
    (re.compile(r"^(?P<ok>All checks passed!)$", re.MULTILINE), {"ok": "bold green"}),
    (re.compile(r"^(?P<found>Found \d+ errors?\.)", re.MULTILINE), {"found": "bold"}),
)


def write_coloured(text: str, stream: TextIO) -> None:
    """Write ``text`` (cachelint's plain text report) with colours added by
    pattern; the text itself is never interpreted as markup, so source code
    shown in a code frame cannot inject styles."""
    from rich.console import Console
    from rich.text import Text

    t = Text(text, end="")
    for regex, groups in _STYLES:
        for m in regex.finditer(text):
            for group, style in groups.items():
                if m.group(group) is not None:
                    t.stylize(style, m.start(group), m.end(group))
    console = Console(file=stream, force_terminal=True, highlight=False, soft_wrap=True, emoji=False, markup=False)
    console.print(t, end="")


# --- progress ----------------------------------------------------------------


class TerminalProgress(Progress):
    """A transient ``rich`` progress bar on stderr, started only for long runs
    (the first stage's total decides)."""

    def __init__(self, stream: TextIO | None = None, min_files: int = PROGRESS_MIN_FILES) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.min_files = min_files
        self._bar: Bar | None = None
        self._task: TaskID | None = None
        self._decided = False

    def stage(self, label: str, total: int | None = None) -> None:
        if not self._decided:
            self._decided = True
            if total is None or total < self.min_files:
                return
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
            )
            from rich.progress import Progress as Bar

            console = Console(file=self.stream, stderr=self.stream is sys.stderr)
            self._bar = Bar(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
                transient=True,
            )
            self._bar.start()
        if self._bar is None:
            return
        if self._task is not None:
            self._bar.remove_task(self._task)
        self._task = self._bar.add_task(label, total=total)

    def advance(self, n: int = 1) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.advance(self._task, n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def progress_for(stream: TextIO | None = None) -> Progress:
    stream = stream if stream is not None else sys.stderr
    return TerminalProgress(stream) if progress_enabled(stream) else Progress()
