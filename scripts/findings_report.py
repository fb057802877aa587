"""Write docs/findings/vllm-VERSION.md: cachelint's report on a vLLM release.

    python scripts/findings_report.py 0.33.0

Runs ``cachelint check vllm`` on the release's source from PyPI (fetched by
tests/vllm_source.py, cached outside the repo) twice: with the defaults, and
with ``min-cost = "low"`` (which adds the cheap lookups: process groups,
context configs). The document has the counts by rule, by how often the site
runs and by catalog kind, the fixes by kind and safety, the top findings with
their chains, every default finding, and a seeded random sample of 20 of the
default findings (what a user sees; CL001 and CL002). Verdicts come from reading the vLLM
code and live in ``docs/findings/vllm-VERSION-verdicts.toml`` (key
``path:line:column``); the script only copies them in, so re-running it after
a change to cachelint shows at once which findings are new and unreviewed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from cachelint.semantic.callgraph import frequency_rank  # noqa: E402
from tests.vllm_source import vllm_source  # noqa: E402

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SEED = 20261130
SAMPLE = 20
TOP = 12


def run(src: Path, *args: str) -> list[dict]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-m", "cachelint", "check", "vllm", "--output-format", "json", *args],
        cwd=src,
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode not in (0, 1):
        raise SystemExit(f"cachelint failed: {proc.stderr}")
    return json.loads(proc.stdout)


def key(f: dict) -> str:
    return f"{f['path']}:{f['line']}:{f['column']}"


def freq(f: dict) -> str:
    return (f.get("data") or {}).get("hot_kind") or "once"


def ranked(findings: list[dict]) -> list[dict]:
    return sorted(findings, key=lambda f: (frequency_rank(freq(f)), f["path"], f["line"], f["column"]))


def short(qn: str) -> str:
    parts = qn.replace(".<locals>", "").split(".")
    return ".".join(parts[-2:])


def chain(f: dict) -> str:
    return " -> ".join(short(x) for x in f["hot_path"] or ()) or "(no hot path)"


def fix_text(f: dict) -> str:
    fx = f["fix"]
    if fx is None:
        return "none"
    return f"{fx['applicability']}: {fx['message']}"


def counts_table(findings: list[dict], title: str) -> list[str]:
    out = [f"### {title}", ""]
    by_code = Counter(f["code"] for f in findings)
    out += ["| rule | findings |", "| --- | --- |"]
    out += [f"| {c} | {n} |" for c, n in sorted(by_code.items())]
    cl2 = [f for f in findings if f["code"] == "CL002"]
    out += ["", "CL002 by how often the site runs, and by catalog kind:", ""]
    out += ["| runs | findings |", "| --- | --- |"]
    for kind, n in sorted(Counter(freq(f) for f in cl2).items(), key=lambda kv: frequency_rank(kv[0])):
        out.append(f"| {kind} | {n} |")
    out += ["", "| kind of work | findings |", "| --- | --- |"]
    for kind, n in Counter(f["data"]["kind"] for f in cl2).most_common():
        out.append(f"| {kind} | {n} |")
    out += ["", "| fix | safe | unsafe |", "| --- | --- | --- |"]
    fixes = Counter(((f["data"].get("fix_kind") or "none"), (f["fix"] or {}).get("applicability")) for f in cl2)
    for fk in sorted({k for k, _ in fixes} - {"none"}):
        out.append(f"| {fk} | {fixes[(fk, 'safe')]} | {fixes[(fk, 'unsafe')]} |")
    out += ["", f"No fix offered: {fixes[('none', None)]} (the message says why).", ""]
    return out + [""]


def verdict_line(f: dict, verdicts: dict) -> tuple[str, str | None]:
    v = verdicts.get(key(f))
    if v is None:
        return "**Verdict: not reviewed**", None
    word = "real" if v.startswith("real") else "false alarm"
    return f"**Verdict: {v}**", word


def entry(f: dict, verdicts: dict | None = None) -> list[str]:
    out = [
        f"- `{f['path']}:{f['line']}` ({freq(f)}) `{f['function']}`",
        f"  - chain: {chain(f)}",
        f"  - {f['message'].split('; reached via')[0]}",
        f"  - fix: {fix_text(f)}",
    ]
    if verdicts is not None:
        out.append(f"  - {verdict_line(f, verdicts)[0]}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("version")
    ap.add_argument("--out", default=None)
    ap.add_argument("--verdicts", default=None)
    args = ap.parse_args()
    version = args.version
    out_path = Path(args.out or REPO / "docs" / "findings" / f"vllm-{version}.md")
    verdict_path = Path(args.verdicts or REPO / "docs" / "findings" / f"vllm-{version}-verdicts.toml")
    verdicts = tomllib.loads(verdict_path.read_text()).get("verdicts", {}) if verdict_path.is_file() else {}

    src = vllm_source(version)
    n_files = sum(1 for _ in (src / "vllm").rglob("*.py"))
    default = run(src)
    with tempfile.TemporaryDirectory() as d:
        cfg = Path(d, "cachelint.toml")
        cfg.write_text('[tool.cachelint]\nmin-cost = "low"\n')
        low = run(src, "--config", str(cfg))

    cl2_default = [f for f in default if f["code"] == "CL002"]
    cl2_low = sorted((f for f in low if f["code"] == "CL002"), key=key)
    pool = sorted((f for f in default if f["code"] in ("CL001", "CL002")), key=key)
    sample = random.Random(SEED).sample(pool, min(SAMPLE, len(pool)))
    sample.sort(key=key)

    lines = [
        f"# cachelint on vLLM {version}: counts, top findings, verdicts",
        "",
        f"Generated by `python scripts/findings_report.py {version}` on the source of the",
        f"PyPI wheel ({n_files} Python files, vLLM preset), from two runs:",
        "",
        "```sh",
        f'cd "$(python tests/vllm_source.py {version})"',
        "cachelint check vllm                                   # defaults",
        'cachelint check vllm --config min-cost-low.toml        # [tool.cachelint] min-cost = "low"',
        "```",
        "",
        "Verdicts come from reading the vLLM code at each site, its chain and the",
        f"callee; they are kept in `docs/findings/vllm-{version}-verdicts.toml`.",
        "*real* means the call repeats work whose result is the same on every run",
        "of that path (or twice in one run), so computing it once removes work;",
        "the verdict notes when that work is cheap.",
        "",
    ]
    reviewed = [verdict_line(f, verdicts)[1] for f in sample]
    real = sum(1 for w in reviewed if w == "real")
    lines += [
        f"**Result: {len(pool)} findings with the defaults ({len(cl2_default)} CL002, "
        f'{len(pool) - len(cl2_default)} CL001; {len(cl2_low)} CL002 with `min-cost = "low"`); '
        f"{real} of a random sample of {len(sample)} default findings confirmed real.**",
        "",
        "## Counts",
        "",
    ]
    lines += counts_table(default, "Defaults")
    lines += counts_table(low, 'min-cost = "low"')
    lines += ["## Top findings (defaults, most frequently run first)", ""]
    for f in ranked(cl2_default)[:TOP]:
        lines += entry(f)
    lines += ["", "## Every CL002 finding with the defaults, with a verdict", ""]
    for f in ranked(cl2_default):
        lines += entry(f, verdicts)
    lines += [
        "",
        f"## Random sample of {len(sample)} of the {len(pool)} default findings",
        "",
        f"`random.Random({SEED}).sample(findings sorted by path:line:column, {SAMPLE})`.",
        "",
    ]
    for f in sample:
        lines += entry(f, verdicts)
    cl1 = [f for f in default if f["code"] == "CL001"]
    if cl1:
        lines += ["", "## CL001 (cached value recomputed)", ""]
        for f in cl1:
            lines += entry(f, verdicts)
    out_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    missing = [key(f) for f in [*pool, *sample] if key(f) not in verdicts]
    print(
        f"wrote {out_path}: {len(cl2_default)} default CL002, {len(cl2_low)} low-cost CL002, "
        f"sample {real}/{len(sample)} real, {len(set(missing))} without a verdict"
    )
    for k in sorted(set(missing)):
        print("  no verdict:", k)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
