"""The rule API: each rule reads only the facts it declares and writes none.

Every rule's VALID and INVALID examples are analysed, and the rule's check
runs against a proxy of the :class:`Analysis` that records every attribute
read and every assignment. What a rule hands the analysis to (the hoisting
planner) reads through the same proxy, so its reads count as the rule's.
"""

from __future__ import annotations

import ast
import inspect
import os
from pathlib import Path

import pytest

from cachelint.api import analyse
from cachelint.rules import ALL_RULES
from cachelint.rules.base import Rule

from .helpers import example_config


class RecordingAnalysis:
    """Forwards reads to ``analysis``, recording their names; records writes
    without forwarding them."""

    def __init__(self, analysis) -> None:
        object.__setattr__(self, "_analysis", analysis)
        object.__setattr__(self, "read", set())
        object.__setattr__(self, "written", set())

    def __getattr__(self, name: str):
        self.read.add(name)
        return getattr(self._analysis, name)

    def __setattr__(self, name: str, value) -> None:
        self.written.add(name)


def _access(rule: type[Rule], example, tmp_path: Path) -> RecordingAnalysis:
    for rel, code in example.sources().items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(code, encoding="utf-8")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        analysis, _ = analyse(["."], example_config(example, rule.code))
        proxy = RecordingAnalysis(analysis)
        findings = list(rule().check(proxy))  # type: ignore[arg-type]
    finally:
        os.chdir(cwd)
    assert all(f.code == rule.code for f in findings)
    return proxy


CASES = [(r, kind, i, ex) for r in ALL_RULES for kind in ("VALID", "INVALID") for i, ex in enumerate(getattr(r, kind))]


@pytest.mark.parametrize("rule,kind,i,example", CASES, ids=[f"{r.code}-{k.lower()}-{i}" for r, k, i, _ in CASES])
def test_rule_reads_only_what_it_declares(rule, kind, i, example, tmp_path):
    proxy = _access(rule, example, tmp_path)
    assert proxy.read <= set(rule.reads), f"{rule.code} reads undeclared {sorted(proxy.read - set(rule.reads))}"
    assert not proxy.written, f"{rule.code} assigns {sorted(proxy.written)}"


@pytest.mark.parametrize("rule", ALL_RULES, ids=[r.code for r in ALL_RULES])
def test_every_declared_fact_is_read_by_some_example(rule, tmp_path):
    """The declaration is no wider than the rule: each fact it names is read
    in at least one of its examples."""
    seen: set = set()
    for n, ex in enumerate(rule.VALID + rule.INVALID):
        d = tmp_path / str(n)
        d.mkdir()
        seen |= _access(rule, ex, d).read
    assert set(rule.reads) <= seen, f"{rule.code} declares unread {sorted(set(rule.reads) - seen)}"


def test_declared_facts_exist_on_analysis():
    from cachelint.facts.analysis import Analysis

    for r in ALL_RULES:
        assert r.reads, r.code
        for name in r.reads:
            assert hasattr(Analysis, name) or name in _instance_attributes(), (r.code, name)


def _instance_attributes() -> set:
    from cachelint.facts import analysis

    tree = ast.parse(inspect.getsource(analysis.Analysis.__init__).strip())
    return {
        t.attr
        for node in ast.walk(tree)
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(t, ast.Attribute)
    }


def test_rules_do_not_import_each_other():
    """A rule module imports no other rule module (shared parts live in
    ``rules/_shared.py`` or a facts module)."""
    import cachelint.rules as pkg

    rule_modules = {Path(inspect.getfile(r)).stem for r in ALL_RULES}
    for r in ALL_RULES:
        tree = ast.parse(Path(inspect.getfile(r)).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                mod = (node.module or "").split(".")[0]
                assert mod not in rule_modules - {Path(inspect.getfile(r)).stem}, (r.code, mod)
    assert pkg.ALL_RULES


def test_api_and_cli_name_no_rule():
    """The pipeline (api.py, cli.py) holds no code specific to one rule."""
    import re

    root = Path(__file__).resolve().parent.parent / "cachelint"
    for name in ("api.py", "cli.py"):
        code = _code_only(root / name)
        assert not re.search(r"CL00\d", code), name


def _code_only(path: Path) -> str:
    """The module's source without docstrings, comments and help texts."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = ""
    return ast.unparse(tree)


def test_lock_invariants_default_is_empty():
    class Quiet(Rule):
        code = "CL999"
        name = "quiet"
        summary = "nothing"

    assert Quiet().lock_invariants(None, []) == []  # type: ignore[arg-type]
