"""Tests for codemods.replace_expression (apply_edits + the LibCST codemod command)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cachelint.model import Edit, Span
from codemods import (
    ApplyResult,
    FixError,
    ReplaceExpressionsCommand,
    apply_edits,
    load_edits,
)

REPO = Path(__file__).resolve().parents[1]


def span_of(source: str, text: str, nth: int = 0) -> Span:
    """Span of the ``nth`` occurrence of ``text`` (1-based lines, 0-based char columns)."""
    idx = -1
    for _ in range(nth + 1):
        idx = source.index(text, idx + 1)

    def pos(offset: int) -> tuple[int, int]:
        line = source.count("\n", 0, offset) + 1
        column = offset - (source.rfind("\n", 0, offset) + 1)
        return line, column

    (line, col), (end_line, end_col) = pos(idx), pos(idx + len(text))
    return Span(line, col, end_line, end_col)


def edit(source: str, text: str, replacement: str, *remove: str, nth: int = 0) -> Edit:
    return Edit(span_of(source, text, nth), replacement, tuple(remove))


def dedent(s: str) -> str:
    return textwrap.dedent(s).lstrip("\n")


# ---------------------------------------------------------------------------
# replacement


def test_single_line_call():
    src = "x = 1\ny = compute(x, 2)  # keep me\nz = compute(x, 3)\n"
    res = apply_edits(src, [edit(src, "compute(x, 2)", "cache.value")])
    assert res.code == "x = 1\ny = cache.value  # keep me\nz = compute(x, 3)\n"
    assert len(res.applied) == 1 and res.unmatched == []


MULTILINE_SRC = dedent(
    """
    from vllm.multimodal import MULTIMODAL_REGISTRY


    class EncoderBudget:
        # compute the encoder budget once
        def budget(self):
            num_encoder_tokens = MULTIMODAL_REGISTRY.\\
                get_encdec_max_encoder_len(
                self.vllm_config.model_config)
            return num_encoder_tokens  # the end
    """
)

MULTILINE_CALL = (
    "MULTIMODAL_REGISTRY.\\\n            get_encdec_max_encoder_len(\n            self.vllm_config.model_config)"
)


def test_multiline_backslash_call_and_import_removed():
    assert MULTILINE_CALL in MULTILINE_SRC
    e = edit(
        MULTILINE_SRC,
        MULTILINE_CALL,
        "self.scheduler_config.max_num_encoder_input_tokens",
        "MULTIMODAL_REGISTRY",
    )
    assert e.span == Span(7, 29, 9, 42)
    res = apply_edits(MULTILINE_SRC, [e])
    # the import line goes; the blank lines after it stay
    assert res.code == (
        "\n\nclass EncoderBudget:\n"
        "    # compute the encoder budget once\n"
        "    def budget(self):\n"
        "        num_encoder_tokens = self.scheduler_config.max_num_encoder_input_tokens\n"
        "        return num_encoder_tokens  # the end\n"
    )
    assert res.applied == [e] and res.unmatched == []
    assert res.removed_imports == ["MULTIMODAL_REGISTRY"]


def test_multiline_call_without_remove_names_keeps_import():
    e = edit(
        MULTILINE_SRC,
        MULTILINE_CALL,
        "self.scheduler_config.max_num_encoder_input_tokens",
    )
    res = apply_edits(MULTILINE_SRC, [e])
    assert res.code.startswith("from vllm.multimodal import MULTIMODAL_REGISTRY\n")
    assert "num_encoder_tokens = self.scheduler_config.max_num_encoder_input_tokens\n" in res.code
    assert "get_encdec_max_encoder_len" not in res.code


def test_parenthesised_call_keeps_parens():
    src = "y = (f(x))\nz = (  # why\n    g(x)\n)\n"
    res = apply_edits(src, [edit(src, "f(x)", "cached"), edit(src, "g(x)", "other")])
    assert res.code == "y = (cached)\nz = (  # why\n    other\n)\n"


def test_nested_call_inner_replaced_outer_kept():
    src = "y = outer(inner(x), 1)\n"
    res = apply_edits(src, [edit(src, "inner(x)", "self.inner_value")])
    assert res.code == "y = outer(self.inner_value, 1)\n"


def test_nested_call_outer_replaced():
    src = "y = outer(inner(x), 1)\n"
    res = apply_edits(src, [edit(src, "outer(inner(x), 1)", "v")])
    assert res.code == "y = v\n"


def test_non_call_expression_and_unicode_columns():
    # columns are code points: the "é" before the call counts as one column
    src = 's = "é"; y = cfg.get("k")\n'
    e = edit(src, 'cfg.get("k")', "K")
    assert e.span.column == 13
    res = apply_edits(src, [e])
    assert res.code == 's = "é"; y = K\n'


def test_low_precedence_replacement_is_parenthesised_where_needed():
    src = "a = f(x) + 1\nb = f(x)\nc = f(x).attr\n"
    edits = [
        edit(src, "f(x)", "p or q", nth=0),
        edit(src, "f(x)", "p or q", nth=1),
        edit(src, "f(x)", "p if q else r", nth=2),
    ]
    res = apply_edits(src, edits)
    assert res.code == "a = (p or q) + 1\nb = p or q\nc = (p if q else r).attr\n"


def test_comments_elsewhere_are_kept():
    src = dedent(
        """
        # header comment
        import os  # os is used below


        def f(x):  # trailing on def
            # leading comment
            y = expensive(x)  # trailing on y
            # between
            return y + os.getpid()  # trailing on return
        # footer comment
        """
    )
    res = apply_edits(src, [edit(src, "expensive(x)", "x.cached")])
    assert res.code == src.replace("expensive(x)", "x.cached")


def test_zero_edits_returns_source_unchanged():
    src = "x = f(1)  \r\n\r\n# trailing whitespace and CRLF\r\n"
    res = apply_edits(src, [])
    assert res == ApplyResult(code=src, applied=[], unmatched=[])
    assert res.code is src


# ---------------------------------------------------------------------------
# imports


def test_import_removed_when_last_use_goes():
    src = dedent(
        """
        import os
        from vllm.multimodal import MULTIMODAL_REGISTRY
        from typing import List  # unused and unlisted: stays

        x = MULTIMODAL_REGISTRY.get_max_tokens(cfg)
        """
    )
    res = apply_edits(
        src,
        [
            edit(
                src,
                "MULTIMODAL_REGISTRY.get_max_tokens(cfg)",
                "cfg.max_tokens",
                "MULTIMODAL_REGISTRY",
            )
        ],
    )
    assert res.code == dedent(
        """
        import os
        from typing import List  # unused and unlisted: stays

        x = cfg.max_tokens
        """
    )


def test_unused_top_level_import_is_decided_without_scope_analysis(monkeypatch):
    """A requested name that one top-level import binds and nothing else in the
    module's text mentions goes without scope analysis (several walks of the
    whole module, the larger part of a fix of a large file)."""
    from libcst.metadata import MetadataWrapper, ScopeProvider

    resolve_many = MetadataWrapper.resolve_many

    def no_scopes(self, providers):
        assert ScopeProvider not in providers, "scope analysis ran"
        return resolve_many(self, providers)

    monkeypatch.setattr(MetadataWrapper, "resolve_many", no_scopes)
    src = "import os\nfrom vllm.multimodal import MULTIMODAL_REGISTRY\n\nx = MULTIMODAL_REGISTRY.get_max_tokens(cfg)\n"
    res = apply_edits(
        src, [edit(src, "MULTIMODAL_REGISTRY.get_max_tokens(cfg)", "cfg.max_tokens", "MULTIMODAL_REGISTRY")]
    )
    assert res.code == "import os\n\nx = cfg.max_tokens\n"
    # a name the text mentions elsewhere (here a second, function-local import) needs the scopes
    src = "from m import R\n\n\ndef f():\n    from m import R\n    return R.f()\n"
    with pytest.raises(FixError, match="scope analysis ran"):
        apply_edits(src, [edit(src, "R.f()", "1", "R")])


def test_import_kept_when_another_use_remains():
    src = dedent(
        """
        from vllm.multimodal import MULTIMODAL_REGISTRY

        x = MULTIMODAL_REGISTRY.get_max_tokens(cfg)
        y = MULTIMODAL_REGISTRY.other(cfg)
        """
    )
    res = apply_edits(
        src,
        [
            edit(
                src,
                "MULTIMODAL_REGISTRY.get_max_tokens(cfg)",
                "cfg.max_tokens",
                "MULTIMODAL_REGISTRY",
            )
        ],
    )
    assert res.code == src.replace("MULTIMODAL_REGISTRY.get_max_tokens(cfg)", "cfg.max_tokens")
    assert res.removed_imports == []


def test_import_kept_when_replacement_uses_it():
    src = "from m import R\nx = R.compute(1)\n"
    res = apply_edits(src, [edit(src, "R.compute(1)", "R.cached", "R")])
    assert res.code == "from m import R\nx = R.cached\n"


def test_import_kept_when_not_listed_in_remove_names():
    src = "from m import R, S\nx = R.compute(1) + S.compute(2)\n"
    res = apply_edits(
        src,
        [edit(src, "R.compute(1)", "1", "R"), edit(src, "S.compute(2)", "2")],
    )
    assert res.code == "from m import S\nx = 1 + 2\n"


def test_import_kept_when_exported_in_all():
    src = '__all__ = ["R"]\nfrom m import R\nx = R.compute(1)\n'
    res = apply_edits(src, [edit(src, "R.compute(1)", "1", "R")])
    assert res.code == '__all__ = ["R"]\nfrom m import R\nx = 1\n'


def test_partial_removal_from_parenthesised_multiline_import():
    src = dedent(
        """
        from pkg.mod import (
            A,  # about A
            # about B
            B,  # about B too
        )

        x = A.get() + B
        """
    )
    res = apply_edits(src, [edit(src, "A.get()", "1", "A")])
    assert res.code == dedent(
        """
        from pkg.mod import (
            # about B
            B,  # about B too
        )

        x = 1 + B
        """
    )
    compile(res.code, "<test>", "exec")


def test_partial_removal_of_last_name_from_parenthesised_import():
    src = dedent(
        """
        from pkg.mod import (
            A,  # about A
            B,
        )

        x = A + B.get()
        """
    )
    res = apply_edits(src, [edit(src, "B.get()", "2", "B")])
    assert res.code == dedent(
        """
        from pkg.mod import (
            A,  # about A
        )

        x = A + 2
        """
    )


@pytest.mark.parametrize(
    "imports, expected",
    [
        ("from a import (\n    A,\n    B\n)\n", "from a import (\n    A,\n)\n"),
        (
            "from a import (\n    A,  # ca\n    B  # cb\n)\n",
            "from a import (\n    A,  # ca\n)\n",
        ),
        ("from a import (A,\n               B)\n", "from a import (A)\n"),
        ("from a import (A, B,)\n", "from a import (A,)\n"),
        ("from a import A, \\\n    B\n", "from a import A\n"),
        ("import A; import B\n", "import A\n"),
    ],
)
def test_removal_of_last_alias_layouts(imports, expected):
    src = imports + "x = A + B.f()\n"
    res = apply_edits(src, [edit(src, "B.f()", "2", "B")])
    assert res.code == expected + "x = A + 2\n"


def test_partial_removal_single_line_imports():
    src = "from a import A, B\nimport os, sys\nx = A.f() + B.f() + os.f() + sys.f()\n"
    res = apply_edits(
        src,
        [
            edit(src, "B.f()", "1", "B"),
            edit(src, "A.f()", "2"),
            edit(src, "os.f()", "3", "os"),
        ],
    )
    assert res.code == "from a import A\nimport sys\nx = 2 + 1 + 3 + sys.f()\n"
    res = apply_edits(src, [edit(src, "A.f()", "2", "A")])
    assert res.code.startswith("from a import B\n")


def test_alias_imports():
    src = dedent(
        """
        from vllm.multimodal import MULTIMODAL_REGISTRY as REG
        import vllm.envs as envs
        import numpy.linalg
        import keep.me as km

        a = REG.get(1)
        b = envs.VLLM_FOO()
        c = numpy.linalg.norm(v)
        d = km.x()
        """
    )
    res = apply_edits(
        src,
        [
            edit(src, "REG.get(1)", "1", "REG"),
            edit(src, "envs.VLLM_FOO()", "2", "envs"),
            edit(src, "numpy.linalg.norm(v)", "3", "numpy"),
            edit(src, "km.x()", "4", "REG"),  # wrong name listed: km stays
        ],
    )
    assert res.code == "import keep.me as km\n\na = 1\nb = 2\nc = 3\nd = 4\n"
    assert sorted(res.removed_imports) == ["REG", "envs", "numpy"]


def test_relative_and_function_local_imports():
    src = dedent(
        """
        from .registry import REGISTRY


        def f(cfg):
            from vllm.utils import helper
            return REGISTRY.get(cfg) + helper(cfg)
        """
    )
    res = apply_edits(
        src,
        [
            edit(src, "REGISTRY.get(cfg)", "cfg.a", "REGISTRY"),
            edit(src, "helper(cfg)", "cfg.b", "helper"),
        ],
    )
    assert res.code == "\n\ndef f(cfg):\n    return cfg.a + cfg.b\n"


def test_import_resolved_through_scopes():
    """The function-local import the expression used goes; the module-level
    import of the same name (still used) stays."""
    src = dedent(
        """
        from m import R


        def f():
            from m import R
            return R.f()


        y = R
        """
    )
    res = apply_edits(src, [edit(src, "R.f()", "1", "R")])
    assert res.code == "from m import R\n\n\ndef f():\n    return 1\n\n\ny = R\n"


def test_import_kept_when_used_in_string_annotation_and_future_never_removed():
    src = dedent(
        """
        from __future__ import annotations
        from m import R


        def f(x: "R") -> None:
            return R.f(annotations)
        """
    )
    res = apply_edits(src, [edit(src, "R.f(annotations)", "None", "R", "annotations")])
    assert res.code == src.replace("R.f(annotations)", "None")
    assert res.removed_imports == []


def test_comment_above_removed_import_moves_to_next_statement():
    src = dedent(
        """
        import os
        # yapf: disable
        from m import R
        # yapf: enable
        from n import S

        x = R.f() + S + os.sep
        """
    )
    res = apply_edits(src, [edit(src, "R.f()", "1", "R")])
    assert res.code == dedent(
        """
        import os
        # yapf: disable
        # yapf: enable
        from n import S

        x = 1 + S + os.sep
        """
    )


def test_removing_only_import_of_a_block_leaves_pass():
    src = dedent(
        """
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from m import R
        x = R.f()
        """
    )
    res = apply_edits(src, [edit(src, "R.f()", "1", "R")])
    assert res.code == dedent(
        """
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            pass
        x = 1
        """
    )


# ---------------------------------------------------------------------------
# failures, conflicts, idempotence


def test_unmatched_span_reported():
    src = "y = compute(x)\n"
    good = edit(src, "compute(x)", "v")
    partial = Edit(Span(1, 4, 1, 12), "w")  # "compute(": no node spans that
    off = Edit(Span(5, 0, 5, 3), "w")  # past the end of the file
    res = apply_edits(src, [partial, good, off])
    assert res.code == "y = v\n"
    assert res.applied == [good]
    assert res.unmatched == [partial, off]


def test_unmatched_only_leaves_code_untouched():
    src = "y = compute(x)\n"
    res = apply_edits(src, [Edit(Span(1, 0, 1, 3), "w")])  # "y ="
    assert res.code is src and res.applied == [] and len(res.unmatched) == 1


def test_identifier_names_are_not_expressions():
    src = "y = obj.attr + f(key=1)\n"
    attr = edit(src, "attr", "z")
    keyword = edit(src, "key", "z")
    res = apply_edits(src, [attr, keyword])
    assert res.code is src
    assert res.unmatched == [attr, keyword]
    # the Name in an expression slot does match
    res = apply_edits(src, [edit(src, "obj", "other")])
    assert res.code == "y = other.attr + f(key=1)\n"


def test_untouched_statements_are_not_rebuilt():
    import libcst as cst
    from libcst.codemod import CodemodContext

    src = "a = 1\ndef f():\n    return g(2)\nb = [3]\n"
    module = cst.parse_module(src)
    cmd = ReplaceExpressionsCommand(CodemodContext(), [edit(src, "g(2)", "cached")])
    out = cmd.transform_module(module)
    assert out.code == "a = 1\ndef f():\n    return cached\nb = [3]\n"
    assert out.body[0] is module.body[0] and out.body[2] is module.body[2]
    assert out.body[1] is not module.body[1]


def test_overlapping_edits_first_wins():
    src = "y = outer(inner(x))\n"
    outer = edit(src, "outer(inner(x))", "A")
    inner = edit(src, "inner(x)", "B")
    res = apply_edits(src, [outer, inner])
    assert res.code == "y = A\n"
    assert res.applied == [outer]
    assert res.unmatched == [inner] and res.conflicting == [inner]
    res = apply_edits(src, [inner, outer])
    assert res.code == "y = outer(B)\n"
    assert res.conflicting == [outer]


def test_applying_twice_changes_nothing_the_second_time():
    src = "from m import R\ny = R.compute(x)  # c\n"
    e = edit(src, "R.compute(x)", "x.value", "R")
    first = apply_edits(src, [e])
    assert first.code == "y = x.value  # c\n"
    second = apply_edits(first.code, [e])
    assert second.code == first.code
    assert second.applied == [] and second.unmatched == [e]


def test_syntax_error_in_source_raises_fix_error():
    with pytest.raises(FixError):
        apply_edits("def f(:\n    pass\n", [Edit(Span(1, 0, 1, 1), "x")])
    with pytest.raises(FixError):
        apply_edits("def f(:\n    pass\n", [])


def test_invalid_replacement_raises_fix_error():
    src = "y = f(x)\n"
    with pytest.raises(FixError):
        apply_edits(src, [edit(src, "f(x)", "a b c")])


def test_result_that_does_not_compile_raises_fix_error():
    src = "y = f(x)\n"
    # parses, but 'yield' outside a function is rejected by compile()
    with pytest.raises(FixError):
        apply_edits(src, [edit(src, "f(x)", "yield")])


def test_crlf_line_endings_preserved():
    src = "from m import R\r\nimport os\r\n\r\ny = R.compute(\r\n    x)  # c\r\nz = os.sep\r\n"
    e = edit(src, "R.compute(\r\n    x)", "x.value", "R")
    res = apply_edits(src, [e])
    assert res.code == "import os\r\n\r\ny = x.value  # c\r\nz = os.sep\r\n"


def test_encoding_declaration_preserved():
    src = "# -*- coding: latin-1 -*-\nfrom m import R\ny = R.f()\n"
    res = apply_edits(src, [edit(src, "R.f()", "1", "R")])
    assert res.code == "# -*- coding: latin-1 -*-\ny = 1\n"


def test_command_records_unmatched_and_warns():
    import libcst as cst
    from libcst.codemod import CodemodContext

    src = "y = f(x)\n"
    bad = Edit(Span(1, 0, 1, 2), "z")
    ctx = CodemodContext()
    cmd = ReplaceExpressionsCommand(ctx, [bad, edit(src, "f(x)", "z")])
    out = cmd.transform_module(cst.parse_module(src))
    assert out.code == "y = z\n"
    assert cmd.unmatched == [bad]
    assert len(cmd.applied) == 1
    assert any("no expression spans" in w for w in ctx.warnings)


# ---------------------------------------------------------------------------
# findings report + libcst.tool


def _report(
    path: str,
    line: int,
    col: int,
    end_line: int,
    end_col: int,
    replacement: str,
    remove=(),
    applicability="safe",
) -> dict:
    return {
        "code": "CL001",
        "path": path,
        "line": line,
        "column": col,
        "message": "expensive call on hot path",
        "fix": {
            "applicability": applicability,
            "message": "read the cached value",
            "edits": [
                {
                    "line": line,
                    "column": col,
                    "end_line": end_line,
                    "end_column": end_col,
                    "replacement": replacement,
                    "remove_names": list(remove),
                }
            ],
        },
    }


CLI_SRC = dedent(
    """
    from vllm.multimodal import MULTIMODAL_REGISTRY


    def budget(self):
        # comment stays
        n = MULTIMODAL_REGISTRY.\\
            get_encdec_max_encoder_len(
            self.vllm_config.model_config)
        m = slow_lookup(self)  # unsafe fix target
        return n + m
    """
)


def _write_project(tmp_path: Path) -> tuple[Path, Path]:
    proj = tmp_path / "proj"
    proj.mkdir()
    target = proj / "worker.py"
    target.write_text(CLI_SRC)
    s1 = span_of(
        CLI_SRC,
        "MULTIMODAL_REGISTRY.\\\n        get_encdec_max_encoder_len(\n        self.vllm_config.model_config)",
    )
    s2 = span_of(CLI_SRC, "slow_lookup(self)")
    findings = [
        # JSON columns are 1-based
        _report(
            "worker.py",
            s1.line,
            s1.column + 1,
            s1.end_line,
            s1.end_column + 1,
            "self.scheduler_config.max_num_encoder_input_tokens",
            ["MULTIMODAL_REGISTRY"],
        ),
        _report(
            str(target),
            s2.line,
            s2.column + 1,
            s2.end_line,
            s2.end_column + 1,
            "self.cached_lookup",
            applicability="unsafe",
        ),
        # a finding for another file, and one without a fix
        _report("other.py", 1, 1, 1, 2, "x"),
        {
            "code": "CL002",
            "path": "worker.py",
            "line": 1,
            "column": 1,
            "message": "m",
            "fix": None,
        },
    ]
    report = proj / "findings.json"
    report.write_text(json.dumps(findings, indent=2))
    return target, report


def test_load_edits_converts_columns_and_filters(tmp_path):
    target, report = _write_project(tmp_path)
    safe = load_edits(str(report), str(target))
    assert len(safe) == 1
    expected = span_of(
        CLI_SRC,
        "MULTIMODAL_REGISTRY.\\\n        get_encdec_max_encoder_len(\n        self.vllm_config.model_config)",
    )
    assert safe[0].span == expected
    assert safe[0].remove_names == ("MULTIMODAL_REGISTRY",)
    both = load_edits(str(report), str(target), unsafe_fixes=True)
    assert [e.replacement for e in both] == [
        "self.scheduler_config.max_num_encoder_input_tokens",
        "self.cached_lookup",
    ]
    assert load_edits(str(report), str(target.parent / "nope.py")) == []


def test_load_edits_without_applicability_is_unsafe(tmp_path):
    target = tmp_path / "a.py"
    target.write_text("y = f(x)\n")
    finding = _report("a.py", 1, 5, 1, 9, "v")
    del finding["fix"]["applicability"]
    report = tmp_path / "r.json"
    report.write_text(json.dumps([finding]))
    assert load_edits(str(report), str(target)) == []
    [e] = load_edits(str(report), str(target), unsafe_fixes=True)
    assert e.span == Span(1, 4, 1, 8)
    assert apply_edits(target.read_text(), [e]).code == "y = v\n"


def _run_tool(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "libcst.tool",
            "codemod",
            "--no-format",
            "--hide-progress",
            *args,
        ],
        check=False,
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


EXPECTED_SAFE = "\n\n" + dedent(
    """
    def budget(self):
        # comment stays
        n = self.scheduler_config.max_num_encoder_input_tokens
        m = slow_lookup(self)  # unsafe fix target
        return n + m
    """
)


def test_libcst_tool_applies_safe_fixes_only(tmp_path):
    target, report = _write_project(tmp_path)
    proc = _run_tool(
        "replace_expression.ReplaceExpressionsCommand",
        "--findings",
        str(report),
        str(target),
    )
    assert proc.returncode == 0, proc.stderr
    assert "Transformed 1 files successfully" in proc.stderr
    assert target.read_text() == EXPECTED_SAFE
    # running again: the safe edit's span no longer matches -> warning, file unchanged
    proc = _run_tool(
        "replace_expression.ReplaceExpressionsCommand",
        "--findings",
        str(report),
        str(target),
    )
    assert proc.returncode == 0, proc.stderr
    assert "no expression spans exactly" in proc.stderr
    assert target.read_text() == EXPECTED_SAFE


def test_libcst_tool_unsafe_fixes_flag_and_external_path(tmp_path):
    target, report = _write_project(tmp_path)
    proc = _run_tool(
        "-x",
        "codemods.replace_expression.ReplaceExpressionsCommand",
        "--findings",
        str(report),
        "--unsafe-fixes",
        str(target),
    )
    assert proc.returncode == 0, proc.stderr
    assert target.read_text() == EXPECTED_SAFE.replace("slow_lookup(self)", "self.cached_lookup")


def test_libcst_tool_relative_paths(tmp_path):
    """Report paths relative to the report's directory, file given relative to cwd."""
    target, report = _write_project(tmp_path)
    proc = _run_tool(
        "replace_expression.ReplaceExpressionsCommand",
        "--findings",
        os.path.relpath(report, REPO),
        os.path.relpath(target, REPO),
    )
    assert proc.returncode == 0, proc.stderr
    assert target.read_text() == EXPECTED_SAFE


