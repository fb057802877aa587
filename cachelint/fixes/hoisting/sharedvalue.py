"""Where the call's value goes, for the hoist to a local, whose uses then share
one object (:class:`SharedValue`, a mixin of
:class:`~cachelint.fixes.hoisting.local.LocalHoists`): whether the value is
immutable, and else the first place a use's value, followed through the
locals it is assigned to, may be changed in place or handed to code that may.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ...facts.bodies import first_line
from ...facts.catalog import pure_builtin
from ...index.expr import conv
from ...index.records import FunctionInfo
from ...semantic.values import GlobalRoot, ParamRoot, SelfRoot
from .site import Site
from .syntax import _IMMUTABLE_RESULTS, _deep_immutable

if TYPE_CHECKING:
    from ...semantic.program import Program

_HANDS_OVER = "hands it to the caller"
# methods of the builtin containers that only read
_READ_METHODS = frozenset({"get", "items", "keys", "values", "copy", "count", "index", "startswith", "endswith"})
# builtins that read their argument and make a new value of it (a copy keeps no link to it)
_READS_ONLY = frozenset(
    {
        "len",
        "str",
        "repr",
        "int",
        "float",
        "bool",
        "isinstance",
        "hash",
        "abs",
        "round",
        "sum",
        "min",
        "max",
        "any",
        "all",
        "sorted",
        "list",
        "tuple",
        "set",
        "frozenset",
        "print",
        "format",
        "id",
        "type",
    }
)
# builtins whose result holds their argument: followed as the argument
_PASS_THROUGH = frozenset({"enumerate", "zip", "iter", "reversed", "map", "filter"})


class SharedValue:
    """One object for every use (a mixin: ``self`` is the
    :class:`~cachelint.fixes.hoisting.local.LocalHoists`)."""

    if TYPE_CHECKING:  # what LocalHoists provides (checked against it by mypy)
        p: Program
        a: Any  # the Analysis, untyped where InputAnalysis binds it

    def _immutable_value(self, s: Site) -> bool:
        """The call's value cannot be changed in place: the callee is
        annotated to return an immutable type (``-> int``, ``-> tuple[int, ...]``),
        or is a builtin that makes one (``len``, ``str``)."""
        p = self.p
        g = p.callee_function(s.callee) if s.callee is not None else None
        if g is not None:
            impls = self.a.cost.implementations(g)
            return bool(impls) and all(_deep_immutable(h.returns_annotation) for h in impls)
        callee = s.callee
        return (
            callee is not None
            and len(callee) == 1
            and isinstance(callee[0], GlobalRoot)
            and callee[0].qualname.startswith("builtins.")
            and callee[0].qualname[9:] in _IMMUTABLE_RESULTS
        )

    def _shared_change(self, s: Site, nodes: list, body) -> str | None:
        """With one local, every use gets the same object: a use that changes
        it in place (or hands it to code that may) then changes what another
        use sees, unless no other use keeps it and none comes later. Each use's
        value is followed through the locals (and their aliases) it is
        assigned to: the first such change, as a message clause, or None."""
        if self._immutable_value(s):
            return None
        f = s.function
        flows = [self._flow(f, body, n, set(), 0) for n in nodes]
        found = [
            change
            for i, (_kept, change) in enumerate(flows)
            if change is not None and (i < len(flows) - 1 or any(kept for j, (kept, _c) in enumerate(flows) if j != i))
        ]
        return min(found, key=lambda c: _HANDS_OVER in c) if found else None

    def _flow(self, f: FunctionInfo, body, n: ast.AST, seen: set, depth: int) -> tuple[bool, str | None]:
        """Where the value of expression ``n`` goes: (whether it is kept past
        its statement, the first thing that may change it in place)."""
        steps = body.steps(n)
        line = body.line_of(n)
        if not steps or depth > 8:
            return True, f"cachelint cannot follow the value at line {line}"
        parent, field, _index, _child = steps[-1]
        if isinstance(parent, ast.keyword):
            if len(steps) < 2:
                return True, f"cachelint cannot follow the value at line {line}"
            parent, field = steps[-2][0], "args"
        stmt = body.statement_of(n)
        at = f"`{first_line(stmt)}` (line {body.line_of(stmt)})" if stmt is not None else f"line {line}"
        if isinstance(parent, ast.Expr):
            return False, None
        if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and field == "value":
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if len(names) != len(targets):
                return True, f"{at} stores it where other code may change it"
            for name in names:
                change = self._local_flow(f, body, name, seen, depth)
                if change is not None:
                    return True, change
            if isinstance(parent, ast.NamedExpr):
                _kept, change = self._flow(f, body, parent, seen, depth + 1)
                if change is not None:
                    return True, change
            return True, None
        if isinstance(parent, (ast.Return, ast.Yield, ast.YieldFrom)):
            return True, f"{at} {_HANDS_OVER}, which may change it"
        if isinstance(parent, (ast.BoolOp, ast.IfExp, ast.Starred, ast.Tuple, ast.List, ast.Set, ast.Dict)):
            if isinstance(parent, ast.IfExp) and field == "test":
                return False, None
            return self._flow(f, body, parent, seen, depth + 1)
        if isinstance(parent, ast.Subscript):
            if field == "value" and isinstance(parent.ctx, ast.Load):
                return False, None
            return False, f"{at} changes it in place"
        if isinstance(parent, ast.Attribute):
            up = body.steps(parent)
            called = bool(up) and isinstance(up[-1][0], ast.Call) and up[-1][1] == "func"
            if called and parent.attr not in _READ_METHODS:
                return False, f"`{first_line(up[-1][0])}` (line {line}) may change it in place"
            if isinstance(parent.ctx, ast.Load):
                return False, None
            return False, f"{at} changes it in place"
        if isinstance(parent, ast.Call):
            if field == "func":
                return False, f"{at} calls it"
            return self._passed(f, body, parent, n, at, seen, depth)
        if isinstance(parent, (ast.For, ast.AsyncFor, ast.comprehension)) and field == "iter":
            return False, None
        if isinstance(parent, ast.AugAssign):
            if field == "value":
                return False, None
            return False, f"{at} changes it in place"
        if isinstance(parent, (ast.Compare, ast.BinOp, ast.UnaryOp, ast.FormattedValue, ast.JoinedStr, ast.Await)):
            return False, None
        if isinstance(parent, (ast.If, ast.While, ast.Assert)) and field == "test":
            return False, None
        return True, f"{at} uses it where cachelint cannot tell whether it is changed"

    def _local_flow(self, f: FunctionInfo, body, name: str, seen: set, depth: int) -> str | None:
        """The first place the local ``name`` (every read of it in ``f``) may
        be changed in place, or handed to code that may; None if none."""
        if name in seen:
            return None
        seen.add(name)
        for sub in ast.walk(body.node):
            if sub is not body.node and isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                if any(isinstance(x, ast.Name) and x.id == name for x in ast.walk(sub)):
                    return f"a nested function of `{f.name}` (line {body.line_of(sub)}) holds `{name}`"
        loads = [n for n in body.code_nodes if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
        changes = []
        for n in sorted(loads, key=lambda x: (x.lineno, x.col_offset)):
            _kept, change = self._flow(f, body, n, seen, depth + 1)
            if change is not None:
                changes.append(change)
        # a change in place names the hazard better than a hand-over to the caller
        return min(changes, key=lambda c: _HANDS_OVER in c) if changes else None

    def _passed(self, f: FunctionInfo, body, call: ast.Call, n: ast.AST, at: str, seen: set, depth: int):
        """The value ``n`` passed to ``call``: a builtin that only reads it, a
        function of the tree that changes no parameter, a catalogued pure
        function; else a call that may change it."""
        p = self.p
        fn = call.func
        if isinstance(fn, ast.Name) and fn.id in _PASS_THROUGH and n in call.args:
            return self._flow(f, body, call, seen, depth + 1)
        if isinstance(fn, ast.Name) and fn.id in _READS_ONLY:
            return False, None
        shown = ast.unparse(fn)[:40]
        callee = p.canon(conv(fn), p.context(f))
        h = p.callee_function(callee) if callee is not None else None
        if h is not None:
            for impl in self.a.cost.implementations(h):
                for e in self.a.state.effects(impl):
                    if isinstance(e.value[0], (ParamRoot, SelfRoot)):
                        return False, f"`{shown}(...)` ({at}) changes what it is given (`{e.text}`, line {e.line})"
            return False, None
        if callee is not None and len(callee) == 1 and isinstance(callee[0], GlobalRoot):
            if pure_builtin(callee[0].qualname):
                return False, None
        if self.a.cost.purity(p.callee_names(callee, ast.unparse(fn)), None).pure:
            return False, None
        return False, f"`{shown}(...)` ({at}) is a call cachelint cannot resolve, which may change it"
