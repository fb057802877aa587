"""Stage 2: index each file with the standard library's ``ast``.

One pass per file produces a :class:`FileIndex` of plain tuples and
dataclasses (picklable, cacheable): the imports and module-level bindings, the
classes with their bases and fields, and every function (nested ones too, named
the way ``__qualname__`` names them) with its parameters, its assignments and
its calls, each call and assignment carrying the guard it sits under.

Expressions are stored as small tuples, not AST nodes:

    ("name", id)                       ("attr", base, attr)
    ("call", func, args, kwargs)       ("const", value)
    ("sub", base, index)               ("tuple", elts)
    ("not", e)  ("and", es)  ("or", es)  ("cmp", ops, left, rights)
    ("?",)                              anything else

A guard is a tuple of ``(condition, polarity)`` pairs: the enclosing ``if`` /
``elif`` / ``else`` / ``while`` tests, the negation of earlier ``if`` tests
whose body always exits (``return``/``raise``/``continue``/``break``), earlier
``assert`` tests, and ``a and f()`` / ``f() if a else g()`` inside expressions.

LibCST is far slower (see the README); it is used only on files that get a
fix. Columns here are converted from ``ast``'s UTF-8 byte offsets to character
offsets, the unit LibCST and editors use.
"""

from __future__ import annotations

import ast
import hashlib
import io
import marshal
import os
import re
import stat
import sys
import threading
import tokenize
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field

Expr = tuple
Guard = tuple  # tuple[tuple[Expr, bool], ...]
UNKNOWN: Expr = ("?",)

_SUPPRESS_RE = re.compile(
    r"#\s*(?:cachelint\s*:\s*ignore(?:\[(?P<c1>[A-Za-z0-9_,\s]*)\])?|noqa(?::\s*(?P<c2>[A-Za-z0-9_,\s]*[A-Za-z0-9]))?)",
    re.IGNORECASE,
)


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
    # the call is inside an `except` handler (an error path, not the usual one)
    in_handler: bool = False
    # not a call but a read of a property (``func`` is the attribute read;
    # no arguments): its getter runs on each read (see cachelint.facts.properties)
    is_read: bool = False


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


# ----- which functions' calls the analysis read ------------------------------------
#
# The cache (cachelint.incremental.cache) can keep the previous findings across an edit of
# a function's calls when no part of the analysis that follows calls from
# function to function (the hot-path walk, the cost and purity walks, the
# hoisting checks) read that function's calls. So `FunctionInfo.calls` is a
# descriptor that notes the function in the set `observing()` installs; the
# two whole-program scans that look at every call for a fixed key (cache-site
# fills and their uses, in cachelint.facts.cachesites) read `scanned_calls(f)`
# instead, and the cache checks an edited function's calls against those
# keys itself. Safe by default: new code that reads `f.calls` only makes
# more functions observed, which costs reuse, never correctness.
#
# Each note also names the reader: the code that took the list from the
# attribute (see `readers`). For a few readers the cache knows what an added
# call would have to be for them to see it (cachelint.incremental.cache.INERT_READERS);
# a function read by any other reader is re-analysed when its calls change.


class _Observing(threading.local):
    # qualname -> code objects that read its calls; per thread: two analyses
    # in two threads keep apart
    seen: dict | None = None


_observing = _Observing()


class _TrackedCalls:
    def __get__(self, f, owner=None):
        if f is None:
            return self
        seen = _observing.seen
        if seen is not None:
            code = sys._getframe(1).f_code
            codes = seen.get(f.qualname)
            if codes is None:
                seen[f.qualname] = {code}
            else:
                codes.add(code)
        calls = f.__dict__["calls"]
        return calls if type(calls) is list else _unpack_calls(f)

    def __set__(self, f, value) -> None:
        f.__dict__["calls"] = value


def _unpack_calls(f: FunctionInfo) -> list:
    """A function's calls as loaded from the cache: marshalled tuples, turned
    into CallSites on first use (a run that resolves a few calls against the
    whole program does not pay for the other 70,000 of vLLM 0.10.2)."""
    calls = f.__dict__["calls"]
    if type(calls) is bytes:
        calls = f.__dict__["calls"] = [CallSite(*c) for c in marshal.loads(calls)]
    return calls


FunctionInfo.calls = _TrackedCalls()  # type: ignore[assignment]  # after @dataclass: it keeps the field


def scanned_calls(f: FunctionInfo) -> list:
    """``f.calls`` without marking ``f`` observed: only for scans that judge
    each call alone by keys the cache re-checks (see above)."""
    calls = f.__dict__["calls"]
    return calls if type(calls) is list else _unpack_calls(f)


@contextmanager
def observing():
    """Collect the functions whose calls are read in the block: a dict of
    qualified name -> the code objects that read them (see :func:`readers`)."""
    prev, _observing.seen = _observing.seen, {}
    try:
        yield _observing.seen
    finally:
        _observing.seen = prev


def reader_tag(code) -> str:
    """``module:qualname`` of a code object, e.g. ``callgraph:edges_of``."""
    return f"{os.path.splitext(os.path.basename(code.co_filename))[0]}:{code.co_qualname}"


def readers(seen: dict) -> dict[str, list[str]]:
    """qualname -> sorted reader tags, from what :func:`observing` collected."""
    return {qn: sorted({reader_tag(c) for c in codes}) for qn, codes in seen.items()}


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