_POSITIONS_SOURCE = '''\
"""Module docstring."""
import os  # a comment

x = 1; y = os.getpid()


@decorator(
    arg=1,
)
class Outer(Base):
    """Docstring."""

    # a comment line in the class body
    LIMIT = compute(
        2,
    )

    class Inner:
        @staticmethod
        def deep(a,
                 b):
            return (a +
                    b)

    @property
    def value(self):
        if self.x:
            return self.y.z(1)  # trailing
        return [
            item for item in self.items
        ]

    async def step(self):
        async with lock:
            await go(self.value)


def top(a: int = 3) -> int:
    return a * 2
'''


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_partial_positions_equal_the_whole_module_positions(newline):
    """Positions computed for the statements holding some lines (inside
    copies of their classes) are the whole module's, node for node."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from codemods._common import partial_positions

    source = _POSITIONS_SOURCE.replace("\n", newline)
    tree = cst.parse_module(source)
    full = MetadataWrapper(tree, unsafe_skip_copy=True).resolve(PositionProvider)
    n_lines = source.count(newline)
    text_lines = source.split(newline)
    for line in range(1, n_lines + 1):
        got = partial_positions(tree, source, {line})
        if got is None:
            # no statement holds a blank or comment-only line: the caller falls back
            assert text_lines[line - 1].strip() in ("", "# a comment line in the class body"), line
            continue
        positions, enclosing = got
        assert tree in enclosing
        for node, rng in positions.items():
            assert rng == full[node], (line, type(node).__name__, rng, full[node])
    # the method holding line 29 is positioned, not the whole class
    got = partial_positions(tree, source, {29})
    assert got is not None
    positions, enclosing = got
    outer = tree.body[3]
    assert isinstance(outer, cst.ClassDef) and outer in enclosing and outer not in positions
    value = next(s for s in outer.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "value")
    assert value in positions
    assert len(positions) < len(full) / 3
