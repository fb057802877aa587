"""Output formats for CI and scripts: SARIF 2.1.0, GitHub workflow commands,
concise one-line text.

* ``sarif``: one run, the tool's rules with their documentation (each Rule
  class's docstring), one result per finding with its region and, when the
  finding has a fix, ``fixes`` with ``artifactChanges``/``replacements``.
  Columns are code points (``columnKind: unicodeCodePoints``), 1-based,
  end-exclusive, as in the JSON output. Paths are relative to the working
  directory (``uriBaseId: %SRCROOT%``), which is what GitHub code scanning
  expects when cachelint runs at the repository root.
* ``github``: ``::error``/``::warning`` workflow commands, which GitHub
  Actions turns into annotations on the pull request's diff.
* ``concise``: ``path:line:col: CODE [*] message``, one line per finding.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import quote

from .. import __version__
from ..model import Applicability, Finding
from ..rules import ALL_RULES, BY_CODE

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://pypi.org/project/cachelint/"


def _level(code: str) -> str:
    rule = BY_CODE.get(code)
    return "error" if rule is not None and rule.default_severity == "error" else "warning"


def _uri(path: str) -> tuple[str, str | None]:
    """(uri, uriBaseId): relative paths against %SRCROOT%, others as file URIs."""
    p = Path(path)
    if p.is_absolute():
        return p.as_uri(), None
    # bytes, so a file name that is not valid UTF-8 (surrogate-escaped by
    # os.scandir) is percent-encoded as the bytes it has on disk
    return quote(os.fsencode(p.as_posix())), "%SRCROOT%"


def _location(path: str) -> dict:
    uri, base = _uri(path)
    loc = {"uri": uri}
    if base:
        loc["uriBaseId"] = base
    return loc


def _region(line: int, column: int, end_line: int, end_column: int) -> dict:
    return {
        "startLine": max(line, 1),
        "startColumn": column + 1,
        "endLine": max(end_line, line, 1),
        "endColumn": end_column + 1,
    }


def _first_paragraph(doc: str) -> str:
    """The text under ``## What it does``, as one paragraph."""
    lines = doc.splitlines()
    out: list[str] = []
    started = False
    for line in lines:
        if line.startswith("## What it does"):
            started = True
            continue
        if started:
            if line.startswith("## ") or (not line.strip() and out):
                break
            if line.strip():
                out.append(line.strip())
    return " ".join(out)


def _rule_descriptor(rule) -> dict:
    doc = rule.documentation()
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": _first_paragraph(doc) or rule.summary},
        "help": {"text": doc, "markdown": doc},
        "defaultConfiguration": {"level": "error" if rule.default_severity == "error" else "warning"},
        "properties": {"fixAvailability": rule.fix_availability, "tags": ["performance"]},
    }


def _fixes(f: Finding) -> list[dict]:
    if f.fix is None or not f.fix.edits:
        return []
    replacements = []
    for e in f.fix.edits:
        replacements.append(
            {
                "deletedRegion": _region(e.span.line, e.span.column, e.span.end_line, e.span.end_column),
                "insertedContent": {"text": e.replacement},
            }
        )
    text = f"{f.fix.message or 'Apply the fix'} ({f.fix.applicability.value})"
    removed = sorted({n for e in f.fix.edits for n in e.remove_names})
    if removed:
        text += f"; `--fix` also removes the imports of {', '.join(removed)} if nothing else uses them"
    return [
        {
            "description": {"text": text},
            "artifactChanges": [{"artifactLocation": _location(f.path), "replacements": replacements}],
        }
    ]


def to_sarif(findings: list[Finding]) -> str:
    index = {r.code: i for i, r in enumerate(ALL_RULES)}
    results = []
    for f in findings:
        result: dict = {
            "ruleId": f.code,
            "level": _level(f.code),
            "message": {"text": f.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": _location(f.path),
                        "region": _region(f.span.line, f.span.column, f.span.end_line, f.span.end_column),
                    }
                }
            ],
        }
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        fixes = _fixes(f)
        if fixes:
            result["fixes"] = fixes
        props: dict = {}
        if f.function:
            props["function"] = f.function
        if f.hot_path:
            props["hotPath"] = list(f.hot_path)
        if f.fix is not None:
            props["fixApplicability"] = f.fix.applicability.value
            if f.fix.relies_on:
                props["fixReliesOn"] = list(f.fix.relies_on)
        if props:
            result["properties"] = props
        results.append(result)
    cwd = Path(os.getcwd()).as_uri().rstrip("/") + "/"
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "cachelint",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": [_rule_descriptor(r) for r in ALL_RULES],
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": cwd}},
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def to_github(findings: list[Finding]) -> str:
    """GitHub Actions workflow commands (``::warning file=...::message``)."""
    lines = []
    for f in findings:
        rule = BY_CODE.get(f.code)
        title = f"cachelint ({f.code})" if rule is None else f"cachelint ({f.code} {rule.name})"
        end_line = max(f.span.end_line, f.span.line)
        props = [
            f"title={_escape_property(title)}",
            f"file={_escape_property(Path(f.path).as_posix())}",
            f"line={f.span.line}",
            f"col={f.span.column + 1}",
            f"endLine={end_line}",
            f"endColumn={f.span.end_column + 1}",
        ]
        msg = f"{f.path}:{f.span.line}:{f.span.column + 1}: {f.code} {f.message}"
        lines.append(f"::{_level(f.code)} {','.join(props)}::{_escape_data(msg)}")
    return "\n".join(lines) + ("\n" if lines else "")


def to_concise(findings: list[Finding], unsafe_fixes: bool) -> str:
    lines = []
    for f in findings:
        mark = ""
        if f.fix is not None and (f.fix.applicability is Applicability.SAFE or unsafe_fixes):
            mark = "[*] "
        lines.append(f"{f.path}:{f.span.line}:{f.span.column + 1}: {f.code} {mark}{f.message}")
    return "\n".join(lines) + ("\n" if lines else "")
