"""``--add-noqa`` (a ``# noqa: CODE`` for each finding), ``--show-fixes`` and
unused suppression comments (CL005)."""

from __future__ import annotations

import json
import shutil

from cachelint.apply.noqa import _with_codes, commentable_lines

from .helpers import FIXTURES, run_cli


def test_comment_placement_and_merging():
    src = "x = REGISTRY.\\\n    lookup(\n        a)\ns = '''a\nb'''\n"
    assert commentable_lines(src) == {2, 3, 5}  # line 1 continues with a backslash, line 4 is in a string
    assert _with_codes("    y = f(x)\n", ["CL002"]) == "    y = f(x)  # noqa: CL002\n"
    assert _with_codes("y = f(x)  # noqa: E501\r\n", ["CL001"]) == "y = f(x)  # noqa: CL001, E501\r\n"
    assert _with_codes("y = f(x)  # type: ignore", ["CL001"]) == "y = f(x)  # type: ignore  # noqa: CL001"


def test_add_noqa_suppresses_every_finding_and_keeps_the_rest(tmp_path):
    work = tmp_path / "proj"
    shutil.copytree(FIXTURES / "guards" / "before", work)
    users = work / "pkg" / "users.py"
    # a call split with a backslash: the comment goes on its second line
    users.write_text(
        users.read_text().replace(
            "        return probe_encoder(config)\n    return 0\n",
            "        return probe_encoder(\\\n            config)\n    return 0\n",
            1,
        ),
        newline="\r\n",
    )
    before = json.loads(run_cli("check", ".", "--output-format", "json", cwd=work).stdout)
    assert len(before) == 7
    proc = run_cli("check", ".", "--add-noqa", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert "Added 7 noqa directives." in proc.stderr
    raw = users.read_bytes()
    assert raw.count(b"  # noqa: CL001\r\n") == 7 and b"\n" not in raw.replace(b"\r\n", b"")  # CRLF kept
    assert b"probe_encoder(\\\r\n            config)  # noqa: CL001\r\n" in raw
    after = run_cli("check", ".", "--output-format", "json", cwd=work)
    assert after.returncode == 0 and json.loads(after.stdout) == []
    # nothing left to add: a second run changes nothing
    again = run_cli("check", ".", "--add-noqa", cwd=work)
    assert "Added 0 noqa directives." in again.stderr and users.read_bytes() == raw
    assert run_cli("check", ".", "--add-noqa", "--fix", cwd=work).returncode == 2


def test_show_fixes(tmp_path):
    work = tmp_path / "proj"
    shutil.copytree(FIXTURES / "scheduler" / "before", work)
    shown = run_cli("check", ".", "--show-fixes", cwd=work)
    assert shown.returncode == 1
    # each fix as the diff it makes; nothing written
    assert "    +        loads = json.loads(output.stats)\n" in shown.stdout
    assert '    -        if json.loads(output.stats)["finished"]:\n' in shown.stdout
    assert "loads = " not in (work / "engine" / "scheduler.py").read_text()
    fixed = run_cli("check", ".", "--fix", "--show-fixes", cwd=work)
    assert fixed.stdout.startswith(
        # the same call at two sites is one finding, one fix
        "Fixed 1 finding:\n- engine/scheduler.py:\n    1 × CL002 (expensive-call-on-hot-path)\n"
    )
    assert "loads = json.loads(output.stats)" in (work / "engine" / "scheduler.py").read_text()


def test_unused_noqa_is_opt_in_and_judges_only_the_rules_that_ran(tmp_path):
    work = tmp_path / "proj"
    shutil.copytree(FIXTURES / "guards" / "before", work)
    assert run_cli("check", ".", "--add-noqa", cwd=work).returncode == 0
    users = work / "pkg" / "users.py"
    # a stale code next to a used one, a typo, another tool's code
    text = users.read_text().replace("# noqa: CL001", "# noqa: CL001, CL002, E501", 1) + "X = 1  # noqa: CL099\n"
    users.write_text(text)
    default = run_cli("check", ".", "--output-format", "json", cwd=work)
    assert json.loads(default.stdout) == []  # off by default
    got = json.loads(run_cli("check", ".", "--output-format", "json", "--select", "CL001,CL002,CL005", cwd=work).stdout)
    assert sorted((f["code"], f["line"], f["message"].split(":")[0]) for f in got) == [
        ("CL005", 6, "`# noqa"),
        ("CL005", len(text.splitlines()), "`CL099` in a suppression comment is no rule's code"),
    ]
    assert "no CL002 finding is on this line" in next(f["message"] for f in got if f["line"] == 6)
    # CL002 did not run: its code is not judged
    only = json.loads(run_cli("check", ".", "--output-format", "json", "--select", "CL001,CL005", cwd=work).stdout)
    assert [f["line"] for f in only] == [len(text.splitlines())]
