"""Configuration: ``[tool.cachelint]`` in ``pyproject.toml`` plus presets.

Presets are data files in ``cachelint/presets/``: ``python`` (generic
expensive calls, always on) and ``vllm`` (hot roots and vLLM's expensive calls,
on when the analysed tree contains a ``vllm`` package, or with
``preset = "vllm"`` / ``--preset vllm``). Users replace the lists with
``hot-roots`` / ``expensive-calls`` or add to them with ``extend-hot-roots`` /
``extend-expensive-calls``.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10
    import tomli as tomllib

PRESET_DIR = Path(__file__).parent / "presets"
# decorators whose function runs its body once per arguments (or once per
# object), not per call; presets add an engine's own, and so can users
DEFAULT_CACHE_DECORATORS = ("cache", "lru_cache", "cached", "cached_property", "memoize", "cache_method")

# directories holding other projects' code, not analysed by default (and
# reported once as skipped): fnmatch globs matched against directory names;
# "{package}_*" matches a package directly inside a top-level package and
# named after it (vllm/vllm_flash_attn: the project's bundled copy of another)
DEFAULT_VENDORED = ("third_party", "vendor", "_vendor", "vendored", "_vendored", "{package}_*")
KINDS = ("per-token", "per-step", "per-layer", "per-request", "per-batch", "once")
COSTS = ("high", "low")


class ConfigError(Exception):
    """A configuration problem the user must fix (exit code 2)."""


@dataclass(frozen=True)
class HotRoot:
    pattern: str
    kind: str = "per-step"
    why: str = ""
    # the pattern matches a decorator of the function (``fastapi.*.post``: a
    # route of a FastAPI app or router), not its qualified name
    decorator: bool = False


@dataclass(frozen=True)
class CatalogEntry:
    pattern: str
    kind: str = "expensive"
    pure: bool = False
    why: str = ""
    cost: str = "high"  # high | low: CL002 reports low-cost entries only with min-cost = "low"
    # never raises (for any arguments, on any host): a hoist may run it where it did not run
    total: bool = False
    # seconds per call (`time = "20us"`); None: the calibrated time of its kind
    seconds: float | None = None
    # its value depends on where or when it is called, whatever its arguments
    # (the stack, the exception being handled): no two calls share a value
    varies: bool = False


@dataclass(frozen=True)
class CustomOpRegistrar:
    """A function that registers a Python function as a torch custom op
    (``custom-op-registrars``): a call of ``torch.ops.<namespace>.<op>``, or
    of one of its overloads (``.default``), then runs the registered function.
    Each argument is read by keyword, else at its position (None: not read)."""

    pattern: str  # glob on the registering function's qualified name, or its spelling
    decorator: bool = False  # used as a decorator of the registered function; else called with it
    op: tuple[str | None, int | None] = (None, None)  # the op's name; absent: the function's own
    function: tuple[str | None, int | None] = (None, None)  # a call's registered function
    namespace: str | None = None  # the op's namespace when the op's name and `library` do not say
    library: tuple[str | None, int | None] = (None, None)  # a torch.library.Library("<namespace>", ...)


@dataclass(frozen=True)
class Config:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    respect_gitignore: bool = True
    vendored: tuple[str, ...] = DEFAULT_VENDORED  # directory globs skipped as vendored code
    include_vendored: bool = False  # analyse vendored directories too
    preset: str = "auto"  # auto | none | comma-separated names
    hot_roots: tuple[HotRoot, ...] | None = None  # None: from presets
    extend_hot_roots: tuple[HotRoot, ...] = ()
    expensive_calls: tuple[CatalogEntry, ...] | None = None
    extend_expensive_calls: tuple[CatalogEntry, ...] = ()
    pure_calls: tuple[str, ...] = ()
    cache_decorators: tuple[str, ...] | None = None  # None: the defaults and the presets'
    cold_functions: tuple[str, ...] | None = None  # None: the presets'
    extend_cold_functions: tuple[str, ...] = ()
    extend_cache_decorators: tuple[str, ...] = ()
    src: tuple[str, ...] = ()  # source roots, relative to the configuration file's directory
    unsafe_fixes: bool = False
    min_cost: str = "high"  # CL002 reports catalog entries of at least this cost
    # `min-cost` given as a time ("10us"): findings estimated below it per step are dropped
    min_time: float | None = None
    # runs per step of each hot kind, overriding cachelint/facts/frequency.toml ([tool.cachelint.frequency])
    frequency: tuple[tuple[str, float], ...] = ()
    extend_compile_decorators: tuple[str, ...] = ()
    extend_receive_calls: tuple[str, ...] = ()
    extend_call_methods: tuple[str, ...] = ()
    extend_custom_op_registrars: tuple[CustomOpRegistrar, ...] = ()
    source: str | None = None  # the file it came from
    # resolved later by `resolve_presets`
    active_presets: tuple[str, ...] = ()
    roots: tuple[HotRoot, ...] = ()
    catalog: tuple[CatalogEntry, ...] = field(default=())
    decorators: tuple[str, ...] = DEFAULT_CACHE_DECORATORS
    cold: tuple[str, ...] = ()  # functions the hot-path walk never enters
    # class decorators that compile the class's forward (presets plus extend-compile-decorators)
    compile_decorators: tuple[str, ...] = ()
    # `Base.method`: calling an instance of a subclass of Base runs method (presets plus extend-call-methods)
    call_methods: tuple[str, ...] = ()
    # calls that take the next value from outside (presets plus extend-receive-calls)
    receive_calls: tuple[str, ...] = ()
    # functions that register torch custom ops (presets plus extend-custom-op-registrars)
    custom_op_registrars: tuple[CustomOpRegistrar, ...] = ()

    def with_overrides(self, **kw) -> Config:
        return replace(self, **{k: v for k, v in kw.items() if v is not None})

    def source_roots(self) -> tuple[Path, ...]:
        """``src`` as directories: relative to the configuration file, else to the current directory."""
        base = Path(self.source).parent if self.source else Path.cwd()
        return tuple(base / s for s in self.src)

    def vendored_globs(self) -> tuple[str, ...]:
        """The vendored-directory globs in force (none with ``include-vendored``)."""
        return () if self.include_vendored else self.vendored


_KEYS = {
    "select",
    "ignore",
    "exclude",
    "extend-exclude",
    "respect-gitignore",
    "preset",
    "hot-roots",
    "extend-hot-roots",
    "expensive-calls",
    "extend-expensive-calls",
    "pure-calls",
    "cache-decorators",
    "extend-cache-decorators",
    "cold-functions",
    "extend-cold-functions",
    "src",
    "unsafe-fixes",
    "min-cost",
    "vendored",
    "extend-vendored",
    "include-vendored",
    "frequency",
    "extend-compile-decorators",
    "extend-receive-calls",
    "extend-call-methods",
    "extend-custom-op-registrars",
}


def _str_list(d: dict, key: str, where: str) -> tuple[str, ...]:
    v = d.get(key, [])
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ConfigError(f"{where}: `{key}` must be a list of strings")
    return tuple(v)


def _call_methods(d: dict, key: str, where: str) -> tuple[str, ...]:
    """``Class.method`` strings: a qualified class name and a method name."""
    out = _str_list(d, key, where)
    for x in out:
        cls, _, method = x.rpartition(".")
        if not cls or not method.isidentifier():
            raise ConfigError(f"{where}: `{key}` entries are `package.Class.method`, not {x!r}")
    return out


def _cost(value, where: str, what: str) -> str:
    if value not in COSTS:
        raise ConfigError(f'{where}: {what} {value!r} must be "high" or "low"')
    return value


_UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3, "s": 1.0}


def parse_time(value: str) -> float | None:
    """``"20us"``, ``"1.5 ms"``, ``"300ns"`` in seconds; None if it is not a time."""
    text = value.strip().lower().replace(" ", "")
    for unit in sorted(_UNITS, key=len, reverse=True):
        if text.endswith(unit):
            try:
                n = float(text[: -len(unit)])
            except ValueError:
                return None
            return n * _UNITS[unit] if n >= 0 else None
    return None


def min_cost_setting(value, where: str) -> tuple[str, float | None]:
    """``min-cost``: ``"high"``, ``"low"``, or a time per step (``"10us"``): the
    catalog level CL002 reports, and the estimated time per step below which a
    finding is dropped (a time also lets CL002 report ``low`` entries)."""
    if value in COSTS:
        return value, None
    t = parse_time(value) if isinstance(value, str) else None
    if t is None:
        raise ConfigError(f'{where}: `min-cost` {value!r} must be "high", "low" or a time per step such as "10us"')
    return "low", t


def _frequency(v, where: str) -> tuple[tuple[str, float], ...]:
    if not isinstance(v, dict):
        raise ConfigError(f"{where}: `frequency` must be a table of hot kind = runs per step")
    out = []
    for k, n in v.items():
        if k not in KINDS:
            raise ConfigError(f"{where}: `frequency` kind {k!r} is not one of {', '.join(KINDS)}")
        if isinstance(n, bool) or not isinstance(n, (int, float)) or n < 0:
            raise ConfigError(f"{where}: `frequency.{k}` must be a number of runs per step (>= 0)")
        out.append((k, float(n)))
    return tuple(out)


def _roots(v, where: str, key: str) -> tuple[HotRoot, ...]:
    if not isinstance(v, list):
        raise ConfigError(f"{where}: `{key}` must be a list")
    out = []
    for item in v:
        if isinstance(item, str):
            out.append(HotRoot(item))
        elif isinstance(item, dict) and isinstance(item.get("pattern", item.get("decorator")), str):
            kind = item.get("kind", "per-step")
            if kind not in KINDS:
                raise ConfigError(f"{where}: `{key}` kind {kind!r} is not one of {', '.join(KINDS)}")
            if "pattern" in item and "decorator" in item:
                raise ConfigError(f"{where}: a `{key}` entry has a `pattern` or a `decorator`, not both")
            by_decorator = "decorator" in item
            pattern = item["decorator"] if by_decorator else item["pattern"]
            out.append(HotRoot(pattern, kind, str(item.get("why", "")), by_decorator))
        else:
            raise ConfigError(f"{where}: `{key}` entries must be strings or tables with a `pattern` or a `decorator`")
    return tuple(out)


def _registrars(v, where: str, key: str) -> tuple[CustomOpRegistrar, ...]:
    if not isinstance(v, list):
        raise ConfigError(f"{where}: `{key}` must be a list of tables")
    out = []
    for item in v:
        if not isinstance(item, dict) or len([k for k in ("call", "decorator") if k in item]) != 1:
            raise ConfigError(f"{where}: each `{key}` entry is a table with a `call` or a `decorator` glob")
        by_decorator = "decorator" in item
        pattern = item["decorator" if by_decorator else "call"]
        namespace = item.get("namespace")
        if not isinstance(pattern, str) or not (namespace is None or isinstance(namespace, str)):
            raise ConfigError(f"{where}: a `{key}` entry's `call`, `decorator` and `namespace` are strings")
        unknown = (
            set(item)
            - {"call", "decorator", "namespace"}
            - {f"{a}{s}" for a in ("op", "function", "library") for s in ("", "-position")}
        )
        if unknown:
            raise ConfigError(f"{where}: a `{key}` entry has unknown keys: {', '.join(sorted(unknown))}")

        function = _registrar_argument(item, "function", where, key)
        if not by_decorator and function == (None, None):
            raise ConfigError(f"{where}: a `{key}` entry with `call` names its `function` argument")
        op, library = (_registrar_argument(item, a, where, key) for a in ("op", "library"))
        out.append(CustomOpRegistrar(pattern, by_decorator, op, function, namespace, library))
    return tuple(out)


def _registrar_argument(item: dict, name: str, where: str, key: str) -> tuple[str | None, int | None]:
    """(keyword, position) of a registrar entry's argument ``name`` (``op``, ``function``, ``library``)."""
    kw, pos = item.get(name), item.get(f"{name}-position")
    if not (kw is None or isinstance(kw, str)) or not (
        pos is None or (isinstance(pos, int) and not isinstance(pos, bool) and pos >= 0)
    ):
        raise ConfigError(f"{where}: `{key}`: `{name}` is a keyword, `{name}-position` a position from 0")
    return kw, pos


