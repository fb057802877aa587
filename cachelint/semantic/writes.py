"""Every way the program may assign an attribute, and which objects a write may reach.

:meth:`Program.writers <cachelint.semantic.program.Program.writers>` lists the
``<expr>.attr = ...`` statements of functions. A proof that an attribute
keeps a value needs more: every statement that *may* rebind it, however it is
spelled and wherever it runs. :class:`Writes` collects them once per run as
:class:`AttrWrite` records:

    cfg.attr = v, cfg.attr += v, del cfg.attr     assignments, in functions and
                                                  in module-level code
    setattr(cfg, "attr", v), delattr(...)         a literal name: that attribute
    setattr(cfg, name, v)                         a computed name: any attribute
    object.__setattr__(cfg, "attr", v)            (what frozen dataclasses use)
    cfg.__dict__[k] = v, cfg.__dict__.update(d)   the instance dictionary: any
    vars(cfg)[k] = v, vars(cfg).update(d)         attribute unless ``k`` is literal

and :meth:`Writes.reaches` says whether a write may land on an object of a
given class: its receiver's type is that class, a subclass, a base, or a
class some subclass shares (a mixin), or the type is *unknown*. Unknown is
never "no": an untyped parameter, a loop variable, the result of an
unannotated function. For an untyped parameter (and an attribute a
constructor stores from one) the types the callers pass are looked up, one
level deep; a function no call in the tree is seen calling stays unknown. A
plain assignment or ``setattr`` cannot change an instance of a frozen
dataclass (it raises), so those writes do not reach one. Callers settle a
parameter's type only when every mention of the function's name in the tree
is accounted for by its definition, imports, decorators and calls: a
function kept in a list of hooks is called where no call site shows.

A setter taken as a value rather than called (``functools.partial(setattr,
obj, name, v)``, ``s = setattr``, ``hooks.append(object.__setattr__)``,
``map(vars, objs)``, ``d = obj.__dict__``, ``obj.__dict__ = d``) is found in
the source text (``value``): whoever calls it, or writes into the dictionary,
may set any attribute of any object, so it is a write with a computed name
on an unknown receiver.

An in-place change of an attribute's value (``spec.tokens.append(t)``,
``spec.tokens[0] = t``) is a write of that attribute too (``in-place``): what
``spec.tokens`` holds changes, frozen dataclass or not.
"""

from __future__ import annotations

import ast
import io
import keyword
import re
import tokenize
from collections import Counter
from dataclasses import dataclass

from ..index.expr import UNKNOWN, conv, render
from ..index.records import Assign, FileIndex, FunctionInfo
from ..index.scans import scan_hits
from .program import Program
from .receivers import NOT_AN_INSTANCE, ReceiverTypes
from .values import CONSTRUCTORS, COPY_CALLS, CallRoot, GlobalRoot, KwArg, ParamRoot, SelfRoot, Value

# the attribute-name argument of setattr-like calls, and the receiver's position
_SETATTR_NAMES = frozenset({"setattr", "delattr"})
_DUNDER_SETATTR = frozenset({"__setattr__", "__delattr__"})
_DICT_METHODS = frozenset({"update", "setdefault", "__setitem__", "pop", "popitem", "clear", "__delitem__"})
# methods that change a list, dict or set in place: `spec.tokens.append(t)`
# changes what `spec.tokens` holds without assigning it
IN_PLACE_METHODS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "pop",
        "remove",
        "clear",
        "sort",
        "reverse",
        "update",
        "setdefault",
        "popitem",
        "add",
        "discard",
        "__setitem__",
        "__delitem__",
        "__iadd__",
    }
)
_SCAN_KEYS = _SETATTR_NAMES | _DUNDER_SETATTR | _DICT_METHODS | IN_PLACE_METHODS

# a call of the builtin `setattr` in source text (not `x.setattr(`, not `getattr(`)
_SETATTR_TEXT = re.compile(rb"(?<![\w.])setattr\s*\(")

