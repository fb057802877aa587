"""Summarise a CI log (.ci/run): one line per nox session, then one pytest-style line for the run.

    python3 .ci/summary.py LOG STATUS SECONDS

LOG is everything .ci/run printed, STATUS its command's exit status, SECONDS
how long it took. Each session's line gives its result and its pytest summary;
the last line adds up the pytest counts of every session (but ``deselected``),
in pytest's format, with one ``error`` more for each session that failed without a pytest summary
(lint, an install) and for a failure outside any session. Exits 1 if anything
failed (STATUS non-zero included), else 0.
"""

from __future__ import annotations

import re
import sys

NOX = re.compile(
    r"^nox > (?:Running session (?P<run>\S+)|Session (?P<name>\S+) (?P<result>was successful|failed|skipped)(?P<rest>.*))"
)
# pytest's last line, with or without -q's missing rules: "=== 1 failed, 2 passed in 3.45s (0:00:03) ==="
PYTEST = re.compile(r"^=*\s*(?P<counts>(?:\d+ [a-z]+(?:, )?)+|no tests ran) in (?P<secs>[\d.]+)s\b.*?=*$")
# "deselected" is left out of the total: what one session deselects, another runs
ORDER = ("failed", "passed", "skipped", "xfailed", "xpassed", "warnings", "errors")


def parse(lines: list[str]) -> dict[str, dict]:
    sessions: dict[str, dict] = {}
    current = None
    for line in lines:
        line = line.rstrip("\n")
        m = NOX.match(line)
        if m and m["run"]:
            current = sessions.setdefault(m["run"], {"result": "running", "pytest": None, "note": ""})
        elif m:
            s = sessions.setdefault(m["name"], {"result": "", "pytest": None, "note": ""})
            s["result"] = {"was successful": "success"}.get(m["result"], m["result"])
            if m["result"] == "skipped":
                s["note"] = m["rest"].lstrip(": ").rstrip(".")
            current = None  # the session ended: later lines are not its own
        elif current is not None and (p := PYTEST.match(line.strip())):
            current["pytest"] = p["counts"] + f" in {p['secs']}s"
    return sessions


def counts(summary: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in summary.split(" in ")[0].split(", "):
        n, _, what = part.partition(" ")
        if n.isdigit():
            what = {"error": "errors", "warning": "warnings"}.get(what, what)
            out[what] = out.get(what, 0) + int(n)
    return out


def main(log: str, status: int, seconds: float) -> int:
    with open(log, encoding="utf-8", errors="replace") as f:
        sessions = parse(f.readlines())
    total: dict[str, int] = {}
    failed = status != 0
    print("\n== CI summary " + "=" * 50)
    for name, s in sessions.items():
        result = s["result"] or "running"
        if result in ("failed", "running"):
            failed = True
        detail = s["pytest"] or s["note"]
        print(f"{name:16} {result:8} {detail}")
        if s["pytest"]:
            for k, v in counts(s["pytest"]).items():
                total[k] = total.get(k, 0) + v
        elif result in ("failed", "running"):  # failed before or without pytest: lint, an install
            total["errors"] = total.get("errors", 0) + 1
    if failed and not total.get("failed") and not total.get("errors"):
        # the run failed outside any session (the venv, pip) or before the rest could run
        total["errors"] = 1
    for name in ("engine_current", "engine_seed"):
        if name not in sessions:
            print(f"{name:16} not run  (.ci/run runs the engine tier only after every other session passed)")
    parts = [f"{total[k]} {'error' if k == 'errors' and total[k] == 1 else k}" for k in ORDER if total.get(k)]
    h, rem = divmod(int(seconds), 3600)
    line = f" {', '.join(parts) or 'no tests ran'} in {seconds:.2f}s ({h}:{rem // 60:02d}:{rem % 60:02d}) "
    print(line.center(max(80, len(line) + 10), "="))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3])))
