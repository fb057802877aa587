"""The records of a file's index: its functions, classes, calls and assignments.

Expressions inside them are small tuples (see :mod:`cachelint.index.expr`);
the records are dataclasses, marshalled as plain tuples by
:mod:`cachelint.index.codec`. A function's calls and a file's scan positions
may stay marshalled until first read.
"""

from __future__ import annotations

import marshal
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .expr import Expr, Guard, _last_name


@dataclass
class Param:
    name: str
    annotation: Expr | None
    default: Expr | None
    kind: str  # "pos", "vararg", "kwonly", "kwarg"


@dataclass
class Assign:
    target: Expr  # ("name", x) or ("attr", ...) or ("sub", ...) or ("?",)
    value: Expr  # UNKNOWN for augmented, for-loop and unpacking targets
    line: int
    column: int
    end_line: int
    end_column: int
    guard: Guard
    in_loop: bool
    kind: str = "assign"  # assign | annassign | augassign | for | with | walrus | unpack | del
    # the value is built element by element (``[e for ...]``, ``tuple(e for
    # ...)``): the expression each element is (the comprehension's own names
    # in it are unknown); None otherwise
    elements: Expr | None = None
    # the annotation of an annotated assignment (``self.queue: deque[Req] = deque()``)
    annotation: Expr | None = None


@dataclass
class CallSite:
    func: Expr
    args: tuple
    kwargs: tuple  # ((name, expr), ...); name None for **kwargs
    line: int
    column: int
    end_line: int
    end_column: int
    guard: Guard
    in_loop: bool
    stmt_line: int  # first line of the enclosing statement
    # the call is the whole right-hand side of an assignment to this target
    assigned_to: Expr | None = None
    # the call is on an error path, not the usual one: inside an `except` handler,
    # or in a statement that can only lead to its block's closing `raise`
    in_handler: bool = False
    # not a call but a read of a property (``func`` is the attribute read;
    # no arguments): its getter runs on each read (see cachelint.facts.properties)
    is_read: bool = False
    # not a call but an ``import`` statement in a ``try`` that catches
    # ImportError, in a function: a probe for an optional module (``func`` is
    # the pseudo-name ``import-probe``, the argument the module's name). When the module is
    # absent, each run searches the import path again: failures are not cached.
    is_import: bool = False


@dataclass
class FunctionInfo:
    qualname: str  # module-qualified, e.g. pkg.mod.Class.method, pkg.mod.f.<locals>.g
    name: str
    module: str
    path: str
    class_qualname: str | None  # directly enclosing class
    parent_function: str | None  # directly enclosing function
    line: int
    end_line: int
    column: int
    params: list[Param]
    decorators: list[Expr]
    is_async: bool
    assigns: list[Assign] = field(default_factory=list)
    calls: list[CallSite] = field(default_factory=list)
    returns: list[Expr] = field(default_factory=list)
    nested: dict = field(default_factory=dict)  # local name -> qualname of nested def/class
    global_names: tuple = ()
    returns_annotation: Expr | None = None
    under_type_checking: bool = False
    # calls the syntax makes without a call expression, as CallSites whose
    # ``func`` is ``receiver.__dunder__``: ``x[i]`` (``__getitem__``), ``a in
    # x`` (``__contains__``), ``for a in x`` (``__iter__``, ``__next__``),
    # ``with x`` (``__enter__``, ``__exit__``); only the call graph reads them
    implicit_calls: list[CallSite] = field(default_factory=list)
    # names bound to the elements of an iterable, by ``for`` or by a
    # comprehension: name -> the iterable expressions (UNKNOWN where an
    # unpacking target cannot be paired with one); only typing reads them
    iterated: dict = field(default_factory=dict)
    # what each of ``returns`` builds: a new collection (``"list"`` for a
    # list comprehension or ``list(...)``, ``"dict"``, ``"set"``, ...), a
    # concatenation (``"concat"``), a call (``"call"``: the analysis resolves
    # it), or ``"?"``
    return_kinds: tuple = ()
    # the tests of ``if test: raise ...`` statements (no ``else``): the code
    # after one runs only when its test is false, and the function fails
    # otherwise; such a test is a precondition, never a memo's "empty" check
    refusals: tuple = ()

    @property
    def self_name(self) -> str | None:
        """Name of the instance parameter, for plain methods."""
        if self.class_qualname is None or not self.params:
            return None
        for d in self.decorators:
            if _last_name(d) in ("staticmethod", "classmethod"):
                return None
        p = self.params[0]
        return p.name if p.kind == "pos" else None