# the names a setter taken as a value may be spelled with (see the module
# docstring): a file is tokenized only when one of them is not called right
# there (a call is read from the index); the tokens then decide
_VALUE_TEXT = re.compile(
    rb"(?<![\w.])(?:setattr|delattr|vars)\b(?!\s*\()|\.__(?:setattr|delattr)__\b(?!\s*\()|\.__dict__\b(?!\s*[\[.])"
)
_SETTER_BUILTINS = frozenset({"setattr", "delattr", "vars"})
# calls that only read a dictionary handed to them (`dict(obj.__dict__)`, `len(vars(x))`)
_DICT_READERS = frozenset(
    {"len", "repr", "str", "print", "dict", "list", "tuple", "set", "frozenset", "sorted", "iter", "id", "hash"}
    | {"bool", "isinstance", "hasattr", "getattr", "copy", "deepcopy", "dumps", "format", "pformat", "any", "all"}
    | {"update"}  # `other.__dict__.update(obj.__dict__)`: a write of `other` (indexed), a read of `obj`
)
# what may come right before an expression that is only read (`k in obj.__dict__`, `if obj.__dict__:`)
_READ_BEFORE = frozenset({"**", "*", "in", "not", "is", "if", "elif", "while", "assert", "and", "or", "{", "=="})
_READ_AFTER = frozenset({"==", "!=", "is", "in", "not", "and", "or", "if", "else", ":", "}"})
_NOT_CODE = frozenset({tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING})

_PLAIN = frozenset({"assign", "annassign", "augassign", "del", "for", "with", "unpack", "walrus", "match"})


@dataclass(frozen=True)
class AttrWrite:
    """One statement that may rebind an attribute."""

    function: FunctionInfo  # the writer; a module's top-level code is a function named `<module>`
    line: int
    column: int
    attr: str | None  # None: a name computed at run time (any attribute)
    receiver: tuple  # the receiver expression as indexed
    how: str  # an Assign kind, or "setattr", "object.__setattr__", "__dict__", "vars"
    source: tuple  # what to render for messages: the Assign's target, or the call
    guard: tuple
    assign: Assign | None = None

    @property
    def text(self) -> str:
        """The write as written, shortened (rendered only for messages)."""
        a = self.assign
        if self.how == "value":  # the source line
            return _short(self.source[2])
        if a is None:
            return _short(render(self.source))
        t = self.source
        if self.how in ("__dict__", "vars", "in-place"):
            return _short(f"{'del ' if a.kind == 'del' else ''}{render(t)}{'' if a.kind == 'del' else ' = ...'}")
        op = {"del": "del ", "for": "for "}.get(a.kind, "")
        rhs = {"augassign": " <op>= ...", "del": "", "for": " in ..."}.get(
            a.kind, f" = {render(a.value)}" if a.value and a.value != UNKNOWN else " = ..."
        )
        return _short(f"{op}{render(t)}{rhs}")

    @property
    def where(self) -> str:
        """The writer as a message names it: ``the module-level code of `m```
        or `` `pkg.mod.f` ``; for a write found only in the text, its file."""
        f = self.function
        if self.how == "unindexed":
            return f"`{f.path}`"
        if f.name == "<module>":
            return f"the module-level code of `{f.module}`"
        return f"`{f.qualname}`"

    @property
    def dynamic(self) -> bool:
        return self.attr is None

    @property
    def plain(self) -> bool:
        """An assignment or ``setattr``: what a frozen dataclass refuses."""
        return self.how in _PLAIN or self.how == "setattr"


@dataclass(frozen=True)
class Reach:
    """How a write may reach an object: ``sure`` when the receiver's type (or
    its callers' arguments) says so, else it only cannot be ruled out."""

    sure: bool
    why: str  # "" when the receiver's own type says so


