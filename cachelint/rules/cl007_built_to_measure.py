"""CL007: a whole container or object built on a hot path to take only its length, one element or one attribute."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..facts.properties import hot_property_reads, is_plain_property
from ..fixes.hotcalls import hot_route
from ..index.body import COPIES
from ..index.expr import dotted, render
from ..index.records import CallSite, FunctionInfo
from ..model import Finding, Span
from ..semantic.idioms import never_runs
from ..semantic.values import GlobalRoot
from .base import Example, Rule

if TYPE_CHECKING:
    from ..facts.analysis import Analysis
    from ..semantic.program import FunctionContext, Program

_ROOTS = ({"pattern": "*.Runner.execute_model", "kind": "per-step"},)


# what follows a property read in the source: one attribute (not a call), a constant index
_ATTR_AFTER = re.compile(r"\s*\.\s*([A-Za-z_]\w*)\b(?!\s*\()")
_INDEX_AFTER = re.compile(r"\s*\[\s*-?\d+\s*\]")
_LEN_BEFORE = re.compile(r"\blen\(\s*$")


class BuiltToMeasure(Rule):
    """## What it does
    Finds a hot function that calls a function of the tree (or reads a
    ``@property``) which builds a whole new container or object on each
    call, only to take a small part of it:

    - its length: ``len(seq.get_token_ids())`` where ``get_token_ids``
      returns ``list(...)`` of the stored ids;
    - one element: ``self.get_seqs()[0]`` where ``get_seqs`` returns
      ``list(self.seqs.values())``;
    - one attribute of a new object: ``len(self.batch.metadata.params)``
      where the ``metadata`` property constructs a ``Metadata`` (copying
      tensors to build it) on every read.

    The builder counts when every ``return`` of it builds the value: a copy
    of a collection (``list``, ``tuple``, ``sorted``, ``set``, ``frozenset``,
    ``dict`` of something) or an instance of a class of the tree. A memoized
    builder (``functools.cache``) and a builder whose value is taken whole
    are not reported.

    ## Why is this bad?
    The caller pays for copying every element (or for every step of the
    construction) and keeps one number or one part. In a scheduler that asks
    each running request for its first sequence on every step, the copies
    add up with the number of requests; a length or first-element accessor,
    or the attribute the builder reads from, gives the same answer for the
    price of a lookup. vLLM's V0 sequence group and its block manager were
    fixed upstream exactly so.

    ## Example
    ```python
    class Group:
        def seqs(self) -> list:
            return list(self.by_id.values())

        def first(self):
            return self.seqs()[0]
    ```
    Use instead:
    ```python
    class Group:
        def first(self):
            return next(iter(self.by_id.values()))
    ```

    ## Fix safety
    No automatic fix: the cheaper spelling is an accessor the builder's
    class should offer (a length, the first element, the attribute it reads
    from), which only its author can name.

    ## Fix availability
    Never.
    """

    code = "CL007"
    name = "built-to-measure"
    summary = "A whole container or object built on a hot path to take only its length, one element or one attribute"
    fix_availability = "never"
    default_severity = "warning"
    reads = ("hot", "program", "estimates")
    needs_hot_paths = True

    VALID = [
        # a builder handed one element builds a one-element list
        Example(
            """
class Tables:
    def __init__(self, table: dict):
        self.table = table

    def rows(self, keys: list) -> list:
        return [self.table[k] for k in keys]

class Runner:
    def __init__(self, tables: Tables):
        self.tables = tables

    def execute_model(self, key):
        return self.tables.rows([key])[0]
""",
            hot_roots=_ROOTS,
        ),
        # one argument for the builder's *args: a one-element list
        Example(
            """
class Workspace:
    def __init__(self, buf: list):
        self.buf = buf

    def views(self, *shapes) -> list:
        return [self.buf[:n] for n in shapes]

