"""File discovery: .gitignore semantics and module names."""

from __future__ import annotations

from pathlib import Path

from cachelint.discover.walk import GitIgnore, discover, module_name_for


def _touch(p: Path, text: str = "") -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def test_gitignore_patterns(tmp_path):
    (tmp_path / ".git").mkdir()
    _touch(tmp_path / ".gitignore", "build_out/\n*.gen.py\n/rooted.py\n!keep.gen.py\ndocs/**/skip.py\n")
    for rel in (
        "a.py",
        "x.gen.py",
        "keep.gen.py",
        "rooted.py",
        "sub/rooted.py",
        "build_out/b.py",
        "docs/deep/er/skip.py",
        "docs/ok.py",
    ):
        _touch(tmp_path / rel)
    _touch(tmp_path / "sub" / ".gitignore", "local.py\n")
    _touch(tmp_path / "sub" / "local.py")
    found = {Path(f.path).resolve().relative_to(tmp_path.resolve()).as_posix() for f in discover([str(tmp_path)])}
    assert found == {"a.py", "keep.gen.py", "sub/rooted.py", "docs/ok.py"}


def test_gitignore_off(tmp_path):
    (tmp_path / ".git").mkdir()
    _touch(tmp_path / ".gitignore", "*.py\n")
    _touch(tmp_path / "a.py")
    assert discover([str(tmp_path)]) == []
    assert len(discover([str(tmp_path)], respect_gitignore=False)) == 1


def test_module_names_follow_packages(tmp_path):
    _touch(tmp_path / "proj" / "pkg" / "__init__.py")
    _touch(tmp_path / "proj" / "pkg" / "sub" / "__init__.py")
    _touch(tmp_path / "proj" / "pkg" / "sub" / "mod.py")
    assert module_name_for(tmp_path / "proj" / "pkg" / "sub" / "mod.py") == ("pkg.sub.mod", False)
    assert module_name_for(tmp_path / "proj" / "pkg" / "__init__.py") == ("pkg", True)


def test_symlink_loop_terminates(tmp_path):
    _touch(tmp_path / "d" / "a.py")
    (tmp_path / "d" / "loop").symlink_to(tmp_path / "d")
    files = discover([str(tmp_path)])
    assert [Path(f.path).name for f in files] == ["a.py"]


def test_single_rule_decision():
    gi = GitIgnore(Path("/r"), [])
    assert gi.decision(Path("/r/x.py"), False) is None