class _Packed:
    """A field that may hold its value marshalled (as loaded from the cache),
    unmarshalled, and made into records by ``convert``, on first read:
    ``FunctionInfo.calls`` (the analysis reads the calls of about one function
    in eight; the others' are never unpacked) and ``FileIndex.scans``."""

    def __init__(self, name: str, convert: Callable[[Any], Any] | None = None) -> None:
        self.name = name
        self.convert = convert

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        v = obj.__dict__[self.name]
        if type(v) is bytes:
            v = marshal.loads(v)
            if self.convert is not None:
                v = self.convert(v)
            obj.__dict__[self.name] = v
        return v

    def __set__(self, obj, value) -> None:
        obj.__dict__[self.name] = value


def _call_sites(rows: list) -> list[CallSite]:
    return [CallSite(*c) for c in rows]


FunctionInfo.calls = _Packed("calls", _call_sites)  # type: ignore[assignment]  # after @dataclass: it keeps the field
FunctionInfo.implicit_calls = _Packed("implicit_calls", _call_sites)  # type: ignore[assignment]


@dataclass
class ClassInfo:
    qualname: str
    name: str
    module: str
    path: str
    line: int
    end_line: int
    bases: list[Expr]
    decorators: list[Expr]
    fields: dict  # class-level annotated names -> annotation
    class_attrs: dict  # class-level assigned names -> value
    methods: dict  # name -> function qualname
    parent_function: str | None
    metaclass: Expr | None = None  # the `metaclass=` keyword of the class statement


@dataclass
class FileIndex:
    path: str
    module: str
    is_package: bool
    error: tuple | None = None  # (message, line, column) if unreadable / unparsable
    imports: dict = field(default_factory=dict)  # local name -> qualified target
    module_imports: set = field(default_factory=set)  # local names bound to modules by `import x`
    star_imports: list = field(default_factory=list)
    globals: dict = field(default_factory=dict)  # name -> value Expr (None if rebound)
    global_annotations: dict = field(default_factory=dict)
    defs: dict = field(default_factory=dict)  # module-level def/class name -> qualname
    classes: list = field(default_factory=list)
    functions: list = field(default_factory=list)
    module_calls: list = field(default_factory=list)  # calls at module level
    module_assigns: list = field(default_factory=list)
    module_implicit_calls: list = field(default_factory=list)  # see FunctionInfo.implicit_calls
    suppressions: dict = field(default_factory=dict)  # line -> frozenset(codes) | None (all)
    all_names: tuple | None = None  # __all__ if literal
    n_lines: int = 0
    # reads of watched attribute names (only when indexed with `watch`):
    # (function qualname, expr, line, column, end_line, end_column, guard,
    #  in_loop, stmt_line, in_handler, is_callee); is_callee: ``x.name(...)``
    reads: list = field(default_factory=list)
    digest: str = ""  # of the decoded source: the fixer refuses a file changed since
    # which calls of its functions the two scans of every call in
    # cachelint.facts.cachesites may pick up (see scan_keys); None: not computed;
    # bytes: as loaded from the cache, unpacked on first use
    scans: tuple | bytes | None = None


FileIndex.scans = _Packed("scans")  # type: ignore[assignment]  # after @dataclass: it keeps the field