class _Packed:
    """A field that may hold its value marshalled (as loaded from the cache),
    unmarshalled on first read: ``FileIndex.scans``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        v = obj.__dict__[self.name]
        if type(v) is bytes:
            v = obj.__dict__[self.name] = marshal.loads(v)
        return v

    def __set__(self, obj, value) -> None:
        obj.__dict__[self.name] = value


FileIndex.scans = _Packed("scans")  # type: ignore[assignment]  # after @dataclass: it keeps the field


def _last_name(e: Expr) -> str | None:
    if e[0] == "name":
        return e[1]
    if e[0] == "attr":
        return e[2]
    if e[0] == "call":
        return _last_name(e[1])
    return None


def dotted(e: Expr) -> str | None:
    """``a.b.c`` for a name/attribute chain, else None."""
    parts = []
    while e[0] == "attr":
        parts.append(e[2])
        e = e[1]
    if e[0] != "name":
        return None
    parts.append(e[1])
    return ".".join(reversed(parts))


def render(e: Expr) -> str:
    """Source-like text of an indexed expression (for messages)."""
    k = e[0]
    if k == "name":
        return e[1]
    if k == "attr":
        return f"{render(e[1])}.{e[2]}"
    if k == "call":
        args = [render(a) for a in e[2]] + [(f"{n}={render(v)}" if n else f"**{render(v)}") for n, v in e[3]]
        return f"{render(e[1])}({', '.join(args)})"
    if k == "const":
        return repr(e[1])
    if k == "sub":
        return f"{render(e[1])}[{render(e[2])}]"
    if k == "tuple":
        return "(" + ", ".join(render(x) for x in e[1]) + ("," if len(e[1]) == 1 else "") + ")"
    if k == "not":
        return f"not {render(e[1])}"
    if k in ("and", "or"):
        return f" {k} ".join(_paren(x) for x in e[1])
    if k == "cmp":
        s = _paren(e[2])
        for op, r in zip(e[1], e[3]):
            s += f" {op} {_paren(r)}"
        return s
    return "..."


def _paren(e: Expr) -> str:
    s = render(e)
    return f"({s})" if e[0] in ("and", "or", "not", "cmp") else s


_CMP = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}


_Name, _Attribute, _Call, _Constant, _Starred = ast.Name, ast.Attribute, ast.Call, ast.Constant, ast.Starred
_Subscript, _Tuple, _UnaryOp, _Not, _BoolOp, _And = ast.Subscript, ast.Tuple, ast.UnaryOp, ast.Not, ast.BoolOp, ast.And
_Compare, _BinOp, _BitOr = ast.Compare, ast.BinOp, ast.BitOr
_CONST_TYPES = (str, int, float, bool, bytes)


def conv(node: ast.AST, depth: int = 0) -> Expr:
    """AST expression -> tuple form (bounded depth).

    The indexer calls this about a million times on vLLM: names are
    converted inline (no call) where the depth bound allows, and sequences
    are built from lists (faster than generator expressions).
    """
    if depth > 12:
        return UNKNOWN
    t = type(node)
    if t is _Name:
        return ("name", node.id)
    d = depth + 1
    if t is _Attribute:
        v = node.value
        return ("attr", ("name", v.id) if type(v) is _Name and d <= 12 else conv(v, d), node.attr)
    if t is _Call:
        f = node.func
        func = ("name", f.id) if type(f) is _Name and d <= 12 else conv(f, d)
        args = tuple([UNKNOWN if type(a) is _Starred else conv(a, d) for a in node.args]) if node.args else ()
        kwargs = tuple([(k.arg, conv(k.value, d)) for k in node.keywords]) if node.keywords else ()
        return ("call", func, args, kwargs)
    if t is _Constant:
        v = node.value
        if isinstance(v, _CONST_TYPES) or v is None or v is Ellipsis:
            return ("const", v)
        return UNKNOWN
    if t is _Subscript:
        return ("sub", conv(node.value, d), conv(node.slice, d))
    if t is _Tuple:
        return ("tuple", tuple([conv(x, d) for x in node.elts]))
    if t is _UnaryOp and type(node.op) is _Not:
        return ("not", conv(node.operand, d))
    if t is _BoolOp:
        return ("and" if type(node.op) is _And else "or", tuple([conv(v, d) for v in node.values]))
    if t is _Compare:
        ops = tuple([_CMP.get(type(o), "?") for o in node.ops])
        return ("cmp", ops, conv(node.left, d), tuple([conv(c, d) for c in node.comparators]))
    if t is _BinOp and type(node.op) is _BitOr:  # X | None annotations
        return ("or", (conv(node.left, d), conv(node.right, d)))
    return UNKNOWN


def parse_suppressions(source: str) -> dict:
    """line -> frozenset of codes, or None for a bare ``noqa`` / ``ignore``.

    A line scan, not a tokenizer pass (tokenizing vLLM costs seconds): a
    marker counts when the ``#`` before it is outside string quotes on its line.
    Only the lines that mention a marker are looked at.
    """
    out: dict = {}
    low = source.lower()
    if "noqa" not in low and "cachelint" not in low:
        return out
    if "\r" in source or len(low) != len(source):
        # a line may end in \r alone, or lowering moved the offsets: split it all
        lines = enumerate(split_lines(source, False), 1)
    else:
        lines = _marked_lines(source, low)
    for lineno, text in lines:
        if "#" not in text:
            continue
        lt = text.lower()
        if "noqa" not in lt and "cachelint" not in lt:
            continue
        for m in _SUPPRESS_RE.finditer(text):
            if _in_string(text, m.start()):
                continue
            codes = m.group("c1") if m.group("c1") is not None else m.group("c2")
            if codes is None or not codes.strip():
                out[lineno] = None
            else:
                cs = frozenset(c.strip().upper() for c in codes.split(",") if c.strip())
                prev = out.get(lineno, frozenset())
                out[lineno] = None if prev is None else prev | cs
    return out


def _marked_lines(source: str, low: str) -> list[tuple[int, str]]:
    """(number, text) of each line of ``source`` (no \\r in it; ``low`` is
    its lower case, of the same length) that mentions a marker, in order."""
    hits = []
    for marker in ("noqa", "cachelint"):
        i = low.find(marker)
        while i >= 0:
            hits.append(i)
            end = low.find("\n", i)
            if end < 0:
                break
            i = low.find(marker, end)
    hits.sort()
    out = []
    line, counted, last_start = 1, 0, -1
    for pos in hits:
        start = source.rfind("\n", 0, pos) + 1
        if start == last_start:
            continue
        line += source.count("\n", counted, start)
        counted = last_start = start
        end = source.find("\n", pos)
        out.append((line, source[start:] if end < 0 else source[start:end]))
    return out


def _in_string(text: str, pos: int) -> bool:
    quote = None
    i = 0
    while i < pos:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#":
            return False  # an earlier comment start
        i += 1
    return quote is not None


class _ColumnMap:
    """ast byte offsets -> character offsets, only for non-ASCII lines.

    ``wide`` holds the numbers of the lines with a non-ASCII character
    (empty for an ASCII file): the position of a node on other lines needs
    no conversion, and a file with one accented comment is not split into
    lines for each of its nodes.
    """

    def __init__(self, source: str) -> None:
        self.ascii = source.isascii()
        self.lines = None
        self.wide: frozenset = frozenset()
        if not self.ascii:
            # numbered as Python numbers lines (breaks: \r\n, \r, \n only)
            self.lines = split_lines(source)
            self.wide = frozenset(i for i, text in enumerate(self.lines, 1) if not text.isascii())

    def col(self, line: int, byte_col: int) -> int:
        if byte_col <= 0 or line not in self.wide:
            return byte_col
        text = self.lines[line - 1]
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))


_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
_TryStar = getattr(ast, "TryStar", None)  # 3.11+
_Match = getattr(ast, "Match", None)  # 3.10+
_ExprStmt = ast.Expr
_Await, _FormattedValue, _List, _Set, _JoinedStr = ast.Await, ast.FormattedValue, ast.List, ast.Set, ast.JoinedStr
_Lambda, _IfExp, _NamedExpr, _DictComp = ast.Lambda, ast.IfExp, ast.NamedExpr, ast.DictComp
_COMPS = frozenset({ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp})
_NO_EXPRS = frozenset({ast.Pass, ast.Break, ast.Continue})
_LEAVES = frozenset({ast.Name, ast.Constant, ast.Load, ast.Store, ast.Del})


def _always_exits(body: list) -> bool:
    if not body:
        return False
    last = body[-1]
    if isinstance(last, _EXITS):
        return True
    if isinstance(last, ast.If):
        return _always_exits(last.body) and _always_exits(last.orelse)
    return False


def _is_type_checking(test: ast.AST) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_base(stmt: ast.ImportFrom, fi: FileIndex) -> str:
    base = stmt.module or ""
    if stmt.level:
        pkg = fi.module.split(".") if fi.module else []
        if not fi.is_package:
            pkg = pkg[:-1]
        up = stmt.level - 1
        if up:
            pkg = pkg[: len(pkg) - up] if up <= len(pkg) else []
        base = ".".join(pkg + ([base] if base else []))
    return base


def _import_bindings(stmt, fi: FileIndex) -> list[tuple[str, str]]:
    """(local name, qualified target) for each name an import statement binds."""
    out = []
    if isinstance(stmt, ast.Import):
        for a in stmt.names:
            if a.asname:
                out.append((a.asname, a.name))
            else:
                top = a.name.split(".")[0]
                out.append((top, top))
        return out
    base = _import_base(stmt, fi)
    for a in stmt.names:
        if a.name != "*":
            out.append((a.asname or a.name, f"{base}.{a.name}" if base else a.name))
    return out


class _Indexer:
    def __init__(self, fi: FileIndex, cols: _ColumnMap, watch: frozenset = frozenset()) -> None:
        self.fi = fi
        self.cols = cols
        self.watch = watch

    # ----- module level -------------------------------------------------
    def module(self, tree: ast.Module) -> None:
        for stmt in tree.body:
            self._module_stmt(stmt, (), False)

    def _module_stmt(self, stmt: ast.stmt, guard: Guard, type_checking: bool) -> None:
        fi = self.fi
        t = type(stmt)
        if t in (ast.Import, ast.ImportFrom):
            self._import(stmt)
        elif t in (ast.FunctionDef, ast.AsyncFunctionDef):
            qn = f"{fi.module}.{stmt.name}" if fi.module else stmt.name
            fi.defs[stmt.name] = qn
            self._function(stmt, qn, None, None, type_checking)
        elif t is ast.ClassDef:
            qn = f"{fi.module}.{stmt.name}" if fi.module else stmt.name
            fi.defs[stmt.name] = qn
            self._class(stmt, qn, None, type_checking)
        elif t is ast.If:
            tc = type_checking or _is_type_checking(stmt.test)
            g = guard + ((conv(stmt.test), True),)
            for s in stmt.body:
                self._module_stmt(s, g, tc)
            g2 = guard + ((conv(stmt.test), False),)
            for s in stmt.orelse:
                self._module_stmt(s, g2, type_checking)
        elif t is ast.Try or (hasattr(ast, "TryStar") and t is ast.TryStar):
            for s in stmt.body:
                self._module_stmt(s, guard, type_checking)
            for h in stmt.handlers:
                for s in h.body:
                    self._module_stmt(s, guard, type_checking)
            for s in stmt.orelse + stmt.finalbody:
                self._module_stmt(s, guard, type_checking)
        else:
            if t is ast.Assign:
                for tgt in stmt.targets:
                    self._module_bind(tgt, stmt.value)
                    if isinstance(tgt, ast.Name) and tgt.id == "__all__":
                        self._all(stmt.value)
            elif t is ast.AnnAssign and isinstance(stmt.target, ast.Name):
                fi.global_annotations[stmt.target.id] = conv(stmt.annotation)
                if stmt.value is not None:
                    self._module_bind(stmt.target, stmt.value)
            elif t is ast.AugAssign and isinstance(stmt.target, ast.Name):
                fi.globals[stmt.target.id] = None
            # module-level calls and assignments (for cache sites on globals)
            fn = _FunctionBodyIndexer(self, None)
            fn.stmt(stmt, guard, False)
            fi.module_calls.extend(fn.calls)
            fi.module_assigns.extend(fn.assigns)

    def _all(self, value: ast.AST) -> None:
        if isinstance(value, (ast.List, ast.Tuple)):
            names = [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            self.fi.all_names = tuple(names)

    def _module_bind(self, tgt: ast.AST, value: ast.AST) -> None:
        g = self.fi.globals
        if isinstance(tgt, ast.Name):
            g[tgt.id] = None if tgt.id in g else conv(value)
        elif isinstance(tgt, (ast.Tuple, ast.List)):
            for e in tgt.elts:
                if isinstance(e, ast.Name):
                    g[e.id] = None

    def _import(self, stmt) -> None:
        fi = self.fi
        if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
            fi.star_imports.append(_import_base(stmt, fi))
        for local, target in _import_bindings(stmt, fi):
            fi.imports[local] = target
            if isinstance(stmt, ast.Import):
                fi.module_imports.add(local)

    # ----- definitions ----------------------------------------------------
    def _class(self, node: ast.ClassDef, qn: str, parent_fn: str | None, type_checking: bool) -> ClassInfo:
        fi = self.fi
        ci = ClassInfo(
            qualname=qn,
            name=node.name,
            module=fi.module,
            path=fi.path,
            line=node.lineno,
            end_line=getattr(node, "end_lineno", node.lineno) or node.lineno,
            bases=[conv(b) for b in node.bases],
            decorators=[conv(d) for d in node.decorator_list],
            fields={},
            class_attrs={},
            methods={},
            parent_function=parent_fn,
        )
        fi.classes.append(ci)
        self._class_body(node.body, ci, type_checking)
        return ci

    def _class_body(self, body, ci: ClassInfo, type_checking: bool) -> None:
        qn = ci.qualname
        for stmt in body:
            t = type(stmt)
            if t in (ast.FunctionDef, ast.AsyncFunctionDef):
                mqn = f"{qn}.{stmt.name}"
                ci.methods[stmt.name] = mqn
                self._function(stmt, mqn, qn, None, type_checking)
            elif t is ast.ClassDef:
                self._class(stmt, f"{qn}.{stmt.name}", None, type_checking)
            elif t is ast.AnnAssign and isinstance(stmt.target, ast.Name):
                ci.fields[stmt.target.id] = conv(stmt.annotation)
                if stmt.value is not None:
                    ci.class_attrs[stmt.target.id] = conv(stmt.value)
            elif t is ast.Assign:
                for tgt in stmt.targets:
                    if isinstance(tgt, ast.Name):
                        ci.class_attrs[tgt.id] = conv(stmt.value)
            elif t is ast.If:
                self._class_body(stmt.body, ci, type_checking or _is_type_checking(stmt.test))
                self._class_body(stmt.orelse, ci, type_checking)
            elif t is ast.Try:
                self._class_body(stmt.body, ci, type_checking)

    def _function(
        self, node, qn: str, class_qn: str | None, parent_fn: str | None, type_checking: bool
    ) -> FunctionInfo:
        fi = self.fi
        a = node.args
        params: list[Param] = []
        pos = list(getattr(a, "posonlyargs", [])) + list(a.args)
        defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
        for p, d in zip(pos, defaults):
            params.append(Param(p.arg, conv(p.annotation) if p.annotation else None, conv(d) if d else None, "pos"))
        if a.vararg:
            params.append(Param(a.vararg.arg, None, None, "vararg"))
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            params.append(Param(p.arg, conv(p.annotation) if p.annotation else None, conv(d) if d else None, "kwonly"))
        if a.kwarg:
            params.append(Param(a.kwarg.arg, None, None, "kwarg"))
        f = FunctionInfo(
            qualname=qn,
            name=node.name,
            module=fi.module,
            path=fi.path,
            class_qualname=class_qn,
            parent_function=parent_fn,
            line=node.lineno,
            end_line=getattr(node, "end_lineno", node.lineno) or node.lineno,
            column=self.cols.col(node.lineno, node.col_offset),
            params=params,
            decorators=[conv(d) for d in node.decorator_list],
            is_async=isinstance(node, ast.AsyncFunctionDef),
            returns_annotation=conv(node.returns) if node.returns else None,
            under_type_checking=type_checking,
        )
        fi.functions.append(f)
        body = _FunctionBodyIndexer(self, f)
        body.block(node.body, (), False)
        f.assigns = body.assigns
        f.calls = body.calls
        f.returns = body.returns
        f.global_names = tuple(body.global_names)
        return f


_CALLEE = object()  # marks an attribute that is the function of a call (``x.m(...)``)


class _FunctionBodyIndexer:
    """Walks one function body (not into nested defs, which get their own)."""

    def __init__(self, indexer: _Indexer, f: FunctionInfo | None) -> None:
        self.ix = indexer
        self.f = f
        self.assigns: list[Assign] = []
        self.calls: list[CallSite] = []
        self.returns: list[Expr] = []
        self.global_names: list[str] = []
        self.handler_depth = 0

    def _pos(self, node) -> tuple[int, int, int, int]:
        line = node.lineno
        end_line = node.end_lineno or line
        end_col = node.end_col_offset
        if end_col is None:
            end_col = node.col_offset
        wide = self.ix.cols.wide
        if not wide or (line not in wide and end_line not in wide):  # byte offsets are character offsets
            return (line, node.col_offset, end_line, end_col or 0)
        c = self.ix.cols
        return (line, c.col(line, node.col_offset), end_line, c.col(end_line, end_col or 0))

    def block(self, body: list, guard: Guard, in_loop: bool) -> None:
        g = guard
        for stmt in body:
            self.stmt(stmt, g, in_loop)
            t = type(stmt)
            if t is ast.If and not stmt.orelse and _always_exits(stmt.body):
                g = g + ((conv(stmt.test), False),)
            elif (
                t is ast.If and stmt.orelse and _always_exits(stmt.orelse) and not _always_exits(stmt.body)
            ) or t is ast.Assert:
                g = g + ((conv(stmt.test), True),)

    def _nested_def(self, stmt, guard) -> None:
        f = self.f
        if f is None:
            return
        qn = f"{f.qualname}.<locals>.{stmt.name}"
        f.nested[stmt.name] = qn
        if isinstance(stmt, ast.ClassDef):
            self.ix._class(stmt, qn, f.qualname, f.under_type_checking)
        else:
            self.ix._function(stmt, qn, None, f.qualname, f.under_type_checking)
        self.assigns.append(
            Assign(("name", stmt.name), ("def", qn), stmt.lineno, 0, stmt.lineno, 0, guard, False, "def")
        )

    def stmt(self, stmt: ast.stmt, guard: Guard, in_loop: bool) -> None:
        t = type(stmt)
        if t is _ExprStmt:  # the commonest statement (a call made for its effect)
            self.expr(stmt.value, guard, in_loop, stmt.lineno)
            return
        if t in _NO_EXPRS:
            return
        if t in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            for d in stmt.decorator_list:
                self.expr(d, guard, in_loop, stmt.lineno)
            self._nested_def(stmt, guard)
            return
        if t is ast.If:
            self.expr(stmt.test, guard, in_loop, stmt.lineno)
            test = conv(stmt.test)
            self.block(stmt.body, guard + ((test, True),), in_loop)
            if stmt.orelse:
                self.block(stmt.orelse, guard + ((test, False),), in_loop)
            return
        if t is ast.While:
            self.expr(stmt.test, guard, True, stmt.lineno)
            self.block(stmt.body, guard + ((conv(stmt.test), True),), True)
            self.block(stmt.orelse, guard, in_loop)
            return
        if t in (ast.For, ast.AsyncFor):
            self.expr(stmt.iter, guard, in_loop, stmt.lineno)
            self._bind(stmt.target, UNKNOWN, stmt, guard, True, "for")
            self.block(stmt.body, guard, True)
            self.block(stmt.orelse, guard, in_loop)
            return
        if t in (ast.With, ast.AsyncWith):
            for item in stmt.items:
                self.expr(item.context_expr, guard, in_loop, stmt.lineno)
                if item.optional_vars is not None:
                    self._bind(item.optional_vars, UNKNOWN, stmt, guard, in_loop, "with")
            self.block(stmt.body, guard, in_loop)
            return
        if t is ast.Try or t is _TryStar:
            self.block(stmt.body, guard, in_loop)
            for h in stmt.handlers:
                if h.name:
                    self.assigns.append(
                        Assign(("name", h.name), UNKNOWN, h.lineno, 0, h.lineno, 0, guard, in_loop, "except")
                    )
                self.handler_depth += 1
                try:
                    self.block(h.body, guard, in_loop)
                finally:
                    self.handler_depth -= 1
            self.block(stmt.orelse, guard, in_loop)
            self.block(stmt.finalbody, guard, in_loop)
            return
        if t is _Match:
            self.expr(stmt.subject, guard, in_loop, stmt.lineno)
            for case in stmt.cases:
                for n in ast.walk(case.pattern):
                    name = getattr(n, "name", None) or getattr(n, "rest", None)
                    if isinstance(name, str):
                        self.assigns.append(
                            Assign(("name", name), UNKNOWN, stmt.lineno, 0, stmt.lineno, 0, guard, in_loop, "match")
                        )
                self.block(case.body, guard, in_loop)
            return
        if t is ast.Assign:
            call_target = None
            if len(stmt.targets) == 1 and type(stmt.value) is ast.Call:
                call_target = conv(stmt.targets[0])
            value = self.expr(stmt.value, guard, in_loop, stmt.lineno, assigned_to=call_target) or conv(stmt.value)
            for tgt in stmt.targets:
                self._bind(tgt, value, stmt, guard, in_loop, "assign")
            return
        if t is ast.AnnAssign:
            if stmt.value is not None:
                call_target = conv(stmt.target) if type(stmt.value) is ast.Call else None
                value = self.expr(stmt.value, guard, in_loop, stmt.lineno, assigned_to=call_target)
                self._bind(stmt.target, value or conv(stmt.value), stmt, guard, in_loop, "annassign")
            return
        if t is ast.AugAssign:
            self.expr(stmt.value, guard, in_loop, stmt.lineno)
            self.expr(stmt.target, guard, in_loop, stmt.lineno)
            self._bind(stmt.target, UNKNOWN, stmt, guard, in_loop, "augassign")
            return
        if t is ast.Return:
            if stmt.value is not None:
                self.returns.append(self.expr(stmt.value, guard, in_loop, stmt.lineno) or conv(stmt.value))
            else:
                self.returns.append(("const", None))
            return
        if t in (ast.Global, ast.Nonlocal):
            self.global_names.extend(stmt.names)
            return
        if t is ast.Delete:
            for tgt in stmt.targets:
                self._bind(tgt, UNKNOWN, stmt, guard, in_loop, "del")
            return
        if t in (ast.Import, ast.ImportFrom):
            # function-local (lazy) imports bind names like module-level ones
            for local, target in _import_bindings(stmt, self.ix.fi):
                self.assigns.append(
                    Assign(
                        ("name", local), ("import", target), stmt.lineno, 0, stmt.lineno, 0, guard, in_loop, "import"
                    )
                )
            return
        # Expr, Raise, Assert, ...
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.expr):
                self.expr(child, guard, in_loop, stmt.lineno)

    def _bind(self, tgt, value: Expr, stmt, guard, in_loop, kind) -> None:
        if isinstance(tgt, (ast.Tuple, ast.List)):
            for e in tgt.elts:
                self._bind(e.value if isinstance(e, ast.Starred) else e, UNKNOWN, stmt, guard, in_loop, "unpack")
            return
        if isinstance(tgt, (ast.Attribute, ast.Subscript)):
            # evaluate the receiver's calls (e.g. f().x = ...)
            self.expr(tgt.value, guard, in_loop, stmt.lineno)
        line, col, end_line, end_col = self._pos(tgt)
        self.assigns.append(Assign(conv(tgt), value, line, col, end_line, end_col, guard, in_loop, kind))

    def expr(self, node: ast.AST, guard: Guard, in_loop: bool, stmt_line: int, assigned_to: Expr | None = None):
        """Record every call in ``node`` (not inside lambdas / nested defs).
        If ``node`` is a call, return ``conv(node)``, built from the parts
        its CallSite converted (else None): an assignment's or a return's
        value is most often a call (3 to 4 % of the walk on vLLM 0.33.0).

        The hottest loop of indexing: node types are tested commonest first
        against module constants, and leaves (names, constants) are never
        pushed."""
        top = None
        stack = [(node, guard, in_loop, assigned_to)]
        push, pop = stack.append, stack.pop
        leaves = _LEAVES
        while stack:
            n, g, loop, at = pop()
            t = type(n)
            if t is _Call:
                line, col, end_line, end_col = self._pos(n)
                # at depth 1, as conv(n) converts them (see above)
                args = tuple([UNKNOWN if type(a) is _Starred else conv(a, 1) for a in n.args]) if n.args else ()
                kwargs = tuple([(k.arg, conv(k.value, 1)) for k in n.keywords]) if n.keywords else ()
                f = n.func
                func = ("name", f.id) if type(f) is _Name else conv(f, 1)
                if n is node:
                    top = ("call", func, args, kwargs)
                self.calls.append(
                    CallSite(
                        func, args, kwargs, line, col, end_line, end_col, g, loop, stmt_line, at, self.handler_depth > 0
                    )
                )
                # leaves hold no calls: not pushed (most arguments are names and constants)
                if type(f) is _Attribute:
                    push((f, g, loop, _CALLEE))
                elif type(f) not in leaves:
                    push((f, g, loop, None))
                for a in n.args:
                    if type(a) not in leaves:
                        push((a, g, loop, None))
                for k in n.keywords:
                    if type(k.value) not in leaves:
                        push((k.value, g, loop, None))
                continue
            # the common shapes, without visiting leaves and Load() contexts
            if t is _Attribute or t is _Starred or t is _Await or t is _FormattedValue:
                if t is _Attribute and self.ix.watch and n.attr in self.ix.watch and self.f is not None:
                    if type(n.ctx) is ast.Load:
                        self.ix.fi.reads.append(
                            (
                                self.f.qualname,
                                conv(n),
                                *self._pos(n),
                                g,
                                loop,
                                stmt_line,
                                self.handler_depth > 0,
                                at is _CALLEE,
                            )
                        )
                v = n.value
                if type(v) not in leaves:
                    push((v, g, loop, None))
                continue
            if t is _Subscript:
                v = n.value
                if type(v) not in leaves:
                    push((v, g, loop, None))
                v = n.slice
                if type(v) not in leaves:
                    push((v, g, loop, None))
                continue
            if t is _BinOp:
                v = n.left
                if type(v) not in leaves:
                    push((v, g, loop, None))
                v = n.right
                if type(v) not in leaves:
                    push((v, g, loop, None))
                continue
            if t is _Tuple or t is _List or t is _Set or t is _JoinedStr:
                for v in n.elts if t is not _JoinedStr else n.values:
                    if type(v) not in leaves:
                        push((v, g, loop, None))
                continue
            if t is _Compare:
                v = n.left
                if type(v) not in leaves:
                    push((v, g, loop, None))
                for v in n.comparators:
                    if type(v) not in leaves:
                        push((v, g, loop, None))
                continue
            if t is _Lambda:
                continue
            if t is _IfExp:
                test = conv(n.test)
                push((n.test, g, loop, None))
                push((n.body, g + ((test, True),), loop, None))
                push((n.orelse, g + ((test, False),), loop, None))
                continue
            if t is _BoolOp:
                acc = g
                for v in n.values:
                    push((v, acc, loop, None))
                    acc = acc + ((conv(v), type(n.op) is _And),)
                continue
            if t in _COMPS:
                for gen in n.generators:
                    push((gen.iter, g, loop, None))
                    for cond in gen.ifs:
                        push((cond, g, True, None))
                    # comprehension targets are local to the comprehension
                inner = g
                for gen in n.generators:
                    for cond in gen.ifs:
                        inner = inner + ((conv(cond), True),)
                if t is _DictComp:
                    push((n.key, inner, True, None))
                    push((n.value, inner, True, None))
                else:
                    push((n.elt, inner, True, None))
                continue
            if t is _NamedExpr:
                line, col, end_line, end_col = self._pos(n.target)
                self.assigns.append(
                    Assign(("name", n.target.id), conv(n.value), line, col, end_line, end_col, g, loop, "walrus")
                )
                push((n.value, g, loop, None))
                continue
            if t in leaves:
                continue
            for child in ast.iter_child_nodes(n):
                if (type(child) not in leaves and isinstance(child, ast.expr)) or isinstance(
                    child, (ast.keyword, ast.comprehension, ast.arg, ast.arguments)
                ):
                    push((child, g, loop, None))
        # keep calls in source order for stable output
        # (the stack visits in reverse; callers sort once per function)
        return top


# ----- the keys of the two scans over every call -------------------------------
#
# cachelint.facts.cachesites scans every call of the program twice: for fills of
# cache sites (a call assigned whole to an attribute) and for uses of them (a
# call named like a site's callee). Each file's index lists, per key, where
# its calls are (`FileIndex.scans`, computed where the file is indexed, in
# parallel), so the scans visit the few calls that can match instead of all
# of them (270,000 on vLLM 0.33.0). The cache does not compare it (a list of
# positions, derived from the calls it does compare).


def fills_site(c: CallSite) -> bool:
    """Whether :meth:`cachelint.facts.cachesites.CacheAnalysis.collect` looks at a call: the whole value of
    an attribute assignment."""
    t = c.assigned_to
    return t is not None and t[0] == "attr"


def function_imports(assigns) -> dict:
    """A function's own imports: local name -> what it imports."""
    out: dict = {}
    for a in assigns:
        if a.kind == "import" and a.target[0] == "name":
            out.setdefault(a.target[1], a.value[1])
    return out