class Runner:
    def __init__(self, ws: Workspace):
        self.ws = ws

    def execute_model(self, n):
        return self.ws.views(n)[0]
""",
            hot_roots=_ROOTS,
        ),
        # the copy is used whole
        Example(
            """
class Group:
    def __init__(self, by_id: dict):
        self.by_id = by_id

    def seqs(self) -> list:
        return list(self.by_id.values())

class Runner:
    def __init__(self, group: Group):
        self.group = group

    def execute_model(self, batch):
        return [s for s in self.group.seqs()], batch
""",
            hot_roots=_ROOTS,
        ),
        # a builder that returns a stored list sometimes is no copy every time
        Example(
            """
class Group:
    def __init__(self, by_id: dict, first: list):
        self.by_id = by_id
        self.first = first

    def seqs(self, fresh: bool) -> list:
        if not fresh:
            return self.first
        return list(self.by_id.values())

class Runner:
    def __init__(self, group: Group):
        self.group = group

    def execute_model(self, batch):
        return len(self.group.seqs(batch)), batch
""",
            hot_roots=_ROOTS,
        ),
    ]

    INVALID = [
        # a new list to take one element, and again to take its length
        Example(
            """
class Group:
    def __init__(self, by_id: dict):
        self.by_id = by_id

    def seqs(self) -> list:
        return list(self.by_id.values())

class Runner:
    def __init__(self, group: Group):
        self.group = group

    def execute_model(self, batch):
        head = self.group.seqs()[0]
        return head, len(self.group.seqs())
""",
            expect=(("example.py", 13), ("example.py", 14)),
            applicability=(None, None),
            message_contains=("builds a new list", "`Group.seqs`"),
            hot_roots=_ROOTS,
        ),
        # a property that constructs an object, read for one attribute's length
        Example(
            """
class Metadata:
    def __init__(self, lens, params):
        self.lens = list(lens)
        self.params = params

class Batch:
    def __init__(self, lens: list, params: list):
        self._lens = lens
        self._params = params

    @property
    def metadata(self) -> Metadata:
        return Metadata(self._lens, self._params)

class Runner:
    def __init__(self, batch: Batch):
        self.batch = batch

    def execute_model(self, step):
        return len(self.batch.metadata.params), step
