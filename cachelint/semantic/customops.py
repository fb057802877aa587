"""Torch custom ops: the Python function a call of ``torch.ops.<namespace>.<op>`` runs.

A custom op is a registry: a function is registered under a name, by a call
(vLLM's ``direct_register_custom_op(op_name="all_reduce", op_func=all_reduce)``)
or a decorator (``@torch.library.custom_op("vllm::f")``), and code calls it
by that name through ``torch.ops``. The registering functions are data
(``custom-op-registrars`` in the presets and the configuration,
:class:`~cachelint.config.CustomOpRegistrar`). A compiled graph calls a custom
op without tracing its body, so the body runs on every call.

A registration counts only when its op name is a string constant and its
namespace is known (from the name, the ``library`` argument's
``torch.library.Library("<namespace>", ...)``, or the entry's default): an op
of an unknown namespace could be any other library's op of the same name.
Registering calls and decorators are looked for by the registrar's last name
before anything is resolved (the scan stays cheap): a registrar imported
under another name (``from torch.library import custom_op as co``) is not
seen.

A mixin of :class:`cachelint.semantic.program.Program`.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from ..config import CustomOpRegistrar
from ..index.expr import UNKNOWN, _last_name, dotted
from ..index.records import FileIndex, FunctionInfo
from .values import CallRoot, ConstRoot, GlobalRoot, Value

if TYPE_CHECKING:
    from .program import FunctionContext

# torch.ops.<namespace>.<op>, or one of its overloads: torch.ops.<namespace>.<op>.<overload>
_OP_CALL = re.compile(r"^torch\.ops\.([A-Za-z_]\w*)\.([A-Za-z_]\w*)(?:\.[A-Za-z_]\w*)?$")


class CustomOps:
    """Methods of the program (a mixin: ``self`` is the program)."""

    if TYPE_CHECKING:  # what the program provides (checked against it by mypy)
        custom_op_registrars: tuple[CustomOpRegistrar, ...]
        _custom_ops: dict[tuple[str, str], list[FunctionInfo]] | None
        indexes: list[FileIndex]
        modules: dict[str, FileIndex]

        def call_callee(self, f: FunctionInfo, c) -> Value | None: ...
        def callee_function(self, callee: Value | None, depth: int = 0) -> FunctionInfo | None: ...
        def callee_names(self, callee: Value | None, spelled: str | None) -> list[str]: ...
        def canon(self, e, ctx: FunctionContext | None, depth: int = 0) -> Value | None: ...
        def context(self, f: FunctionInfo, self_class: str | None = None) -> FunctionContext: ...
        def module_function(self, module: str) -> FunctionInfo | None: ...

    def custom_op_targets(self, callee: Value | None, spelled: str | None) -> list[FunctionInfo]:
        """The functions registered as the custom op a call of ``callee``
        (spelled ``spelled``) runs: none unless it is ``torch.ops.<ns>.<op>``."""
        if not self.custom_op_registrars or spelled is None or "ops." not in spelled:
            return []
        for name in self.callee_names(callee, spelled):
            m = _OP_CALL.match(name)
            if m is not None:
                return self.custom_ops().get((m.group(1), m.group(2)), [])
        return []

    def custom_ops(self) -> dict[tuple[str, str], list[FunctionInfo]]:
        """(namespace, op) -> the functions registered under it, over the whole program."""
        if self._custom_ops is None:
            ops: dict[tuple[str, str], list[FunctionInfo]] = {}
            for ns, op, fn in self._registrations():
                fns = ops.setdefault((ns, op), [])
                if fn not in fns:
                    fns.append(fn)
            self._custom_ops = ops
        return self._custom_ops

    def _registrations(self):
        calls = [r for r in self.custom_op_registrars if not r.decorator]
        decorators = [r for r in self.custom_op_registrars if r.decorator]
        # a function's calls may still be marshalled: only those whose bytes hold a
        # registrar's last name are unpacked (a glob there: every function's)
        needles = {_needle(r.pattern) for r in calls}
        names = None if None in needles else {n.decode() for n in needles if n is not None}
        for fi in self.indexes:
            if fi.error is not None:
                continue
            module_code = self.module_function(fi.module) if fi.module_calls else None
            for f in ([module_code] if module_code is not None else []) + list(fi.functions):
                if decorators and f.decorators:
                    yield from self._decorated(f, decorators)
                if calls and _may_call(f, needles):
                    for c in f.calls:
                        if names is None or _last_name(c.func) in names:
                            yield from self._registered_by_call(f, c, calls)

    def _decorated(self, f: FunctionInfo, registrars: list[CustomOpRegistrar]):
        ctx = None
        for d in f.decorators:
            func = d[1] if d[0] == "call" else d
            spelled = dotted(func)
            if spelled is None or not any(_may_be(spelled, r.pattern) for r in registrars):
                continue
            ctx = ctx or self.context(f)
            names = self.callee_names(self.canon(func, ctx), spelled)
            for r in registrars:
                if any(fnmatchcase(n, r.pattern) for n in names):
                    args, kwargs = (d[2], d[3]) if d[0] == "call" else ((), ())
                    found = self._op_name(r, args, kwargs, f.name, ctx)
                    if found is not None:
                        yield found[0], found[1], f
                    break

    def _registered_by_call(self, f: FunctionInfo, c, registrars: list[CustomOpRegistrar]):
        spelled = dotted(c.func)
        if spelled is None:
            return
        names = self.callee_names(self.call_callee(f, c), spelled)
        ctx = self.context(f)
        for r in registrars:
            if any(fnmatchcase(n, r.pattern) for n in names):
                fexpr = _argument(r.function, c.args, c.kwargs)
                v = self.canon(fexpr, ctx) if fexpr is not None and fexpr is not _UNREAD else None
                fn = self.callee_function(v) if v is not None else None
                if fn is not None:
                    found = self._op_name(r, c.args, c.kwargs, fn.name, ctx)
                    if found is not None:
                        yield found[0], found[1], fn
                return

    def _op_name(self, r: CustomOpRegistrar, args, kwargs, default: str, ctx) -> tuple[str, str] | None:
        """(namespace, op) a registration names, or None when either is unknown."""
        e = _argument(r.op, args, kwargs)
        if e is None:  # not passed: the op is named after the function
            name = default
        elif e[0] == "const" and isinstance(e[1], str):
            name = e[1]
        else:
            return None
        ns, sep, op = name.rpartition("::")
        if sep:
            return (ns, op) if ns and op else None
        lib = _argument(r.library, args, kwargs)
        if lib is _UNREAD:
            return None
        if lib is None or lib == ("const", None):
            return (r.namespace, name) if r.namespace else None
        ns_of = self._library_namespace(lib, ctx)
        return (ns_of, name) if ns_of else None

    def _library_namespace(self, e, ctx) -> str | None:
        """The namespace of ``torch.library.Library("<ns>", ...)``, built here or bound to a module global."""
        if e[0] == "call":
            return _library_call_namespace(e)
        v = self.canon(e, ctx)
        if v is None or len(v) != 1:
            return None
        root = v[0]
        if isinstance(root, CallRoot):  # module code sees the global's value
            callee, args = root.callee, root.args
            if len(callee) != 1 or not isinstance(callee[0], GlobalRoot) or not args:
                return None
            if callee[0].qualname.rpartition(".")[2] != "Library":
                return None
            first = args[0]
            ok = len(first) == 1 and isinstance(first[0], ConstRoot) and isinstance(first[0].value, str)
            return first[0].value if ok else None
        if not isinstance(root, GlobalRoot):
            return None
        module, _, name = root.qualname.rpartition(".")
        fi = self.modules.get(module)
        bound = fi.globals.get(name) if fi is not None else None
        return _library_call_namespace(bound) if bound is not None and bound[0] == "call" else None


def _library_call_namespace(e) -> str | None:
    """``"ns"`` of the expression ``Library("ns", ...)``."""
    if (dotted(e[1]) or "").rpartition(".")[2] != "Library" or not e[2]:
        return None
    first = e[2][0]
    return first[1] if first[0] == "const" and isinstance(first[1], str) else None


_UNREAD = ("?",)  # an argument that may be passed but cannot be read: through `*args` or `**kwargs`


def _argument(where: tuple[str | None, int | None], args, kwargs):
    """The expression passed as the argument ``where`` (keyword, position):
    None when it is not passed, ``_UNREAD`` when it may be, through a
    ``*args`` or ``**kwargs`` that cannot be read."""
    kw, pos = where
    if kw is not None:
        for k, v in kwargs:
            if k == kw:
                return v
    if pos is not None:
        if UNKNOWN in args[: pos + 1]:  # at or past a `*args`, or an expression not indexed
            return _UNREAD
        if pos < len(args):
            return args[pos]
    if kw is not None and any(k is None for k, _ in kwargs):
        return _UNREAD
    return None


def _needle(pattern: str) -> bytes | None:
    """The registrar's last name, if it is literal: marshalled calls that lack it register nothing."""
    last = pattern.rpartition(".")[2]
    return None if any(ch in last for ch in "*?[") or not last else last.encode()


def _may_be(spelled: str, pattern: str) -> bool:
    """A callee spelled ``spelled`` may resolve to ``pattern``: their last names can match."""
    return fnmatchcase(spelled.rpartition(".")[2], pattern.rpartition(".")[2])


def _may_call(f: FunctionInfo, needles: set[bytes | None]) -> bool:
    """``f`` may call a registrar: it has calls, and their marshalled bytes (when
    still packed) hold one of the registrars' literal last names."""
    packed = f.__dict__.get("calls")
    if type(packed) is not bytes or None in needles:
        return bool(f.calls)
    return any(n in packed for n in needles if n is not None)
