"""A re-parsed body answers its walks from one pass: the same nodes, in the
same order, as the stack walks they replace (repeats and the local hoist
depend on that order)."""

from __future__ import annotations

import ast

from cachelint.facts.bodies import Body, walk_code, walk_scope
from cachelint.index.records import FunctionInfo

SOURCE = """
def step(self, batch: list, n: int = 3):
    total: int = 0
    width: "Width" = self.width(batch)
    for i, item in enumerate(batch):
        if item is None:
            continue
        while n > 0:
            n -= 1
            total += self.cost(item, key=lambda x: x.size)
        with self.lock as held:
            held.append([j * 2 for j in range(i)])

    def helper(x: int) -> int:
        inner = [y for y in range(x)]
        return sum(inner)

    class Local:
        attr: int = helper(2)

    try:
        total += helper(total)
    except (ValueError, KeyError) as e:
        raise RuntimeError(str(e)) from e
    finally:
        width = None
    match total:
        case 0:
            return None
        case _:
            return total, width, Local
"""


def _body() -> Body:
    node = ast.parse(SOURCE).body[0]
    f = FunctionInfo("m.step", "step", "m", "m.py", None, None, 2, 33, 0, [], [], False)
    return Body(f, node, 0, SOURCE.splitlines(keepends=True))


def test_scope_nodes_are_walk_scope_for_the_def_and_every_node_in_it():
    body = _body()
    asked = 0
    for n in [body.node, *walk_scope(body.node)]:
        got, want = body.scope_nodes(n), list(walk_scope(n))
        assert len(got) == len(want) and all(a is b for a, b in zip(got, want)), ast.dump(n)[:60]
        asked += 1
    assert asked > 100


def test_scope_nodes_of_a_nested_def_walk_its_own_body():
    body = _body()
    helper = next(n for n in walk_scope(body.node) if isinstance(n, ast.FunctionDef))
    got = body.scope_nodes(helper)
    assert any(isinstance(n, ast.Return) for n in got)
    assert [id(n) for n in got] == [id(n) for n in walk_scope(helper)]


def test_code_nodes_are_walk_code_without_annotations():
    body = _body()
    want = list(walk_code(body.node))
    assert [id(n) for n in body.code_nodes] == [id(n) for n in want]
    annotations = {id(n.annotation) for n in want if isinstance(n, ast.AnnAssign)}
    assert annotations and not annotations & {id(n) for n in body.code_nodes}


# CPython shares one instance of each context and operator node (``Load``,
# ``Add``...) between all the nodes that use it: they have no one parent
_SHARED = (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop)


def test_every_node_has_its_parent_even_inside_nested_scopes():
    body = _body()
    checked = 0
    for parent in ast.walk(body.node):
        for child in ast.iter_child_nodes(parent):
            if not isinstance(child, _SHARED):
                assert body._parent[id(child)][0] is parent
                checked += 1
    assert checked > 100
