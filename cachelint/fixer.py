"""Stage 6: compute and write fixes.

Fixes are grouped by file and applied through the LibCST codemod in
``codemods/`` (formatting and comments kept, imports a fix leaves unused
removed). A file is written only if the rewritten code parses and compiles,
atomically (a temporary file in the same directory, then ``os.replace``, mode
kept), and only if it did not change on disk since it was read.
"""

from __future__ import annotations

import difflib
import io
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass, field

from .model import Applicability, Finding


@dataclass
class FileFix:
    path: str
    old: str
    new: str
    findings: list = field(default_factory=list)  # the findings it fixes
    error: str | None = None

    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.old.splitlines(keepends=True),
                self.new.splitlines(keepends=True),
                fromfile=f"a/{self.path}",
                tofile=f"b/{self.path}",
            )
        )


def _read(path: str) -> tuple[bytes, str, str, bool]:
    with open(path, "rb") as fh:
        data = fh.read()
    enc, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    bom = data.startswith(b"\xef\xbb\xbf")
    text = data.decode("utf-8-sig" if bom else enc)
    return data, text, enc, bom


def applicable(f: Finding, unsafe_fixes: bool) -> bool:
    return f.fix is not None and (f.fix.applicability is Applicability.SAFE or unsafe_fixes)


def compute_fixes(findings: list[Finding], unsafe_fixes: bool) -> list[FileFix]:
    from codemods.replace_expression import FixError, apply_edits

    by_path: dict[str, list[Finding]] = {}
    for f in findings:
        if applicable(f, unsafe_fixes):
            by_path.setdefault(f.path, []).append(f)
    out: list[FileFix] = []
    for path in sorted(by_path):
        fs = sorted(by_path[path], key=lambda f: (f.span.line, f.span.column))
        try:
            _, text, _, _ = _read(path)
        except (OSError, SyntaxError, UnicodeDecodeError, LookupError) as e:
            out.append(FileFix(path, "", "", fs, f"cannot read: {e}"))
            continue
        edits = [e for f in fs for e in f.fix.edits]
        try:
            result = apply_edits(text, edits, filename=path)
        except FixError as e:
            out.append(FileFix(path, text, text, [], f"fix skipped: {e}"))
            continue
        applied = set(map(id, result.applied))
        fixed = [f for f in fs if all(id(e) in applied for e in f.fix.edits)]
        out.append(FileFix(path, text, result.code, fixed))
    return out


def write_fix(ff: FileFix) -> str | None:
    """Write one fixed file atomically. Returns an error message or None."""
    try:
        data, text, enc, bom = _read(ff.path)
    except OSError as e:
        return f"{ff.path}: cannot re-read before writing: {e}"
    if text != ff.old:
        return f"{ff.path}: changed on disk since it was read; fix not written"
    if ff.new == ff.old:
        return None
    try:
        compile(ff.new, ff.path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as e:
        return f"{ff.path}: rewritten code does not compile ({e}); fix not written"
    payload = ff.new.encode(enc if not bom else "utf-8")
    if bom:
        payload = b"\xef\xbb\xbf" + payload
    directory = os.path.dirname(os.path.abspath(ff.path))
    st = os.stat(ff.path)
    fd, tmp = tempfile.mkstemp(prefix=".cachelint-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        os.replace(tmp, ff.path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return None
