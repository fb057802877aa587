"""Every rule's VALID and INVALID examples (its documentation) are its tests."""

from __future__ import annotations

import pytest

from cachelint.api import lint_sources
from cachelint.rules import ALL_RULES

from .helpers import example_config

VALID = [(r, i, ex) for r in ALL_RULES for i, ex in enumerate(r.VALID)]
INVALID = [(r, i, ex) for r in ALL_RULES for i, ex in enumerate(r.INVALID)]


def test_every_rule_has_examples_and_docs():
    for r in ALL_RULES:
        assert r.VALID and r.INVALID, r.code
        doc = r.documentation()
        for section in ("## What it does", "## Why is this bad?", "## Example", "## Fix safety", "## Fix availability"):
            assert section in doc, (r.code, section)


@pytest.mark.parametrize("rule,i,example", VALID, ids=[f"{r.code}-valid-{i}" for r, i, _ in VALID])
def test_valid_examples_have_no_finding(rule, i, example):
    res = lint_sources(example.sources(), example_config(example, rule.code))
    assert [f for f in res.findings if f.code == rule.code] == []


@pytest.mark.parametrize("rule,i,example", INVALID, ids=[f"{r.code}-invalid-{i}" for r, i, _ in INVALID])
def test_invalid_examples(rule, i, example):
    cfg = example_config(example, rule.code)
    res = lint_sources(example.sources(), cfg)
    got = [f for f in res.findings if f.code == rule.code]
    assert sorted((f.path, f.line) for f in got) == sorted(example.expect)
    for f in got:
        for text in example.message_contains:
            assert text in f.message, f.message
    if example.applicability:
        assert [f.fix.applicability.value if f.fix else None for f in got] == list(example.applicability)
    if example.fixed:
        fixed = lint_sources(example.sources(), cfg, fix=True, unsafe_fixes=True)
        for path, expected in example.fixed.items():
            import textwrap

            assert fixed.sources_after[path] == textwrap.dedent(expected).lstrip("\n")
        # a second --fix changes nothing
        again = lint_sources(fixed.sources_after, cfg, fix=True, unsafe_fixes=True)
        assert again.sources_after == fixed.sources_after
        assert [f for f in again.findings if f.code == rule.code and f.fix] == []