def use_keys(func, local_imports: dict, module_imports: dict) -> tuple:
    """The names :meth:`cachelint.facts.cachesites.CacheAnalysis._find_uses` looks a call up by among the
    cache sites: its last name and, for a bare name, the last part of what it
    imports (`from m import probe as measure`)."""
    if func[0] == "attr":
        return (func[2],)
    if func[0] != "name":
        return ("",)
    key = func[1]
    target = local_imports.get(key)
    if target is None:
        target = module_imports.get(key)
    return (key,) if target is None else (key, target.rsplit(".", 1)[-1])


def scan_keys(fi: FileIndex) -> tuple:
    """``(fills, keys)`` for :attr:`FileIndex.scans`: ``fills`` the positions
    of the calls for which :func:`fills_site` holds, ``keys`` each of
    :func:`use_keys` -> the positions of the calls it names; a position is
    two ints, function and call, flattened, in order. Functions under
    ``TYPE_CHECKING`` are not scanned."""
    fills: list = []
    keys: dict = {}
    for n, f in enumerate(fi.functions):
        if f.under_type_checking:
            continue
        local = None
        for i, c in enumerate(scanned_calls(f)):
            if fills_site(c):
                fills += (n, i)
            func = c.func
            if func[0] == "name":
                if local is None:
                    local = function_imports(f.assigns)
                ks = use_keys(func, local, fi.imports)
            else:
                ks = (func[2],) if func[0] == "attr" else ("",)
            for k in ks:
                at = keys.get(k)
                if at is None:
                    keys[k] = [n, i]
                elif at[-2] != n or at[-1] != i:  # a name and its import may be one key
                    at += (n, i)
    return tuple(fills), {k: tuple(v) for k, v in keys.items()}


