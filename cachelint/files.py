"""Reading Python sources as Python does, and writing files atomically: the
one place each is done."""

from __future__ import annotations

import hashlib
import io
import os
import re
import stat
import tempfile
import tokenize


def source_digest(source: str) -> str:
    return hashlib.blake2b(source.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def read_bytes(path: str) -> bytes:
    """A file's bytes, opened non-blocking and checked to be a regular file,
    so a FIFO or a device named ``*.py`` is an unreadable file (CL000), not a hang."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"not a regular file: {path}")
        return fh.read()


# str.splitlines also breaks at \v, \f, \x1c-\x1e, \x85, \u2028 and \u2029,
# which Python's tokenizer does not: every line number after one would be off
_OTHER_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


_PY_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def split_lines(text: str, keepends: bool = True) -> list[str]:
    """The lines of ``text`` as Python numbers them (breaks: \\r\\n, \\r, \\n)."""
    if not _OTHER_BREAKS.search(text):
        return text.splitlines(keepends)
    lines = _PY_LINE.findall(text)
    return lines if keepends else [line.rstrip("\r\n") for line in lines]


def decode_source(data: bytes) -> str:
    """Decode like Python does (PEP 263 cookie, BOM); raises on failure."""
    enc, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(enc)
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def read_source(path: str) -> str:
    """Decode like Python does (PEP 263 cookie, BOM); raises on failure."""
    return decode_source(read_bytes(path))


class TempFileError(OSError):
    """No temporary file could be created next to the target (nothing was written)."""


def atomic_write(
    path: str | os.PathLike,
    data: bytes,
    *,
    mode: int | None = None,
    owner: tuple[int, int] | None = None,
    durable: bool = True,
    prefix: str = ".cachelint-",
) -> None:
    """Replace ``path``'s contents with ``data``, atomically.

    The bytes go to a temporary file in the same directory, are flushed (and,
    when ``durable``, synced to disk), get ``mode`` and, where allowed,
    ``owner``, and replace the file with one ``os.replace``: a reader, or a
    crash at any moment, sees the old file or the new one, never a mix. On
    any failure the temporary file is removed and the exception propagates
    (:class:`TempFileError` when the temporary file could not be created).
    """
    directory = os.path.dirname(os.fspath(path)) or "."
    try:
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=directory)
    except OSError as e:
        raise TempFileError(e.errno, e.strerror, e.filename) from e
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        if owner is not None and hasattr(os, "chown") and owner != (os.getuid(), os.getgid()):
            try:
                os.chown(tmp, *owner)
            except OSError:
                pass  # not allowed: the new file keeps this process's owner
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
