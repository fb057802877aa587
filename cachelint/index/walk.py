"""Stage 2: index each file with the standard library's ``ast``.

One pass per file produces a :class:`FileIndex` of plain tuples and
dataclasses (picklable, cacheable): the imports and module-level bindings, the
classes with their bases and fields, and every function (nested ones too, named
the way ``__qualname__`` names them) with its parameters, its assignments and
its calls, each call and assignment carrying the guard it sits under.

Expressions are stored as small tuples, not AST nodes (see
:mod:`cachelint.index.expr`):

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
import marshal
import warnings
from typing import Any

from ..files import decode_source, read_bytes, source_digest, split_lines
from .body import FunctionBodyIndexer, import_base, import_bindings
from .expr import (
    LAMBDAS,
    Expr,
    Guard,
    conv,
)
from .records import CallSite, ClassInfo, FileIndex, FunctionInfo, Param
from .scans import scan_keys
from .suppressions import parse_suppressions


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
        text = self.lines[line - 1]  # type: ignore[index]  # a wide line is a line of a non-ASCII source
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))


_Lambda = ast.Lambda


def _is_type_checking(test: ast.AST) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _Indexer:
    def __init__(self, fi: FileIndex, cols: _ColumnMap, watch: frozenset = frozenset()) -> None:
        self.fi = fi
        self.cols = cols
        self.watch = watch
        # where decorator applications go: the module's implicit calls, or
        # those of the function whose body holds the definition
        self.deco_sink: list = fi.module_implicit_calls
        self.lambdas_done: set = set()

    def decorations(self, node, qn: str, calls: bool = True) -> None:
        """``@d def f`` calls ``d(f)`` where the definition runs: recorded
        as implicit calls, innermost decorator first, each applied to the
        previous one's result (``("def", qn)`` is the undecorated object);
        with ``calls``, a decorator written as a call (``@d(x)``) records that
        call too."""
        value: Expr = ("def", qn)
        for d in reversed(node.decorator_list):
            dx = conv(d, 1)
            if dx[0] == "?":
                return
            line, col = d.lineno, self.cols.col(d.lineno, d.col_offset)
            end_line = d.end_lineno or line
            end_col = self.cols.col(end_line, d.end_col_offset or 0)
            if calls and dx[0] == "call":  # @factory(...): the factory is called first
                self.deco_sink.append(
                    (dx[1], dx[2], dx[3], line, col, end_line, end_col, (), False, node.lineno, None, False)
                )
            self.deco_sink.append((dx, (value,), (), line, col, end_line, end_col, (), False, node.lineno, None, False))
            value = ("call", dx, (value,), ())

    # ----- module level -------------------------------------------------
    def module(self, tree: ast.Module) -> None:
        for stmt in tree.body:
            self._module_stmt(stmt, (), False)

    # The walkers dispatch on ``t = type(node)``, which a type checker does not narrow
    # ``node`` on: the node they take (an ``ast.stmt``, an ``ast.AST``) is typed ``Any``.
    def _module_stmt(self, stmt: Any, guard: Guard, type_checking: bool) -> None:
        fi = self.fi
        t = type(stmt)
        if t in (ast.Import, ast.ImportFrom):
            self._import(stmt)
        elif t in (ast.FunctionDef, ast.AsyncFunctionDef):
            qn = f"{fi.module}.{stmt.name}" if fi.module else stmt.name
            fi.defs[stmt.name] = qn
            self._function(stmt, qn, None, None, type_checking)
            self.decorations(stmt, qn)
        elif t is ast.ClassDef:
            qn = f"{fi.module}.{stmt.name}" if fi.module else stmt.name
            fi.defs[stmt.name] = qn
            self._class(stmt, qn, None, type_checking)
            self.decorations(stmt, qn)
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
            fn = FunctionBodyIndexer(self, None)
            fn.stmt(stmt, guard, False)
            fi.module_calls.extend(fn.calls)
            fi.module_assigns.extend(fn.assigns)
            fi.module_implicit_calls.extend(fn.implicit)

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
            fi.star_imports.append(import_base(stmt, fi))
        for local, target in import_bindings(stmt, fi):
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
            metaclass=next((conv(k.value) for k in node.keywords if k.arg == "metaclass"), None),
        )
        fi.classes.append(ci)
        outer_scope, LAMBDAS.scope = LAMBDAS.scope, qn
        try:
            self._class_body(node.body, ci, type_checking)
        finally:
            LAMBDAS.scope = outer_scope
        return ci

    def _class_body(self, body, ci: ClassInfo, type_checking: bool) -> None:
        qn = ci.qualname
        for stmt in body:
            t = type(stmt)
            if t in (ast.FunctionDef, ast.AsyncFunctionDef):
                mqn = f"{qn}.{stmt.name}"
                ci.methods[stmt.name] = mqn
                self._function(stmt, mqn, qn, None, type_checking)
                self.decorations(stmt, mqn)
            elif t is ast.ClassDef:
                self._class(stmt, f"{qn}.{stmt.name}", None, type_checking)
                self.decorations(stmt, f"{qn}.{stmt.name}")
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
            name=node.name if type(node) is not _Lambda else qn.rpartition(".")[2],
            module=fi.module,
            path=fi.path,
            class_qualname=class_qn,
            parent_function=parent_fn,
            line=node.lineno,
            end_line=getattr(node, "end_lineno", node.lineno) or node.lineno,
            column=self.cols.col(node.lineno, node.col_offset),
            params=params,
            decorators=[conv(d) for d in getattr(node, "decorator_list", ())],
            is_async=isinstance(node, ast.AsyncFunctionDef),
            returns_annotation=conv(node.returns) if getattr(node, "returns", None) else None,
            under_type_checking=type_checking,
        )
        fi.functions.append(f)
        body = FunctionBodyIndexer(self, f)
        outer_scope, LAMBDAS.scope = LAMBDAS.scope, f"{qn}.<locals>"
        try:
            if type(node) is _Lambda:
                body.returns.append(body.expr(node.body, (), False, node.lineno) or conv(node.body))
            else:
                body.block(node.body, (), False)
        finally:
            LAMBDAS.scope = outer_scope
        f.assigns = body.assigns
        f.calls = body.calls
        f.implicit_calls = marshal.dumps(body.implicit) if body.implicit else []  # type: ignore[assignment]  # unpacked on first read
        f.returns = body.returns
        f.global_names = tuple(body.global_names)
        f.iterated = body.iterated()
        f.return_kinds = tuple(body.return_kinds)
        f.refusals = tuple(body.refusals)
        return f


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
    LAMBDAS.reset()
    LAMBDAS.scope = module
    try:
        ix.module(tree)
    except RecursionError:
        fi.error = ("RecursionError: expression nesting too deep to analyse", 1, 0)
        return fi
    finally:
        LAMBDAS.reset()
    fi.module_implicit_calls = [CallSite(*t) for t in fi.module_implicit_calls]
    for f in fi.functions:
        f.calls.sort(key=lambda c: (c.line, c.column))  # building, not reading
    fi.module_calls.sort(key=lambda c: (c.line, c.column))
    fi.scans = scan_keys(fi)
    return fi


def parse_function(lines: list[str], f: FunctionInfo) -> tuple[Any, int, str] | None:
    """Function ``f``'s own ``def`` parsed again from its lines of the file
    (``lines``, with line ends): ``(node, shift, text)``, where a line ``n`` of
    the node is line ``n + shift`` of the file and ``text`` is what was parsed;
    None if it does not parse to that function.

    An indented body keeps its indentation under an ``if 1:`` line, so
    columns stay the file's (in UTF-8 bytes, as ``ast`` counts them) and only
    line numbers shift. The index keeps no statement structure; the few
    questions that need it (where a call sits among the statements, what runs
    between two points) parse one function, not the file.
    """
    segment = "".join(lines[f.line - 1 : f.end_line])
    nested = segment[:1].isspace()  # a method or nested function: keep its indentation under `if 1:`
    text = "if 1:\n" + segment if nested else segment
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if nested:
        node = tree.body[0].body[0] if tree.body and isinstance(tree.body[0], ast.If) and tree.body[0].body else None
    else:
        node = tree.body[0] if tree.body else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name != f.name:
        return None
    return node, f.line - (2 if nested else 1), text


def function_reads(lines: list[str], f: FunctionInfo, watch: frozenset) -> list:
    """Reads of the ``watch`` names in function ``f`` (and functions nested in
    it), parsing only its own lines of the file (``lines``, with line ends):
    the same tuples as :attr:`FileIndex.reads`, in the file's coordinates
    (see :func:`parse_function`). Much cheaper than indexing the whole file
    again when a few hot functions are all that need reading.
    """
    parsed = parse_function(lines, f)
    if parsed is None:
        return []
    node, shift, text = parsed
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
        FunctionBodyIndexer(ix, stub).block(node.body, (), False)
    except RecursionError:
        return []
    return [
        (qn, e, line + shift, col, end_line + shift, end_col, guard, in_loop, stmt_line + shift, *rest)
        for qn, e, line, col, end_line, end_col, guard, in_loop, stmt_line, *rest in fi.reads
    ]


def _null_byte_position(source: str) -> tuple[int, int]:
    nul = source.find("\0")
    if nul < 0:
        return 1, 0
    return source.count("\n", 0, nul) + 1, nul - (source.rfind("\n", 0, nul) + 1)


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
