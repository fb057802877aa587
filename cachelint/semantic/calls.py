"""Call resolution: the functions a call may run. Callees through aliases,
factories and returned functions, overrides of a method called on a base
type (at most ``MAX_OVERRIDES``), protocol implementations, ``super()``,
higher-order builtins and the dunder methods builtins call.

A mixin of :class:`cachelint.semantic.program.Program`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..index.expr import _last_name, dotted
from ..index.records import ClassInfo, FileIndex, FunctionInfo
from .values import (
    MODULE_CODE,
    CallRoot,
    GlobalRoot,
    KwArg,
    SelfRoot,
    Value,
)

if TYPE_CHECKING:
    from .program import FunctionContext


# overrides followed from a call on an object typed by its base (see call_targets)
MAX_OVERRIDES = 12


# functions that call the functions passed to them
_HIGHER_ORDER = frozenset(
    {
        "builtins.map",
        "builtins.filter",
        "builtins.sorted",
        "builtins.min",
        "builtins.max",
        "functools.reduce",
        "itertools.starmap",
        "itertools.filterfalse",
        "itertools.takewhile",
        "itertools.dropwhile",
        "itertools.groupby",
        "itertools.accumulate",
    }
)


# builtins that call a dunder method of their argument
_BUILTIN_DUNDERS = {
    "builtins.len": "__len__",
    "builtins.iter": "__iter__",
    "builtins.next": "__next__",
    "builtins.str": "__str__",
    "builtins.repr": "__repr__",
    "builtins.hash": "__hash__",
    "builtins.bool": "__bool__",
    "builtins.abs": "__abs__",
    "builtins.reversed": "__reversed__",
    "builtins.format": "__format__",
    "builtins.int": "__int__",
    "builtins.float": "__float__",
}


def is_stub(f: FunctionInfo) -> bool:
    """A method with no behaviour of its own: ``@abstractmethod``, or a body
    of ``pass``, ``...``, a docstring or ``raise NotImplementedError``."""
    if any(_last_name(d) == "abstractmethod" for d in f.decorators):
        return True
    if f.returns or f.assigns:
        return False
    return all(_last_name(c.func) == "NotImplementedError" for c in f.calls)


class Calls:
    """Methods of the program (a mixin: ``self`` is the program)."""

    if TYPE_CHECKING:  # what the program provides (checked against it by mypy)
        _callee_functions: dict
        _in_progress: set
        _module_functions: dict
        _opaque_args: set

        def call_callee(self, f: FunctionInfo, c) -> Value | None: ...
        def canon(self, e, ctx: FunctionContext | None, depth: int = 0) -> Value | None: ...
        def canon_attr_value(self, v: Value) -> Value | None: ...

        classes: dict[str, ClassInfo]

        def cls_param_class(self, root) -> str | None: ...
        def own_class_param(self, root) -> str | None: ...
        def context(self, f: FunctionInfo, self_class: str | None = None) -> FunctionContext: ...
        def custom_op_targets(self, callee: Value | None, spelled: str | None) -> list[FunctionInfo]: ...
        def element_functions(self, sub, ctx: FunctionContext) -> list[FunctionInfo]: ...
        def expr_classes(self, e, ctx: FunctionContext, depth: int = 0) -> tuple[str, ...]: ...
        def iterable_elements(
            self, e, ctx: FunctionContext, depth: int = 0, items: bool = False
        ) -> tuple[str, ...]: ...
        def exact_class(self, v: Value) -> bool: ...

        functions: dict[str, FunctionInfo]

        def global_value(self, qn: str) -> Value | None: ...
        def is_module_level_variable(self, qn: str) -> bool: ...
        def is_protocol(self, class_qn: str) -> bool: ...
        def lookup_method(self, class_qn: str, name: str) -> FunctionInfo | None: ...

        call_methods: dict[str, str]

        modules: dict[str, FileIndex]

        def mro(self, class_qn: str) -> list[str]: ...
        def overrides(self, class_qn: str, name: str) -> list[FunctionInfo]: ...
        def self_attr_writers(self, class_qn: str, attr: str) -> list: ...
        def subclasses(self, class_qn: str) -> list[str]: ...
        def type_of(self, v: Value | None, depth: int = 0) -> str | None: ...

    def callee_function(self, callee: Value | None, depth: int = 0) -> FunctionInfo | None:
        """The in-tree function a canonical callee value calls, if known: the
        one function the call dispatches to on the type cachelint knows (see
        :meth:`callee_targets` for the overrides it may also reach)."""
        if callee is None or depth > 6:
            return None
        if depth == 0:  # the hot-path walk, the cost model and the rules ask it of the same callees
            memo = self._callee_functions
            if callee in memo:
                return memo[callee]
            fn = memo[callee] = self._callee_function(callee, 0)
            return fn
        return self._callee_function(callee, depth)

    def _callee_function(self, callee: Value, depth: int) -> FunctionInfo | None:
        root = callee[0]
        if len(callee) == 1:
            if isinstance(root, GlobalRoot):
                qn = root.qualname
                f = self.functions.get(qn)
                if f is not None:
                    return f
                if qn in self.classes:
                    return self.lookup_method(qn, "__init__")
                v = self.global_value(qn)
                if v is not None:  # a module variable bound once: `handler = impl`, `p = partial(f, x)`
                    return self.callee_function(v, depth + 1)
                owner, _, attr = qn.rpartition(".")
                if owner in self.classes:  # Sub.method, inherited from a base
                    return self.lookup_method(owner, attr)
                return None
            if isinstance(root, CallRoot):
                fn = self.returned_function(root, depth + 1)
                if fn is not None:
                    return fn
            cls = self.cls_param_class(root)
            if cls is not None:  # cls(...) in a classmethod constructs an instance
                return self.lookup_method(cls, "__init__")
            t = self.type_of(callee)
            if t is not None and t in self.classes:  # calling an instance runs its __call__
                return self.lookup_method(t, "__call__")
            return None
        base = callee[:-1]
        if len(base) == 1:
            cls = self.cls_param_class(base[0])
            if cls is not None:  # cls.method() in a classmethod
                return self.lookup_method(cls, callee[-1])
        t = self.type_of(base)
        if t is not None and t in self.classes:
            m = self.lookup_method(t, callee[-1])
            if m is not None:
                return m
            # a callable stored in an attribute: `self.fn = helper`, then `self.fn()`
            a = self.attr_callable(t, callee[-1], depth + 1)
            if a is not None:
                return a
        if len(base) == 1 and isinstance(root, SelfRoot):
            return None
        v = self.canon_attr_value(callee)
        if v is not None and v != callee:
            return self.callee_function(v, depth + 1)
        return None

    def instance_call(self, class_qn: str) -> FunctionInfo | None:
        """What calling an instance of ``class_qn`` runs: its ``__call__``, or,
        when it inherits that from a class outside the tree that `call-methods`
        names (``torch.nn.Module.forward``), the method that class calls. For
        :meth:`call_targets` only: the library's ``__call__`` may run more
        than the method (torch's forward hooks), so :meth:`callee_function`,
        which purity and effects read, does not follow it."""
        m = self.lookup_method(class_qn, "__call__")
        if m is not None or not self.call_methods:
            return m
        for base in self.mro(class_qn):
            method = self.call_methods.get(base)
            if method is not None:
                return self.lookup_method(class_qn, method)
        return None

    def attr_callable(self, class_qn: str, attr: str, depth: int) -> FunctionInfo | None:
        """The function stored in ``self.attr`` by every writer of the class,
        when they all store the same one. A writer that stores what calling
        the attribute returns (``self.base_field = self.base_field()``) is
        asked about the same attribute again: that inner question answers
        nothing (the key is in progress), so the store resolves to no function."""
        key = ("attr-callable", class_qn, attr)
        if key in self._in_progress:
            return None
        self._in_progress.add(key)
        try:
            ws = self.self_attr_writers(class_qn, attr)
            found = None
            for f, a in ws:
                if a.kind not in ("assign", "annassign"):
                    return None
                v = self.canon(a.value, self.context(f, class_qn))
                fn = self.callee_function(v, depth + 1) if v is not None and v != (SelfRoot(class_qn), attr) else None
                if fn is None or (found is not None and fn is not found):
                    return None
                found = fn
            return found
        finally:
            self._in_progress.discard(key)

    def returned_function(self, root: CallRoot, depth: int) -> FunctionInfo | None:
        """What calling the result of a call runs: the function a
        ``functools.partial`` wraps, or the one function a factory returns."""
        callee = root.callee
        if len(callee) == 1 and isinstance(callee[0], GlobalRoot) and callee[0].qualname == "functools.partial":
            if root.args and not isinstance(root.args[0], KwArg):
                return self.callee_function(root.args[0], depth + 1)
            return None
        fn = self.callee_function(callee, depth + 1)
        if fn is None or fn.is_async or not fn.returns:
            return None
        found = None
        ctx = self.context(fn)
        for r in fn.returns:
            v = self.canon(r, ctx)
            g = self.callee_function(v, depth + 1) if v is not None and v[0] != CallRoot(callee, root.args) else None
            if g is None or (
                v is not None and len(v) == 1 and isinstance(v[0], GlobalRoot) and v[0].qualname in self.classes
            ):
                return None  # a class is returned, not a function to call
            if found is not None and g is not found:
                return None
            found = g
        return found

    def module_function(self, module: str) -> FunctionInfo | None:
        """A function standing for ``module``'s top-level code (its calls and
        assignments), named as the module, for the call graph."""
        f = self._module_functions.get(module)
        if f is None:
            fi = self.modules.get(module)
            if fi is None:
                return None
            f = FunctionInfo(
                qualname=module,
                name=MODULE_CODE,
                module=module,
                path=fi.path,
                class_qualname=None,
                parent_function=None,
                line=1,
                end_line=max(fi.n_lines, 1),
                column=0,
                params=[],
                decorators=[],
                is_async=False,
                assigns=fi.module_assigns,
                calls=fi.module_calls,
                implicit_calls=fi.module_implicit_calls,
            )
            self._module_functions[module] = f
        return f

    def call_function(self, f: FunctionInfo, call) -> FunctionInfo | None:
        """The in-tree function that call ``call`` of ``f`` runs, when known
        (``super().m()`` included)."""
        func = call.func
        if func[0] == "attr" and func[1][0] == "call" and func[1][1] == ("name", "super"):
            return self.super_method(f, func[1], func[2])
        callee = self.call_callee(f, call)
        return self.callee_function(callee) if callee is not None else None

    def super_method(self, f: FunctionInfo, sup, name: str) -> FunctionInfo | None:
        """``super().name`` (or ``super(C, self).name``) in a method of ``f``'s class."""
        cls = f.class_qualname
        if sup[2]:
            v = self.canon(sup[2][0], self.context(f))
            cls = v[0].qualname if v is not None and len(v) == 1 and isinstance(v[0], GlobalRoot) else None
        if cls is None:
            return None
        for qn in self.mro(cls)[1:]:
            c = self.classes.get(qn)
            if c is not None and name in c.methods:
                return self.functions.get(c.methods[name])
        return None

    def call_targets(self, f: FunctionInfo, call) -> list[FunctionInfo]:
        """Every in-tree function call ``call`` of ``f`` may run: the one it
        dispatches to, the overrides in subclasses (and protocol
        implementations) when the receiver may be of a subclass, the dunder
        method a builtin calls (``len(x)``: ``__len__``), and a module's
        ``__getattr__`` (PEP 562) for a name the module does not define."""
        func = call.func
        if func[0] == "attr" and func[1][0] == "call" and func[1][1] == ("name", "super"):
            m = self.super_method(f, func[1], func[2])
            return [m] if m is not None else []
        callee = self.call_callee(f, call)
        if callee is None:
            if func[0] == "sub":  # handlers["a"](), table[i](), self.layers[i](x)
                ctx = self.context(f)
                found = self.element_functions(func, ctx)
                return found or self._instance_calls(self.iterable_elements(func[1], ctx, items=True))
            if func[0] == "attr":  # m.step() on a loop variable: the classes of the iterable's elements
                return self._targets_on_classes(self.expr_classes(func[1], self.context(f)), func[2])
            if func[0] == "name":  # layer(x) on a loop variable: calling each class's instances
                return self._instance_calls(self.expr_classes(func, self.context(f)))
            return []
        out: list[FunctionInfo] = []
        fn = self.callee_function(callee)
        if fn is not None:
            out.append(fn)
            if self._is_partial(callee):
                self._opaque_args.add((id(call), fn.qualname))
        else:
            # an instance of a class whose library base dispatches the call
            # (`call-methods`: a torch module's forward). Only the walk and its
            # kin follow it: the base's __call__ runs hooks first, so effects and
            # purity still see a call they cannot read (see callee_function)
            out.extend(self._called_instances(callee))
        root = callee[0]
        if len(callee) >= 2:
            base = callee[:-1]
            t = self.cls_param_class(root) if len(base) == 1 else None
            # on `cls` (a template classmethod) its subclasses' hooks run; a class
            # object typed `type[Base]` is, like an object typed by a base class, one
            # implementation that configuration chose (see below)
            on_self = (t is not None and self.own_class_param(root) is not None) or (
                len(base) == 1 and isinstance(root, SelfRoot)
            )
            if t is None:
                t = self.type_of(base)
                if t is not None and self.exact_class(base):
                    t = None
            # Overrides: on self or cls (a base class's template method calling
            # its hooks: the subclass's is what runs on its instances), on a
            # typing.Protocol (its implementations), and where the declared
            # type has no such method (only subclasses define it), at most
            # MAX_OVERRIDES of them there. On an object typed by a base class
            # that defines the method, even abstractly, the implementation is
            # chosen by configuration (`current_platform`, a model's
            # processor): following every subclass's would report each one's
            # work under callers that never run it, so the walk does not.
            if (
                t is not None
                and t in self.classes
                and (fn is None or fn.class_qualname is not None)
                and (
                    on_self
                    or ((fn is None or self.is_protocol(t)) and len(self.overrides(t, callee[-1])) <= MAX_OVERRIDES)
                )
            ):
                for o in self.overrides(t, callee[-1]):
                    if o is not fn:
                        out.append(o)
            if fn is None and t is None:  # a union-annotated receiver: each member's method
                ctx = self.context(f)
                for o in self._targets_on_classes(
                    self.expr_classes(func[1], ctx) if func[0] == "attr" else (), callee[-1]
                ):
                    if o not in out:
                        out.append(o)
            if fn is None and t is not None and t in self.classes:
                # a callable attribute a subclass stores: `self.child()` in a base, `self.child = self.f` in each subclass
                for sub in self.subclasses(t):
                    a = self.attr_callable(sub, callee[-1], 1)
                    if a is not None and a not in out:
                        out.append(a)
        elif isinstance(root, GlobalRoot) and root.qualname in _HIGHER_ORDER:
            # map(f, xs), sorted(xs, key=f), functools.reduce(f, xs): the builtin calls f
            ctx = self.context(f)
            for a in list(call.args) + [v for _, v in call.kwargs]:
                v = self.canon(a, ctx)
                g = self.callee_function(v) if v is not None and len(v) == 1 else None
                if g is not None and g not in out:
                    out.append(g)
                    self._opaque_args.add((id(call), g.qualname))
        elif isinstance(root, GlobalRoot):
            qn = root.qualname
            dunder = _BUILTIN_DUNDERS.get(qn)
            if dunder is not None and call.args:
                v = self.canon(call.args[0], self.context(f))
                t = self.type_of(v) if v is not None else None
                if t is not None and t in self.classes:
                    m = self.lookup_method(t, dunder)
                    if m is not None:
                        out.append(m)
            elif fn is None:
                g = self.module_getattr(qn)
                if g is not None:
                    out.append(g)
                    self._opaque_args.add((id(call), g.qualname))
        if fn is None and not out:  # torch.ops.<ns>.<op>(...): the function registered as that op
            out.extend(self.custom_op_targets(callee, dotted(func)))
        return out

    def _called_instances(self, callee: Value) -> list[FunctionInfo]:
        """What calling the object ``callee`` names runs through `call-methods`:
        by its type, else, for an attribute, by the class each writer of the
        attribute stores (``self.model = Model(...)``)."""
        if not self.call_methods:
            return []
        t = self.type_of(callee)
        if t is not None and t in self.classes:
            return self._instance_calls((t,))
        # untyped, or declared by a library base (`model: nn.Module`): what is stored
        if len(callee) < 2:
            return []
        owner = self.type_of(callee[:-1])
        if owner is None or owner not in self.classes:
            return []
        classes: list[str] = []
        for f, a in self.self_attr_writers(owner, callee[-1]):
            if a.kind not in ("assign", "annassign"):
                return []
            v = self.canon(a.value, self.context(f, owner))
            c = self.type_of(v) if v is not None else None
            if c is None:
                return []
            if c not in classes:
                classes.append(c)
        return self._instance_calls(tuple(classes))

    def _instance_calls(self, classes: tuple[str, ...]) -> list[FunctionInfo]:
        """What calling an instance of one of ``classes`` runs (see :meth:`instance_call`)."""
        out: list[FunctionInfo] = []
        for c in classes:
            m = self.instance_call(c)
            if m is not None and m not in out:
                out.append(m)
        return out

    def _targets_on_classes(self, classes: tuple[str, ...], name: str) -> list[FunctionInfo]:
        """The methods ``name`` a receiver of one of ``classes`` dispatches
        to (see :mod:`.elements`), with the overrides :meth:`call_targets`
        follows on a declared type: where the class has no such method, or
        is a protocol, at most MAX_OVERRIDES of them."""
        out: list[FunctionInfo] = []
        for c in classes:
            m = self.lookup_method(c, name)
            if m is not None and m not in out:
                out.append(m)
            if m is None or is_stub(m) or self.is_protocol(c):
                subs = self.overrides(c, name)
                if len(subs) <= MAX_OVERRIDES:
                    out.extend(o for o in subs if o not in out)
        return out

    def passes_arguments(self, call, target: FunctionInfo) -> bool:
        """Do ``call``'s arguments go to ``target``'s parameters, as written?
        Not when the call reaches it through ``functools.partial``, a builtin
        that calls its function argument (``map(f, xs)``), or a module
        ``__getattr__`` (asked after :meth:`call_targets` of the call)."""
        return (id(call), target.qualname) not in self._opaque_args

    def _is_partial(self, callee: Value) -> bool:
        v: Value | None = callee
        if len(callee) == 1 and isinstance(callee[0], GlobalRoot):
            v = self.global_value(callee[0].qualname)
        if v is None or len(v) != 1 or not isinstance(v[0], CallRoot):
            return False
        c = v[0].callee
        return len(c) == 1 and isinstance(c[0], GlobalRoot) and c[0].qualname == "functools.partial"

    def module_getattr(self, qn: str) -> FunctionInfo | None:
        """The module ``__getattr__`` (PEP 562) that supplies ``qn``, a name its module does not bind."""
        mod, _, name = qn.rpartition(".")
        while mod:
            fi = self.modules.get(mod)
            if fi is not None:
                if name in fi.defs or name in fi.globals or name in fi.imports or f"{mod}.{name}" in self.modules:
                    return None
                g = fi.defs.get("__getattr__")
                return self.functions.get(g) if g is not None else None
            mod, _, name = mod.rpartition(".")
        return None

    def external_name(self, callee: Value | None) -> str | None:
        """The qualified name of a callee outside the tree (``builtins.len``, ``os.path.join``)."""
        if callee is None or len(callee) != 1 or not isinstance(callee[0], GlobalRoot):
            return None
        qn = callee[0].qualname
        if qn in self.functions or qn in self.classes or qn in self.modules:
            return None
        top = qn.split(".", 1)[0]
        if self.is_module_level_variable(qn) or (top in self.modules and qn.startswith(top + ".")):
            return None  # a variable of the tree, or a name in-tree resolution did not find
        return qn

    def callee_names(self, callee: Value | None, spelled: str | None) -> list[str]:
        """Names a catalog pattern may match: resolved qualname, Type.method, spelling."""
        out = []
        if callee is not None:
            if len(callee) == 1 and isinstance(callee[0], GlobalRoot):
                out.append(callee[0].qualname)
            elif len(callee) >= 2:
                t = self.type_of(callee[:-1])
                if t is not None:
                    fn = self.lookup_method(t, callee[-1]) if t in self.classes else None
                    out.append(fn.qualname if fn is not None else f"{t}.{callee[-1]}")
                base = callee[:-1]
                if len(base) >= 1 and isinstance(base[0], GlobalRoot):
                    out.append(".".join((base[0].qualname,) + tuple(base[1:])) + "." + callee[-1])
        if spelled:
            out.append(spelled)
        return out
