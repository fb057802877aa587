"""Whether a call's inputs are the same on every run, read from the program
and the source text; and which functions run inside ``torch.compile``."""

from __future__ import annotations

from ...facts.catalog import pure_builtin
from ...facts.state import CONTAINER_READERS
from ...facts.totality import Totality
from ...index.expr import dotted
from ...index.records import CallSite, FunctionInfo
from ...semantic.callgraph import HotPaths
from ...semantic.idioms import fills_once, never_runs
from ...semantic.program import FunctionContext, Program
from ...semantic.values import GlobalRoot
from .site import _DEL_BEFORE, _MUTATION_AFTER, CALLERS_FOLLOWED, argument_for


class InputAnalysis:
    """What the planner asks of the program about a site's inputs."""

    def __init__(self, analysis, hot: HotPaths) -> None:
        self.a = analysis
        self.p: Program = analysis.program
        self.hot = hot
        self._param_memo: dict = {}
        self._in_place_memo: dict = {}  # (class, attribute) -> why it changes in place, or None
        self._constants: dict = {}  # path -> call text -> module constant name
        self._short: dict[str, str] | None = None  # see short_lived
        self._globals_assigned: dict[tuple[str, str], str] | None = None  # see _global_writer
        self._totality: Totality | None = None

    @property
    def totality(self) -> Totality:
        """Whether a call may raise (what a hoist into ``__init__`` must rule out)."""
        if self._totality is None:
            self._totality = Totality(self.p, self.a.bodies, self.a.cost.catalog)
        return self._totality

    # ----- source text ------------------------------------------------------------
    def lines(self, path: str) -> list[str]:
        """The file's lines (with their ends) as indexed; [] if unreadable or changed since."""
        return self.p.source_lines(path) or []

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
                chain = tuple(d.split(".")[1:])
                return self._chain_varies(f.class_qualname, chain) or self._changed_in_place(f, chain[0])
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
            if fn is not None and self.p.is_cached(fn):
                return None
            if callee is not None and len(callee) == 1 and isinstance(callee[0], GlobalRoot):
                if pure_builtin(callee[0].qualname):
                    return None
            if not self.a.cost.call_purity(names, fn, callee=callee).pure:
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
        if c.is_import:
            return None  # the module's name is a constant
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
        family = {ci.qualname, *self.p.mro(ci.qualname), *self.p.subclasses(ci.qualname)}
        for step in self.hot.chain(f.qualname) or ():
            owner, _, name = step.rpartition(".")
            if name in ("__init__", "__post_init__", "__new__") and owner in family:
                return f"`{f.name}` runs while a `{owner.rpartition('.')[2]}` is constructed (via `{step}`)"
        short = self.short_lived()
        for k in (ci.qualname, *self.p.subclasses(ci.qualname)):
            why = short.get(k)
            if why is not None:
                return why
        return None

    def short_lived(self) -> dict[str, str]:
        """Classes whose objects live for one run of hot code, each with why:
        built by a call in a hot function (a dataclass or a class whose
        constructor the call graph does not enter counts too), or handed to
        a hot root as an argument (a request a web framework builds from
        each message). A method's ``self`` is then a new object on each run."""
        if self._short is not None:
            return self._short
        p = self.p
        out: dict[str, str] = {}
        for qn in self.hot.chains:
            f = p.functions.get(qn)
            if f is None:
                continue
            for c in f.calls:
                last = c.func[-1] if c.func[0] in ("name", "attr") else None
                if not isinstance(last, str) or not (last[:1].isupper() or last == "cls") or c.in_handler:
                    continue
                if never_runs(c) or fills_once(f, c):
                    continue
                callee = p.call_callee(f, c) or ()
                if len(callee) != 1:
                    continue
                root = callee[0]
                made = root.qualname if isinstance(root, GlobalRoot) else p.cls_param_class(root)
                if made in p.classes and made not in out:
                    name = made.rpartition(".")[2]
                    out[made] = f"a new `{name}` is constructed on each run of hot code (in `{f.qualname}`)"
        for qn in self.hot.roots:
            f = p.functions.get(qn)
            if f is None:
                continue
            for prm in f.params:
                if prm.annotation is None or prm.name == f.self_name:
                    continue
                cls = p.resolve_annotation(prm.annotation, f.module)
                if cls in p.classes and cls not in out:
                    name = cls.rpartition(".")[2]
                    out[cls] = f"a `{name}` is passed new to the hot root `{f.name}` on each call"
        self._short = out
        return out

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

    def _changed_in_place(self, f: FunctionInfo, first: str) -> str | None:
        """Why ``self.<first>`` can hold a different value between runs although
        it is never rebound: a hot method of the object's classes changes the
        object in place (``self.items.append(x)``, ``self.table[k] = v``, or a
        call of a function that does so to the argument it is passed)."""
        cls = f.class_qualname
        if cls is None or f.self_name is None:
            return None
        key = (cls, first)
        if key not in self._in_place_memo:
            self._in_place_memo[key] = self._scan_in_place(f, cls, first)
        return self._in_place_memo[key]

    def _scan_in_place(self, f: FunctionInfo, cls: str, first: str) -> str | None:
        state = self.a.state
        v = state.value(f, ("attr", ("name", f.self_name), first))
        if v is None:
            return None
        for k in dict.fromkeys([*self.p.mro(cls), *self.p.subclasses(cls)]):
            ci = self.p.classes.get(k)
            if ci is None:
                continue
            for qn in ci.methods.values():
                m = self.p.functions.get(qn)
                if m is None or not self.hot.is_hot(qn):
                    continue
                for eff in state.effects(m):
                    w = eff.value
                    if len(w) >= len(v) and w[: len(v)] == v and not state.fresh_along(v, w[len(v) :]):
                        return (
                            f"`self.{first}` is changed in place in `{m.qualname}` "
                            f"(line {eff.line}: `{eff.text.strip()}`), which runs on a hot path"
                        )
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
            if _new_container(a.value) and _changed_local(f, n):
                return f"`{n}` is a new container that the function then fills or hands on"
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
            why = self._global_writer(fi.module, n)
            if why is not None:
                return why
        if p.resolve_name(fi.module, n) is None:
            return f"`{n}` is not bound where cachelint can see it"
        return None

    def _global_writer(self, module: str, n: str) -> str | None:
        """Why module variable ``n`` of ``module`` changes: a function of the
        module declares it ``global`` and assigns it (one scan of the
        functions for all names, on first use)."""
        if self._globals_assigned is None:
            assigned: dict[tuple[str, str], str] = {}
            for g in self.p.functions.values():
                for name in g.global_names:
                    if (g.module, name) not in assigned and any(a.target == ("name", name) for a in g.assigns):
                        assigned[(g.module, name)] = g.qualname
            self._globals_assigned = assigned
        writer = self._globals_assigned.get((module, n))
        return None if writer is None else f"module variable `{n}` is assigned in `{writer}`"

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
                arg = argument_for(f, params, c, n)
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
        return self.a.compiled


_CONTAINER_BUILTINS = frozenset(["list", "dict", "set", "bytearray"])


def _new_container(e) -> bool:
    """``e`` makes a new mutable container: ``[]``, ``{}``, ``list(...)``, ``set()``."""
    if e[0] in ("list", "dict"):
        return True
    return e[0] == "call" and e[1][0] == "name" and e[1][1] in _CONTAINER_BUILTINS


def _changed_local(f: FunctionInfo, n: str) -> bool:
    """Local ``n`` of ``f`` may be changed in place after it is bound: a
    method other than a reader is called on it, it is handed to a call, or
    an item of it is assigned or deleted."""
    local = ("name", n)
    for c in f.calls:
        if c.func[0] == "attr" and c.func[1] == local and c.func[2] not in CONTAINER_READERS:
            return True
        if local in c.args or any(v == local for _k, v in c.kwargs):
            return True
    return any(a.target[0] == "sub" and a.target[1] == local for a in f.assigns)
