"""Hoist to a local: the same call evaluated more than once in one run of a
function, computed once before its first use (:class:`LocalHoists`: where
the local goes, and the fix). The safety checks are its mixins, one question
each: what the call reads (:mod:`.callinputs`), what changes that between the
uses (:mod:`.between`, and the calls made there, :mod:`.callsbetween`), what
each use ran that the local runs once (:mod:`.runsonce`), what computing the
call earlier changes (:mod:`.earlier`), where the shared value goes
(:mod:`.sharedvalue`); :mod:`.naming` names the local, and :mod:`.syntax`
holds the syntax helpers they share.

See :mod:`cachelint.fixes.hoisting.planner` for what makes it safe.
"""

from __future__ import annotations

import ast

from ...facts.bodies import HoistPoint
from ...model import Applicability, Edit, EditKind, Fix, Span
from .between import ChangesBetween
from .callinputs import CallInputs
from .callsbetween import CallsBetween
from .earlier import ComputedEarlier
from .init import InitHoists
from .naming import LocalNames
from .runsonce import RunsOnce
from .sharedvalue import SharedValue
from .site import Site, _base_name, _call_expr, _loop_head, names_in
from .syntax import _introspection


class LocalHoists(
    ChangesBetween, CallsBetween, CallInputs, RunsOnce, ComputedEarlier, SharedValue, LocalNames, InitHoists
):
    """The hoist-to-a-local fix: where the local goes, and the safety checks,
    which its mixins make."""

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
        shared = None
        if any(self.mutated_at(f, x.call) for x in occ):
            shared = "a use changes the value in place"
        impure_arg = self._impure_argument(f, occ[0].call)
        if impure_arg is not None:
            reasons.append(impure_arg)
        used_up = self._used_up_argument(f, s)
        if used_up is not None:
            reasons.append(used_up)
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
            lazy = self._lazy_use(nodes, body)
            if lazy is not None:
                reasons.append(lazy)
            early = None if s.cost.total else self._effect_before_cover(s, nodes, body, hp)
            if early is not None:
                reasons.append(early)
            moved = self._moved_out(s, nodes[0], body, hp)
            if moved is not None:
                reasons.append(moved)
            self._check_between(s, occ, nodes, body, hp, reasons)
            shared = shared or self._shared_change(s, nodes, body)
        if shared is not None:
            reasons.append(f"{shared}, and the uses would now share one object")
        dunder = self._argument_dunder(s)
        if dunder is not None:
            reasons.append(dunder)
        local = self._fresh_local(f, _base_name(first))
        if body is not None:
            seen = _introspection(body)
            if seen is not None:
                reasons.append(f"{seen}: it would also see the new local `{local}`")
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
