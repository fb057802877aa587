"""Fixes for expensive calls that no attribute caches yet (CL002).

For each expensive call on a hot path, three rewrites are considered, each
with a safety class computed from the program:

``hoist to __init__``
    In a method, a call whose every input is bound once at construction
    (``self`` attributes the constructor binds once and nothing else assigns,
    constructor parameters, module constants) is evaluated once at the end of
    the class's own ``__init__`` into ``self._<name>``, and the use reads it.
    Safe only when the callee is pure, no subclass or other method can
    reassign an input or change it in place, ``__init__`` has no early
    ``return``, every subclass constructor calls ``super().__init__``,
    ``__init__`` does not itself reach the method (which would read the
    attribute before it exists), the call runs unconditionally in its method
    (or the catalog declares it ``total``), every implementation of a method
    or property of the object called finds what it reads assigned by the end
    of the base ``__init__``, and the callee's body reads no module state
    that code of the tree changes (:mod:`cachelint.facts.state`).

``hoist to a local``
    The same call (same callee, same argument values) evaluated more than
    once in one function: compute it once into a local before the statement
    holding the first use, in the innermost block that holds every use. Safe
    when the callee is pure, a use runs on every path from there (the
    function's statements, parsed again: :mod:`cachelint.facts.bodies`), and
    nothing between the uses (or in a loop repeating one) changes what the
    call reads (:meth:`~cachelint.facts.state.ProcessState.effects`).

``memoize``
    A module-level function whose result depends only on hashable,
    process-invariant parameters gets ``@functools.cache`` (and ``import
    functools``). Not inside code compiled by ``torch.compile`` (Dynamo
    warns on ``lru_cache``-wrapped calls and graph-breaks on them): there the
    value goes to a module constant, or to an ``__init__`` attribute. Not when
    the value depends on mutable context (the environment, the filesystem,
    the current device, a forward context): the message says which. Unsafe
    when it returns a mutable value, or reads module state that code of the
    tree changes (a registry filled later, a "current config" global).

The preferred fix is the first *safe* one in the order hoist to
``__init__``, memoize, hoist to a local, module constant; if none is safe,
the first unsafe one, with the reasons.
"""

from __future__ import annotations

import ast
import re
from collections import deque

from ...facts.bodies import HoistPoint
from ...facts.catalog import PURE_BUILTINS
from ...facts.cost import StateKind
from ...facts.state import related, show
from ...index.expr import dotted, render
from ...index.records import FunctionInfo
from ...model import Applicability, Edit, EditKind, Fix, Span
from ...semantic.callgraph import resolve_call
from ...semantic.idioms import fills_once
from ...semantic.program import CONSTRUCTORS
from ...semantic.values import GlobalRoot
from .inputs import InputAnalysis
from .site import (
    _BUILTINS,
    _CONTEXT_KINDS,
    _HASHABLE,
    _IMMUTABLE,
    CALLERS_FOLLOWED,
    Site,
    _annotation_ok,
    _attr_chains,
    _base_name,
    _call_expr,
    _calls_super_init,
    _class_level,
    _inputs_expr,
    _loop_head,
    _on_one_path,
    names_in,
)


def _chain_to_expr(root: str | None, chain: tuple) -> tuple:
    e: tuple = ("name", root or "self")
    for a in chain:
        e = ("attr", e, a)
    return e


