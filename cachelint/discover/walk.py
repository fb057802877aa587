"""Stage 1: discover the Python files to analyse.

Walks the given paths, honours ``.gitignore`` files (the root's and nested
ones, with git's pattern semantics for the common cases: anchored patterns,
``**``, trailing ``/`` for directories and ``!`` negation) and the configured
``exclude`` globs, and derives each file's dotted module name from the package
layout and the source roots (namespace packages included: see
:class:`ModuleNamer`).
Explicitly named files are always included, as ruff does.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..globs import bracket

DEFAULT_EXCLUDE = (
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".cachelint_cache",
    ".pytest_cache",
    "build",
    "dist",
    "node_modules",
    "site-packages",
)


@dataclass(frozen=True)
class SourceFile:
    path: str  # as given / relative to the CWD when possible
    module: str  # dotted module name ("" when it cannot be derived)
    is_package: bool  # an __init__.py


class _IgnoreRule:
    __slots__ = ("dir_only", "negate", "regex")

    def __init__(self, pattern: str) -> None:
        self.negate = pattern.startswith("!")
        if self.negate:
            pattern = pattern[1:]
        self.dir_only = pattern.endswith("/")
        pattern = pattern.rstrip("/")
        anchored = "/" in pattern
        pattern = pattern.lstrip("/")
        self.regex = re.compile(_glob_to_regex(pattern, anchored))

    def matches(self, rel: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        return self.regex.match(rel) is not None


def _glob_to_regex(pattern: str, anchored: bool) -> str:
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("/**", i) and i + 3 == len(pattern):
            out.append("/.*")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and (b := bracket(pattern, i)) is not None:
            out.append(b[0])
            i = b[1]
        elif c == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    prefix = "" if anchored else "(?:.*/)?"
    return "^" + prefix + "".join(out) + "$"


class GitIgnore:
    """The ignore rules of one directory's ``.gitignore``."""

    def __init__(self, base: Path, rules: list[_IgnoreRule]) -> None:
        self.base = base
        self.rules = rules

    @classmethod
    def load(cls, directory: Path) -> GitIgnore | None:
        f = directory / ".gitignore"
        try:
            text = f.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        rules = []
        for raw in text.splitlines():
            line = raw.rstrip()
            if not line or line.startswith("#"):
                continue
            rules.append(_IgnoreRule(line))
        return cls(directory, rules) if rules else None

    def decision(self, path: Path, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included, None: no rule says."""
        try:
            rel = path.relative_to(self.base).as_posix()
        except ValueError:
            return None
        result = None
        for rule in self.rules:
            if rule.matches(rel, is_dir):
                result = not rule.negate
        return result


def _find_repo_root(start: Path) -> Path | None:
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return None


def _resolve(p: Path) -> Path:
    """``Path.resolve`` that survives a symlink loop (such a file is then
    reported unreadable, CL000, like any file that cannot be opened)."""
    try:
        return p.resolve()
    except (OSError, RuntimeError):
        return p.absolute()


# a directory holding one of these (and no __init__.py) is a project's root:
# its top package is never above it (the climb for namespace packages stops there)
PROJECT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")


class ModuleNamer:
    """Dotted module names from the package layout, memoized per directory.

    A file's module name is its path below a *source root*, dotted:

    1. a configured or auto-detected source root (``src`` in the configuration,
       a ``src/`` directory at the project root or in a given directory): the
       deepest one holding the file, if every directory below it is an
       identifier;
    2. otherwise the directory holding the top package: the outermost
       ancestor directory with an ``__init__.py``, climbing over directories
       without one (PEP 420 namespace packages: ``sglang/srt/managers/`` has no
       ``__init__.py`` but ``sglang/`` has), never above a project root
       (a directory with one of ``PROJECT_MARKERS`` and no ``__init__.py``) nor across a directory whose name is not an
       identifier (it cannot be a package);
    3. otherwise the file's own directory: a script gets its bare stem.
    """

    def __init__(self, roots=()) -> None:
        # deepest first: the innermost root holding a file names it
        self.roots = sorted({_resolve(Path(r)) for r in roots}, key=lambda p: (-len(p.parts), str(p)))
        self._parts: dict[Path, list[str]] = {}
        self._chains: dict[Path, tuple[tuple[str, bool], ...]] = {}

    def name(self, path: Path, *, resolved: bool = False) -> tuple[str, bool]:
        if not resolved:
            path = _resolve(path)
        is_package = path.name == "__init__.py"
        parts = list(self.package_parts(path.parent))
        if not is_package:
            parts.append(path.stem)
        name = ".".join(p for p in parts if p)
        if not all(p.isidentifier() for p in parts):
            # e.g. a file called "my-script.py": keep a readable, unique name
            name = ".".join(parts)
        return name, is_package

    def package_parts(self, d: Path) -> list[str]:
        """Names of the packages enclosing directory ``d``, outermost first."""
        hit = self._parts.get(d)
        if hit is not None:
            return hit
        out: list[str] | None = None
        for r in self.roots:
            if d == r or r in d.parents:
                rel = d.relative_to(r).parts
                if all(p.isidentifier() for p in rel):
                    out = list(rel)
                break
        if out is None:
            chain = self._chain(d)
            first = next((i for i, (_, init) in enumerate(chain) if init), None)
            out = [] if first is None else [n for n, _ in chain[first:]]
        self._parts[d] = out
        return out

    def _chain(self, d: Path) -> tuple[tuple[str, bool], ...]:
        """(name, holds __init__.py) of ``d`` and the ancestors that could be
        package levels above it, outermost first."""
        hit = self._chains.get(d)
        if hit is not None:
            return hit
        if not d.name.isidentifier():  # also the filesystem root
            out: tuple[tuple[str, bool], ...] = ()
        else:
            init = (d / "__init__.py").exists()
            entry = ((d.name, init),)
            # a package's own module called setup.py is no project root
            if d.parent == d or (not init and any((d / m).exists() for m in PROJECT_MARKERS)):
                out = entry
            else:
                out = self._chain(d.parent) + entry
        self._chains[d] = out
        return out


def module_name_for(path: Path, namer: ModuleNamer | None = None, *, resolved: bool = False) -> tuple[str, bool]:
    """Dotted module name from the package layout (see :class:`ModuleNamer`)."""
    return (namer or ModuleNamer()).name(path, resolved=resolved)


def project_dir(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` holding a project marker."""
    for d in (start, *start.parents):
        if any((d / m).exists() for m in PROJECT_MARKERS):
            return d
    return None


def auto_source_roots(paths: list[str]) -> list[Path]:
    """``src/`` directories of the given directories and of their projects."""
    out: list[Path] = []
    for given in paths:
        d = _resolve(Path(given))
        if not d.is_dir():
            d = d.parent
        proj = project_dir(d)
        for base in (d, proj):
            if base is not None and (base / "src").is_dir():
                out.append(base / "src")
    return out


def _exclude_regexes(patterns) -> tuple[re.Pattern, re.Pattern]:
    """A path is excluded when a pattern matches its name, its path, or a tail of its path."""
    names = [fnmatch.translate(p) for p in patterns]
    tails = [fnmatch.translate("*/" + p.lstrip("/")) for p in patterns]
    return re.compile("|".join(names) or "(?!)"), re.compile("|".join(names + tails) or "(?!)")


def _display(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # other drive on Windows
        return str(path)


def discover(
    paths: list[str],
    *,
    exclude: tuple[str, ...] = (),
    respect_gitignore: bool = True,
    src: tuple[str | Path, ...] | list[Path] = (),
    vendored: tuple[str, ...] = (),
    skipped: list[str] | None = None,
) -> list[SourceFile]:
    """Every ``.py``/``.pyi``-less Python source under ``paths``, sorted, unique.

    ``src``: configured source roots (absolute, or relative to the current
    directory); ``src/`` directories are added (see :func:`auto_source_roots`).
    ``vendored``: globs of directory names holding other projects' code
    (``third_party``; ``{package}_*``: a package directly inside a top-level
    package and named after it, as ``vllm/vllm_flash_attn``); such
    directories are not entered, and ``skipped`` receives their paths."""
    excl = tuple(DEFAULT_EXCLUDE) + tuple(exclude)
    vendor_rx = re.compile("|".join(fnmatch.translate(v) for v in vendored if "{package}" not in v) or "(?!)")
    prefixed = [v.replace("{package}", "\0") for v in vendored if "{package}" in v]

    def is_vendored(p: Path) -> bool:
        name = p.name
        if vendor_rx.match(name):
            return True
        if prefixed and (p / "__init__.py").exists():
            parent = p.parent
            if (parent / "__init__.py").exists() and not (parent.parent / "__init__.py").exists():
                return any(fnmatch.fnmatchcase(name, v.replace("\0", parent.name)) for v in prefixed)
        return False

    seen: set[Path] = set()
    out: list[SourceFile] = []

    rx_name, rx_path = _exclude_regexes(excl)
    namer = ModuleNamer([*src, *auto_source_roots(paths)])

    def excluded(p: Path) -> bool:
        return rx_name.match(p.name) is not None or rx_path.match(p.as_posix()) is not None

    def add(p: Path, rp: Path | None = None) -> None:
        rp = _resolve(p) if rp is None else rp
        if rp in seen:
            return
        seen.add(rp)
        module, is_pkg = namer.name(rp, resolved=True)
        out.append(SourceFile(_display(p), module, is_pkg))

    for given in paths:
        root = Path(given)
        if not root.exists() and not root.is_symlink():
            raise FileNotFoundError(given)
        if root.is_file() or not root.is_dir():  # a file, or a broken or looping link
            add(root)  # explicitly named: always included
            continue
        stack_ignores: list[GitIgnore] = []
        if respect_gitignore:
            repo = _find_repo_root(root.resolve())
            if repo is not None:
                # .gitignore files between the repo root and the given dir
                d = root.resolve()
                chain = [d, *d.parents]
                for anc in reversed(chain):
                    if repo in (anc, *anc.parents):
                        gi = GitIgnore.load(anc)
                        if gi:
                            stack_ignores.append(gi)
        _walk(root, stack_ignores, respect_gitignore, excluded, add, set(), is_vendored if vendored else None, skipped)
    out.sort(key=lambda f: f.path)
    return _unique_modules(out)


def _unique_modules(files: list[SourceFile]) -> list[SourceFile]:
    """Two scripts called ``conftest.py`` must not shadow each other in the
    whole-program maps: colliding names fall back to their dotted path."""
    seen: dict[str, int] = {}
    for f in files:
        seen[f.module] = seen.get(f.module, 0) + 1
    out = []
    for f in files:
        if f.module and seen[f.module] > 1:
            rel = Path(f.path).with_suffix("")
            parts = [p for p in rel.parts if p not in ("..", ".", "/")]
            if f.is_package:
                parts = parts[:-1]
            name = ".".join(parts)
            f = SourceFile(f.path, name, f.is_package)
        out.append(f)
    return out


def _is_ignored(path: Path, is_dir: bool, ignores: list[GitIgnore]) -> bool:
    result = False
    for gi in ignores:
        d = gi.decision(_resolve(path) if not path.is_absolute() else path, is_dir)
        if d is not None:
            result = d
    return result


def _walk(directory, ignores, respect_gitignore, excluded, add, visiting: set, vendored=None, skipped=None) -> None:
    try:
        real = directory.resolve()
    except (OSError, RuntimeError):
        return
    if real in visiting:  # symlink loop
        return
    visiting = visiting | {real}
    if respect_gitignore:
        gi = GitIgnore.load(directory)
        if gi and (not ignores or ignores[-1].base != gi.base.resolve()):
            gi.base = gi.base.resolve()
            ignores = ignores + [gi]
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        p = Path(entry.path)
        try:
            is_dir = entry.is_dir()
            # a FIFO or socket is skipped; a broken link is reported unreadable
            is_file = entry.is_file() or entry.is_symlink()
        except OSError:  # a symlink loop: a .py one is reported unreadable (CL000)
            is_dir, is_file = False, True
        if excluded(p):
            continue
        # the real path without a realpath() per file, unless it is a link
        try:
            rp = _resolve(p) if entry.is_symlink() else real / entry.name
        except OSError:
            rp = _resolve(p)
        if respect_gitignore and ignores and _is_ignored(rp, is_dir, ignores):
            continue
        if is_dir:
            if vendored is not None and vendored(p):
                if skipped is not None:
                    skipped.append(_display(p))
                continue
            _walk(p, ignores, respect_gitignore, excluded, add, visiting, vendored, skipped)
        elif is_file and entry.name.endswith(".py"):
            add(p, rp)
