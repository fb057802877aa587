"""What the call reads, for the hoist to a local (:class:`CallInputs`, a mixin
of :class:`~cachelint.fixes.hoisting.local.LocalHoists`): its arguments, its
receiver (for a method of the tree, the attributes it reads of its object and
the class attributes those fall back to), the module state its body reads and
the binding the callee is looked up through; and which of them no call can
change.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ...index.expr import render
from ...index.records import FunctionInfo
from ...semantic.values import CallRoot, ConstRoot, GlobalRoot, KwArg, ParamRoot
from .site import Site
from .syntax import _IMMUTABLE_RESULTS, _class_of, _deep_immutable, _param_annotation

if TYPE_CHECKING:
    from ...semantic.program import Program


class CallInputs:
    """The call's inputs (a mixin: ``self`` is the
    :class:`~cachelint.fixes.hoisting.local.LocalHoists`)."""

    if TYPE_CHECKING:  # what LocalHoists provides (checked against it by mypy)
        p: Program
        a: Any  # the Analysis, untyped where InputAnalysis binds it

        def _self_reads(
            self,
            g: FunctionInfo,
            depth: int = 0,
            seen: set | None = None,
            name: str | None = None,
            cls: str | None = None,
        ) -> set: ...

    def _callee_inputs(self, s: Site) -> list[tuple[tuple, str]]:
        """The binding the callee is looked up through: the name (``weight``,
        a module global a ``global`` statement or ``sys.modules[...]`` may
        rebind), or the attribute of the receiver (``self.weight``,
        ``h.weight`` on a module ``h``). Rebinding it between the uses makes
        the later use call something else."""
        func, f, st, p = s.call.func, s.function, self.a.state, self.p
        if func[0] == "name":
            v = st.value(f, func)
            return [(v, func[1])] if v is not None and isinstance(v[0], GlobalRoot) else []
        if func[0] != "attr":
            return []
        rv = st.value(f, func[1])
        if rv is None:
            return []
        if (
            len(rv) == 1
            and isinstance(rv[0], GlobalRoot)
            and (rv[0].qualname in p.modules or rv[0].qualname in p.classes)
        ):
            return [(p.attr_value(rv, func[2]), render(func))]
        return [(rv + (func[2],), render(func))]

    def _sealed(self, v: tuple) -> bool:
        """No call can change what ``v`` reads: a constant, a parameter
        annotated with an immutable type, or an immutable builtin's result
        of sealed arguments, read as a whole (not an attribute of it)."""
        if v is None or len(v) != 1:
            return False
        root = v[0]
        if isinstance(root, ConstRoot):
            return True
        if isinstance(root, ParamRoot):
            fn = self.p.functions.get(root.function)
            return fn is not None and _deep_immutable(_param_annotation(fn, root.name))
        if isinstance(root, CallRoot):
            callee = root.callee
            return (
                len(callee) == 1
                and isinstance(callee[0], GlobalRoot)
                and callee[0].qualname.startswith("builtins.")
                and callee[0].qualname[9:] in _IMMUTABLE_RESULTS
                and all(self._sealed(a.value if isinstance(a, KwArg) else a) for a in root.args)
            )
        return False

    def _local_inputs(self, s: Site) -> list[tuple[tuple, str]]:
        """What the call at ``s`` reads, as canonical values with their text:
        its arguments, its receiver (for a method or property of the tree, the
        attributes its body reads of that object), and the module state the
        callee's body reads."""
        p, st = self.p, self.a.state
        f, c = s.function, s.call
        g = p.callee_function(s.callee) if s.callee is not None else None
        impls = self.a.cost.implementations(g) if g is not None else []
        out: list[tuple[tuple, str]] = []
        func = c.func
        receiver = func[1] if func[0] == "attr" else None
        if receiver is not None:
            rv = st.value(f, receiver)
            if rv is not None and not (
                len(rv) == 1
                and isinstance(rv[0], GlobalRoot)
                and (rv[0].qualname in p.modules or rv[0].qualname in p.classes)
            ):
                if g is not None and g.self_name:
                    # what any implementation the call may dispatch to reads (a stub's override)
                    attrs: set = set()
                    for impl in impls:
                        attrs |= self._self_reads(impl) | self._class_reads(impl)
                    out.extend((rv + (a,), f"{render(receiver)}.{a}") for a in sorted(attrs))
                    out.extend(self._class_inputs(g, attrs))
                else:
                    out.append((rv, render(receiver)))
        if not c.is_read:
            for part in (*c.args, *(v for _kw, v in c.kwargs)):
                v = st.value(f, part)
                if v is not None:
                    out.append((v, render(part)))
        for impl in impls:
            out.extend((u.value, u.shown) for u in st.reads(impl) if not u.environ)
        return out

    def _class_reads(self, g: FunctionInfo) -> set:
        """The attributes method ``g`` reads through its object's class:
        ``type(self).scale``, ``self.__class__.scale``."""
        body = self.a.bodies.body(g)
        if body is None or g.self_name is None:
            return set()
        out = set()
        for n in body.code_nodes:
            if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and _class_of(n.value, g.self_name):
                out.add(n.attr)
        return out

    def _class_inputs(self, g: FunctionInfo, attrs: set) -> list[tuple[tuple, str]]:
        """An attribute a method reads of its object falls back to the class
        attribute of that name: ``cls.scale += 2`` in a classmethod, or
        ``type(self).scale = n``, changes what ``self.scale`` reads. The class
        attributes by those names of the method's class, its bases and its
        subclasses (the object may be of any of them)."""
        p = self.p
        cls = g.class_qualname
        if not cls or not attrs:
            return []
        family = dict.fromkeys([*p.mro(cls), *p.subclasses(cls)])
        out: list[tuple[tuple, str]] = []
        for k in family:
            if k not in p.classes:
                continue
            short = k.rsplit(".", 1)[-1]
            out.extend((p.attr_value((GlobalRoot(k),), a), f"{short}.{a}") for a in sorted(attrs))
        return out
