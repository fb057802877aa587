"""The state a fill's guard reads outside the object it fills.

A CL001 rewrite relies on the fill's guard holding wherever the reader runs:
the reader's conditions imply it *now*, but the fill ran under the guard's
value *then*. :mod:`.hazards` follows what the guard reads on the anchor
(``self.model.is_encoder_decoder``); this module follows the rest, which no
construction order protects:

* module state: a module variable (``if ENCODER_ENABLED:``), an attribute of
  a module-level object, a class attribute read through the class. Its
  writers are :meth:`ProcessState.changes <.state.ProcessState.changes>`:
  ``global X`` then ``X = ...`` in any function, ``mod.X = ...`` from another
  module, in-place changes. A variable nothing changes after its module's
  own top level (a constant) keeps the guard;
* the environment: ``os.environ`` (read as a mapping or through ``get``),
  ``os.getenv``, and every catalogued call of kind ``environment`` that is
  not pure. Any code may write it, in the analysed files or not
  (``os.environ[k] = v``, ``os.putenv``, a launcher), so such a guard is
  never proven to hold later;
* a call in the guard: a catalogued call that is not pure, or a function of
  the tree whose value depends on such a call, a global it rebinds or module
  state that changes (its purity, and :meth:`ProcessState.dependence`).

Each finding is one reason, naming the guard as written, the state and its
first writers (or the environment).
"""

from __future__ import annotations

from ..index.expr import subexpressions
from ..semantic.program import Program, Value
from ..semantic.values import CallRoot, CmpKey, GlobalRoot, IsNoneKey, KwArg, OpaqueKey, TruthyKey
from ..semantic.writes import Writes
from .cost import CostModel
from .purity import StateKind
from .state import ProcessState, flat, show

MAX_SHOWN = 3  # writers named per guard read

# what makes a function of the tree give another value later: a catalogued
# call that is not pure (the environment, I/O, ...), a global it rebinds,
# module state some code changes, the environment read as a mapping
_CHANGING = frozenset({StateKind.CATALOGUED, StateKind.GLOBAL, StateKind.MUTABLE, StateKind.ENVIRON})

# the environment read as a mapping or through os's own functions
_ENVIRON_HEADS = frozenset({("os", "environ"), ("os", "getenv"), ("os", "getenvb"), ("os", "environb")})


