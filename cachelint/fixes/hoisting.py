"""Fixes for expensive calls that no attribute caches yet (CL002).

For each expensive call on a hot path, three rewrites are considered, each
with a safety class computed from the program:

``hoist to __init__``
    In a method, a call whose every input is bound once at construction
    (``self`` attributes the constructor binds once and nothing else assigns,
    constructor parameters, module constants) is evaluated once at the end of
    the class's own ``__init__`` into ``self._<name>``, and the use reads it.
    Safe only when the callee is pure, no subclass or other method can
    reassign an input, ``__init__`` has no early ``return``, every subclass
    constructor calls ``super().__init__``, and ``__init__`` does not itself
    reach the method (which would read the attribute before it exists).

``hoist to a local``
    The same call (same callee, same argument values) evaluated more than
    once in one function, with inputs the function does not change: compute
    it once into a local before the first use, in the innermost block that
    holds every use. Safe when the callee is pure and the first use runs
    whenever any of them does (so the hoisted call runs on no new path).

``memoize``
    A module-level function whose result depends only on hashable,
    process-invariant parameters gets ``@functools.cache`` (and ``import
    functools``). Not inside code compiled by ``torch.compile`` (Dynamo
    warns on ``lru_cache``-wrapped calls and graph-breaks on them): there the
    value goes to a module constant, or to an ``__init__`` attribute. Not when
    the value depends on mutable context (the environment, the filesystem,
    the current device, a forward context): the message says which.

The preferred fix is the first *safe* one in the order hoist to
``__init__``, memoize, hoist to a local, module constant; if none is safe,
the first unsafe one, with the reasons.
"""

from __future__ import annotations

import builtins
import re
from collections import deque
from dataclasses import dataclass, field

from ..facts.catalog import PURE_BUILTINS
from ..facts.cost import Cost, StateKind
from ..files import read_source, split_lines
from ..index.expr import dotted
from ..index.records import CallSite, FunctionInfo
from ..model import Applicability, Edit, EditKind, Fix, Span
from ..semantic.callgraph import HotPaths, resolve_call
from ..semantic.idioms import is_cached_function
from ..semantic.program import CONSTRUCTORS, FunctionContext, Program
from ..semantic.values import GlobalRoot

_BUILTINS = frozenset(dir(builtins))
# how many hot calls of a function a parameter's value is followed through
CALLERS_FOLLOWED = 24
# annotations of hashable values that do not change during a process
_HASHABLE = frozenset(
    [
        "int",
        "str",
        "bool",
        "float",
        "bytes",
        "complex",
        "None",
        "NoneType",
        "tuple",
        "Tuple",
        "frozenset",
        "FrozenSet",
        "Literal",
        "Optional",
        "Union",
        "dtype",
        "device",
        "Enum",
        "IntEnum",
        "StrEnum",
    ]
)
# returned values callers cannot mutate (a cached return is shared by all callers)
_IMMUTABLE = _HASHABLE
# catalog kinds whose value follows mutable process state
_CONTEXT_KINDS = {
    "environment": "the environment (os.environ can change at run time)",
    "io": "the filesystem or the network",
    "context-lookup": "a context set around each forward or model construction",
    "per-call-context": "the context of each call (the current stream, device or forward)",
    "distributed": "process groups, which are re-created on reconfiguration",
    "device": "the current device or stream",
}


_MUTATION_AFTER = re.compile(
    r"\s*(?:\.\s*(?:append|extend|update|pop|popitem|insert|remove|clear|setdefault|add|discard|sort|reverse|"
    r"__setitem__|__delitem__)\s*\(|\[[^\]]*\]\s*(?:[-+*/%|&^@]|//|<<|>>|\*\*)?=(?!=)|(?:[-+*/%|&^@]|//|<<|>>|\*\*)=)"
)
_DEL_BEFORE = re.compile(r"\bdel\s+$")


@dataclass
class Site:
    """One expensive call on a hot path, as CL002 reports it."""

    function: FunctionInfo
    call: CallSite
    cost: Cost
    callee: tuple | None
    key: tuple | None  # (callee, args) canonical values, None if not known
    fix: Fix | None = None
    notes: list = field(default_factory=list)
    repeated: str = ""  # why this is repeated work
    invariant: bool = False  # same inputs on every run (else: repeated within one run only)
    varies: str | None = None  # why the inputs change between runs (not reported)


def _names_in(e, out: list) -> None:
    """Every name an indexed expression reads (``"?"`` for a part not indexed)."""
    if not isinstance(e, tuple) or not e:
        return
    k = e[0]
    if k == "name":
        out.append(e[1])
    elif k == "attr":
        _names_in(e[1], out)
    elif k == "call":
        _names_in(e[1], out)
        for a in e[2]:
            _names_in(a, out)
        for _kw, v in e[3]:
            _names_in(v, out)
    elif k == "sub":
        _names_in(e[1], out)
        _names_in(e[2], out)
    elif k in ("tuple", "and", "or"):
        for x in e[1]:
            _names_in(x, out)
    elif k == "not":
        _names_in(e[1], out)
    elif k == "cmp":
        _names_in(e[2], out)
        for x in e[3]:
            _names_in(x, out)
    elif k != "const":
        out.append("?")


