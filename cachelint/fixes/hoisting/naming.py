"""The name of the local a hoist to a local introduces (:class:`LocalNames`, a
mixin of :class:`~cachelint.fixes.hoisting.local.LocalHoists`): a name no
scope of the function, no top-level binding of its module and no builtin
already uses.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ...index.records import FunctionInfo
from .site import _BUILTINS
from .syntax import _bound_by, _names_of

if TYPE_CHECKING:
    from ...semantic.program import Program


class LocalNames:
    """Fresh names for new locals (a mixin: ``self`` is the
    :class:`~cachelint.fixes.hoisting.local.LocalHoists`)."""

    if TYPE_CHECKING:  # what LocalHoists provides (checked against it by mypy)
        p: Program
        a: Any  # the Analysis, untyped where InputAnalysis binds it

    def _module_bindings(self, path: str) -> set[str]:
        """Every name the module at ``path`` binds at its top level, by any
        form (``for``/``with``/``except`` targets, imports, walrus, ``match``
        captures, ``global`` statements in its functions)."""
        cache = self.__dict__.setdefault("_module_names", {})
        hit = cache.get(path)
        if hit is not None:
            return hit
        out: set[str] = set()
        lines = self.a.bodies.lines(path)
        try:
            tree = ast.parse("".join(x if x.endswith("\n") else x + "\n" for x in lines or ()))
        except (SyntaxError, ValueError):
            tree = None
        if tree is not None:
            stack: list[ast.AST] = list(tree.body)
            while stack:
                n = stack.pop()
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    out.add(n.name)
                    out |= {x for g in ast.walk(n) if isinstance(g, ast.Global) for x in g.names}
                    continue
                if isinstance(n, ast.Lambda):
                    continue
                out |= _bound_by(n)
                stack.extend(ast.iter_child_nodes(n))
        cache[path] = out
        return out

    def _fresh_local(self, f: FunctionInfo, base: str) -> str:
        p = self.p
        ctx = p.context(f)
        fi = p.modules_by_path.get(f.path)
        taken = set(ctx.locals) | set(ctx.params) | _BUILTINS
        if fi is not None:
            taken |= set(fi.imports) | set(fi.defs) | set(fi.globals)
        c = ctx.parent
        while c is not None:
            taken |= set(c.locals) | set(c.params)
            c = c.parent
        body = self.a.bodies.body(f)
        if body is not None:
            # every name the function and its nested scopes read or bind (a
            # global it reads, a name a star import may define)
            taken |= _names_of(body.node)
        name, i = base, 2
        while name in taken or not name.isidentifier() or self._bound_in_module(f.path, name):
            name, i = f"{base}_{i}", i + 1
        return name

    def _bound_in_module(self, path: str, name: str) -> bool:
        """The module at ``path`` binds ``name`` at its top level (see
        :meth:`_module_bindings`); a name its text never spells is not
        bound there, and the module is parsed only when it is."""
        lines = self.a.bodies.lines(path)
        if lines is None:
            return True  # unreadable: every name may be taken
        if not any(name in x for x in lines):
            return False
        return name in self._module_bindings(path)