class GuardState:
    """The reasons a cache site's guard may not hold after the fill (see the module docstring)."""

    def __init__(
        self, program: Program, cost: CostModel | None, state: ProcessState, writes: Writes | None = None
    ) -> None:
        self.p = program
        self.writes = writes
        self.cost = cost
        self.catalog = cost.catalog if cost is not None else None
        self.state = state

    def reasons(self, site) -> list[str]:
        out: list[str] = []
        seen: set = set()
        ctx = self.p.context(site.function)
        for atom in site.atoms:
            key = atom.key
            values: list = []
            if isinstance(key, (TruthyKey, IsNoneKey)):
                values = [key.value]
            elif isinstance(key, CmpKey):
                values = [key.left, key.right]
            elif isinstance(key, OpaqueKey):
                values = [self.p.canon(e, ctx) for e in subexpressions(key.expr, whole_chains=True)]
            for v in values:
                for text in self._value(v, site.anchor, 0):
                    if text not in seen:
                        seen.add(text)
                        out.append(f"the fill's guard `{atom.text}` {text}")
        return out

    def _value(self, v: Value | None, anchor, depth: int) -> list[str]:
        """What in value ``v`` (read by the guard) may change after the fill."""
        if v is None:
            return []
        if depth > 4:
            return [f"reads `{show(v)}`, nested too deep for cachelint to follow what may change it"]
        root = v[0]
        if isinstance(root, CallRoot):
            out = self._call(root.callee)
            if not out:
                out = self._value(root.callee[:-1] if len(root.callee) > 1 else None, anchor, depth + 1)
            for a in root.args:
                out += self._value(a.value if isinstance(a, KwArg) else a, anchor, depth + 1)
            return out
        if not isinstance(root, GlobalRoot):
            return []  # the anchor's own attributes are hazards.Hazards's dependencies
        if _environ(v):
            return [f"reads `{show(v)}`, the environment, {_ENVIRON}"]
        if not self.state.is_state(v):
            return []
        found = [
            f"`{c.where}` {'rebinds' if c.rebinds else 'changes'} it (line {c.line}: `{c.text}`)"
            for c in self.state.changes(v)
        ]
        found += self._spelled_writes(v, {(c.where, c.line) for c in self.state.changes(v)})
        if not found:
            return []
        shown = "; ".join(found[:MAX_SHOWN])
        more = len(found) - MAX_SHOWN
        shown += f"; and {more} more" if more > 0 else ""
        return [f"reads the module state `{show(v)}`, which changes after construction: {shown}"]

    def _spelled_writes(self, v: Value, seen: set) -> list[str]:
        """Writes of module state ``v`` that name it only as a string on its
        owner: ``setattr(mod, "X", v)``, ``vars(mod)["X"] = v``,
        ``mod.__dict__.update(...)``, and ``setattr`` with a computed name (see
        :class:`~cachelint.semantic.writes.Writes`), on the module, class or
        object that holds it."""
        if self.writes is None:
            return []
        root = v[0]
        if len(v) == 1:
            owner_qn, _, name = root.qualname.rpartition(".")
            owner: Value = (GlobalRoot(owner_qn),)
        else:
            owner, name = v[:-1], v[-1]
        if not isinstance(name, str):
            return []
        out = []
        for w in self.writes.of(name):
            if w.how in ("assign", "annassign", "augassign", "del") or w.how == "unindexed":
                continue  # plain assignments are ProcessState.changes's
            if (w.function.qualname, w.line) in seen or self.writes.receiver_value(w) != owner:
                continue
            where = w.function.module if w.function.name == "<module>" else w.function.qualname
            seen.add((where, w.line))
            what = "may rebind" if w.attr is None else "rebinds"
            out.append(f"`{where}` {what} it (line {w.line}: `{w.text}`)")
        return out

    def _call(self, callee: Value) -> list[str]:
        """A call the guard makes whose value may change between the fill and a read."""
        p = self.p
        if _environ(callee):
            return [f"calls `{show(callee)}`, a read of the environment, {_ENVIRON}"]
        names = p.callee_names(callee, None)
        entry = self.catalog.match(names) if self.catalog is not None else None
        if entry is not None and entry.kind != "declared-pure":
            if entry.pure:
                return []
            shown = names[0] if names else entry.pattern
            if entry.kind == "environment":
                return [f"calls `{shown}`, a read of the environment, {_ENVIRON}"]
            said = entry.why or "catalog"
            return [f"calls `{shown}`, which is not pure ({entry.kind}: {said}): it may return another value later"]
        fn = p.callee_function(callee)
        if fn is None:
            return []
        why: str | None = None
        if self.cost is not None:
            purity = self.cost.purity(names, fn)
            st = purity.state
            if not purity.pure and st is not None:
                if _environ_name(st.name):
                    via = " -> ".join(f"`{q}`" for q in (*purity.via, st.name))
                    return [f"calls `{fn.qualname}`, which reads the environment ({via}), {_ENVIRON}"]
                if st.kind in _CHANGING:
                    why = purity.detail()
        if why is None:
            dep = self.state.dependence(fn)
            why = dep.reason if dep is not None else None
        if why is None:
            return []
        return [f"calls `{fn.qualname}`, whose value may change after construction: {why}"]


_ENVIRON = (
    "which any code may change at run time (`os.environ[...] = ...`, `os.putenv`, "
    "in the analysed files or not), so the guard may hold at the read and not have held at the fill"
)


def _environ(v: Value) -> bool:
    f = flat(v)
    return f[0] == "g" and tuple(f[1:3]) in _ENVIRON_HEADS


def _environ_name(name: str) -> bool:
    """A dotted name under ``os.environ`` or ``os.getenv`` (what a purity state names)."""
    return tuple(name.split(".")[:2]) in _ENVIRON_HEADS
