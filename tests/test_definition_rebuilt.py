"""CL010: each VALID example is kept quiet by one check, which turned off reports it."""

from __future__ import annotations

import pytest

from cachelint.api import lint_sources
from cachelint.rules import cl010_definition_rebuilt_each_run as cl010
from cachelint.semantic.program import Program

from .helpers import example_config

RULE = cl010.DefinitionRebuiltEachRun


def _found(example) -> list:
    res = lint_sources(example.sources(), example_config(example, RULE.code))
    return [f for f in res.findings if f.code == RULE.code]


@pytest.mark.parametrize("index", [1, 2, 3])
def test_a_definition_over_the_runs_values_is_reported_without_that_check(index, monkeypatch):
    example = RULE.VALID[index]
    assert _found(example) == []
    monkeypatch.setattr(cl010, "_run_bound_names", lambda node, ctx, f: [])
    assert len(_found(example)) == 1


def test_a_definition_kept_beyond_the_run_is_reported_without_that_check(monkeypatch):
    example = RULE.VALID[5]
    assert _found(example) == []
    monkeypatch.setattr(cl010, "_escapes", lambda fn_node, name: False)
    assert len(_found(example)) == 1


def test_a_memoized_enclosing_function_is_reported_without_that_check(monkeypatch):
    example = RULE.VALID[6]
    assert _found(example) == []
    monkeypatch.setattr(Program, "is_cached", lambda self, f: False)
    assert len(_found(example)) == 1


def test_a_decorator_that_builds_nothing_is_reported_when_taken_for_one(monkeypatch):
    example = RULE.VALID[4]
    assert _found(example) == []
    monkeypatch.setattr(cl010, "_rebuilding_decorator", lambda p, g, decorators, patterns: ("cache", decorators[0]))
    assert len(_found(example)) == 1


def test_the_estimate_prices_a_compile_per_run_and_a_memo_by_its_body():
    compiled, memo = (_found(ex)[0] for ex in RULE.INVALID[:2])
    assert compiled.data["kind"] == "compile" and compiled.data["estimate"]["per_call_seconds"] >= 1e-4
    assert "torch.compile" in compiled.data["estimate"]["basis"]
    assert memo.data["kind"] == "cache" and "one run of the body" in memo.data["estimate"]["basis"]
    # the compiled helper's definition runs on every run; the guarded one of the third example on half
    guarded = _found(RULE.INVALID[2])[0]
    assert compiled.data["estimate"]["calls_per_run"] == 1.0
    assert guarded.data["estimate"]["calls_per_run"] == 0.5 and guarded.data["reads_self"]


def test_a_nested_class_under_a_configured_compile_decorator_glob_is_reported():
    from dataclasses import replace

    from cachelint.rules.base import Example

    example = Example(
        """
def support_torch_compile(cls):
    return cls

class Sampler:
    def forward(self, x):
        @support_torch_compile
        class Head:
            def forward(self, y):
                return y

        return Head().forward(x)
""",
        hot_roots=cl010._ROOTS,
    )
    cfg = example_config(example, RULE.code)
    assert [f for f in lint_sources(example.sources(), cfg).findings if f.code == RULE.code] == []
    globbed = replace(cfg, extend_compile_decorators=("support_*_compile",))
    found = [f for f in lint_sources(example.sources(), globbed).findings if f.code == RULE.code]
    assert [(f.line, f.data["kind"]) for f in found] == [(6, "compile")]