def module_code(fi: FileIndex) -> FunctionInfo:
    """A module's top-level statements as a function named ``<module>``."""
    f = FunctionInfo(
        qualname=f"{fi.module}.<module>" if fi.module else "<module>",
        name="<module>",
        module=fi.module,
        path=fi.path,
        class_qualname=None,
        parent_function=None,
        line=1,
        end_line=max(fi.n_lines, 1),
        column=0,
        params=[],
        decorators=[],
        is_async=False,
    )
    f.assigns = list(fi.module_assigns)
    f.calls = list(fi.module_calls)
    return f


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _literal(e) -> str | None:
    return e[1] if e is not None and e[0] == "const" and isinstance(e[1], str) else None


class Writes(ReceiverTypes):
    """The attribute writes of a program (see the module docstring)."""

    def __init__(self, program: Program) -> None:
        self.p = program
        self._by_attr: dict[str, list[AttrWrite]] | None = None
        self._dynamic: list[AttrWrite] = []
        self._modules: dict[str, FunctionInfo] = {}
        self._callers: dict = {}
        self._types: dict = {}
        self._decorators: set | None = None
        self._only_called: dict[str, bool] = {}
        self._accounted: Counter | None = None  # see ReceiverTypes._accounted_names
        self._sources: dict[str, bytes] = {}

    # ----- collecting ------------------------------------------------------------------
    def module_functions(self) -> dict[str, FunctionInfo]:
        if not self._modules:
            for fi in self.p.indexes:
                if fi.error is None and (fi.module_assigns or fi.module_calls):
                    f = module_code(fi)
                    self._modules[f.qualname] = f
        return self._modules

    def _collect(self) -> dict[str, list[AttrWrite]]:
        if self._by_attr is not None:
            return self._by_attr
        out: dict[str, list[AttrWrite]] = {}
        dynamic: list[AttrWrite] = []

        def add(w: AttrWrite) -> None:
            if w.attr is None:
                dynamic.append(w)
            else:
                out.setdefault(w.attr, []).append(w)

        functions = [f for f in self.p.functions.values() if not f.under_type_checking]
        functions += list(self.module_functions().values())
        for f in functions:
            for a in f.assigns:
                w = self._from_assign(f, a)
                if w is not None:
                    add(w)
        for f, c in scan_hits(self.p.functions, self.p.indexes, self._pick):
            if not f.under_type_checking:
                for w in self._from_call(f, c):
                    add(w)
        for f in self.module_functions().values():
            for c in f.calls:
                for w in self._from_call(f, c):
                    add(w)
        self._by_attr = out
        dynamic += self._unindexed(dynamic)
        dynamic += self._taken_as_value()
        self._dynamic = dynamic
        return out

    def _unindexed(self, dynamic: list) -> list[AttrWrite]:
        """``setattr(`` in a file's text more often than in its index: a call
        in a lambda or a class body (not indexed), with any name on any object."""
        seen: dict[str, int] = {}
        for w in dynamic:
            if w.how == "setattr" and w.assign is None:
                seen[w.function.path] = seen.get(w.function.path, 0) + 1
        named = [w for ws in (self._by_attr or {}).values() for w in ws]
        for w in named:
            if w.how == "setattr":
                seen[w.function.path] = seen.get(w.function.path, 0) + 1
        out = []
        for fi in self.p.indexes:
            if fi.error is not None:
                continue
            data = self._source(fi.path)
            if b"setattr" not in data:
                continue
            found = _SETATTR_TEXT.findall(data)
            if len(found) > seen.get(fi.path, 0):
                f = self.module_functions().get(f"{fi.module}.<module>" if fi.module else "<module>") or module_code(fi)
                out.append(AttrWrite(f, 0, 0, None, UNKNOWN, "unindexed", ("name", "setattr"), ()))
        return out

    def _taken_as_value(self) -> list[AttrWrite]:
        """Setters taken as values (see the module docstring): a write of
        any attribute of any object, where the setter is taken."""
        out = []
        for fi in self.p.indexes:
            if fi.error is not None:
                continue
            data = self._source(fi.path)
            if not (
                b"setattr" in data or b"delattr" in data or b"vars" in data or b"__dict__" in data
            ) or not _VALUE_TEXT.search(data):  # a cheap test of the bytes first: the pattern is slow
                continue
            for line, column, name, text, replaces, receiver in _values_taken(data):
                f = self._enclosing(fi, line)
                if name in _SETTER_BUILTINS and self._shadowed(fi, f, name):
                    continue  # a local `vars`, a parameter named `setattr`
                w = AttrWrite(f, line, column, None, receiver, "value", ("value", name, text, replaces), ())
                out.append(w)
        return out

    def _enclosing(self, fi: FileIndex, line: int) -> FunctionInfo:
        """The innermost function of ``fi`` around ``line``, else its module code."""
        best = None
        for g in fi.functions:
            f = self.p.functions.get(g.qualname) if isinstance(g, FunctionInfo) else self.p.functions.get(g)
            if f is not None and f.line <= line <= f.end_line and (best is None or f.line > best.line):
                best = f
        if best is not None:
            return best
        return self.module_functions().get(f"{fi.module}.<module>" if fi.module else "<module>") or module_code(fi)

    def _shadowed(self, fi: FileIndex, f: FunctionInfo, name: str) -> bool:
        """``name`` is bound in ``f``, a function around it, or its module."""
        g: FunctionInfo | None = f
        while g is not None and g.name != "<module>":
            if any(q.name == name for q in g.params) or any(a.target == ("name", name) for a in g.assigns):
                return True
            g = self.p.functions.get(g.parent_function) if g.parent_function else None
        return name in fi.globals or name in fi.defs or name in fi.imports

    @staticmethod
    def _pick(scans: tuple) -> list:
        keys = scans[1]
        hit = _SCAN_KEYS & keys.keys()
        pairs: set = set()
        for k in hit:
            at = keys[k]
            pairs.update(zip(at[::2], at[1::2]))
        return [x for pair in sorted(pairs) for x in pair]

    def _from_assign(self, f: FunctionInfo, a: Assign) -> AttrWrite | None:
        t = a.target
        if t[0] == "attr":
            return AttrWrite(f, a.line, a.column, t[2], t[1], a.kind, t, a.guard, a)
        if t[0] == "sub":
            base, key = t[1], t[2]
            if base[0] == "attr" and base[2] == "__dict__":
                return AttrWrite(f, a.line, a.column, _literal(key), base[1], "__dict__", t, a.guard, a)
            if base[0] == "call" and base[1] == ("name", "vars") and len(base[2]) == 1:
                return AttrWrite(f, a.line, a.column, _literal(key), base[2][0], "vars", t, a.guard, a)
            if base[0] == "attr":  # spec.tokens[0] = t: changes spec.tokens in place
                return AttrWrite(f, a.line, a.column, base[2], base[1], "in-place", t, a.guard, a)
        return None

    def _from_call(self, f: FunctionInfo, c) -> list[AttrWrite]:
        func, args = c.func, c.args
        source = ("call", func, args, c.kwargs)

        def w(receiver, attr, how):
            return AttrWrite(f, c.line, c.column, attr, receiver, how, source, c.guard)

        if func[0] == "name" and func[1] in _SETATTR_NAMES and len(args) >= 2:
            return [w(args[0], _literal(args[1]), "setattr")]
        if func[0] != "attr":
            return []
        base, meth = func[1], func[2]
        if meth in _DUNDER_SETATTR:
            if base[0] == "call" and base[1] == ("name", "super"):
                # super().__setattr__(name, value): on the method's own instance
                if args and f.self_name:
                    return [w(("name", f.self_name), _literal(args[0]), "object.__setattr__")]
                return []
            if self._is_class(f, base):  # object.__setattr__(obj, name, value), type.__setattr__(cls, ...)
                if len(args) >= 2:
                    return [w(args[0], _literal(args[1]), "object.__setattr__")]
                return []
            if args:
                return [w(base, _literal(args[0]), "object.__setattr__")]
            return []
        if meth in _DICT_METHODS or meth in IN_PLACE_METHODS:
            if base[0] == "attr" and base[2] == "__dict__":
                receiver, how = base[1], "__dict__"
            elif base[0] == "call" and base[1] == ("name", "vars") and len(base[2]) == 1:
                receiver, how = base[2][0], "vars"
            elif base[0] == "attr" and meth in IN_PLACE_METHODS:
                return [w(base[1], base[2], "in-place")]
            else:
                return []
            if meth in ("setdefault", "__setitem__", "pop", "__delitem__") and args:
                return [w(receiver, _literal(args[0]), how)]
            if meth == "update" and not args and c.kwargs and all(k for k, _ in c.kwargs):
                return [w(receiver, k, how) for k, _ in c.kwargs]
            return [w(receiver, None, how)]
        return []

    def _is_class(self, f: FunctionInfo, e) -> bool:
        """``e`` names a class (``object``, ``type``, a class of the tree)."""
        if e in (("name", "object"), ("name", "type")):
            return True
        v = self.p.canon(e, self.p.context(f))
        return v is not None and len(v) == 1 and isinstance(v[0], GlobalRoot) and self._not_instance(v[0].qualname)

    def _not_instance(self, qn: str) -> bool:
        """A module-level name that is a module, a class or a function of the
        tree, or a name from a module outside it: never an instance of a
        class of the tree (``setattr(torch, ...)``, ``setattr(SomeClass, ...)``)."""
        p = self.p
        if qn in p.modules or qn in p.classes or qn in p.functions or qn.startswith("builtins."):
            return True
        # a name of a module outside the tree (`torch._functorch.config`): that
        # code never made an instance of a class of the tree
        top = qn.split(".", 1)[0]
        return top in p.imported_modules and not any(m == top or m.startswith(top + ".") for m in p.modules)

    # ----- asking -------------------------------------------------------------------
    def of(self, attr: str) -> list[AttrWrite]:
        """Every write that may rebind ``attr`` on some object: the writes
        naming it, then those whose name is computed."""
        by_attr = self._collect()
        return by_attr.get(attr, []) + self._dynamic

    def receiver_value(self, w: AttrWrite) -> Value | None:
        return self.p.canon(w.receiver, self.p.context(w.function))

    def reaches(self, w: AttrWrite, cls: str | None) -> Reach | None:
        """Whether ``w`` may write an object of class ``cls`` (None: of a
        class cachelint does not know, so any): None when it cannot, else a
        :class:`Reach` saying how sure that is and why."""
        if cls is not None and w.plain and self.is_frozen(cls):
            return None
        v = self.receiver_value(w)
        recv = render(w.receiver)
        t = self.type_of(v)
        if t is not None:
            return Reach(True, "") if cls is None or self.related(t, cls) else None
        types = self.possible_types(v) if v is not None else self._expr_types(w.receiver, w.function, 0)
        if types is None:
            if v is not None and isinstance(v[0], ParamRoot) and len(v) == 1:
                f = self.p.functions.get(v[0].function)
                if f is not None and self.callers(f) and not self.only_called(f):
                    return Reach(
                        False,
                        f"`{recv}` is a parameter without a type, and `{f.name}` is also used where no call shows "
                        "(passed around as a value), so not every caller is known",
                    )
                return Reach(False, f"`{recv}` is a parameter without a type, and not every caller is known")
            return Reach(False, f"cachelint cannot tell the type of `{recv}`")
        hits = [x for x in types if cls is None or self.related(x, cls)]
        if not hits:
            return None
        return Reach(True, f"its callers pass a `{hits[0].rsplit('.', 1)[-1]}` as `{recv}`")

    def receiver_class(self, w: AttrWrite) -> tuple[str, bool] | None:
        """When ``w``'s receiver is a class object rather than an instance:
        (that class, whether it may also be any subclass of it). A class of
        the tree by name (``Config.flag = v``, ``setattr(Config, ...)``), the
        first parameter of a classmethod (``cls.flag = v``), ``type(x)`` or
        ``x.__class__`` of an object of a known class."""
        p = self.p
        f, e = w.function, w.receiver
        if e[0] == "name" and f.class_qualname and f.params and e[1] == f.params[0].name:
            if any(render(d).rsplit(".", 1)[-1] == "classmethod" for d in f.decorators):
                return f.class_qualname, True
        of = None
        if e[0] == "call" and e[1] == ("name", "type") and len(e[2]) == 1 and not e[3]:
            of = e[2][0]
        elif e[0] == "attr" and e[2] == "__class__":
            of = e[1]
        if of is not None:
            t = self.type_of(p.canon(of, p.context(f)))
            return (t, True) if t is not None and t in p.classes else None
        v = self.receiver_value(w)
        if v is not None and len(v) == 1 and isinstance(v[0], GlobalRoot) and v[0].qualname in p.classes:
            return v[0].qualname, False
        return None

    def reaches_through_class(self, w: AttrWrite, cls: str | None) -> Reach | None:
        """Whether ``w``, a write whose receiver is a class object
        (:meth:`receiver_class`), changes what an attribute read on an
        instance of ``cls`` sees when the instance has no attribute of that
        name of its own: the written class is ``cls``, a base of it, or a
        subclass (the instance may be one)."""
        got = self.receiver_class(w)
        if got is None:
            return None
        k, any_subclass = got
        if cls is not None and not self.related(k, cls):
            return None
        short = k.rsplit(".", 1)[-1]
        who = f"`{short}` or a subclass" if any_subclass else f"the class `{short}`"
        return Reach(True, f"the receiver is {who} itself: an instance without its own `{w.attr}` reads the class's")

    def _expr_types(self, e, f: FunctionInfo, depth: int) -> list[str] | None:
        """Types of an expression that has no single canonical value:
        ``a or b`` (either), a local bound once to one."""
        if depth > 4:
            return None
        if e[0] == "or":
            out: list[str] = []
            for x in e[1]:
                got = self._expr_types(x, f, depth + 1)
                if got is None:
                    return None
                out += got
            return out
        v = self.p.canon(e, self.p.context(f))
        if v is not None:
            return self.possible_types(v)
        if e[0] == "name":
            local = self.p.context(f).locals.get(e[1])
            if local and len(local) == 1 and local[0].kind in ("assign", "annassign") and not local[0].in_loop:
                return self._expr_types(local[0].value, f, depth + 1)
        return None

    def related(self, t: str, cls: str) -> bool:
        p = self.p
        if t == NOT_AN_INSTANCE:
            return False
        if p.is_subclass(t, cls) or p.is_subclass(cls, t):
            return True
        return any(p.is_subclass(s, t) for s in p.subclasses(cls))

    def is_frozen(self, cls: str) -> bool:
        """A frozen dataclass (or attrs class): plain assignments raise.
        Subclasses of a frozen dataclass inherit its ``__setattr__``."""
        p = self.p
        for qn in p.mro(cls):
            c = p.classes.get(qn)
            if c is None:
                continue
            for d in c.decorators:
                if d[0] == "call":
                    for k, v in d[3]:
                        if k == "frozen" and v == ("const", True):
                            return True
                    d = d[1]
                name = render(d).rsplit(".", 1)[-1]
                if name == "frozen":  # attrs.frozen
                    return True
        return False


