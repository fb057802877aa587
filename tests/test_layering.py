"""The package layout is the pipeline: a module imports only from its own layer or lower ones.

Every import of a ``cachelint`` module counts, at the top of a module or inside a
function, except those under ``if TYPE_CHECKING:`` (annotations only). The
layers, lowest first, are listed in ``LAYERS``; ``docs/architecture.md`` draws them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "cachelint"

# lowest first; a module may import its own layer and the ones before it
LAYERS: list[tuple[str, ...]] = [
    # foundation: plain data, configuration, and the helpers every stage uses
    ("model", "config", "files", "gcpause", "globs", "progress"),
    ("discover",),
    ("index",),
    ("lock",),
    ("semantic",),
    ("facts",),
    ("fixes",),
    ("rules",),
    ("profiling",),
    ("apply",),
    ("incremental",),
    ("output",),
    ("api",),
    ("cli", "__main__"),
]
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "cachelint" or len(parts) == 1:
        return None
    return parts[1]


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every cachelint import made at run time."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_lines(tree)
    out = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names if a.name.startswith("cachelint"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("cachelint"):
                continue
            if node.module is None or target == "cachelint":  # `from . import x`: x may be a module
                out.extend((node.lineno, f"{target}.{a.name}") for a in node.names)
            else:
                out.append((node.lineno, target))
    return out


MODULES = sorted(PACKAGE.rglob("*.py"))
CODEMODS = sorted((ROOT / "codemods").rglob("*.py"))


def test_every_module_is_in_a_layer():
    unplaced = {_layer(_module_name(p)) for p in MODULES} - set(RANK) - {None}
    assert not unplaced, f"add these to LAYERS (and docs/architecture.md): {sorted(unplaced)}"


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(ROOT)) for p in MODULES])
def test_no_module_imports_a_higher_layer(path):
    own = _layer(_module_name(path))
    if own is None:  # cachelint/__init__.py
        return
    bad = []
    for line, target in imports_of(path):
        layer = _layer(target)
        if layer is not None and layer in RANK and RANK[layer] > RANK[own]:
            bad.append(f"{path.relative_to(ROOT)}:{line} imports {target} ({layer} is above {own})")
    assert not bad, "\n".join(bad)


def test_every_import_names_an_existing_module():
    """A relative import that climbs one level too few fails only when its line
    runs (a lazy import in a rare branch): every target must exist."""
    names = {_module_name(p) for p in MODULES} | {_module_name(p) for p in CODEMODS}
    missing = []
    for p in [*MODULES, *CODEMODS]:
        for line, target in imports_of(p):
            parent = target.rpartition(".")[0]
            # `from pkg import name`: name may be a module or a name in pkg
            if target not in names and parent not in names:
                missing.append(f"{p.relative_to(ROOT)}:{line} imports {target}")
    assert not missing, "\n".join(missing)


def test_no_import_cycles_between_modules():
    graph: dict[str, set[str]] = {}
    names = {_module_name(p) for p in MODULES}
    for p in MODULES:
        deps = set()
        for _, target in imports_of(p):
            while target and target not in names:
                target = target.rpartition(".")[0]
            if target and target != _module_name(p) and not _module_name(p).startswith(target + "."):
                deps.add(target)
        graph[_module_name(p)] = deps
    # package __init__ modules that re-export their own submodules are not cycles
    for m, deps in graph.items():
        graph[m] = {d for d in deps if not (d.startswith(m + ".") or m.startswith(d + "."))}
    seen: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        seen[m] = 1
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            if seen.get(d) == 1:
                cycle = stack[stack.index(d) :] + [d]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if d not in seen:
                visit(d)
        stack.pop()
        seen[m] = 2

    for m in sorted(graph):
        if m not in seen:
            visit(m)


@pytest.mark.parametrize("path", CODEMODS, ids=[str(p.relative_to(ROOT)) for p in CODEMODS])
def test_codemods_import_only_the_foundation(path):
    """The LibCST codemods (applied by ``apply/``, runnable alone by LibCST's driver)
    know cachelint's plain data, nothing of its analysis."""
    foundation = set(LAYERS[0])
    bad = [
        f"{path.relative_to(ROOT)}:{line} imports {target}"
        for line, target in imports_of(path)
        if _layer(target) is not None and _layer(target) not in foundation
    ]
    assert not bad, "\n".join(bad)


def test_the_checker_sees_an_upward_import(tmp_path, monkeypatch):
    """The test above can fail: a lower layer importing the API is caught."""
    pkg = tmp_path / "cachelint" / "index"
    pkg.mkdir(parents=True)
    (tmp_path / "cachelint" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    bad = pkg / "bad.py"
    bad.write_text("def f():\n    from ..api import check\n    return check\n")
    monkeypatch.setattr(__import__(__name__, fromlist=["ROOT"]), "ROOT", tmp_path)
    with pytest.raises(AssertionError, match="api is above index"):
        test_no_module_imports_a_higher_layer(bad)