def scan_hits(functions: dict, indexes: list, pick):
    """``(function, call)`` of the calls ``pick(fi.scans)`` (flat positions,
    see :func:`scan_keys`) names in each file, in program order: files in
    order, functions in file order (only the one ``functions`` holds for
    its qualified name), calls in order."""
    for fi in indexes:
        fns = fi.functions
        if not fns:
            continue
        scans = fi.scans
        if scans is None:  # an index built without them
            scans = fi.scans = scan_keys(fi)
        flat = pick(scans)
        for k in range(0, len(flat), 2):
            f = fns[flat[k]]
            if functions.get(f.qualname) is f:
                yield f, scanned_calls(f)[flat[k + 1]]


def index_source(source: str, path: str, module: str, is_package: bool, watch: frozenset = frozenset()) -> FileIndex:
    """Index one module. ``watch``: attribute names whose reads to record in ``reads``."""
    fi = FileIndex(path=path, module=module, is_package=is_package)
    fi.n_lines = source.count("\n") + 1
    fi.digest = source_digest(source)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source, filename=path, type_comments=False)
    except SyntaxError as e:
        line, col = e.lineno or 1, max((e.offset or 1) - 1, 0)
        if e.lineno is None:
            line, col = _null_byte_position(source)
        fi.error = (f"SyntaxError: {e.msg}", line, col)
        return fi
    except (ValueError, RecursionError, MemoryError) as e:  # null bytes (3.10), too deep
        line, col = _null_byte_position(source) if isinstance(e, ValueError) else (1, 0)
        fi.error = (f"{type(e).__name__}: {e}", line, col)
        return fi
    fi.suppressions = parse_suppressions(source)
    ix = _Indexer(fi, _ColumnMap(source), watch)
    try:
        ix.module(tree)
    except RecursionError:
        fi.error = ("RecursionError: expression nesting too deep to analyse", 1, 0)
        return fi
    for f in fi.functions:
        scanned_calls(f).sort(key=lambda c: (c.line, c.column))  # building, not reading
    fi.module_calls.sort(key=lambda c: (c.line, c.column))
    fi.scans = scan_keys(fi)
    return fi