def _call_expr(c: CallSite) -> tuple:
    """The expression evaluated at the site: the call, or the property read."""
    if c.is_read:
        return c.func
    return ("call", c.func, c.args, c.kwargs)


def _inputs_expr(c: CallSite) -> tuple:
    """What the site's value depends on, besides the callee's own body: the
    call with its arguments, or a property read's receiver (the property's
    name is not an input; its getter's reads are checked separately)."""
    if c.is_read:
        return c.func[1]
    return ("call", c.func, c.args, c.kwargs)


def _attr_chains(e, root: str, out: list) -> None:
    """Attribute chains ``root.a.b`` in an expression, as (a, b) tuples."""
    if not isinstance(e, tuple) or not e:
        return
    if e[0] == "attr":
        d = dotted(e)
        if d is not None and d.split(".")[0] == root:
            out.append(tuple(d.split(".")[1:]))
            return
    for part in e[1:] if isinstance(e[0], str) else e:  # a node, or a tuple of nodes (arguments)
        if isinstance(part, tuple):
            _attr_chains(part, root, out)


def _base_name(c: CallSite) -> str:
    d = c.func
    last = d[2] if d[0] == "attr" else d[1] if d[0] == "name" else "value"
    last = last.lstrip("_")
    for prefix in ("get_", "compute_", "calc_", "make_", "read_", "load_"):
        if last.startswith(prefix) and len(last) > len(prefix):
            last = last[len(prefix) :]
            break
    last = re.sub(r"[^0-9a-zA-Z_]", "_", last) or "value"
    if last[0].isdigit():
        last = "v_" + last
    return last.lower()