class HoistPlanner(InputAnalysis):
    """Computes the fix (and its safety) of every CL002 site."""

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
            if not s.cost.pure and not s.call.is_import and self._value_discarded(s.function, s.call):
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
                if s.call.is_import:
                    # an import statement is no expression to replace: only its function can be memoized
                    memo = self._memoize(s) if s.invariant else None
                    s.fix = memo
                    continue
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
        names_in(_call_expr(c), used)
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
        self._check_conditions(s, reasons)
        self._check_chains(cls, chains, reasons, relies)
        self._check_changed_inside(s, cls, chains, reasons)
        self._check_globals(f, used, reasons)
        self._check_module_inputs(s, reasons)
        self._check_callee_reads(s, reasons)
        self._check_constructed(s, cls, reasons)
        self._check_callee_state(s, reasons, "computed once at construction, the value would not follow it")
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

    def _check_conditions(self, s: Site, reasons: list) -> None:
        """The call runs only under conditions of its function (an ``if``
        branch, past an early return, the right of ``and``, a ``try`` whose
        handler catches its errors): at the end of ``__init__`` it would run
        for every object, unconditionally (and raise where it did not run)."""
        f, c = s.function, s.call
        if s.cost.pure and s.cost.total:
            return  # a pure call that never raises may run where it did not
        body = self.a.bodies.body(f)
        node = body.find(c.line, c.column, c.end_line, c.end_column) if body is not None else None
        if node is None:
            if c.guard:
                shown = " and ".join(render(g) if pos else f"not ({render(g)})" for g, pos in c.guard)
                reasons.append(
                    f"in `{f.name}` the call runs only when `{shown}`; at the end of `__init__` it would run for every object, unconditionally"
                )
            return
        conds = body.conditions(node)
        if conds:
            reasons.append(
                f"in `{f.name}` the call runs "
                + "; and ".join(x.describe() for x in conds)
                + "; at the end of `__init__` it would run for every object, unconditionally"
            )

    def _check_changed_inside(self, s: Site, cls: str, chains: list, reasons: list) -> None:
        """An input ``self.a`` (or ``self.a.b``) whose object some code outside
        a constructor changes in place (``self.a.append(...)``, ``self.a[k] = v``,
        ``self.a.n = v``): no statement rebinds the attribute, yet its value
        changes, and the hoisted value would not follow."""
        f = s.function
        p = self.p
        state = self.a.state
        seen: set = set()
        # the receiver of a method or property of the tree: only the attributes
        # its body reads of that object are inputs (``_check_callee_reads``)
        receiver, reads = self._receiver_reads(s)
        for chain in chains:
            for i in range(1, len(chain) + 1):
                attr = chain[i - 1]
                if attr in seen or p.lookup_method(cls, attr) is not None:
                    continue
                seen.add(attr)
                want = p.type_of(self.a.state.value(f, _chain_to_expr(f.self_name, chain[:i])))
                for ch in state.changed_inside(attr):
                    if ch.function.name in CONSTRUCTORS:
                        continue
                    if chain[:i] == receiver and ch.below and ch.below[0] not in reads:
                        continue  # an attribute the callee does not read
                    if (
                        want is not None
                        and ch.type is not None
                        and not (p.is_subclass(want, ch.type) or p.is_subclass(ch.type, want))
                    ):
                        continue  # another kind of object's attribute of that name
                    reasons.append(
                        f"`{ch.text}` in `{ch.function.qualname}` (line {ch.line}) changes `self.{'.'.join(chain[:i])}` in place"
                        + (", in the loop that makes the call" if ch.function is f and ch.in_loop else "")
                    )
                    return

    def _receiver_reads(self, s: Site) -> tuple[tuple | None, set]:
        """``self.a.b`` as ``("a", "b")`` when the site calls (or reads) a method
        (or property) of the tree on it, with what its implementations read of it."""
        f, c = s.function, s.call
        recv = c.func[1] if c.func[0] == "attr" else None
        d = dotted(recv) if recv is not None else None
        if d is None or not d.startswith(f"{f.self_name}."):
            return None, set()
        g = self.p.callee_function(s.callee) if s.callee is not None else None
        if g is None or g.self_name is None:
            return None, set()
        reads: set = set()
        for impl in self.a.cost.implementations(g):
            reads |= self._self_reads(impl)
        return tuple(d.split(".")[1:]), reads

    def _check_module_inputs(self, s: Site, reasons: list) -> None:
        """An argument that is module state (a module variable, a module-level
        object's attribute, a class attribute) which code of the tree changes."""
        f, c = s.function, s.call
        if c.is_read:
            return
        state = self.a.state
        for part in (*c.args, *(v for _kw, v in c.kwargs)):
            d = dotted(part)
            if d is None or d.split(".")[0] == f.self_name:
                continue
            v = state.value(f, part)
            if v is None or not isinstance(v[0], GlobalRoot) or not state.is_state(v):
                continue
            ch = state.changes(v, tuple(d.split(".")))
            if ch:
                reasons.append(
                    f"argument `{d}` is module state that `{ch[0].where}` changes (line {ch[0].line}: `{ch[0].text}`)"
                )
                return

    def _check_callee_state(self, s: Site, reasons: list, consequence: str) -> None:
        """The callee (a function of the tree) reads module state that other
        code changes, or the environment: its value depends on when it runs."""
        g = self.p.callee_function(s.callee) if s.callee is not None else None
        if g is None:
            return
        dep = self.a.state.dependence(g)
        if dep is not None:
            reasons.append(f"{dep.reason}; {consequence}")

    def _check_constructed(self, s: Site, cls: str, reasons: list) -> None:
        """A method (or property) of the object itself, called at the end of
        the base ``__init__``: every implementation a subclass object
        dispatches to must find the attributes it reads assigned by then.
        Not so when a subclass constructor assigns one after calling
        ``super().__init__()`` (the override reads it too early, or the base
        getter reads the value the subclass then replaces), or when the
        constructor assigns it only under a condition."""
        p = self.p
        f, c = s.function, s.call
        recv = c.func[1] if c.func[0] == "attr" else None
        if recv != ("name", f.self_name):
            return
        g = p.callee_function(s.callee) if s.callee is not None else None
        if g is None or g.self_name is None:
            return
        for k in [cls, *p.subclasses(cls)]:
            impl = p.lookup_method(k, g.name)
            if impl is None:
                continue
            late = self._assigned_after_super(k, cls)
            reads = sorted(self._self_reads(impl))
            for attr in reads:
                if attr in late:
                    init_qn, line = late[attr]
                    if impl.class_qualname == cls:
                        reasons.append(
                            f"`{impl.qualname}` reads `self.{attr}`, which subclass constructor `{init_qn}` assigns "
                            f"after `super().__init__()` (line {line}): the hoisted value would hold the base class's `{attr}`"
                        )
                    else:
                        reasons.append(
                            f"override `{impl.qualname}` reads `self.{attr}`, which `{init_qn}` assigns only after "
                            f"`super().__init__()` (line {line}): at the end of `{cls.rsplit('.', 1)[-1]}.__init__` it is not set yet"
                        )
                    return
            for attr in reads:
                ws = [(w, a) for w, a in p.self_attr_writers(k, attr) if w.name in CONSTRUCTORS]
                if ws and all(a.guard or a.in_loop for _w, a in ws):
                    w, a = ws[0]
                    why = (
                        " and ".join(render(g0) if pos else f"not ({render(g0)})" for g0, pos in a.guard)
                        if a.guard
                        else "a loop runs"
                    )
                    reasons.append(
                        f"`{impl.qualname}` reads `self.{attr}`, which `{w.qualname}` assigns only when `{why}` "
                        f"(line {a.line}): at the end of `__init__` it may not exist"
                    )
                    return

    def _assigned_after_super(self, k: str, cls: str) -> dict:
        """Attributes the constructors of ``k`` and of its bases below ``cls``
        assign after their ``super().__init__()`` call: attr -> (constructor, line)."""
        p = self.p
        out: dict = {}
        for x in p.mro(k):
            if x == cls:
                break
            ci = p.classes.get(x)
            init = p.functions.get(ci.methods["__init__"]) if ci is not None and "__init__" in ci.methods else None
            if init is None or init.self_name is None:
                continue
            supers = [c.line for c in init.calls if c.func[0] == "attr" and c.func[2] == "__init__"]
            if not supers:
                continue
            me = ("name", init.self_name)
            for a in init.assigns:
                if a.target[0] == "attr" and a.target[1] == me and a.line > supers[0]:
                    out.setdefault(a.target[2], (init.qualname, a.line))
        return out

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
        body = self.a.bodies.body(g)
        if body is not None:  # reads in conditions and operators too, which the index does not keep
            chains.extend(parts[1:] for parts, _line in body.reads_of(g.self_name))
        out: set = set()
        for attr in dict.fromkeys(ch[0] for ch in chains if ch):
            m = p.lookup_method(g.class_qualname, attr) if g.class_qualname else None
            if m is None:
                out.add(attr)
            elif depth < 3 and not p.is_cached(m):
                out |= self._self_reads(m, depth + 1, seen)
        return out

    def _check_callee_reads(self, s: Site, reasons: list) -> None:
        """An in-tree method's (or property getter's) own inputs: the attributes
        of its object it reads, through the methods and properties it uses."""
        p = self.p
        g = p.callee_function(s.callee) if s.callee is not None else None
        if g is None or g.self_name is None:
            return
        for impl in self.a.cost.implementations(g):
            for attr in sorted(self._self_reads(impl)):
                ws = [(w, a) for w, a in p.writers(attr) if w.name not in CONSTRUCTORS]
                if ws:
                    w, a = ws[0]
                    reasons.append(
                        f"`{impl.qualname}` reads `.{attr}`, which `{w.qualname}` assigns (line {a.line}), "
                        "outside a constructor: at the end of `__init__` it may not be set yet, and later it may change"
                    )
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
    def hoist_local(self, s: Site, same: list[Site], loop: ast.AST | None = None) -> Fix | None:
        """The hoist-to-a-local fix for the uses ``same`` of one call (``s``
        among them), or, with ``loop`` (a ``for``/``while`` statement or a
        comprehension of ``s.function``'s body holding the one use), the fix
        that computes the call once before that loop (CL006)."""
        return self._hoist_local(s, same, loop)

    def changed_between(
        self, s: Site, same: list[Site], loop: ast.AST | None = None, nodes: list | None = None
    ) -> str | None:
        """What, proven from the code, changes an input of the call between
        its uses ``same`` (or, with ``loop``, anywhere in that loop): the
        message clause, or None when nothing is seen to change one.
        ``nodes``: the uses' nodes in the function's body, in source order,
        when the caller has them."""
        f = s.function
        occ = sorted(same, key=lambda x: (x.call.line, x.call.column))
        body = self.a.bodies.body(f)
        if body is None:
            return None
        if nodes is None:
            nodes = [body.find(x.call.line, x.call.column, x.call.end_line, x.call.end_column) for x in occ]
        if not nodes or any(n is None for n in nodes):
            return None
        hp = self._local_point(body, nodes, loop)
        if hp is None:
            return None
        return self._first_change(s, occ, nodes, body, hp)

    @staticmethod
    def _local_point(body, nodes: list, loop: ast.AST | None):
        """Where the local goes: before the statement of the first use (in the
        block holding every use), or, for a loop, before the statement that
        holds the loop, with the loop (and what is inside it) uncovering the use."""
        if loop is None:
            return body.hoist_point(nodes)
        at = body.hoist_point([loop])
        if at is None:
            return None
        uncovered = tuple(body.conditions(nodes[0], below=at.block[at.index], loops=True))
        return HoistPoint(at.block, at.index, at.line, uncovered, None)

    def _hoist_local(self, s: Site, same: list[Site], loop: ast.AST | None = None) -> Fix | None:
        p = self.p
        f = s.function
        ctx = p.context(f)
        occ = sorted(same, key=lambda x: (x.call.line, x.call.column))
        first = occ[0].call
        used: list[str] = []
        names_in(_call_expr(first), used)
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
        if not s.cost.pure:
            reasons.append(f"the callee is not known to be pure ({s.cost.pure_reason})")
        if any(self.mutated_at(f, x.call) for x in occ):
            reasons.append("a use changes the value in place, and the uses would now share one object")
        at_line = first.line
        body = self.a.bodies.body(f)
        nodes = [body.find(x.call.line, x.call.column, x.call.end_line, x.call.end_column) for x in occ] if body else []
        anchors: tuple[Span, ...] = ()
        if body is None or not nodes or any(n is None for n in nodes):
            if loop is not None:
                return None
            reasons.append(f"cachelint could not read `{f.name}` again to check what runs between the uses")
        else:
            hp = self._local_point(body, nodes, loop)
            if hp is None:
                return None  # the uses share no statement block: the codemod would not apply it
            at_line = hp.line
            if loop is not None:
                head = _loop_head(body, loop)
                if head is None:
                    return None
                anchors = head
            if (hp.uncovered or hp.exit_line is not None) and not (s.cost.pure and s.cost.total):
                parts = []
                if hp.uncovered:
                    parts.append("the first use runs " + "; and ".join(x.describe() for x in hp.uncovered))
                if hp.exit_line is not None:
                    parts.append(f"the statement at line {hp.exit_line} may leave the block before a later use runs")
                why = "; ".join(parts)
                reasons.append(
                    f"no use runs on every path from line {hp.line}, where the local would be computed ({why}): "
                    "the call would run where it did not"
                )
            self._check_between(s, occ, nodes, body, hp, reasons)
        local = self._fresh_local(f, _base_name(first))
        spans = tuple(Span(x.call.line, x.call.column, x.call.end_line, x.call.end_column) for x in occ)
        edits = tuple(Edit(sp, local) for sp in spans) + (
            Edit(spans[0], f"{local} = {text}", kind=EditKind.INSERT_BEFORE, anchors=anchors + spans),
        )
        shown = text if len(text) < 60 else text[:57] + "..."
        how = (
            f"runs once per iteration of the loop at line {at_line}"
            if loop is not None
            else f"appears {len(occ)} times"
        )
        return Fix(
            Applicability.UNSAFE if reasons else Applicability.SAFE,
            edits,
            message=f"Hoist to a local: `{shown}` {how} in `{f.name}`; compute `{local}` once before line {at_line}"
            + (f" (unsafe: {'; '.join(reasons)})" if reasons else ""),
            relies_on=(f"callee: {s.cost.pure_reason}", f"uses: lines {', '.join(str(x.call.line) for x in occ)}"),
        )

    def _check_between(self, s: Site, occ: list, nodes: list, body, hp, reasons: list) -> None:
        """Nothing between the hoisted statement and the last use (and, for a
        use in a loop below it, anywhere in that loop) changes what the call
        reads: its arguments and receiver (for a method of the tree, the
        attributes it reads of its object), and the module state its body
        reads. Changes are assignments, in-place method calls, ``del``, and
        what the functions of the tree called there change."""
        changed = self._first_change(s, occ, nodes, body, hp)
        if changed is not None:
            reasons.append(changed)
            return
        inputs = self._local_inputs(s)
        if inputs:
            self._check_unresolved_between(s.function, occ, hp, self._loops(body, nodes, hp), inputs, reasons)

    @staticmethod
    def _loops(body, nodes: list, hp) -> list:
        loops: list = []
        for n in nodes:
            loops.extend(body.loops_around(n, below=hp.block))
        return loops

    def _first_change(self, s: Site, occ: list, nodes: list, body, hp) -> str | None:
        """The first change (an effect of the function's code) to an input of
        the call between the hoisted statement and the last use, or in a loop
        that repeats a use: the message clause, or None."""
        f = s.function
        last = occ[-1].call
        loops = self._loops(body, nodes, hp)
        inputs = self._local_inputs(s)
        if not inputs:
            return None
        for e in self.a.state.effects(f):
            # from the hoisted statement to the last use's line: an assignment
            # on a use's own line (`self.n = f(self.n)`) happens after the use
            between = hp.line <= e.line <= last.end_line
            looped = any(a <= e.line <= b for a, b in loops)
            if not between and not looped:
                continue
            for v, shown in inputs:
                if not related(e.value, v):
                    continue
                where = (
                    f"`{e.text}` (line {e.line}{', in a loop that repeats a use' if looped and not between else ''})"
                )
                through = f" through `{e.via}`" if e.via else ""
                changed = show(e.value)
                what = f"`{shown}`" if changed == shown else f"`{changed}`{through}, and the call reads `{shown}`"
                if changed != shown:
                    through = ""
                return f"{where} changes {what}{through} between the uses: one value for all of them would be stale"
        return None

    def _check_unresolved_between(self, f, occ: list, hp, loops: list, inputs: list, reasons: list) -> None:
        """A call between the uses (or in a loop repeating one) that cachelint
        cannot resolve to a function of the tree, and that receives an input
        of the call or an object the input hangs off (as its receiver or an
        argument), may change that input: nothing proves it does not."""
        p, st = self.p, self.a.state
        last = occ[-1].call
        uses = {(x.call.line, x.call.column) for x in occ}
        for c in f.calls:
            if (c.line, c.column) in uses or c.in_handler:
                continue
            between = hp.line <= c.line <= last.end_line
            if not between and not any(a <= c.line <= b for a, b in loops):
                continue
            if any(
                x.call.line <= c.line <= x.call.end_line
                and (c.line, c.column) >= (x.call.line, x.call.column)
                and (c.end_line, c.end_column) <= (x.call.end_line, x.call.end_column)
                for x in occ
            ):
                continue  # part of a use (its arguments are evaluated with it)
            if resolve_call(p, f, c) is not None:
                continue  # a function of the tree: the effects above follow it
            callee = p.call_callee(f, c)
            if callee is not None and len(callee) == 1 and isinstance(callee[0], GlobalRoot):
                qn = callee[0].qualname
                if qn.startswith("builtins.") and qn[9:] in PURE_BUILTINS:
                    continue
            if self.a.cost.purity(p.callee_names(callee, dotted(c.func)), None).pure:
                continue  # declared pure (catalog or configuration)
            passed = [c.func[1]] if c.func[0] == "attr" else []
            passed += [*c.args, *(v for _kw, v in c.kwargs)]
            for part in passed:
                v = st.value(f, part)
                if v is None:
                    continue
                for iv, shown in inputs:
                    if related(v, iv):
                        reasons.append(
                            f"`{render(c.func)}(...)` (line {c.line}) is a call cachelint cannot resolve, and it "
                            f"receives `{render(part)}`: it may change `{shown}` between the uses"
                        )
                        return

    def _local_inputs(self, s: Site) -> list[tuple[tuple, str]]:
        """What the call at ``s`` reads, as canonical values with their text:
        its arguments, its receiver (for a method or property of the tree, the
        attributes its body reads of that object), and the module state the
        callee's body reads."""
        p, st = self.p, self.a.state
        f, c = s.function, s.call
        g = p.callee_function(s.callee) if s.callee is not None else None
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
                    out.extend((rv + (a,), f"{render(receiver)}.{a}") for a in sorted(self._self_reads(g)))
                else:
                    out.append((rv, render(receiver)))
        if not c.is_read:
            for part in (*c.args, *(v for _kw, v in c.kwargs)):
                v = st.value(f, part)
                if v is not None:
                    out.append((v, render(part)))
        if g is not None:
            out.extend((u.value, u.shown) for u in st.reads(g) if not u.environ)
        return out

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
        if self.p.is_cached(f):
            return None
        memo = self._memoizing_decorator(f)
        if memo is not None:
            s.notes.append(
                f"not memoized: `{f.name}` is already memoized by `@{memo}`, a caching decorator of the tree"
            )
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
        dep = self.a.state.dependence(f)
        if dep is not None and dep.state is not None and dep.state.kind is StateKind.ENVIRON:
            s.notes.append(f"not memoized: the value of `{f.name}` depends on the environment ({dep.reason})")
            return None
        if f.returns_annotation is None:
            reasons.append("the return value has no annotation; a cached mutable value would be shared by all callers")
        elif not _annotation_ok(f.returns_annotation, _IMMUTABLE):
            reasons.append(self._mutable_result(f))
        purity = self.a.cost.purity([f.qualname], f)
        pure, why = purity.pure, purity.reason
        if not pure:
            reasons.append(purity.detail())
        if dep is not None:
            reasons.append(f"{dep.reason}; a cached value would keep the answer of the first call")
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
            relies_on=(f"`{f.name}`: {why}",) if pure and dep is None else (),
        )

    def _memoizing_decorator(self, f: FunctionInfo) -> str | None:
        """A decorator of ``f``, defined in the tree, whose wrapper fills a memo
        (``if key not in results: results[key] = fn(...)``), as written."""
        p = self.p
        ctx = p.context(f)
        for d in f.decorators:
            d0 = d[1] if d[0] == "call" else d
            callee = p.canon(d0, ctx)
            g = p.callee_function(callee) if callee is not None else None
            if g is None:
                continue
            for qn in g.nested.values():
                w = p.functions.get(qn)
                if w is not None and any(fills_once(w, c) for c in w.calls):
                    return dotted(d0)
        return None

    def _mutable_result(self, f: FunctionInfo) -> str:
        """Why a cached return value would be shared: its annotated type, and
        a hot caller that changes it in place, if one does."""
        body = self.a.bodies.body(f)
        ann = body.node.returns if body is not None else None
        if ann is not None:
            shown = ast.unparse(ann)
        else:
            shown = render(f.returns_annotation) if f.returns_annotation is not None else "?"
        out = f"it returns `{shown}`, a mutable value every caller would then share"
        for g, c in self.hot.callers(f.qualname, CALLERS_FOLLOWED):
            t = c.assigned_to
            if t is None or t[0] != "name":
                continue
            for e in self.a.state.effects(g):
                if e.line > c.line and e.text and self._names_local(g, e, t[1]):
                    return out + f"; `{g.qualname}` changes it in place (line {e.line}: `{e.text}`)"
        return out

    def _names_local(self, g: FunctionInfo, e, name: str) -> bool:
        """Effect ``e`` of ``g`` changes the value of its local ``name``."""
        v = self.a.state.value(g, ("name", name))
        return v is not None and related(e.value, v) and len(e.value) >= len(v)

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
        names_in(_call_expr(c), used)
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