def function_reads(lines: list[str], f: FunctionInfo, watch: frozenset) -> list:
    """Reads of the ``watch`` names in function ``f`` (and functions nested in
    it), parsing only its own lines of the file (``lines``, with line ends):
    the same tuples as :attr:`FileIndex.reads`, in the file's coordinates.

    An indented body keeps its indentation under an ``if 1:`` line, so
    columns stay the file's and only line numbers shift. Much cheaper than indexing the
    whole file again when a few hot functions are all that need reading.
    """
    segment = "".join(lines[f.line - 1 : f.end_line])
    nested = segment[:1].isspace()  # a method or nested function: keep its indentation under `if 1:`
    text = "if 1:\n" + segment if nested else segment
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    if nested:
        node = tree.body[0].body[0] if tree.body and isinstance(tree.body[0], ast.If) and tree.body[0].body else None
    else:
        node = tree.body[0] if tree.body else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name != f.name:
        return []
    fi = FileIndex(path=f.path, module=f.module, is_package=False)
    ix = _Indexer(fi, _ColumnMap(text), watch)
    stub = FunctionInfo(
        qualname=f.qualname,
        name=f.name,
        module=f.module,
        path=f.path,
        class_qualname=f.class_qualname,
        parent_function=f.parent_function,
        line=f.line,
        end_line=f.end_line,
        column=f.column,
        params=[],
        decorators=[],
        is_async=f.is_async,
        under_type_checking=f.under_type_checking,
    )
    try:
        _FunctionBodyIndexer(ix, stub).block(node.body, (), False)
    except RecursionError:
        return []
    shift = f.line - (2 if nested else 1)
    return [
        (qn, e, line + shift, col, end_line + shift, end_col, guard, in_loop, stmt_line + shift, *rest)
        for qn, e, line, col, end_line, end_col, guard, in_loop, stmt_line, *rest in fi.reads
    ]