class HoistPlanner:
    """Computes the fix (and its safety) of every CL002 site."""

    def __init__(self, analysis, hot: HotPaths) -> None:
        self.a = analysis
        self.p: Program = analysis.program
        self.hot = hot
        self._sources: dict[str, list[str]] = {}
        self._compiled: dict | None = None
        self._param_memo: dict = {}
        self._constants: dict = {}  # path -> call text -> module constant name

    # ----- source text ------------------------------------------------------------
    def lines(self, path: str) -> list[str]:
        """The file's lines (with their ends), read once per run; [] if unreadable."""
        lines = self._sources.get(path)
        if lines is None:
            try:
                lines = split_lines(read_source(path))
            except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
                lines = []
            self._sources[path] = lines
        return lines

    def text(self, path: str, line: int, col: int, end_line: int, end_col: int) -> str | None:
        lines = self.lines(path)
        if not lines or end_line > len(lines):
            return None
        if line == end_line:
            return lines[line - 1][col:end_col]
        parts = [lines[line - 1][col:]] + lines[line : end_line - 1] + [lines[end_line - 1][:end_col]]
        return "".join(parts)

    def call_text(self, f: FunctionInfo, c: CallSite) -> str | None:
        t = self.text(f.path, c.line, c.column, c.end_line, c.end_column)
        if t is None or "\\\n" in t or "#" in t:
            return None  # a backslash continuation or a comment would not survive the move
        return t

    def mutated_at(self, f: FunctionInfo, c: CallSite) -> bool:
        """The use mutates the value in place (``x.append(...)``, ``x[k] = v``,
        ``x += ...``, ``del x[k]``): once computed once and shared, the other
        uses (or the next run) would see the change."""
        lines = self.lines(f.path)
        if c.end_line > len(lines):
            return True
        after = lines[c.end_line - 1][c.end_column :]
        before = lines[c.line - 1][: c.column]
        return _MUTATION_AFTER.match(after) is not None or _DEL_BEFORE.search(before) is not None

    # ----- invariance ------------------------------------------------------------------
    def varies(self, f: FunctionInfo, e, depth: int = 0) -> str | None:
        """Why expression ``e`` in ``f`` can differ between runs of ``f``, or None.

        Constants, module constants, attributes that no hot code assigns
        (bound at construction or start-up, on an object not built on a hot
        path), locals bound
        once from invariant values, and parameters that every hot caller
        passes an invariant value for are invariant; so is a pure call of
        invariant inputs. Anything else may vary, and a call on it is then
        work that the site needs (a new value), not repeated work.
        """
        if depth > 6 or e is None:
            return "too deep to follow"
        k = e[0]
        if k == "const":
            return None
        if k == "name":
            return self._name_varies(f, e[1], depth)
        if k == "attr":
            d = dotted(e)
            if d is not None and f.self_name and d.split(".")[0] == f.self_name and f.class_qualname:
                why = self._self_varies(f)
                if why is not None:
                    return why
                return self._chain_varies(f.class_qualname, tuple(d.split(".")[1:]))
            why = self.varies(f, e[1], depth + 1)
            if why is not None:
                return why
            ws = self._hot_writers(self.p.writers(e[2]))
            if ws and not (d is not None and self._is_module_path(f, d)):
                return f"`.{e[2]}` is assigned in `{ws[0].qualname}`, which runs on a hot path"
            return None
        if k == "call":
            for part in (e[1], *e[2], *(v for _kw, v in e[3])):
                why = self.varies(f, part, depth + 1)
                if why is not None:
                    return why
            ctx = self.p.context(f)
            callee = self.p.canon(e[1], ctx)
            names = self.p.callee_names(callee, dotted(e[1]))
            fn = self.p.callee_function(callee) if callee is not None else None
            if fn is not None and is_cached_function(fn):
                return None
            if callee is not None and len(callee) == 1 and isinstance(callee[0], GlobalRoot):
                qn = callee[0].qualname
                if qn.startswith("builtins.") and qn[9:] in PURE_BUILTINS:
                    return None
            if not self.a.cost.purity(names, fn).pure:
                return f"`{dotted(e[1]) or '...'}(...)` may return a different value each time"
            return None
        if k in ("tuple", "and", "or"):
            for x in e[1]:
                why = self.varies(f, x, depth + 1)
                if why is not None:
                    return why
            return None
        if k == "not":
            return self.varies(f, e[1], depth + 1)
        if k == "sub":
            return self.varies(f, e[1], depth + 1) or self.varies(f, e[2], depth + 1)
        if k == "cmp":
            for x in (e[2], *e[3]):
                why = self.varies(f, x, depth + 1)
                if why is not None:
                    return why
            return None
        return "an expression cachelint does not follow"

    def _value_discarded(self, f: FunctionInfo, c: CallSite) -> bool:
        """The call is a whole expression statement: ``x.sync()`` on its own line."""
        if c.assigned_to is not None or c.line != c.stmt_line:
            return False
        lines = self.lines(f.path)
        if c.end_line > len(lines):
            return False
        before = lines[c.line - 1][: c.column]
        after = lines[c.end_line - 1][c.end_column :].strip()
        return before.strip() == "" and (after == "" or after.startswith("#") or after == ";")

    def inputs_vary(self, f: FunctionInfo, c: CallSite) -> str | None:
        """Why the callee or an argument of call ``c`` can change between runs."""
        parts = (c.func[1],) if c.is_read else (c.func, *c.args, *(v for _kw, v in c.kwargs))
        for part in parts:
            why = self.varies(f, part)
            if why is not None:
                return why
        return None

    def _is_module_path(self, f: FunctionInfo, d: str) -> bool:
        fi = self.p.modules_by_path.get(f.path)
        head = d.split(".")[0]
        if fi is None:
            return False
        r = self.p.resolve_name(fi.module, head)
        return r is not None and (r in self.p.modules or head in fi.module_imports)

    def _self_varies(self, f: FunctionInfo) -> str | None:
        ci = self.p.classes.get(f.class_qualname or "")
        if ci is None:
            return None
        for k in self.p.mro(ci.qualname):
            c = self.p.classes.get(k)
            if c is not None and "__init__" in c.methods:
                if self.hot.is_hot(c.methods["__init__"]):
                    return f"a new `{ci.name}` is constructed on a hot path"
                break
        return None

    def _chain_varies(self, cls: str, chain: tuple) -> str | None:
        p = self.p
        if not chain:
            return None
        first = chain[0]
        m = p.lookup_method(cls, first)
        if m is not None:
            deco = [(dotted(d) or "").split(".")[-1] for d in m.decorators]
            if "property" in deco:
                return f"`self.{first}` is a property, recomputed on each read"
            return None
        for k in [cls, *p.subclasses(cls)]:
            ws = self._hot_writers(p.self_attr_writers(k, first))
            if ws:
                return f"`self.{first}` is assigned in `{ws[0].qualname}`, which runs on a hot path"
        for attr in chain[1:]:
            ws = self._hot_writers(p.writers(attr))
            if ws:
                return f"`.{attr}` is assigned in `{ws[0].qualname}`, which runs on a hot path"
        return None

    def _hot_writers(self, writers: list) -> list:
        """Writers that run on a hot path: between two runs of a hot site, only
        they change what it reads (start-up code such as ``load_model`` runs
        before). Constructors count when the object is built on a hot path."""
        return [w for w, _a in writers if self.hot.is_hot(w.qualname)]

    def _name_varies(self, f: FunctionInfo, n: str, depth: int) -> str | None:
        p = self.p
        ctx = p.context(f)
        if n == f.self_name and f.class_qualname:
            return self._self_varies(f)
        if n in ctx.params:
            if n in ctx.locals:
                return f"parameter `{n}` is rebound"
            return self._param_varies(f, n, depth)
        if n in ctx.locals:
            assigns = ctx.locals[n]
            if len(assigns) != 1:
                return f"`{n}` is bound more than once"
            a = assigns[0]
            if a.kind in ("import", "def"):
                return None
            if a.kind not in ("assign", "annassign", "walrus") or a.in_loop:
                return f"`{n}` changes on each iteration" if a.in_loop else f"`{n}` is bound by `{a.kind}`"
            return self.varies(f, a.value, depth + 1)
        if ctx.parent is not None:
            c = ctx.parent
            parent: FunctionContext | None = c
            while parent is not None:
                if n in parent.locals or n in parent.params:
                    return f"`{n}` comes from the enclosing function"
                parent = parent.parent
        fi = p.modules_by_path.get(f.path)
        if fi is None:
            return "unknown module"
        if n in fi.globals and fi.globals[n] is None and n not in fi.defs:
            return f"module variable `{n}` is rebound"
        if n in fi.globals:
            for g in p.functions.values():
                if g.module == fi.module and n in g.global_names and any(a.target == ("name", n) for a in g.assigns):
                    return f"module variable `{n}` is assigned in `{g.qualname}`"
        if p.resolve_name(fi.module, n) is None:
            return f"`{n}` is not bound where cachelint can see it"
        return None

    def _param_varies(self, f: FunctionInfo, n: str, depth: int) -> str | None:
        key = (f.qualname, n)
        memo = self._param_memo
        if key in memo:
            return memo[key]
        memo[key] = f"parameter `{n}` is being analysed"  # recursion guard: assume it varies
        chain = self.hot.chain(f.qualname)
        callers = self.hot.callers(f.qualname, CALLERS_FOLLOWED)
        if chain is not None and len(chain) == 1:
            result = f"`{n}` is an argument of the hot root `{f.name}`, new on each call"
        elif not callers:
            result = f"`{f.name}` is called where cachelint cannot see its `{n}` argument"
        else:
            result = None
            params = list(f.params)
            for g, c in callers:
                arg = _argument_for(f, params, c, n)
                if arg is None:
                    result = f"a call of `{f.name}` (in `{g.qualname}`) passes `{n}` in a way cachelint does not follow"
                    break
                why = self.varies(g, arg, depth + 1)
                if why is not None:
                    result = f"`{g.name}` passes `{n}`, and {why}"
                    break
        memo[key] = result
        return result

    # ----- torch.compile ------------------------------------------------------------------
    def compiled(self) -> dict:
        """Functions compiled by torch.compile, with the compiled root reaching them."""
        if self._compiled is not None:
            return self._compiled
        p = self.p
        roots: list[str] = []
        for f in p.functions.values():
            if any(_is_compile_decorator(d) for d in f.decorators):
                roots.append(f.qualname)
        for c in p.classes.values():
            if any(
                (dotted(d[1] if d[0] == "call" else d) or "").split(".")[-1] == "support_torch_compile"
                for d in c.decorators
            ):
                for sub in [c.qualname, *p.subclasses(c.qualname)]:
                    m = p.lookup_method(sub, "forward")
                    if m is not None:
                        roots.append(m.qualname)
        for fi in p.indexes:
            for _name, val in fi.globals.items():
                if (
                    val is not None
                    and val[0] == "call"
                    and _is_compile_call(val[1])
                    and val[2]
                    and val[2][0][0] == "name"
                ):
                    qn = p.resolve_name(fi.module, val[2][0][1])
                    if qn in p.functions:
                        roots.append(qn)
        out: dict = {}
        queue: deque = deque()
        for r in roots:
            if r not in out:
                out[r] = r
                queue.append(r)
        while queue:
            qn = queue.popleft()
            f = p.functions[qn]
            for call in f.calls:
                t = resolve_call(p, f, call)
                if t is None or t.qualname in out or is_cached_function(t):
                    continue
                out[t.qualname] = out[qn]
                queue.append(t.qualname)
        self._compiled = out
        return out

    # ----- which sites are repeated work --------------------------------------------
    def select(self, sites: list[Site]) -> list[Site]:
        """The sites that redo work: inputs that do not change between runs,
        or the same call made more than once in one run of a function."""
        groups: dict[tuple, list[Site]] = {}
        for s in sites:
            if s.key is not None:
                groups.setdefault((s.function.qualname, s.key), []).append(s)
        out = []
        for s in sites:
            if not s.cost.pure and self._value_discarded(s.function, s.call):
                # `torch.cuda.synchronize()`, `traceback.print_exc()`: done for
                # the effect, which no hoist or cache can keep
                s.varies = "the call is made for its side effect; its value is discarded"
                continue
            why: str | None
            if s.cost.kind == "per-call-context":
                why = "its value is tied to the context of each call"
            else:
                why = self.inputs_vary(s.function, s.call)
            if why is None:
                s.repeated = "its inputs are the same on every run"
                s.invariant = True
                out.append(s)
                continue
            same = groups.get((s.function.qualname, s.key), []) if s.key is not None else []
            if len(same) > 1 and _on_one_path([x.call for x in same]):
                s.repeated = f"evaluated {len(same)} times with the same inputs in one run of `{s.function.name}`"
                out.append(s)
                continue
            s.varies = why
        return out

    # ----- planning ------------------------------------------------------------------
    def plan(self, sites: list[Site]) -> None:
        by_function: dict[str, list[Site]] = {}
        for s in sites:
            by_function.setdefault(s.function.qualname, []).append(s)
        init_names: dict[str, dict[str, str]] = {}  # class -> call text -> attribute
        for qn in sorted(by_function):
            group = by_function[qn]
            repeats: dict[tuple, list[Site]] = {}
            for s in group:
                if s.key is not None:
                    repeats.setdefault(s.key, []).append(s)
            for s in group:
                cands = []
                # a value that may change between runs can only be shared within one run
                init = self._hoist_init(s, init_names) if s.invariant else None
                if init is not None:
                    cands.append(init)
                memo = self._memoize(s) if s.invariant else None
                if memo is not None:
                    cands.append(memo)
                same = repeats.get(s.key, []) if s.key is not None else []
                if len(same) > 1:
                    local = self._hoist_local(s, same)
                    if local is not None:
                        cands.append(local)
                const = self._module_constant(s) if s.invariant else None
                if const is not None:
                    cands.append(const)
                safe = [x for x in cands if x.applicability is Applicability.SAFE]
                s.fix = safe[0] if safe else (cands[0] if cands else None)

    # hoist to __init__ ----------------------------------------------------------------
    def _hoist_init(self, s: Site, names: dict) -> Fix | None:
        p = self.p
        f, c = s.function, s.call
        cls = f.class_qualname
        if cls is None or f.self_name is None or f.name in CONSTRUCTORS or f.parent_function:
            return None
        ci = p.classes.get(cls)
        if ci is None or "__init__" not in ci.methods:
            s.notes.append(f"`{cls.rsplit('.', 1)[-1]}` defines no `__init__` to hoist the call into")
            return None
        init = p.functions.get(ci.methods["__init__"])
        if init is None or init.self_name != f.self_name:
            return None
        if self.hot.is_hot(init.qualname):
            s.notes.append(f"`{init.qualname}` itself runs on a hot path ({self.hot.kind(init.qualname)})")
            return None
        if not ci.qualname.startswith(ci.module + ".") or "<locals>" in ci.qualname:
            return None
        ctx = p.context(f)
        used: list[str] = []
        _names_in(_call_expr(c), used)
        fi = p.modules_by_path.get(f.path)
        for n in used:
            if n == f.self_name:
                continue
            if n == "?" or n in ctx.locals or n in ctx.params or fi is None or p.resolve_name(fi.module, n) is None:
                return None  # reads something of this call only (a local, a parameter)
        text = self.call_text(f, c)
        if text is None:
            return None
        reasons: list[str] = []
        relies: list[str] = []
        if not s.cost.pure:
            reasons.append(f"the callee is not known to be pure ({s.cost.pure_reason})")
        else:
            relies.append(f"callee: {s.cost.pure_reason}")
        chains: list = []
        _attr_chains(_inputs_expr(c), f.self_name, chains)
        self._check_chains(cls, chains, reasons, relies)
        self._check_globals(f, used, reasons)
        self._check_callee_reads(s, reasons)
        if self.mutated_at(f, c):
            reasons.append("this use changes the value in place, and every run would now share one object")
        if init.returns:
            # every `return` in a constructor returns None: any of them skips the appended statement
            reasons.append(f"`{init.qualname}` can return early, before the appended statement")
        if self._init_reaches(init, f):
            reasons.append(f"`{init.qualname}` reaches `{f.name}`, which would read the attribute before it is set")
        for sub in p.subclasses(cls):
            sc = p.classes.get(sub)
            if sc is not None and "__init__" in sc.methods:
                si = p.functions.get(sc.methods["__init__"])
                if si is not None and not _calls_super_init(si):
                    reasons.append(f"subclass `{sub}` has an `__init__` that does not call `super().__init__()`")
        per_class = names.setdefault(cls, {})
        attr = per_class.get(text)
        if attr is None:
            attr = self._fresh_attr(cls, "_" + _base_name(c), set(per_class.values()))
            per_class[text] = attr
        target = init.qualname[len(init.module) + 1 :]
        edits = (
            Edit(Span(c.line, c.column, c.end_line, c.end_column), f"{f.self_name}.{attr}"),
            Edit(
                Span(init.line, 0, init.line, 0),
                f"{f.self_name}.{attr} = {text}",
                kind=EditKind.APPEND_TO_FUNCTION,
                target=target,
            ),
        )
        return Fix(
            Applicability.UNSAFE if reasons else Applicability.SAFE,
            edits,
            message=f"Hoist to `__init__`: compute `{f.self_name}.{attr}` once at the end of `{target}` and read it here"
            + (f" (unsafe: {'; '.join(reasons)})" if reasons else ""),
            relies_on=tuple(relies + ["inputs: bound once at construction"]),
        )

    def _check_chains(self, cls: str, chains: list, reasons: list, relies: list) -> None:
        """Every ``self.a.b`` input must be bound once at construction and never reassigned."""
        p = self.p
        seen: set = set()
        for chain in chains:
            if not chain or chain in seen:
                continue
            seen.add(chain)
            first = chain[0]
            m = p.lookup_method(cls, first)
            if m is not None:
                deco = [(dotted(d) or "").split(".")[-1] for d in m.decorators]
                if "property" in deco:
                    reasons.append(f"`self.{first}` is a property, recomputed on each read")
                continue  # a method: the bound method of this instance
            classes = [cls, *p.subclasses(cls)]
            writers: list = []
            for k in classes:
                for w, a in p.self_attr_writers(k, first):
                    if (w.qualname, a.line) not in [(x.qualname, y.line) for x, y in writers]:
                        writers.append((w, a))
            outside = [(w, a) for w, a in writers if w.name not in CONSTRUCTORS]
            if outside:
                w, a = outside[0]
                reasons.append(f"`self.{first}` is also assigned in `{w.qualname}` (line {a.line})")
            elif not writers:
                if not _class_level(p, cls, first):
                    reasons.append(f"`self.{first}` is not bound in the constructor")
            else:
                own = set(p.mro(cls))
                mine = [a for w, a in writers if w.class_qualname in own]
                later = [w for w, a in writers if w.class_qualname not in own]
                if len(mine) > 1 or any(a.guard or a.in_loop for a in mine):
                    reasons.append(f"`self.{first}` is bound more than once, or conditionally, at construction")
                if later:
                    reasons.append(
                        f"subclass constructor `{later[0].qualname}` rebinds `self.{first}`, possibly after the hoisted value is computed"
                    )
            for attr in chain[1:]:
                ws = [(w, a) for w, a in p.writers(attr) if w.name not in CONSTRUCTORS]
                if ws:
                    w, a = ws[0]
                    reasons.append(f"`.{attr}` is assigned outside a constructor (`{w.qualname}`, line {a.line})")
                    break
        if chains and not reasons:
            relies.append(
                "inputs: " + ", ".join(f"`self.{'.'.join(ch)}`" for ch in sorted(seen)) + " bound once at construction"
            )

    def _self_reads(self, g: FunctionInfo, depth: int = 0, seen: set | None = None) -> set:
        """The attributes of its own object that method ``g`` reads, following
        the methods and properties of that object it calls or reads in turn."""
        p = self.p
        seen = set() if seen is None else seen
        if g.self_name is None or g.qualname in seen:
            return set()
        seen.add(g.qualname)
        chains: list = []
        for c in g.calls:
            _attr_chains(_call_expr(c), g.self_name, chains)
        for r in g.returns:
            _attr_chains(r, g.self_name, chains)
        for a in g.assigns:
            _attr_chains(a.value, g.self_name, chains)
        out: set = set()
        for attr in dict.fromkeys(ch[0] for ch in chains if ch):
            m = p.lookup_method(g.class_qualname, attr) if g.class_qualname else None
            if m is None:
                out.add(attr)
            elif depth < 3 and not is_cached_function(m):
                out |= self._self_reads(m, depth + 1, seen)
        return out

    def _check_callee_reads(self, s: Site, reasons: list) -> None:
        """An in-tree method's (or property getter's) own inputs: the attributes
        of its object it reads, through the methods and properties it uses."""
        p = self.p
        g = p.callee_function(s.callee) if s.callee is not None else None
        if g is None or g.self_name is None:
            return
        for attr in sorted(self._self_reads(g)):
            ws = [(w, a) for w, a in p.writers(attr) if w.name not in CONSTRUCTORS]
            if ws:
                w, a = ws[0]
                reasons.append(f"`{g.qualname}` reads `.{attr}`, which `{w.qualname}` assigns (line {a.line})")
                return

    def _check_globals(self, f: FunctionInfo, used: list, reasons: list) -> None:
        p = self.p
        fi = p.modules_by_path.get(f.path)
        if fi is None:
            return
        for n in dict.fromkeys(used):
            if n in fi.globals and fi.globals[n] is None and n not in fi.defs:
                reasons.append(f"module variable `{n}` is rebound")
            elif n in fi.globals and n not in fi.defs:
                for g in p.functions.values():
                    if (
                        g.module == fi.module
                        and n in g.global_names
                        and any(a.target == ("name", n) for a in g.assigns)
                    ):
                        reasons.append(f"module variable `{n}` is assigned in `{g.qualname}`")
                        break

    def _init_reaches(self, init: FunctionInfo, f: FunctionInfo) -> bool:
        p = self.p
        seen = {init.qualname}
        queue = deque([init])
        while queue:
            g = queue.popleft()
            for call in g.calls:
                t = resolve_call(p, g, call)
                if t is None:
                    continue
                if t.qualname == f.qualname or (t.name == f.name and t.class_qualname is not None):
                    return True
                if t.qualname not in seen and t.class_qualname is not None and len(seen) < 200:
                    seen.add(t.qualname)
                    queue.append(t)
        return False

    def _fresh_attr(self, cls: str, base: str, taken: set) -> str:
        p = self.p
        classes = [*p.mro(cls), *p.subclasses(cls)]

        def used(name: str) -> bool:
            if name in taken:
                return True
            for k in classes:
                ci = p.classes.get(k)
                if ci is not None and (name in ci.methods or name in ci.class_attrs or name in ci.fields):
                    return True
                if p.self_attr_writers(k, name):
                    return True
            return False

        name, i = base, 2
        while used(name):
            name, i = f"{base}_{i}", i + 1
        return name

    # hoist to a local -------------------------------------------------------------------
    def _hoist_local(self, s: Site, same: list[Site]) -> Fix | None:
        p = self.p
        f = s.function
        ctx = p.context(f)
        occ = sorted(same, key=lambda x: (x.call.line, x.call.column))
        first = occ[0].call
        used: list[str] = []
        _names_in(_call_expr(first), used)
        fi = p.modules_by_path.get(f.path)
        reasons: list[str] = []
        for n in dict.fromkeys(used):
            if n == "?":
                return None
            if n in ctx.params:
                continue
            if n in ctx.locals:
                assigns = ctx.locals[n]
                if len(assigns) != 1 or assigns[0].in_loop or assigns[0].line >= first.line:
                    return None  # rebound, or bound after the first use
                continue
            if (fi is None or p.resolve_name(fi.module, n) is None) and ctx.parent is None:
                return None  # e.g. a comprehension variable
        texts = {self.call_text(f, x.call) for x in occ}
        if None in texts or len(texts) != 1:
            return None  # spelled differently: the replacement must be the same expression
        text = texts.pop()
        assert text is not None  # None was ruled out above
        # the function must not change the inputs between the uses
        attrs: set = set()
        if f.self_name:
            chains: list = []
            _attr_chains(_inputs_expr(first), f.self_name, chains)
            attrs = {a for ch in chains for a in ch}
        g = self.p.callee_function(s.callee) if s.callee is not None else None
        if g is not None:
            attrs |= self._self_reads(g)  # what the callee (or getter) reads of its object
        for a in f.assigns:
            if a.target[0] == "attr" and a.target[2] in attrs:
                reasons.append(f"`{f.name}` assigns `.{a.target[2]}` (line {a.line})")
                break
        if not s.cost.pure:
            reasons.append(f"the callee is not known to be pure ({s.cost.pure_reason})")
        if any(self.mutated_at(f, x.call) for x in occ):
            reasons.append("a use changes the value in place, and the uses would now share one object")
        if not _on_one_path([x.call for x in occ]):
            reasons.append(
                "no use runs on every path through the hoisted statement; the call would run where it did not"
            )
        local = self._fresh_local(f, _base_name(first))
        spans = tuple(Span(x.call.line, x.call.column, x.call.end_line, x.call.end_column) for x in occ)
        edits = tuple(Edit(sp, local) for sp in spans) + (
            Edit(spans[0], f"{local} = {text}", kind=EditKind.INSERT_BEFORE, anchors=spans),
        )
        return Fix(
            Applicability.UNSAFE if reasons else Applicability.SAFE,
            edits,
            message=f"Hoist to a local: `{text if len(text) < 60 else text[:57] + '...'}` is evaluated {len(occ)} times in `{f.name}`; compute `{local}` once before line {first.line}"
            + (f" (unsafe: {'; '.join(reasons)})" if reasons else ""),
            relies_on=(f"callee: {s.cost.pure_reason}", f"uses: lines {', '.join(str(x.call.line) for x in occ)}"),
        )

    def _fresh_local(self, f: FunctionInfo, base: str) -> str:
        p = self.p
        ctx = p.context(f)
        fi = p.modules_by_path.get(f.path)
        taken = set(ctx.locals) | set(ctx.params) | _BUILTINS
        if fi is not None:
            taken |= set(fi.imports) | set(fi.defs) | set(fi.globals)
        c = ctx.parent
        while c is not None:
            taken |= set(c.locals) | set(c.params)
            c = c.parent
        name, i = base, 2
        while name in taken or not name.isidentifier():
            name, i = f"{base}_{i}", i + 1
        return name

    # memoize --------------------------------------------------------------------------------
    def _memoize(self, s: Site) -> Fix | None:
        f = s.function
        if f.class_qualname is not None or f.parent_function is not None:
            return None
        compiled = self.compiled().get(f.qualname)
        if compiled is not None:
            s.notes.append(
                f"not memoized: `{f.name}` runs inside code compiled by torch.compile (from `{compiled}`), "
                "where Dynamo does not trace through functools.cache; hoist the value to a module constant or an `__init__` attribute"
            )
            return None
        if is_cached_function(f):
            return None
        context = self._mutable_context(s)
        if context is not None:
            s.notes.append(f"not memoized: the value of `{f.name}` depends on {context}")
            return None
        reasons: list[str] = []
        if f.is_async:
            return None
        if self._is_generator(f):
            return None
        for prm in f.params:
            if (
                prm.kind in ("vararg", "kwarg")
                or prm.annotation is None
                or not _annotation_ok(prm.annotation, _HASHABLE)
            ):
                # a cache keyed on a tensor, a config object or an unknown value
                # would be keyed on identity: wrong, not merely unproven
                s.notes.append(
                    f"not memoized: parameter `{prm.name}` of `{f.name}` is not annotated as a hashable, immutable value"
                )
                return None
        if f.returns_annotation is None:
            reasons.append("the return value has no annotation; a cached mutable value would be shared by all callers")
        elif not _annotation_ok(f.returns_annotation, _IMMUTABLE):
            reasons.append("the return value may be mutable, and would be shared by all callers")
        purity = self.a.cost.purity([f.qualname], f)
        pure, why = purity.pure, purity.reason
        if not pure:
            reasons.append(why)
        target = f.qualname[len(f.module) + 1 :]
        edits = (
            Edit(Span(f.line, 0, f.line, 0), "functools.cache", kind=EditKind.ADD_DECORATOR, target=target),
            Edit(Span(1, 0, 1, 0), "", kind=EditKind.ADD_IMPORT, target="functools"),
        )
        return Fix(
            Applicability.UNSAFE if reasons else Applicability.SAFE,
            edits,
            message=f"Memoize `{f.name}` with `@functools.cache`"
            + (f" (unsafe: {'; '.join(reasons)})" if reasons else ""),
            relies_on=(f"`{f.name}`: {why}",) if pure else (),
        )

    def _mutable_context(self, s: Site) -> str | None:
        """What mutable state the function's value follows, if the body shows it."""
        f = s.function
        if not s.cost.pure and s.cost.kind in _CONTEXT_KINDS:
            return _CONTEXT_KINDS[s.cost.kind] + f" (`{dotted(s.call.func) or '...'}`)"
        reads = self.a.cost.state_reads(f)
        rebound = [r.name for r in reads if r.kind is StateKind.GLOBAL]
        if rebound:
            return "module globals it rebinds (`global " + ", ".join(rebound) + "`)"
        for r in reads:
            if r.kind is StateKind.CATALOGUED and r.what in _CONTEXT_KINDS:
                return _CONTEXT_KINDS[r.what] + f" (`{r.name}`)"
        return None

    def _is_generator(self, f: FunctionInfo) -> bool:
        t = self.text(f.path, f.line, 0, f.end_line, 10**6) or ""
        return re.search(r"\byield\b", t) is not None

    # module constant ------------------------------------------------------------------------
    def _module_constant(self, s: Site) -> Fix | None:
        """Inside compiled code: evaluate a call of constant inputs once, at import."""
        p = self.p
        f, c = s.function, s.call
        if f.qualname not in self.compiled() or not s.cost.pure:
            return None  # an impure call moved to import time would be a different program
        ctx = p.context(f)
        used: list[str] = []
        _names_in(_call_expr(c), used)
        fi = p.modules_by_path.get(f.path)
        if fi is None:
            return None
        for n in used:
            if n == "?" or n in ctx.locals or n in ctx.params or p.resolve_name(fi.module, n) is None:
                return None
            if f.self_name and n == f.self_name:
                return None
        text = self.call_text(f, c)
        if text is None:
            return None
        names = self._constants.setdefault(f.path, {})
        name = names.get(text)
        if name is None:
            name = "_" + _base_name(c).upper()
            taken = set(fi.imports) | set(fi.defs) | set(fi.globals) | set(names.values())
            base, i = name, 2
            while name in taken:
                name, i = f"{base}_{i}", i + 1
            names[text] = name
        reasons = [
            "the call moves to import time (it then runs once, when the module is imported, e.g. before devices are set up)"
        ]
        edits = (
            Edit(Span(c.line, c.column, c.end_line, c.end_column), name),
            Edit(Span(0, 0, 0, 0), f"{name} = {text}", kind=EditKind.APPEND_TO_FUNCTION, target="<module>"),
        )
        return Fix(
            Applicability.UNSAFE,
            edits,
            message=f"Hoist to a module constant `{name}` (compiled code: no functools.cache) (unsafe: {'; '.join(reasons)})",
        )