""",
            expect=(("example.py", 20),),
            applicability=(None,),
            message_contains=("builds a new `Metadata`", "to read its `params`"),
            hot_roots=_ROOTS,
        ),
    ]

    def check(self, analysis: Analysis) -> Iterable[Finding]:
        hot = analysis.hot
        p = analysis.program
        # properties whose getter builds a new collection or object on each read,
        # and their reads in hot functions (parsed again only where the names occur)
        builders: dict[str, list[FunctionInfo]] = {}
        for fn in p.functions.values():
            if is_plain_property(fn) and not fn.under_type_checking and builds(p, fn) is not None:
                builders.setdefault(fn.name, []).append(fn)
        reads: dict[str, list[CallSite]] = {}
        for g, c in hot_property_reads(p, hot, builders):
            if not c.in_handler:
                reads.setdefault(g.qualname, []).append(c)
        out: list[Finding] = []
        for qn in sorted(hot.chains):
            f = p.functions.get(qn)
            if f is None or f.under_type_checking:
                continue
            out.extend(_Function(self.code, analysis, f).findings(reads.get(qn, ()), builders))
        return out


def builds(p: Program, fn: FunctionInfo) -> tuple[str, bool] | None:
    """What every ``return`` of ``fn`` builds (``"a new list"``), and
    whether it is an object of the tree (else a collection); None when
    some return does not build one, or ``fn`` is memoized."""
    if not fn.returns or p.is_cached(fn) or fn.is_async or len(fn.return_kinds) != len(fn.returns):
        return None
    ctx = p.context(fn, fn.class_qualname)
    kinds: set[str] = set()
    obj = False
    for r, k in zip(fn.returns, fn.return_kinds):
        if k in COPIES:  # a comprehension, a copy, both branches of a conditional
            kinds.add(f"a new {'list' if k == 'sorted' else k}")
            continue
        if k == "concat" and _returns_list(fn):  # `return self.prompt_ids + self.output_ids`
            kinds.add("a new list")
            continue
        if k != "call" or r[0] != "call":
            return None
        v = p.canon(r[1], ctx)
        if v is None or len(v) != 1 or not isinstance(v[0], GlobalRoot):
            return None
        qn = v[0].qualname
        if qn.startswith("builtins.") and qn[9:] in COPIES and r[2]:  # not a copy of nothing (`list()`)
            kinds.add(f"a new {'list' if qn[9:] == 'sorted' else qn[9:]}")
        elif qn in p.classes:
            kinds.add(f"a new `{qn.rpartition('.')[2]}`")
            obj = True
        else:
            return None
    if len(kinds) != 1:
        return None
    return kinds.pop(), obj


def _returns_list(fn: FunctionInfo) -> bool:
    """``fn`` is annotated to return a list (``-> list[int]``, ``-> List[int]``)."""
    ann = fn.returns_annotation
    if ann is not None and ann[0] == "sub":
        ann = ann[1]
    d = dotted(ann) if ann is not None else None
    return d is not None and d.rpartition(".")[2] in ("list", "List")


class _Function:
    """The findings of one hot function, from its index alone."""

    def __init__(self, code: str, analysis: Analysis, f: FunctionInfo) -> None:
        self.code = code
        self.a = analysis
        self.p: Program = analysis.program
        self.f = f
        self._ctx: FunctionContext | None = None

    @property
    def ctx(self) -> FunctionContext:
        if self._ctx is None:
            self._ctx = self.p.context(self.f)
        return self._ctx

    def findings(self, reads=(), builders: dict | None = None) -> list[Finding]:
        out: list[Finding] = []
        seen: set = set()
        f = self.f
        for c in reads:
            # x.prop.attr, x.prop[0], len(x.prop)
            found = self._read(c, builders or {})
            if found is not None and (found.line, found.column) not in seen:
                seen.add((found.line, found.column))
                out.append(found)
        for c in f.calls:
            # len(builder(...))
            if c.func != ("name", "len") or len(c.args) != 1 or c.kwargs or c.in_handler or never_runs(c):
                continue
            if self.p.canon(c.func, self.ctx) != (GlobalRoot("builtins.len"),):
                continue
            found = self._measured(c, c.args[0], "to take its length")
            if found is not None and (found.line, found.column) not in seen:
                seen.add((found.line, found.column))
                out.append(found)
        for c in f.implicit_calls:
            # builder(...)[0]
            if c.func[0] != "attr" or c.func[2] != "__getitem__" or len(c.args) != 1 or c.args[0][0] != "const":
                continue
            if c.in_handler or never_runs(c) or c.func[1][0] != "call":
                continue
            found = self._measured(c, c.func[1], "to take one element of it")
            if found is not None and (found.line, found.column) not in seen:
                seen.add((found.line, found.column))
                out.append(found)
        return out

    def _measured(self, c: CallSite, e, what: str) -> Finding | None:
        """A finding when ``e`` (measured or indexed by ``c``) is a call of a
        builder, or an attribute of an object a property builds."""
        if e[0] != "call":
            return None  # a property read: see _read
        by_call = self._built_by_call(e)
        if by_call is None:
            return None
        return self._finding(c, e, by_call[0], by_call[1], what)

    def _read(self, c: CallSite, builders: dict) -> Finding | None:
        """A read of a building property followed, in the source, by one
        attribute (``.params``, not a method call), a constant subscript, or
        the end of a ``len(...)``."""
        wanted = builders.get(c.func[2], ())
        getter = self._property(c.func)
        if getter is None or getter not in wanted:
            return None
        made = builds(self.p, getter)
        lines = self.p.source_lines(self.f.path)
        if made is None or lines is None or not 0 < c.end_line <= len(lines):
            return None
        after = lines[c.end_line - 1][c.end_column :]
        before = lines[c.line - 1][: c.column]
        m = _ATTR_AFTER.match(after)
        if made[1] and m is not None:
            return self._finding(c, c.func, getter, made[0], f"to read its `{m.group(1)}`")
        if made[1]:
            return None  # an object: only one attribute of it is a waste to build
        if _INDEX_AFTER.match(after):
            return self._finding(c, c.func, getter, made[0], "to take one element of it")
        if _LEN_BEFORE.search(before) and after.lstrip().startswith(")"):
            return self._finding(c, c.func, getter, made[0], "to take its length")
        return None

    def _built_by_call(self, e) -> tuple[FunctionInfo, str] | None:
        """The in-tree function a call expression calls and what it builds,
        when it builds a copy; not when it is handed a one-element list or
        tuple (``get_tables([seq])[0]``: the copy has that one element)."""
        if any(a[0] in ("list", "tuple") and len(a[1]) == 1 for a in e[2]):
            return None
        callee = self.p.canon(e[1], self.ctx)
        fn = self.p.callee_function(callee) if callee is not None else None
        if fn is None:
            return None
        before = [p for p in fn.params if p.kind == "pos"]
        if fn.class_qualname is not None and before and callee is not None and len(callee) > 1:
            before = before[1:]  # a method called on an object: `self` is not passed
        if any(p.kind == "vararg" for p in fn.params) and (("?",) in e[2] or len(e[2]) < len(before) + 2):
            # `get_views(*shapes)` given one shape builds a one-element list; given
            # `*shapes`, as many as the caller has, which may be one
            return None
        made = builds(self.p, fn)
        if made is None or made[1]:
            return None  # an object is measured by its attributes, not by len() or [0]
        return fn, made[0]

    def _property(self, e) -> FunctionInfo | None:
        """The ``@property`` getter attribute read ``e`` runs, through its receiver's classes."""
        for cls in self.p.expr_classes(e[1], self.ctx):
            g = self.p.lookup_method(cls, e[2])
            if g is not None and is_plain_property(g):
                return g
        return None

    def _finding(self, c: CallSite, built, fn: FunctionInfo, made: str, what: str) -> Finding:
        f = self.f
        hot = self.a.hot
        chain = hot.chain(f.qualname)
        kind = hot.kind(f.qualname, "hot")
        short = ".".join(fn.qualname.split(".")[-2:]) if fn.class_qualname else fn.name
        owner = f"`{fn.class_qualname.rpartition('.')[2]}`" if fn.class_qualname else f"`{fn.name}`'s module"
        shown = render(built)
        # the builder's own call (or property read) at the site, for its estimate
        inner = next(
            (x for x in f.calls if ("call", x.func, x.args, x.kwargs) == built and x.line == c.line),
            None,
        )
        if inner is None:
            inner = CallSite(
                built, (), (), c.line, c.column, c.end_line, c.end_column, c.guard, c.in_loop, c.stmt_line, is_read=True
            )
        estimate = self.a.estimates.site(f, inner, repeats=1.0 if not c.in_loop else None)
        note = f"no fix: the cheaper spelling is an accessor on {owner}"
        msg = (
            f"`{shown}` builds {made} (`{short}` builds it on each call) {what}; on a {kind} path, reached via "
            f"{hot_route(chain)}; {note}"
        )
        return Finding(
            code=self.code,
            path=f.path,
            span=Span(c.line, c.column, c.end_line, c.end_column),
            message=msg,
            function=f.qualname,
            hot_path=chain,
            fix=None,
            notes=(note,),
            data={"builder": fn.qualname, "built": made, "hot_kind": kind, "estimate": estimate.to_data()},
        )