def _null_byte_position(source: str) -> tuple[int, int]:
    nul = source.find("\0")
    if nul < 0:
        return 1, 0
    return source.count("\n", 0, nul) + 1, nul - (source.rfind("\n", 0, nul) + 1)


def source_digest(source: str) -> str:
    return hashlib.blake2b(source.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def read_bytes(path: str) -> bytes:
    """A file's bytes, opened non-blocking and checked to be a regular file,
    so a FIFO or a device named ``*.py`` is an unreadable file (CL000), not a hang."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"not a regular file: {path}")
        return fh.read()


# str.splitlines also breaks at \v, \f, \x1c-\x1e, \x85, \u2028 and \u2029,
# which Python's tokenizer does not: every line number after one would be off
_OTHER_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_PY_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def split_lines(text: str, keepends: bool = True) -> list[str]:
    """The lines of ``text`` as Python numbers them (breaks: \\r\\n, \\r, \\n)."""
    if not _OTHER_BREAKS.search(text):
        return text.splitlines(keepends)
    lines = _PY_LINE.findall(text)
    return lines if keepends else [line.rstrip("\r\n") for line in lines]


def decode_source(data: bytes) -> str:
    """Decode like Python does (PEP 263 cookie, BOM); raises on failure."""
    enc, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(enc)
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def read_source(path: str) -> str:
    """Decode like Python does (PEP 263 cookie, BOM); raises on failure."""
    return decode_source(read_bytes(path))


def _unreadable(path: str, module: str, is_package: bool, e: Exception) -> FileIndex:
    fi = FileIndex(path=path, module=module, is_package=is_package)
    line, col = 1, 0
    if isinstance(e, UnicodeDecodeError) and isinstance(e.object, bytes):  # point at the bad byte
        line = e.object.count(b"\n", 0, e.start) + 1
        col = e.start - (e.object.rfind(b"\n", 0, e.start) + 1)
    fi.error = (f"cannot read file: {type(e).__name__}: {e}", line, col)
    return fi


def index_bytes(data: bytes, path: str, module: str, is_package: bool) -> FileIndex:
    """Index a file's raw bytes (already read, e.g. to hash them for the cache)."""
    try:
        source = decode_source(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as e:
        return _unreadable(path, module, is_package, e)
    return index_source(source, path, module, is_package)


def index_file(path: str, module: str, is_package: bool) -> FileIndex:
    try:
        data = read_bytes(path)
    except OSError as e:
        return _unreadable(path, module, is_package, e)
    return index_bytes(data, path, module, is_package)
