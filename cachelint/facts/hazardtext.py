"""How a cache site's hazards are spelled in messages: an argument of the
fill as the fill's side names it, a writer with where it is and why it
counts, a list of them cut at :data:`MAX_SHOWN`, a long expression cut short.
"""

from __future__ import annotations

from ..semantic.program import Value
from ..semantic.values import CallRoot, GlobalRoot, ParamRoot, SelfRoot
from ..semantic.writes import AttrWrite, Reach, Writes, copy_source

MAX_SHOWN = 3  # writers named per dependency


def _short(text: str, limit: int = 70) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def render_arg(site, v: Value) -> str:
    """An argument of the fill spelled from the fill's side."""
    root = v[0]
    if root == site.anchor:
        head = "self" if isinstance(root, SelfRoot) else root.name if isinstance(root, ParamRoot) else "X"
    elif isinstance(root, ParamRoot):
        head = root.name
    elif isinstance(root, GlobalRoot):
        head = root.qualname.rsplit(".", 1)[-1]
    elif isinstance(root, CallRoot):
        head = "(...)"
    else:
        head = "?"
    return head + "".join(f".{a}" for a in v[1:] if isinstance(a, str))


def writer_text(w: AttrWrite, reach: Reach, writes: Writes) -> str:
    """``in `f` (line 6: `cfg.x = ...`, <why>)``."""
    extra = f", {reach.why}" if reach.why else ""
    src = copy_source(writes.receiver_value(w), writes.p)
    if src is not None:
        extra += f", on a copy made by `{src[0]}`"
    if w.how == "setattr":
        kind = "" if w.attr is not None else ", a `setattr` with a name computed at run time"
    elif w.how == "in-place":
        kind = ", which changes its value in place"
    elif w.how in ("__dict__", "vars", "object.__setattr__"):
        kind = ", which bypasses attribute assignment" + (
            "" if w.attr is not None else " for names known only at run time"
        )
    else:
        kind = ""
    return f"in {w.where} (line {w.line}: `{w.text}`{kind}{extra})"


def summarise(items: list, render_one) -> str:
    shown = [render_one(x) for x in items[:MAX_SHOWN]]
    more = len(items) - len(shown)
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")