def _catalog(v, where: str, key: str) -> tuple[CatalogEntry, ...]:
    if not isinstance(v, list):
        raise ConfigError(f"{where}: `{key}` must be a list")
    out = []
    for item in v:
        if isinstance(item, str):
            out.append(CatalogEntry(item))
        elif isinstance(item, dict) and isinstance(item.get("pattern"), str):
            cost = _cost(item.get("cost", "high"), where, f"`{key}` cost")
            seconds = None
            if "time" in item:
                seconds = parse_time(item["time"]) if isinstance(item["time"], str) else None
                if seconds is None:
                    raise ConfigError(f'{where}: `{key}` time {item["time"]!r} must be a time such as "20us"')
            out.append(
                CatalogEntry(
                    item["pattern"],
                    str(item.get("kind", "expensive")),
                    bool(item.get("pure", False)),
                    str(item.get("why", "")),
                    cost,
                    bool(item.get("total", False)),
                    seconds,
                    bool(item.get("varies", False)),
                )
            )
        else:
            raise ConfigError(f"{where}: `{key}` entries must be strings or tables with a `pattern`")
    return tuple(out)


def parse_table(t: dict, where: str) -> Config:
    unknown = sorted(set(t) - _KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) in [tool.cachelint]: {', '.join(unknown)}")
    kw: dict = {"source": where}
    kw["select"] = tuple(c.upper() for c in _str_list(t, "select", where))
    kw["ignore"] = tuple(c.upper() for c in _str_list(t, "ignore", where))
    kw["exclude"] = _str_list(t, "exclude", where) + _str_list(t, "extend-exclude", where)
    if "respect-gitignore" in t:
        kw["respect_gitignore"] = bool(t["respect-gitignore"])
    if "preset" in t:
        p = t["preset"]
        if isinstance(p, list):
            p = ",".join(p)
        if not isinstance(p, str):
            raise ConfigError(f"{where}: `preset` must be a string")
        kw["preset"] = p
    if "hot-roots" in t:
        kw["hot_roots"] = _roots(t["hot-roots"], where, "hot-roots")
    if "extend-hot-roots" in t:
        kw["extend_hot_roots"] = _roots(t["extend-hot-roots"], where, "extend-hot-roots")
    if "expensive-calls" in t:
        kw["expensive_calls"] = _catalog(t["expensive-calls"], where, "expensive-calls")
    if "extend-expensive-calls" in t:
        kw["extend_expensive_calls"] = _catalog(t["extend-expensive-calls"], where, "extend-expensive-calls")
    kw["pure_calls"] = _str_list(t, "pure-calls", where)
    kw["src"] = _str_list(t, "src", where)
    if "cache-decorators" in t:
        kw["cache_decorators"] = _str_list(t, "cache-decorators", where)
    kw["extend_cache_decorators"] = _str_list(t, "extend-cache-decorators", where)
    if "cold-functions" in t:
        kw["cold_functions"] = _str_list(t, "cold-functions", where)
    kw["extend_cold_functions"] = _str_list(t, "extend-cold-functions", where)
    if "unsafe-fixes" in t:
        kw["unsafe_fixes"] = bool(t["unsafe-fixes"])
    if "min-cost" in t:
        kw["min_cost"], kw["min_time"] = min_cost_setting(t["min-cost"], where)
    if "frequency" in t:
        kw["frequency"] = _frequency(t["frequency"], where)
    kw["extend_compile_decorators"] = _str_list(t, "extend-compile-decorators", where)
    kw["extend_receive_calls"] = _str_list(t, "extend-receive-calls", where)
    kw["extend_call_methods"] = _call_methods(t, "extend-call-methods", where)
    if "extend-custom-op-registrars" in t:
        kw["extend_custom_op_registrars"] = _registrars(
            t["extend-custom-op-registrars"], where, "extend-custom-op-registrars"
        )
    vendored = _str_list(t, "vendored", where) if "vendored" in t else DEFAULT_VENDORED
    kw["vendored"] = vendored + _str_list(t, "extend-vendored", where)
    if "include-vendored" in t:
        if not isinstance(t["include-vendored"], bool):
            raise ConfigError(f"{where}: `include-vendored` must be true or false")
        kw["include_vendored"] = t["include-vendored"]
    return Config(**kw)


