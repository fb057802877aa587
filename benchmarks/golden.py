"""Golden outputs: cachelint's output on fixed inputs, compared with a git ref's.

    python benchmarks/golden.py compare --ref 16ce5fc           # side by side, now
    python benchmarks/golden.py record                          # write benchmarks/golden.json
    python benchmarks/golden.py check                           # compare with benchmarks/golden.json
    python benchmarks/golden.py compare --ref HEAD --only fixtures --keep /tmp/g

The inputs: every ``fixtures/*/before`` tree (with its case's ``args``),
CPython's ``Lib/`` of the running interpreter, vLLM 0.10.2 and the newest
vLLM release (downloaded from PyPI by ``tests/vllm_source.py``, cached outside
the repository). The outputs: ``check --output-format json --unsafe-fixes``
(findings, fix edits, safety classes, messages), ``check --diff`` and
``check --diff --unsafe-fixes``, all with ``--no-cache``.

``compare`` runs the ref's cachelint (a ``git worktree`` of it) and this
checkout's side by side and prints, per input and output, ``same`` or the
first differing lines. ``record`` stores only digests and per-rule, per-file
counts (never engine code or its text); ``check`` compares with them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
from collections import Counter
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
RECORD = REPO / "benchmarks" / "golden.json"
NEWEST_VLLM = "0.33.0"
MODES = {
    "json": ["--output-format", "json", "--unsafe-fixes"],
    "diff": ["--diff", "--no-unsafe-fixes"],
    "diff-unsafe": ["--diff", "--unsafe-fixes"],
}


def _vllm(version: str) -> Path:
    out = subprocess.run(
        [sys.executable, str(REPO / "tests" / "vllm_source.py"), version], capture_output=True, text=True, check=True
    )
    return Path(out.stdout.strip().splitlines()[-1])


def inputs(only: set[str] | None) -> list[tuple[str, Path, list[str], list[str]]]:
    """(name, working directory, extra args, paths) per input."""
    out = []
    for case in sorted((REPO / "fixtures").glob("*/case.toml")):
        spec = tomllib.loads(case.read_text(encoding="utf-8"))
        out.append((f"fixtures/{case.parent.name}", case.parent / "before", list(spec.get("args", [])), ["."]))
    lib = Path(sysconfig.get_paths()["stdlib"])
    out.append(("cpython-Lib", lib.parent, ["--preset", "none"], [lib.name]))
    for version in ("0.10.2", NEWEST_VLLM):
        out.append((f"vllm-{version}", Path(f"<vllm-{version}>"), [], ["vllm"]))
    if only:
        out = [i for i in out if any(i[0].startswith(o) for o in only)]
    return [(n, _vllm(n.split("-", 1)[1]) if n.startswith("vllm-") else d, a, p) for n, d, a, p in out]


def run(pythonpath: Path, name: str, cwd: Path, args: list[str], paths: list[str], mode: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(pythonpath), NO_COLOR="1")
    env.pop("CACHELINT_CACHE_DIR", None)
    cmd = [sys.executable, "-m", "cachelint", "check", "--no-cache", *MODES[mode], *args, *paths]
    with tempfile.TemporaryDirectory(prefix="cachelint-golden-") as tmp:
        work = cwd
        if cwd.is_relative_to(REPO) or mode != "json":
            # fixes are never written (--diff), but run on a copy all the same
            # for trees inside a checkout, whose pyproject would configure the run
            work = Path(tmp) / "tree"
            subprocess.run(["cp", "-r", str(cwd), str(work)], check=True)
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{name} {mode}: cachelint exited {proc.returncode}\n{proc.stderr[-3000:]}")
    return proc.stdout


def summary(name: str, mode: str, out: str) -> dict:
    rec = {"sha256": hashlib.sha256(out.encode()).hexdigest(), "bytes": len(out.encode())}
    if mode == "json":
        findings = json.loads(out or "[]")
        rec["by_rule"] = dict(sorted(Counter(f["code"] for f in findings).items()))
        rec["by_rule_fix"] = dict(
            sorted(
                Counter(f"{f['code']}:{(f.get('fix') or {}).get('applicability', 'none')}" for f in findings).items()
            )
        )
        rec["by_file"] = dict(sorted(Counter(f["path"] for f in findings).items()))
    else:
        rec["files"] = sum(1 for line in out.splitlines() if line.startswith("+++ "))
    return rec


def worktree(ref: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix="cachelint-golden-ref-"))
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), ref], check=True, capture_output=True
    )
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["compare", "record", "check"])
    ap.add_argument("--ref", default="HEAD", help="compare: the git ref whose output is the baseline")
    ap.add_argument("--only", default="", help="comma-separated input name prefixes (fixtures, cpython, vllm-0.10.2)")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--keep", help="compare: write both outputs of every input here")
    opts = ap.parse_args()
    only = {o for o in opts.only.split(",") if o} or None
    modes = [m for m in opts.modes.split(",") if m]
    todo = inputs(only)
    if opts.command == "record":
        # with --only, the other inputs keep what was recorded for them
        record = json.loads(RECORD.read_text()) if only and RECORD.is_file() else {}
        record.update({n: {m: summary(n, m, run(REPO, n, d, a, p, m)) for m in modes} for n, d, a, p in todo})
        RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        print(f"wrote {RECORD.relative_to(REPO)}: {len(record)} inputs")
        return
    failed = 0
    if opts.command == "check":
        record = json.loads(RECORD.read_text())
        for n, d, a, p in todo:
            for m in modes:
                got = summary(n, m, run(REPO, n, d, a, p, m))
                want = record.get(n, {}).get(m)
                same = want is not None and got["sha256"] == want["sha256"]
                failed += not same
                print(f"{'same' if same else 'DIFFERENT':9} {n} {m}")
                if not same and want is not None and m == "json":
                    print(f"          rules {want['by_rule']} -> {got['by_rule']}")
        sys.exit(1 if failed else 0)
    ref = worktree(opts.ref)
    try:
        for n, d, a, p in todo:
            for m in modes:
                old, new = run(ref, n, d, a, p, m), run(REPO, n, d, a, p, m)
                same = old == new
                failed += not same
                print(f"{'same' if same else 'DIFFERENT':9} {n} {m}", flush=True)
                if opts.keep:
                    k = Path(opts.keep)
                    k.mkdir(parents=True, exist_ok=True)
                    (k / f"{n.replace('/', '_')}.{m}.old").write_text(old)
                    (k / f"{n.replace('/', '_')}.{m}.new").write_text(new)
                if not same:
                    ol, nl = old.splitlines(), new.splitlines()
                    i = next((i for i, (x, y) in enumerate(zip(ol, nl)) if x != y), min(len(ol), len(nl)))
                    print(f"          first difference at line {i + 1}:")
                    print(f"          - {ol[i][:200] if i < len(ol) else '<end>'}")
                    print(f"          + {nl[i][:200] if i < len(nl) else '<end>'}")
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(ref)], capture_output=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