def _class_level(p: Program, cls: str, attr: str) -> bool:
    for k in p.mro(cls):
        ci = p.classes.get(k)
        if ci is not None and (attr in ci.class_attrs or attr in ci.fields):
            return True
    return False


def _argument_for(f: FunctionInfo, params: list, c: CallSite, n: str):
    """The expression a call passes for parameter ``n`` of ``f`` (its default if omitted)."""
    for kw, v in c.kwargs:
        if kw == n:
            return v
        if kw is None:
            return None  # **kwargs
    positional = [q for q in params if q.kind == "pos"]
    if f.self_name is not None and positional and positional[0].name == f.self_name:
        if c.func[0] == "attr":
            positional = positional[1:]
        else:
            return None  # Class.method(obj, ...) or a constructor: leave it
    if f.name == "__init__":
        return None
    for i, q in enumerate(positional):
        if q.name == n:
            if i < len(c.args):
                a = c.args[i]
                return None if a == ("?",) else a
            return q.default if q.default is not None else None
    for q in params:
        if q.name == n and q.kind == "kwonly":
            return q.default
    return None


def _on_one_path(calls: list) -> bool:
    """Some call runs whenever any of them runs (so hoisting adds no new path)."""
    prefix = _common_prefix([c.guard for c in calls])
    return any(c.guard == prefix and (not c.in_loop or all(d.in_loop for d in calls)) for c in calls)