def load_config_file(path: Path) -> Config:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such configuration file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from None
    if path.name == "pyproject.toml":
        table = data.get("tool", {}).get("cachelint", {})
    else:  # a dedicated cachelint.toml / .cachelint.toml
        table = data.get("tool", {}).get("cachelint", data)
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.cachelint] must be a table")
    return parse_table(table, str(path))


def find_config(start: Path) -> Path | None:
    """Nearest ``pyproject.toml`` with a ``[tool.cachelint]`` table, or a cachelint.toml."""
    try:
        start = start.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        start = start.absolute()
    if not start.is_dir():
        start = start.parent
    for d in (start, *start.parents):
        for name in ("cachelint.toml", ".cachelint.toml"):
            if (d / name).is_file():
                return d / name
        pp = d / "pyproject.toml"
        if pp.is_file():
            try:
                data = pp.read_bytes()
            except OSError:
                continue
            if b"[tool.cachelint" in data:  # then loading it reports any problem
                return pp
    return None


@functools.cache
def load_preset(name: str) -> dict:
    """A preset's parsed TOML (memoized: resolving reads each preset twice; do not mutate)."""
    path = PRESET_DIR / f"{name}.toml"
    if not path.is_file():
        available = sorted(p.stem for p in PRESET_DIR.glob("*.toml"))
        raise ConfigError(f"unknown preset {name!r} (available: {', '.join(available)})")
    with path.open("rb") as fh:
        return tomllib.load(fh)


