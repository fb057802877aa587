"""Guards as conjunctions of atoms, and when one guard implies another.

A guard from the index (``(condition, polarity)`` pairs) is split into atoms
over canonical values, so that ``if self.is_encoder_decoder:`` in one class and
``elif self.model_config.is_encoder_decoder:`` in another can be compared:

    TruthyKey(value)           ``if value:``
    IsNoneKey(value)           ``if value is None:``
    CmpKey(op, left, right)    any other single comparison over known values
    OpaqueKey(where, expr)     anything cachelint cannot evaluate (implied
                               only by the same expression in the same
                               function, and never when a part of it could
                               not be expressed: ``(x := a)``, ``n + 1``)

(the records of :mod:`cachelint.semantic.values`, an atom's ``key``), each
with a polarity. ``not``, ``and`` (when true) and ``or`` (when false) are
distributed; other shapes become one opaque atom.

Implication is deliberately simple and sound for what it accepts: an atom is
implied by the same atom, and by a few facts about attribute access (if
``a.b`` is truthy then ``a`` is not None and, for config objects, truthy).
Whatever is not implied is the *residual* a fix leaves unproven.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..index.expr import has_unknown, render
from .program import FunctionContext, Program
from .values import AtomKey, CmpKey, IsNoneKey, OpaqueKey, TruthyKey


@dataclass(frozen=True)
class Atom:
    key: AtomKey
    positive: bool
    text: str  # the condition as written where it was found

    def negated_text(self) -> str:
        return self.text if self.positive else f"not {self.text}" if " " not in self.text else f"not ({self.text})"


def _decompose(expr, positive: bool, ctx: FunctionContext, program: Program, out: list) -> None:
    k = expr[0]
    if k == "not":
        _decompose(expr[1], not positive, ctx, program, out)
        return
    if (k == "and" and positive) or (k == "or" and not positive):
        for e in expr[1]:
            _decompose(e, positive, ctx, program, out)
        return
    text = render(expr)
    if k == "cmp" and len(expr[1]) == 1:
        op = expr[1][0]
        left, right = expr[2], expr[3][0]
        if op in ("is", "is not") and right == ("const", None):
            v = program.canon(left, ctx)
            if v is not None:
                pos = positive if op == "is" else not positive
                out.append(Atom(IsNoneKey(v), pos, render(left) + " is None"))
                return
        if op in ("==", "!=", "<", "<=", ">", ">=", "in", "not in", "is", "is not"):
            lv = program.canon(left, ctx)
            rv = program.canon(right, ctx)
            if lv is not None and rv is not None:
                neg = {"!=": "==", "not in": "in", "is not": "is"}
                if op in neg:
                    out.append(Atom(CmpKey(neg[op], lv, rv), not positive, f"{render(left)} {neg[op]} {render(right)}"))
                else:
                    out.append(Atom(CmpKey(op, lv, rv), positive, text))
                return
    if k in ("name", "attr", "call"):
        v = program.canon(expr, ctx)
        if v is not None:
            out.append(Atom(TruthyKey(v), positive, text))
            return
    out.append(Atom(OpaqueKey(ctx.f.qualname if ctx else "", expr), positive, text))


def guard_atoms(guard, ctx: FunctionContext, program: Program) -> list[Atom]:
    out: list[Atom] = []
    for cond, positive in guard:
        _decompose(cond, positive, ctx, program, out)
    # drop duplicates, keep order
    seen = set()
    uniq = []
    for a in out:
        if (a.key, a.positive) not in seen:
            seen.add((a.key, a.positive))
            uniq.append(a)
    return uniq


def _extends(longer, shorter) -> bool:
    return len(longer) > len(shorter) and longer[: len(shorter)] == shorter


def implied(atom: Atom, facts: list[Atom]) -> bool:
    key, pos = atom.key, atom.positive
    if isinstance(key, OpaqueKey) and has_unknown(key.expr):
        # a condition cachelint could not express (a walrus, an arithmetic
        # test): two different ones look alike, so none implies another
        return False
    for f in facts:
        if f.key == key and f.positive == pos:
            return True
    if isinstance(key, TruthyKey) and pos:
        v = key.value
        # `a.b` truthy => `a` was not None (attribute access succeeded)
        return any(isinstance(f.key, TruthyKey) and f.positive and _extends(f.key.value, v) for f in facts)
    if isinstance(key, IsNoneKey) and not pos:
        v = key.value
        return any(
            (isinstance(f.key, TruthyKey) and f.positive and (f.key.value == v or _extends(f.key.value, v)))
            or (isinstance(f.key, IsNoneKey) and not f.positive and _extends(f.key.value, v))
            for f in facts
        )
    if isinstance(key, TruthyKey) and not pos:
        v = key.value
        return any(f.key == IsNoneKey(v) and f.positive for f in facts)
    return False


def residual(required: list[Atom], facts: list[Atom]) -> list[Atom]:
    """Atoms of ``required`` that ``facts`` do not imply, minus redundant ones."""
    left = [a for a in required if not implied(a, facts)]
    # an atom implied by the other residual atoms adds nothing to the message
    out = []
    for i, a in enumerate(left):
        others = left[:i] + left[i + 1 :]
        if implied(a, others):
            continue
        out.append(a)
    return out


def substitute(atom: Atom, anchor_root: tuple, replacement, program: Program, depth: int = 0) -> Atom:
    """Re-root an atom of a fill site onto the object found at a use site."""

    def sub(v):
        if isinstance(v, tuple) and v and v[0] == anchor_root:
            out = replacement
            for attr in v[1:]:
                out = program._attr(out, attr, 0)
            return out
        return v

    key = atom.key
    if isinstance(key, TruthyKey):
        return Atom(TruthyKey(sub(key.value)), atom.positive, atom.text)
    if isinstance(key, IsNoneKey):
        return Atom(IsNoneKey(sub(key.value)), atom.positive, atom.text)
    if isinstance(key, CmpKey):
        return Atom(CmpKey(key.op, sub(key.left), sub(key.right)), atom.positive, atom.text)
    return atom