def _common_prefix(guards: list) -> tuple:
    if not guards:
        return ()
    out = []
    for parts in zip(*guards):
        if all(x == parts[0] for x in parts):
            out.append(parts[0])
        else:
            break
    return tuple(out)


def _annotation_ok(ann, allowed: frozenset) -> bool:
    """Every name in the annotation is a hashable immutable type (``tuple[int, ...]`` too)."""
    if ann is None:
        return False
    k = ann[0]
    if k == "const":
        if ann[1] is None or ann[1] is Ellipsis:
            return True
        if isinstance(ann[1], str):
            import ast

            from ..index.expr import conv

            try:
                return _annotation_ok(conv(ast.parse(ann[1], mode="eval").body), allowed)
            except SyntaxError:
                return False
        return False
    if k in ("name", "attr"):
        d = dotted(ann) or ""
        return d.split(".")[-1] in allowed
    if k == "sub":
        return _annotation_ok(ann[1], allowed) and _annotation_ok(ann[2], allowed)
    if k in ("tuple", "or"):
        return all(_annotation_ok(x, allowed) for x in ann[1])
    return False


def _is_compile_call(e) -> bool:
    d = dotted(e) or ""
    return d in ("torch.compile", "compile") or d.endswith("torch.compile") or d.startswith("torch.compiler.")


def _is_compile_decorator(d) -> bool:
    if d[0] == "call":
        return _is_compile_call(d[1])
    return (dotted(d) or "") in ("torch.compile",) or (dotted(d) or "").endswith(".torch.compile")


def _calls_super_init(f: FunctionInfo) -> bool:
    for c in f.calls:
        fn = c.func
        if fn[0] == "attr" and fn[2] == "__init__":
            return True
    return False
