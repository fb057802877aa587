"""One analysis run over a whole program: what every rule can ask for.

Built once from the file indexes and the configuration; the expensive parts
(hot paths, cache sites and their uses) are computed on first use, so a run
that selects only CL000 never builds them.
"""

from __future__ import annotations

from functools import cached_property

from ..config import Config
from ..index.records import CallSite, FileIndex, FunctionInfo
from ..lock.lockfile import Invariant
from ..semantic.callgraph import HotPaths, hot_paths
from ..semantic.compiled import compiled_functions, traced_only
from ..semantic.idioms import CacheDecorators
from ..semantic.program import Program
from ..semantic.writes import Writes
from .bodies import Bodies
from .cachesites import CacheAnalysis
from .catalog import Catalog
from .cost import CostModel
from .estimate import Estimator
from .invariants import InvariantCheck, InvariantState
from .receives import Receives
from .state import ProcessState


class Analysis:
    def __init__(
        self,
        indexes: list[FileIndex],
        config: Config,
        invariants: list[Invariant] | None = None,
        lock_path: str | None = None,
        sources: dict[str, bytes] | None = None,
    ) -> None:
        self.config = config
        self.program = Program(
            indexes, CacheDecorators(config.decorators), sources, config.custom_op_registrars, config.call_methods
        )
        self.catalog = Catalog(config.catalog)
        # the invariants of cachelint.lock (None: no lock file)
        self.invariants = invariants
        self.lock_path = lock_path

    @cached_property
    def hot(self) -> HotPaths:
        return hot_paths(self.program, self.config.roots, self.config.cold)

    @cached_property
    def cost(self) -> CostModel:
        """The cost and purity model every rule and fix asks (one memo per run)."""
        return CostModel(self.program, self.catalog)

    @cached_property
    def compiled(self) -> dict[str, str]:
        """Functions inside a torch.compile'd region, each with the compiled root reaching it."""
        return compiled_functions(self.program, self.config.compile_decorators)

    @cached_property
    def estimates(self) -> Estimator:
        """Each finding's estimated time per step (cost per call x how often it runs)."""
        traced = traced_only(self.hot, self.compiled)
        return Estimator(self.program, self.hot, self.cost, self.config, traced, self.bodies)

    @cached_property
    def bodies(self) -> Bodies:
        """Function bodies parsed again on demand (statement structure, reads in conditions)."""
        return Bodies(self.program)

    @cached_property
    def receives(self) -> Receives:
        """Which calls take a new value from outside each time, and which functions return one."""
        return Receives(self.program, self.bodies, self.catalog, self.config.receive_calls)

    @cached_property
    def state(self) -> ProcessState:
        """The module state functions read, what changes it, and what calls change."""
        return ProcessState(self.program, self.bodies)

    @cached_property
    def writes(self) -> Writes:
        """Every statement that may rebind an attribute, and whether it may
        reach an object of a given class (shared by the cache sites and the
        hoist planner)."""
        return Writes(self.program)

    @cached_property
    def cache_analysis(self) -> CacheAnalysis:
        ca = CacheAnalysis(self.program, self.catalog, self.cost, self.writes, self.bodies, self.state)
        ca.collect()
        return ca

    @cached_property
    def invariant_states(self) -> list[InvariantState]:
        if not self.invariants:
            return []
        return InvariantCheck(self.program, self.invariants).states()

    @cached_property
    def cached_call_spans(self) -> frozenset:
        """(path, line, column) of every call that recomputes a value an
        attribute already caches (the uses of the cache sites)."""
        return frozenset((u.function.path, u.call.line, u.call.column) for u in self.cache_analysis.uses())

    @cached_property
    def _reexported(self) -> set:
        """Qualified names some module imports from another (``from m import X``)."""
        out: set[str] = set()
        for fi in self.program.indexes:
            out.update(fi.imports.values())
        return out

    def removable_names(self, g: FunctionInfo, c: CallSite) -> tuple[str, ...]:
        """Imported names a replaced call used that the codemod may drop if unused.

        Never in a package ``__init__``, never a name in ``__all__``, never a
        name another module imports from this one (a re-export).
        """
        fi = self.program.modules_by_path.get(g.path)
        if fi is None:
            return ()
        ctx = self.program.context(g)
        names: list[str] = []

        def walk(e) -> None:
            if not isinstance(e, tuple):
                return
            if len(e) == 2 and e[0] == "name" and isinstance(e[1], str):
                names.append(e[1])
                return
            for part in e:
                walk(part)

        walk(c.func)
        for a in c.args:
            walk(a)
        for _, v in c.kwargs:
            walk(v)
        out = []
        for n in dict.fromkeys(names):
            local = ctx.locals.get(n)
            if local is not None:
                # a function-local (lazy) import is the function's own business
                if all(a.kind == "import" for a in local):
                    out.append(n)
                continue
            if n in ctx.params or n not in fi.imports or fi.is_package:
                continue
            if fi.all_names and n in fi.all_names:
                continue
            if f"{fi.module}.{n}" in self._reexported:
                continue
            out.append(n)
        return tuple(out)
