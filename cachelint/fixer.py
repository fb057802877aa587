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


def compute_fixes(
    findings: list[Finding],
    unsafe_fixes: bool,
    digests: dict[str, str] | None = None,
    progress=None,
) -> list[FileFix]:
    """``digests``: each file's :func:`~cachelint.index.source_digest` when it
    was analysed; a file whose content differs now is not fixed (the
    findings' positions would be stale)."""
    from codemods.replace_expression import FixError, apply_edits

    from .index import source_digest

    by_path: dict[str, list[Finding]] = {}
    for f in findings:
        if applicable(f, unsafe_fixes):
            by_path.setdefault(f.path, []).append(f)
    out: list[FileFix] = []
    for path in sorted(by_path):
        fs = sorted(by_path[path], key=lambda f: (f.span.line, f.span.column))
        if progress is not None:
            progress.advance()
        try:
            _, text, _, _ = _read(path)
        except (OSError, SyntaxError, UnicodeDecodeError, LookupError) as e:
            out.append(FileFix(path, "", "", fs, f"cannot read: {e}"))
            continue
        expected = (digests or {}).get(path)
        if expected and source_digest(text) != expected:
            out.append(FileFix(path, text, text, [], "changed on disk since it was analysed; fix not written"))
            continue
        edits = [e for f in fs for e in f.fix.edits]
        try:
            result = apply_edits(text, edits, filename=path)
        except FixError as e:
            out.append(FileFix(path, text, text, [], f"fix skipped: {e}"))
            continue
        except (RecursionError, MemoryError) as e:
            out.append(FileFix(path, text, text, [], f"fix skipped: {type(e).__name__} in the rewriter"))
            continue
        applied = set(map(id, result.applied))
        fixed = [f for f in fs if all(id(e) in applied for e in f.fix.edits)]
        out.append(FileFix(path, text, result.code, fixed))
    return out


def _inside(path: str, roots: list[str]) -> bool:
    for root in roots:
        r = os.path.realpath(root)
        if path == r or path.startswith(r.rstrip(os.sep) + os.sep):
            return True
    return False


def write_fix(ff: FileFix, roots: list[str] | None = None) -> str | None:
    """Write one fixed file atomically. Returns an error message or None.

    The new content goes to a temporary file in the same directory, is
    flushed to disk, gets the old file's mode (and owner, where allowed), and
    replaces the file with one ``os.replace``: a reader, or a crash at any
    moment, sees the old file or the new one, never a mix. A symbolic link
    stays a link: the file it points to is rewritten, but only if that file
    lies inside ``roots`` (the paths cachelint was given), since cachelint
    never writes outside them.
    """
    target = os.path.realpath(ff.path)
    if roots is not None and not _inside(target, roots):
        return f"{ff.path}: links to {target}, outside the checked paths; fix not written"
    try:
        data, text, enc, bom = _read(target)
    except (OSError, SyntaxError, UnicodeDecodeError, LookupError) as e:
        return f"{ff.path}: cannot re-read before writing: {e}"
    if text != ff.old:
        return f"{ff.path}: changed on disk since it was read; fix not written"
    if ff.new == ff.old:
        return None
    try:
        compile(ff.new, ff.path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        return f"{ff.path}: rewritten code does not compile ({type(e).__name__}: {e}); fix not written"
    try:
        payload = ff.new.encode(enc if not bom else "utf-8")
    except UnicodeEncodeError as e:
        return f"{ff.path}: the fix cannot be written in the file's encoding {enc} ({e}); fix not written"
    if bom:
        payload = b"\xef\xbb\xbf" + payload
    directory = os.path.dirname(target)
    try:
        st = os.stat(target)
        fd, tmp = tempfile.mkstemp(prefix=".cachelint-", suffix=".tmp", dir=directory)
    except OSError as e:
        return f"{ff.path}: cannot write next to the file: {e}; fix not written"
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        if hasattr(os, "chown") and (st.st_uid, st.st_gid) != (os.getuid(), os.getgid()):
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
            except OSError:
                pass
        os.replace(tmp, target)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return f"{ff.path}: cannot write the fix: {e}; file left unchanged"
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return None
