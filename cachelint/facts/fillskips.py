"""Fills that may not run for an object that is built all the same
(:class:`FillSkips`, a mixin of :class:`~cachelint.facts.hazards.Hazards`): a
``try`` whose ``except`` goes on, or a ``with`` whose context manager may
swallow the exception, around the fill; a subclass whose construction does
not call the filling method on every path (an override, a mixin's method, a
dataclass's generated ``__init__``, a base outside the tree); and, through
:class:`~cachelint.facts.bypass.Bypasses`, construction that bypasses it.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ..index.body import always_raises, suppress_call
from ..index.expr import _last_name, conv, dotted
from ..index.records import FunctionInfo
from ..semantic.values import GlobalRoot
from .construction import super_calls

if TYPE_CHECKING:
    from ..semantic.program import Program
    from .bodies import Bodies


# bases outside the tree that define no `__init__` or `__post_init__` of their own
_PLAIN_BASES = frozenset({"object", "builtins.object", "typing.Generic", "abc.ABC", "typing.Protocol"})


class FillSkips:
    """Where the fill may be skipped (a mixin: ``self`` is the
    :class:`~cachelint.facts.hazards.Hazards`)."""

    if TYPE_CHECKING:  # what Hazards provides (checked against it by mypy)
        p: Program
        bodies: Bodies

        def _bypasses(self, site) -> list: ...

        def unconditional_super(self, own: FunctionInfo, name: str) -> bool: ...

    def _skippers(self, site) -> list:
        """A ``try`` around the fill whose ``except`` goes on (or a ``with
        suppress(...)``): an exception raised before the fill skips it, and
        the function, the construction too, still completes."""
        return self._skippers_at(site.function, site.call.stmt_line)

    def _skippers_at(self, f: FunctionInfo, stmt_line: int) -> list:
        """Why an exception may skip the statement at ``stmt_line`` of ``f``
        while ``f`` still completes (see :meth:`_skippers`)."""
        body = self.bodies.body(f)
        if body is None:
            return []
        node, shift = body.node, body.shift
        line = stmt_line - shift
        out = []
        n: Any
        for n in ast.walk(node):
            if isinstance(n, ast.Try) or type(n).__name__ == "TryStar":
                if not n.body or not (n.body[0].lineno <= line <= (n.body[-1].end_lineno or n.body[-1].lineno)):
                    continue
                for h in n.handlers:
                    if not always_raises(h.body):
                        out.append(
                            f"the fill sits in the `try` at line {n.lineno + shift}, whose `except` at line {h.lineno + shift} "
                            "goes on without it: if anything before the fill raises, the object is built without it"
                        )
                        break
            elif isinstance(n, (ast.With, ast.AsyncWith)) and n.body:
                if not n.body[0].lineno <= line <= (n.body[-1].end_lineno or n.body[-1].lineno):
                    continue
                for item in n.items:
                    why = self._may_suppress(f, item.context_expr)
                    if why is not None:
                        out.append(
                            f"the fill sits in the `with` at line {n.lineno + shift}, {why}: "
                            "if anything before the fill raises, the object is built without it"
                        )
                        break
        return out

    def _may_suppress(self, f: FunctionInfo, e: ast.expr) -> str | None:
        """Why the context manager ``e`` (a ``with`` item in ``f``) may swallow
        an exception raised in its body, or None when it cannot: its class's
        ``__exit__`` (in the tree) returns only ``None`` or ``False``, or it is
        a ``@contextmanager`` generator of the tree whose ``yield`` no ``try``
        with a handler that goes on encloses. ``suppress(...)`` does; a
        context manager cachelint cannot see into may."""
        text = ast.unparse(e)
        if suppress_call(e):
            return "which suppresses exceptions"
        p = self.p
        ctx = p.context(f)
        call = isinstance(e, ast.Call)
        v = p.canon(conv(e.func if isinstance(e, ast.Call) else e), ctx)
        cls = None
        fn = None
        if v is not None:
            if call:
                if len(v) == 1 and isinstance(v[0], GlobalRoot) and v[0].qualname in p.classes:
                    cls = v[0].qualname
                else:
                    fn = p.callee_function(v)
            else:
                cls = p.type_of(v)
        if cls is not None and cls in p.classes:
            exit_ = p.lookup_method(cls, "__exit__") or p.lookup_method(cls, "__aexit__")
            if exit_ is None:
                return (
                    f"whose context manager `{text}` has no `__exit__` cachelint can see (it may suppress exceptions)"
                )
            if all(r[0] == "const" and r[1] in (None, False) for r in exit_.returns):
                return None
            return f"whose context manager's `{exit_.qualname}` may return true (suppressing the exception)"
        if fn is not None and any(_last_name(d) in ("contextmanager", "asynccontextmanager") for d in fn.decorators):
            body = self.bodies.body(fn)
            if body is not None and not _yield_in_handled_try(body.node):
                return None
            return f"whose context manager `{fn.qualname}` may swallow an exception at its `yield`"
        return f"whose context manager `{text}` cachelint cannot see into (it may suppress exceptions)"

    def _skipping_subclasses(self, site) -> list:
        """Subclasses of the filling class whose construction may not run the
        fill: what their MRO resolves the fill's method to before the filling
        class (an override, a mixin's method, a dataclass's generated
        ``__init__``, a base outside the tree) does not call it on every path."""
        p = self.p
        f = site.function
        if not site.in_constructor or f.class_qualname is None:
            return []
        cls = f.class_qualname
        out = []
        found: list = []  # (subclass, class whose method skips)
        for s in sorted(p.subclasses(cls), key=lambda k: len(p.mro(k))):
            mro = p.mro(s)
            if s not in p.classes or cls not in mro:
                continue
            short = s.rsplit(".", 1)[-1]
            for k in mro[: mro.index(cls)]:
                c = p.classes.get(k)
                if c is None:
                    if k in _PLAIN_BASES:
                        continue
                    why = (
                        f"`{k}`, a base of `{s}` outside the analysed files, comes before `{cls}` in its MRO and may "
                        f"define `{f.name}` without calling `{f.qualname}`, so a `{short}` may never run the fill"
                    )
                else:
                    own = p.functions.get(c.methods.get(f.name, ""))
                    if own is not None:
                        if not super_calls(own, f.name):
                            if p.is_subclass(k, cls):
                                why = f"`{own.qualname}` overrides `{f.qualname}` without calling it, so a `{short}` never runs the fill"
                            else:
                                why = (
                                    f"`{own.qualname}` comes before `{f.qualname}` in the MRO of `{s}` and does not call "
                                    f"it, so a `{short}` never runs the fill"
                                )
                        elif not self.unconditional_super(own, f.name):
                            line = min(super_calls(own, f.name))
                            why = (
                                f"`{own.qualname}` calls `super().{f.name}(...)` (line {line}) only on some paths (under a "
                                f"condition, or in a `try` whose `except` goes on), so a `{short}` may never run the fill"
                            )
                        else:
                            continue
                    elif f.name == "__init__" and _own_dataclass(p, c):
                        why = f"the dataclass `{k}` generates an `__init__` that does not call `{f.qualname}`"
                    else:
                        continue
                if not any(k == k2 and p.is_subclass(s, s2) for s2, k2 in found):
                    found.append((s, k))
                    out.append((s, why))
                break
        return out + self._bypasses(site)


def _yield_in_handled_try(node) -> bool:
    """A ``yield`` inside the body of a ``try`` whose handler goes on (or a
    ``with`` that suppresses): a generator context manager that swallows the
    exception its ``with`` body raised."""
    n: Any
    for n in ast.walk(node):
        if isinstance(n, ast.Try) or type(n).__name__ == "TryStar":
            if any(not always_raises(h.body) for h in n.handlers) and any(
                isinstance(x, (ast.Yield, ast.YieldFrom)) for stmt in n.body for x in ast.walk(stmt)
            ):
                return True
        elif isinstance(n, (ast.With, ast.AsyncWith)) and any(suppress_call(i.context_expr) for i in n.items):
            if any(isinstance(x, (ast.Yield, ast.YieldFrom)) for stmt in n.body for x in ast.walk(stmt)):
                return True
    return False


def _own_dataclass(p: Program, c) -> bool:
    for d in c.decorators:
        d0 = d[1] if d[0] == "call" else d
        if (dotted(d0) or "").rsplit(".", 1)[-1] == "dataclass":
            return not (d[0] == "call" and any(k == "init" and v == ("const", False) for k, v in d[3]))
    return False