def copy_source(v: Value | None, program: Program | None = None) -> tuple | None:
    """For a value made by ``copy.copy(x)``/``copy.deepcopy(x)``/
    ``dataclasses.replace(x, ...)``, directly or stored by a constructor in an
    attribute (``self.config = copy.deepcopy(config)``): (the call's
    qualified name, ``x``)."""
    if v is None:
        return None
    if program is not None and len(v) == 2 and isinstance(v[0], SelfRoot) and isinstance(v[1], str):
        ws = program.self_attr_writers(v[0].cls, v[1])
        if len(ws) == 1 and ws[0][0].name in CONSTRUCTORS and ws[0][1].value is not None:
            f, a = ws[0]
            return copy_source(program.canon(a.value, program.context(f, v[0].cls)))
    if not isinstance(v[0], CallRoot):
        return None
    callee = v[0].callee
    if len(callee) == 1 and isinstance(callee[0], GlobalRoot) and callee[0].qualname in COPY_CALLS:
        args = [a for a in v[0].args if not isinstance(a, KwArg)]
        if args:
            return callee[0].qualname, args[0]
    return None


def _values_taken(data: bytes) -> list[tuple[int, int, str, str, bool, tuple]]:
    """(line, column, name, line text, whether it assigns ``__dict__``, the
    object whose ``__dict__`` it is, else UNKNOWN) of each setter taken as a value in a
    file's source (see the module docstring), from its tokens: comments and
    strings do not count; calls (``setattr(o, n, v)``, ``obj.__dict__[k] =
    v``, ``obj.__dict__.update(d)``, which :class:`Writes` reads from the
    index) and reads (``k in obj.__dict__``, ``dict(obj.__dict__)``,
    ``f(**obj.__dict__)``) are not values taken."""
    try:
        toks = [t for t in tokenize.tokenize(io.BytesIO(data).readline) if t.type not in _NOT_CODE]
    except (tokenize.TokenError, SyntaxError):
        return []
    out = []
    opens: list[int] = []  # indices of the brackets not yet closed
    n = len(toks)
    for i, t in enumerate(toks):
        s = t.string
        if t.type == tokenize.OP:
            if s in ("(", "[", "{"):
                opens.append(i)
            elif s in (")", "]", "}") and opens:
                opens.pop()
            continue
        if t.type != tokenize.NAME:
            continue
        prev = toks[i - 1].string if i else ""
        nxt = toks[i + 1].string if i + 1 < n else ""
        receiver = UNKNOWN
        if s in _SETTER_BUILTINS:
            if prev in (".", "def", "class", "import", "as", "from", "global", "nonlocal", "lambda"):
                continue
            if nxt in ("(", "=", ":=") or (nxt == ":" and opens and toks[opens[-1]].string == "("):
                continue  # a call; an assignment or keyword argument; a parameter
        elif s in ("__setattr__", "__delattr__"):
            if prev != "." or nxt in ("(", "="):
                continue
        elif s == "__dict__":
            if prev != "." or nxt in ("[", "."):
                continue
            start = _chain_start(toks, i)
            receiver = _expression(toks[start : i - 1])
            if nxt != "=":  # `obj.__dict__ = d` replaces every attribute
                before = toks[start - 1].string if start else ""
                if before in _READ_BEFORE or nxt in _READ_AFTER:
                    continue
                if before in ("(", ",") and opens and toks[opens[-1]].string == "(" and opens[-1] > 0:
                    callee = toks[opens[-1] - 1]
                    if callee.type == tokenize.NAME and callee.string in _DICT_READERS:
                        continue
        else:
            continue
        out.append((t.start[0], t.start[1], s, t.line.strip(), s == "__dict__" and nxt == "=", receiver))
    return out


def _expression(toks: list) -> tuple:
    """The indexed form of the expression the tokens spell (on one line), else UNKNOWN."""
    if not toks or any(t.start[0] != toks[0].start[0] for t in toks):
        return UNKNOWN
    line = toks[0].line
    text = line[toks[0].start[1] : toks[-1].end[1]]
    try:
        return conv(ast.parse(text, mode="eval").body)
    except SyntaxError:
        return UNKNOWN


def _chain_start(toks: list, i: int) -> int:
    """The index of the first token of the attribute chain ending at ``i``
    (``a.b(c)[d].__dict__``)."""
    j = i
    while j > 0:
        p = toks[j - 1]
        if p.string in (")", "]"):
            depth, k = 0, j - 1
            while k >= 0:
                if toks[k].string in (")", "]", "}"):
                    depth += 1
                elif toks[k].string in ("(", "[", "{"):
                    depth -= 1
                if depth == 0:
                    break
                k -= 1
            j = max(k, 0)
            continue
        if p.string == "." or (p.type == tokenize.NAME and not keyword.iskeyword(p.string)):
            j -= 1
            continue
        break
    return j