def available_presets() -> list[str]:
    return sorted(p.stem for p in PRESET_DIR.glob("*.toml"))


def resolve_presets(cfg: Config, top_level_packages: set[str]) -> Config:
    """Pick the presets and merge them with the user's lists."""
    names: list[str] = ["python"]
    if cfg.preset == "none":
        names = []
    elif cfg.preset == "auto":
        for n in available_presets():
            if n == "python":
                continue
            data = load_preset(n)
            detect = data.get("preset", {}).get("detect", [])
            if any(d in top_level_packages for d in detect):
                names.append(n)
    else:
        for n in cfg.preset.split(","):
            n = n.strip()
            if n and n not in names:
                load_preset(n)  # validates
                names.append(n)
    roots: list[HotRoot] = []
    catalog: list[CatalogEntry] = []
    decorators: list[str] = list(DEFAULT_CACHE_DECORATORS)
    cold: list[str] = []
    compile_decorators: list[str] = []
    receives: list[str] = []
    call_methods: list[str] = []
    registrars: list[CustomOpRegistrar] = []
    pure: list[str] = []
    for n in names:
        data = load_preset(n)
        roots.extend(_roots(data.get("hot-roots", []), f"preset {n}", "hot-roots"))
        catalog.extend(_catalog(data.get("expensive-calls", []), f"preset {n}", "expensive-calls"))
        decorators.extend(_str_list(data, "cache-decorators", f"preset {n}"))
        cold.extend(_str_list(data, "cold-functions", f"preset {n}"))
        compile_decorators.extend(_str_list(data, "compile-decorators", f"preset {n}"))
        receives.extend(_str_list(data, "receive-calls", f"preset {n}"))
        call_methods.extend(_call_methods(data, "call-methods", f"preset {n}"))
        registrars.extend(_registrars(data.get("custom-op-registrars", []), f"preset {n}", "custom-op-registrars"))
        pure.extend(_str_list(data, "pure-calls", f"preset {n}"))
    compile_decorators.extend(cfg.extend_compile_decorators)
    receives.extend(cfg.extend_receive_calls)
    call_methods.extend(cfg.extend_call_methods)
    registrars.extend(cfg.extend_custom_op_registrars)
    if cfg.cache_decorators is not None:
        decorators = list(cfg.cache_decorators)
    decorators.extend(cfg.extend_cache_decorators)
    if cfg.cold_functions is not None:
        cold = list(cfg.cold_functions)
    cold.extend(cfg.extend_cold_functions)
    if cfg.hot_roots is not None:
        roots = list(cfg.hot_roots)
    if cfg.expensive_calls is not None:
        catalog = list(cfg.expensive_calls)
    roots.extend(cfg.extend_hot_roots)
    catalog.extend(cfg.extend_expensive_calls)
    catalog.extend(CatalogEntry(p, "declared-pure", True, "declared pure in a preset") for p in pure)
    catalog.extend(CatalogEntry(p, "declared-pure", True, "declared pure in configuration") for p in cfg.pure_calls)
    return replace(
        cfg,
        active_presets=tuple(names),
        roots=tuple(roots),
        catalog=tuple(catalog),
        decorators=tuple(dict.fromkeys(decorators)),
        cold=tuple(dict.fromkeys(cold)),
        compile_decorators=tuple(dict.fromkeys(compile_decorators)),
        receive_calls=tuple(dict.fromkeys(receives)),
        call_methods=tuple(dict.fromkeys(call_methods)),
        custom_op_registrars=tuple(dict.fromkeys(registrars)),
    )
