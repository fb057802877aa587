"""Spell a canonical value as source text at a given place in a function.

Used to write fixes (``self.limits.encoder_len``)
and to name residual conditions in the use site's own terms. The candidates
are the bindings visible at that line: ``self``, the parameters, locals bound
once before the line, attributes the class binds once in its constructor
(inside the constructor itself: only those bound earlier in it), and the
module's own global names. The shortest spelling wins: fewest attribute hops,
then fewest characters.
"""

from __future__ import annotations

from ..index.expr import guard_extends
from .program import CONSTRUCTORS, FunctionContext, Program, Value
from .values import CmpKey, ConstRoot, GlobalRoot, IsNoneKey, SelfRoot, TruthyKey


def _bindings(ctx: FunctionContext, program: Program, line: int, use_guard) -> list[tuple[str, Value]]:
    f = ctx.f
    out: list[tuple[str, Value]] = []
    if ctx.self_name and ctx.self_class:
        out.append((ctx.self_name, (SelfRoot(ctx.self_class),)))
    for name in ctx.params:
        if name == ctx.self_name:
            continue
        v = program._canon_name(name, ctx, 0)
        if v is not None:
            out.append((name, v))
    for name, assigns in ctx.locals.items():
        if len(assigns) != 1 or name in ctx.params:
            continue
        a = assigns[0]
        if a.kind not in ("assign", "annassign", "walrus") or a.line >= line or a.in_loop:
            continue
        if a.guard and not guard_extends(use_guard, a.guard):
            continue  # bound only on some paths to the use
        v = program._canon_name(name, ctx, 0)
        if v is not None:
            out.append((name, v))
    if ctx.self_name and ctx.self_class:
        cls = program.classes.get(ctx.self_class)
        seen: set = set()
        in_ctor = f.name in CONSTRUCTORS
        for qn in program.mro(ctx.self_class):
            c = program.classes.get(qn)
            if c is None:
                continue
            attrs: set = set()
            for mqn in c.methods.values():
                m = program.functions.get(mqn)
                if m is None or m.name not in CONSTRUCTORS:
                    continue
                for a in m.assigns:
                    if a.target[0] == "attr" and a.target[1] == ("name", m.self_name):
                        if in_ctor and (m.qualname != f.qualname or a.line >= line):
                            continue
                        attrs.add(a.target[2])
            for attr in sorted(attrs - seen):
                seen.add(attr)
                ws = program.self_attr_writers(ctx.self_class, attr)
                if len(ws) != 1 or ws[0][1].guard:
                    continue
                v = program.self_attr_value(ctx.self_class, attr, 0)
                out.append((f"{ctx.self_name}.{attr}", v))
        del cls
    return out


def spell(value: Value, ctx: FunctionContext, program: Program, line: int, use_guard=()) -> str | None:
    """Shortest source text for ``value`` valid at ``line`` of ``ctx``."""
    if value is None:
        return None
    best = None
    for text, bv in _bindings(ctx, program, line, use_guard):
        if bv is None or len(bv) > len(value) or value[: len(bv)] != bv:
            continue
        rest = value[len(bv) :]
        if any(not isinstance(r, str) for r in rest):
            continue
        cand = text + "".join("." + r for r in rest)
        score = (len(rest) + text.count("."), len(cand))
        if best is None or score < best[0]:
            best = (score, cand)
    if best is not None:
        return best[1]
    root = value[0]
    if isinstance(root, GlobalRoot):
        local = _global_local_name(root.qualname, ctx, program)
        if local is not None:
            return local + "".join("." + r for r in value[1:] if isinstance(r, str))
    if isinstance(root, ConstRoot) and len(value) == 1:
        return repr(root.value)
    return None


def _global_local_name(qn: str, ctx: FunctionContext, program: Program) -> str | None:
    fi = ctx.module
    if fi is None:
        return None
    for name in list(fi.imports) + list(fi.defs) + list(fi.globals):
        if name in ctx.locals or name in ctx.params:
            continue
        r = program.resolve_name(fi.module, name)
        if r == qn:
            return name
        if r is not None and qn.startswith(r + "."):
            return name + qn[len(r) :]
    return None


def spell_atom(atom, ctx: FunctionContext, program: Program, line: int, use_guard=()) -> str | None:
    """A guard atom (:class:`~cachelint.semantic.guards.Atom`) spelled in source valid at
    ``line`` of ``ctx``, or None when one of its values has no spelling there."""
    key = atom.key

    def sp(v):
        return spell(v, ctx, program, line, use_guard) if v is not None else None

    if isinstance(key, TruthyKey):
        s = sp(key.value)
        if s is not None:
            return s if atom.positive else f"not {s}"
    elif isinstance(key, IsNoneKey):
        s = sp(key.value)
        if s is not None:
            return f"{s} is None" if atom.positive else f"{s} is not None"
    elif isinstance(key, CmpKey):
        left, right = sp(key.left), sp(key.right)
        if left is not None and right is not None:
            s = f"{left} {key.op} {right}"
            return s if atom.positive else f"not ({s})"
    return None
