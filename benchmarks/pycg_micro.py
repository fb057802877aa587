"""cachelint's call graph against PyCG's micro-benchmark: edge precision and recall.

    python benchmarks/pycg_micro.py --pycg /tmp/pycg              # a checkout of vitsalis/PyCG (or its micro-benchmark/)
    python benchmarks/pycg_micro.py --pycg /tmp/pycg --pycg-bin /tmp/pycg-venv/bin/pycg   # PyCG's own figures beside
    python benchmarks/pycg_micro.py --pycg /tmp/pycg --json out.json --show-misses

PyCG's micro-benchmark (``micro-benchmark/snippets/<category>/<test>/``) holds
about 120 small programs, each with a ``main.py`` and the call graph PyCG's
authors wrote by hand, ``callgraph.json``: ``{caller: [callee, ...]}`` of
module-qualified names, ``main`` standing for ``main.py``'s top-level code.
PyCG's own test (``micro-benchmark/base.py``) compares whole graphs for
equality; here each graph is a set of edges ``(caller, callee)``, and we count
true positives, false positives and misses per category:

- precision = found edges in the truth / found edges; recall = truth edges found / truth edges
  (edges summed over the category's programs, not averaged per program);
- both sides are normalised as PyCG names things: cachelint's
  ``f.<locals>.g`` becomes ``f.g`` and ``builtins.len`` becomes
  ``<builtin>.len``; lambdas, which cachelint names ``<lambda>`` with a
  counter per scope in source order, as PyCG does, match ``<lambda1>``...;
- each program is analysed as PyCG analyses it, with its folder as the import
  root: the folder is copied to a temporary directory without a top-level
  ``__init__.py`` (some folders have one, which would otherwise make every
  module name start with the folder's name);
- builtin edges (``<builtin>.len``, ``<builtin>.super``) are edges like any
  other, in every category whose truth lists them (``builtins``, ``mro``,
  ``generators``...), because a linter's cost model needs them; PyCG's
  pseudo-types ``<**PyStr**>.join`` are counted too (cachelint does not
  produce them: they cost recall in ``builtins``);
- the target categories (``--categories``, default: classes, mro,
  decorators, imports, returns, args, dicts, lists, lambdas, generators,
  builtins) make the "overall" row; every category is listed.

With ``--pycg-bin`` (PyCG's command, e.g. installed with ``pip install pycg``
into a throwaway venv), PyCG runs on the same programs
(``pycg --package DIR DIR/main.py``) and is scored the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

TARGET = (
    "classes",
    "mro",
    "decorators",
    "imports",
    "returns",
    "args",
    "dicts",
    "lists",
    "lambdas",
    "generators",
    "builtins",
)


def normalise(name: str) -> str:
    name = name.replace(".<locals>", "")
    if name.startswith("builtins."):
        name = "<builtin>." + name[len("builtins.") :]
    return name


def edges(graph: dict) -> set[tuple[str, str]]:
    return {(normalise(a), normalise(b)) for a, callees in graph.items() for b in callees}


def snippets(root: Path) -> list[tuple[str, Path]]:
    for cand in (root / "micro-benchmark" / "snippets", root / "snippets", root):
        if cand.is_dir() and any(cand.glob("*/*/callgraph.json")):
            return sorted((p.parent.parent.name, p.parent) for p in cand.glob("*/*/callgraph.json"))
    raise SystemExit(f"no micro-benchmark snippets under {root}")


def as_import_root(src: Path, tmp: Path) -> Path:
    dst = tmp / src.name
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("callgraph.json", "README.md"))
    init = dst / "__init__.py"
    if init.exists():
        init.unlink()
    return dst


def run_cachelint(d: Path) -> dict:
    from cachelint.api import call_graph

    cwd = os.getcwd()
    os.chdir(d)
    try:
        return call_graph(["."], jobs=1)
    finally:
        os.chdir(cwd)


def run_pycg(pycg: str, d: Path) -> dict | None:
    out = d / "pycg-out.json"
    try:
        subprocess.run(
            [pycg, "--package", str(d), str(d / "main.py"), "-o", str(out)],
            check=True,
            capture_output=True,
            timeout=120,
        )
        return json.loads(out.read_text())
    except (subprocess.SubprocessError, OSError, ValueError):
        return None


class Score:
    def __init__(self) -> None:
        self.tp = self.fp = self.fn = 0
        self.programs = self.exact = self.failed = 0

    def add(self, found: set | None, truth: set) -> None:
        self.programs += 1
        if found is None:
            self.failed += 1
            found = set()
        self.tp += len(found & truth)
        self.fp += len(found - truth)
        self.fn += len(truth - found)
        self.exact += found == truth

    def merge(self, o: Score) -> None:
        for k in ("tp", "fp", "fn", "programs", "exact", "failed"):
            setattr(self, k, getattr(self, k) + getattr(o, k))

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--pycg", required=True, type=Path, help="a checkout of vitsalis/PyCG, or its micro-benchmark folder"
    )
    ap.add_argument("--pycg-bin", default=None, help="PyCG's command, to score PyCG itself on the same programs")
    ap.add_argument("--categories", default=",".join(TARGET), help="the categories of the overall row")
    ap.add_argument("--json", type=Path, default=None, help="write per-program results here")
    ap.add_argument("--show-misses", action="store_true", help="print each program's extra and missed edges")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = ap.parse_args(argv)
    target = tuple(c for c in args.categories.split(",") if c)
    tools = ["cachelint"] + (["pycg"] if args.pycg_bin else [])
    scores: dict = {t: {} for t in tools}
    rows = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="cachelint-pycg-") as tmp:
        for i, (cat, src) in enumerate(snippets(args.pycg)):
            truth = edges(json.loads((src / "callgraph.json").read_text()))
            d = as_import_root(src, Path(tmp) / str(i))
            row = {"category": cat, "program": src.name}
            for tool in tools:
                if tool == "cachelint":
                    try:
                        graph: dict | None = run_cachelint(d)
                    except Exception as e:  # a crash is a failed program, reported
                        print(f"cachelint failed on {cat}/{src.name}: {type(e).__name__}: {e}", file=sys.stderr)
                        graph = None
                else:
                    graph = run_pycg(args.pycg_bin, d)
                found = edges(graph) if graph is not None else None
                scores[tool].setdefault(cat, Score()).add(found, truth)
                row[tool] = {
                    "extra": sorted(map(list, (found or set()) - truth)),
                    "missed": sorted(map(list, truth - (found or set()))),
                    "failed": graph is None,
                }
                if args.show_misses and tool == "cachelint" and (found != truth):
                    print(f"{cat}/{src.name}:")
                    for a, b in sorted((found or set()) - truth):
                        print(f"  extra  {a} -> {b}")
                    for a, b in sorted(truth - (found or set())):
                        print(f"  missed {a} -> {b}")
            rows.append(row)
    print(_table(scores, tools, target, args.markdown))
    print(f"({len(rows)} programs, {time.monotonic() - t0:.1f} s)", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


def _table(scores: dict, tools: list[str], target: tuple, markdown: bool) -> str:
    cats = sorted(scores["cachelint"])
    head = ["category", "programs"]
    for t in tools:
        head += [f"{t} precision %", f"{t} recall %", f"{t} exact"]
    lines = []

    def row(name: str, ss: list) -> list:
        out = [name, str(ss[0].programs)]
        for s in ss:
            out += [pct(s.precision), pct(s.recall), f"{s.exact}/{s.programs}"]
        return out

    body = [row(c, [scores[t][c] for t in tools]) for c in cats]
    for label, sel in (("overall (target categories)", [c for c in cats if c in target]), ("all categories", cats)):
        merged = []
        for t in tools:
            m = Score()
            for c in sel:
                m.merge(scores[t][c])
            merged.append(m)
        body.append(row(f"**{label}**" if markdown else label, merged))
    if markdown:
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "|".join(" --- " for _ in head) + "|")
        lines += ["| " + " | ".join(r) + " |" for r in body]
    else:
        widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
        lines.append("  ".join(h.ljust(w) for h, w in zip(head, widths)))
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in body]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
