"""The call graph: what each call may run, as the hot-path walk and ``cachelint callgraph`` see it.

One small program per capability; each asserts edges that the call graph
lacked before the capability existed (and, where it matters for a linter, an
edge that must not appear).
"""

from __future__ import annotations

import json
import textwrap

import pytest

from cachelint.api import call_graph as api_call_graph
from cachelint.cli import main
from cachelint.config import ConfigError, CustomOpRegistrar, HotRoot, parse_table
from cachelint.index.walk import index_source
from cachelint.semantic.callgraph import call_graph, hot_paths
from cachelint.semantic.program import Program


def _program(*modules: tuple[str, str]) -> Program:
    return Program(
        [index_source(textwrap.dedent(src), f"{mod.replace('.', '/')}.py", mod, False) for mod, src in modules]
    )


def _graph(src: str, *more: tuple[str, str]) -> dict:
    return call_graph(_program(("m", src), *more))


def _hot(src: str, root: str) -> set:
    hp = hot_paths(_program(("m", src)), (HotRoot(root, "per-step"),))
    return set(hp.chains)


def test_calls_reach_subclass_overrides_when_the_receiver_may_be_a_subclass():
    src = """
    import abc

    class Base:
        def run(self):
            return self.step()
        def step(self):
            return 0
        def hook(self):
            raise NotImplementedError

    class Fast(Base):
        def step(self):
            return 1
        def hook(self):
            return 1

    class Other:
        def step(self):
            return 2
        def hook(self):
            return 2

    class Platform(abc.ABC):
        @abc.abstractmethod
        def units(self) -> int:
            return 0

    class Cuda(Platform):
        def units(self):
            return 1

    def drive(b: Base, p: Platform):
        b.hook()
        b.step()
        p.units()

    def exact():
        Base().hook()
    """
    g = _graph(src)
    # self.step() in the base: the template method reaches the subclass's hook
    assert set(g["m.Base.run"]) == {"m.Base.step", "m.Fast.step"}
    # on an object typed by its base, the base's method (the implementation is configuration)
    assert set(g["m.drive"]) == {"m.Base.hook", "m.Base.step", "m.Platform.units"}
    assert "m.Other.hook" not in g["m.drive"]  # not a subclass
    # a receiver just constructed is of exactly that class
    assert g["m.exact"] == ["m.Base.hook"]
    assert "m.Fast.step" in _hot(src, "m.Base.run")


def test_calls_on_a_protocol_reach_its_implementations():
    src = """
    from typing import Protocol

    class Sampler(Protocol):
        def sample(self, x): ...
        def reset(self): ...

    class Greedy:
        def sample(self, x):
            return x
        def reset(self):
            pass

    class Partial:
        def sample(self, x):
            return x

    def step(s: Sampler):
        return s.sample(1)
    """
    g = _graph(src)
    assert "m.Greedy.sample" in g["m.step"]
    assert "m.Partial.sample" not in g["m.step"]  # does not implement the whole protocol


def test_dunder_calls_resolve_to_the_class_methods():
    src = """
    class Table:
        def __len__(self):
            return 3
        def __getitem__(self, i):
            return i
        def __iter__(self):
            return self
        def __next__(self):
            raise StopIteration
        def __contains__(self, k):
            return True
        def __enter__(self):
            return self
        def __exit__(self, *a):
            return None

    def use(t: Table):
        n = len(t)
        x = t[0]
        for y in t:
            pass
        if 1 in t:
            pass
        with t:
            pass
    """
    g = _graph(src)
    assert {
        "m.Table.__len__",
        "m.Table.__getitem__",
        "m.Table.__iter__",
        "m.Table.__next__",
        "m.Table.__contains__",
        "m.Table.__enter__",
        "m.Table.__exit__",
    } <= set(g["m.use"])
    assert "m.Table.__getitem__" in _hot(src, "m.use")


def test_cls_is_typed_inside_classmethods():
    src = """
    class Config:
        def __init__(self, n):
            self.n = n
        @classmethod
        def make(cls, n):
            c = cls(n)
            cls.check(n)
            return c
        @staticmethod
        def check(n):
            return n
    """
    g = _graph(src)
    assert set(g["m.Config.make"]) >= {"m.Config.__init__", "m.Config.check"}


def test_a_class_object_typed_type_of_a_class_reaches_its_methods_and_constructor():
    """``get_backend() -> type[Backend]`` returns a class: a method called on
    the result is the class's, calling it constructs one. Which subclass it is
    configuration chooses, as for an object typed by a base class: only a
    method the base does not define reaches the subclasses'."""
    src = """
    from typing import Optional

    class Backend:
        @classmethod
        def update(cls, ctx):
            return ctx

    class CudaBackend(Backend):
        @classmethod
        def update(cls, ctx):
            return cls.prepare(ctx)

        @classmethod
        def prepare(cls, ctx):
            return ctx

    class Impl:
        def __init__(self, n):
            self.n = n

    def get_backend() -> type[Backend]:
        return CudaBackend

    def maybe_impl() -> Optional[type[Impl]]:
        return Impl

    def step(ctx):
        return get_backend().update(ctx)

    def prepare_step(ctx):
        return get_backend().prepare(ctx)

    def build(impl_cls: "type[Impl]", n):
        return impl_cls(n)

    def build_maybe(n):
        return maybe_impl()(n)
    """
    g = _graph(src)
    assert "m.Backend.update" in g["m.step"] and "m.CudaBackend.update" not in g["m.step"]
    assert "m.CudaBackend.prepare" in g["m.prepare_step"]
    assert "m.Impl.__init__" in g["m.build"]
    assert "m.Impl.__init__" in g["m.build_maybe"]
    assert "m.CudaBackend.prepare" in _hot(src, "m.prepare_step")


def test_typevar_bounds_and_generic_annotations():
    src = """
    from typing import Generic, TypeVar

    class Layer:
        def forward(self):
            return 1

    L = TypeVar("L", bound=Layer)
    Alias = Layer

    class Box(Generic[L]):
        def __init__(self, item: L):
            self.item = item
        def get(self) -> L:
            return self.item

    def run(layer: L):
        layer.forward()

    def run_alias(layer: "Alias"):
        layer.forward()

    def unbox(b: Box[Layer]):
        b.get().forward()
    """
    g = _graph(src)
    assert "m.Layer.forward" in g["m.run"]
    assert "m.Layer.forward" in g["m.run_alias"]
    assert "m.Box.get" in g["m.unbox"] and "m.Layer.forward" in g["m.unbox"]


def test_the_implementation_behind_overload_stubs():
    src = """
    from typing import overload

    @overload
    def get(x: int) -> int: ...
    @overload
    def get(x: str) -> str: ...
    def get(x):
        return helper(x)

    def helper(x):
        return x

    def caller():
        return get(1)
    """
    p = _program(("m", src))
    assert p.functions["m.get"].returns_annotation is None  # the implementation, not a stub
    assert "m.helper" in call_graph(p)["m.get"]
    assert "m.helper" in _hot(src, "m.caller")


def test_property_return_types_are_inferred_when_not_annotated():
    src = """
    class Engine:
        def step(self):
            return 1

    class Runner:
        def __init__(self):
            self._engine = Engine()
        @property
        def engine(self):
            return self._engine
        def tick(self):
            self.engine.step()

    def factory():
        return Engine()

    def use_factory():
        factory().step()
    """
    g = _graph(src)
    assert "m.Engine.step" in g["m.Runner.tick"]
    assert "m.Engine.step" in g["m.use_factory"]


def test_callables_in_attributes_dicts_registries_and_partials():
    src = """
    import functools

    def relu(x):
        return x

    def gelu(x):
        return x

    def silu(x):
        return x

    ACTIVATIONS = {"relu": relu, "gelu": gelu}
    HANDLERS = []
    HANDLERS.append(silu)

    def register(name, fn):
        ACTIVATIONS[name] = fn

    class Layer:
        def __init__(self):
            self.act = gelu

        def forward(self, x):
            return self.act(x)

    def by_name(name):
        return ACTIVATIONS[name](1)

    def fixed():
        return ACTIVATIONS["relu"](1)

    def first():
        return HANDLERS[0](1)

    bound = functools.partial(relu, 1)

    def call_partial():
        return bound()

    def call_local_partial():
        p = functools.partial(gelu)
        return p(2)
    """
    g = _graph(src)
    assert g["m.Layer.forward"] == ["m.gelu"]
    assert set(g["m.by_name"]) == {"m.relu", "m.gelu"}  # any key: every entry
    assert g["m.fixed"] == ["m.relu"]  # a constant key: its entry
    assert g["m.first"] == ["m.silu"]
    assert g["m.call_partial"] == ["m.relu"]
    assert "m.gelu" in g["m.call_local_partial"]
    assert "m.gelu" in _hot(src, "m.Layer.forward")


def test_what_a_callable_returns_follows_its_callable_annotation():
    # a registry of weak references (`dict[str, Callable[[], X | None]]`), a
    # factory parameter and a factory attribute: the value called is a
    # function cachelint does not see, but its annotation says what it gives
    src = """
    import weakref
    from typing import Callable, Optional

    class Group:
        def all_reduce(self, x):
            return x

    class Other:
        def all_reduce(self, x):
            return x

    _groups: dict[str, Callable[[], Optional[Group]]] = {}

    def register(group: Group):
        _groups["tp"] = weakref.ref(group)

    def reduce_by_name(name: str, x):
        group = _groups[name]()
        assert group is not None
        return group.all_reduce(x)

    def reduce_with(make: Callable[[], Group], x):
        return make().all_reduce(x)

    class Layer:
        factory: "Callable[..., Group]"

        def forward(self, x):
            g = self.factory()
            return g.all_reduce(x)

    def untyped(table, x):
        return table["tp"]().all_reduce(x)
    """
    g = _graph(src)
    assert "m.Group.all_reduce" in g["m.reduce_by_name"]
    assert "m.Group.all_reduce" in g["m.reduce_with"]
    assert "m.Group.all_reduce" in g["m.Layer.forward"]
    assert "m.Other.all_reduce" not in g["m.reduce_by_name"] + g["m.reduce_with"] + g["m.Layer.forward"]
    assert not [e for e in g["m.untyped"] if e.endswith("all_reduce")]  # nothing declares what it returns


def test_calling_a_torch_module_runs_its_forward():
    # nn.Module.__call__ is torch's: it runs the subclass's forward. The
    # python preset says so (`call-methods`); without it the call runs
    # nothing cachelint can see.
    src = """
    from torch import nn

    class Norm(nn.Module):
        def forward(self, x):
            return x

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = Norm()

        def forward(self, x):
            return self.norm(x)

    class Callable_(nn.Module):
        def __call__(self, x):
            return x

        def forward(self, x):
            return x

    class ForCausalLM(nn.Module):
        model: nn.Module  # declared by the library base: what is stored decides

        def __init__(self):
            super().__init__()
            self.model = Block()

        def forward(self, x):
            return self.model(x)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = [Block(), Block()]
            self.own = Callable_()

        def forward(self, x, block: Block):
            for b in self.blocks:
                x = b(x)
            x = block(x)
            return self.own(x)
    """
    program = Program(
        [index_source(textwrap.dedent(src), "m.py", "m", False)], call_methods=("torch.nn.Module.forward",)
    )
    g = call_graph(program)
    assert g["m.Block.forward"] == ["m.Norm.forward"]
    assert "m.Block.forward" in g["m.Model.forward"]
    assert "m.Callable_.__call__" in g["m.Model.forward"]  # its own __call__ wins
    assert "m.Callable_.forward" not in g["m.Model.forward"]
    assert g["m.ForCausalLM.forward"] == ["m.Block.forward"]
    assert not [e for e in _graph(src)["m.Model.forward"] if e.endswith(".forward")]  # not without the preset
    hp = hot_paths(program, (HotRoot("m.Model.forward", "per-step"),))
    assert "m.Norm.forward" in hp.chains
    # torch's __call__ runs hooks before forward: purity and effects, which read
    # callee_function, still see a call they cannot read
    f = program.functions["m.Block.forward"]
    (call,) = f.calls
    assert program.call_function(f, call) is None
    assert [t.qualname for t in program.call_targets(f, call)] == ["m.Norm.forward"]


def test_module_lists_dicts_and_handler_tables_held_by_self():
    src = """
    from torch import nn

    class Block(nn.Module):
        def forward(self, x):
            return x

    class Head(nn.Module):
        def forward(self, x):
            return x

    class Model(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.layers = nn.ModuleList([Block() for _ in range(n)])
            self.heads = nn.ModuleDict({"a": Head()})
            self.handlers = {"a": self.handle_a, "b": self.handle_b}

        def handle_a(self, x):
            return x

        def handle_b(self, x):
            return x

        def forward(self, x, i, k):
            for layer in self.layers:
                x = layer(x)
            y = self.layers[i](x)
            z = self.heads["a"](y)
            return self.handlers[k](z)

        def first(self, x):
            return self.handlers["a"](x)
    """
    program = Program(
        [index_source(textwrap.dedent(src), "m.py", "m", False)], call_methods=("torch.nn.Module.forward",)
    )
    g = call_graph(program)
    assert {"m.Block.forward", "m.Head.forward", "m.Model.handle_a", "m.Model.handle_b"} <= set(g["m.Model.forward"])
    assert g["m.Model.first"] == ["m.Model.handle_a"]  # a constant key: its entry


def test_extend_call_methods_names_another_library_s_dispatch(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "ops.py").write_text(
        textwrap.dedent(
            """
            from mylib import Op

            class Scale(Op):
                def run(self, x):
                    return x

            def apply(op: Scale, x):
                return op(x)
            """
        )
    )
    cfg = parse_table({"extend-call-methods": ["mylib.Op.run"]}, "pyproject.toml")
    assert api_call_graph([str(pkg)], cfg)["pkg.ops.apply"] == ["pkg.ops.Scale.run"]
    assert "pkg.ops.Scale.run" not in api_call_graph([str(pkg)]).get("pkg.ops.apply", [])
    with pytest.raises(ConfigError):
        parse_table({"extend-call-methods": ["run"]}, "pyproject.toml")


def test_module_getattr_pep_562():
    lazy = """
    def __getattr__(name):
        return _load(name)

    def _load(name):
        return name

    def defined():
        return 1
    """
    src = """
    import lazy
    from lazy import thing

    def use():
        lazy.anything()
        thing()
        lazy.defined()
    """
    g = _graph(src, ("lazy", lazy))
    assert set(g["m.use"]) == {"lazy.__getattr__", "lazy.defined"}


def test_super_calls_and_c3_method_resolution_order():
    src = """
    class A:
        def __init__(self):
            pass
        def f(self):
            return 0

    class B(A):
        pass

    class C(A):
        def f(self):
            return super().f()

    class D(B, C):
        def __init__(self):
            super().__init__()

    def use():
        D().f()
    """
    p = _program(("m", src))
    assert p.mro("m.D") == ["m.D", "m.B", "m.C", "m.A"]
    g = call_graph(p)
    assert set(g["m.use"]) == {"m.D.__init__", "m.C.f"}
    assert set(g["m.C.f"]) == {"m.A.f", "builtins.super"}
    assert set(g["m.D.__init__"]) == {"m.A.__init__", "builtins.super"}


def test_export_follows_functions_passed_as_arguments_and_lambdas():
    src = """
    def apply(fn, x):
        return fn(x)

    def double(x):
        return 2 * x

    apply(double, 1)
    apply(lambda x: x, 2)
    """
    g = _graph(src)
    assert g["m"] == ["m.apply"]
    assert set(g["m.apply"]) == {"m.double", "m.<lambda1>"}


def test_module_code_and_external_callees(tmp_path):
    (tmp_path / "m.py").write_text("import os\n\ndef f():\n    return os.path.join('a', 'b')\n\nf()\nlen([])\n")
    g = api_call_graph([str(tmp_path)])
    assert g["m"] == ["m.f", "builtins.len"]
    assert g["m.f"] == ["os.path.join"]
    assert api_call_graph([str(tmp_path)], external=False)["m.f"] == []


def test_cli_callgraph_json_and_text(tmp_path, capsys):
    (tmp_path / "m.py").write_text("def g():\n    pass\n\ndef f():\n    g()\n")
    assert main(["callgraph", str(tmp_path), "--output-format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"m": [], "m.f": ["m.g"], "m.g": []}
    assert main(["callgraph", str(tmp_path)]) == 0
    out = capsys.readouterr()
    assert "m.f\n    -> m.g\n" in out.out
    assert "1 call edges" in out.err
    assert main(["callgraph", str(tmp_path / "missing")]) == 2


@pytest.mark.parametrize("n", [1, 2])
def test_lambdas_are_numbered_per_scope(n):
    src = "def f():\n" + "".join(f"    a{i} = lambda: g()\n" for i in range(n)) + "def g():\n    pass\n"
    p = _program(("m", src))
    names = sorted(q for q in p.functions if "<lambda" in q)
    assert names == [f"m.f.<locals>.<lambda{i + 1}>" for i in range(n)]
    assert call_graph(p)[names[-1]] == ["m.g"]


def test_the_hot_walk_sees_through_lambdas_and_registries_of_them():
    src = """
    def expensive():
        return 1

    OPS = {"a": lambda: expensive()}

    class Runner:
        def step(self, name):
            return OPS[name]()
    """
    hot = _hot(src, "m.Runner.step")
    assert "m.expensive" in hot
    assert not any("<lambda" in q for q in hot)  # no finding is ever placed in a lambda's body


def test_builtins_that_call_their_function_arguments_and_decorator_factories():
    src = """
    def key(x):
        return x

    def factory():
        def dec(f):
            return f
        return dec

    @factory()
    def decorated():
        pass

    def order(xs):
        return sorted(xs, key=key), list(map(key, xs))
    """
    g = _graph(src)
    assert set(g["m.order"]) == {"builtins.sorted", "m.key", "builtins.list", "builtins.map"}
    assert {"m.factory", "m.factory.<locals>.dec"} <= set(g["m"])


def test_edges_whose_arguments_are_not_the_callees_hide_them_from_readers():
    """``map(scale, xs)`` reaches ``scale`` but does not pass ``xs`` as its
    ``x``: the fix planner, which asks a hot function's callers what they pass
    for a parameter, must see nothing it could take as ``x``."""
    src = """
    import functools

    def scale(x, factor=2):
        return x * factor

    def step(xs):
        a = list(map(scale, xs))
        p = functools.partial(scale, 3)
        b = p(4)
        return scale(5), a, b
    """
    p = _program(("m", src))
    hp = hot_paths(p, (HotRoot("m.step", "per-step"),))
    calls = hp.callers("m.scale", 10)
    assert len(calls) == 3
    by_args = sorted((c.args, c.kwargs) for _, c in calls)
    assert by_args[0] == ((), ((None, ("?",)),)) == by_args[1]  # map(...) and p(4): hidden
    assert by_args[2] == ((("const", 5),), ())  # scale(5): as written
    # the export does not take them as arguments either: scale's x is no function
    assert call_graph(p)["m.scale"] == []


def test_an_attribute_typed_by_a_typevar_takes_the_subclass_binding():
    """``self.info: I`` in ``Processor(Generic[I])``, and ``class LlavaProcessor(Processor[LlavaInfo])``:
    in LlavaProcessor, ``self.info`` is a LlavaInfo, not any subclass of the bound."""
    src = """
    from typing import Generic, TypeVar

    class Info:
        def size(self):
            return 0

    class LlavaInfo(Info):
        def size(self):
            return 1

    class QwenInfo(Info):
        def size(self):
            return 2

    I = TypeVar("I", bound=Info)

    class Processor(Generic[I]):
        def __init__(self, info: I):
            self.info = info

    class LlavaProcessor(Processor[LlavaInfo]):
        def apply(self):
            return self.info.size()

    class AnyProcessor(Processor[I]):
        def apply(self):
            return self.info.size()
    """
    g = _graph(src)
    assert g["m.LlavaProcessor.apply"] == ["m.LlavaInfo.size"]
    assert g["m.AnyProcessor.apply"] == ["m.Info.size"]  # the bound (a concrete method: no overrides)


def test_typevar_bindings_pass_through_intermediate_generic_bases():
    src = """
    from typing import Generic, TypeVar

    class Info:
        def size(self):
            return 0

    class NextInfo(Info):
        def size(self):
            return 1

    class OtherInfo(Info):
        def size(self):
            return 2

    I = TypeVar("I", bound=Info)
    J = TypeVar("J", bound=Info)

    class Processor(Generic[I]):
        info: I

    class NextBase(Processor[J]):
        pass

    class NextProcessor(NextBase[NextInfo]):
        def apply(self):
            return self.info.size()
    """
    assert _graph(src)["m.NextProcessor.apply"] == ["m.NextInfo.size"]


def test_a_plug_in_point_with_many_implementations_is_not_fanned_out_from_a_typed_object():
    impls = "".join(f"class B{i}(Builder):\n    def text(self):\n        return {i}\n" for i in range(14))
    src = (
        "class Builder:\n    def text(self):\n        raise NotImplementedError\n"
        "    def run(self):\n        return self.text()\n" + impls + "def use(b: Builder):\n    return b.text()\n"
    )
    g = call_graph(_program(("m", src)))
    assert g["m.use"] == ["m.Builder.text"]
    assert len(g["m.Builder.run"]) == 15  # on self (a template method): every override
    # a protocol's implementations, unless there are more than MAX_OVERRIDES
    proto = src.replace("class Builder:", "from typing import Protocol\nclass Builder(Protocol):").replace(
        "(Builder):", ":"
    )
    assert call_graph(_program(("m", proto)))["m.use"] == ["m.Builder.text"]  # 14 > MAX_OVERRIDES


def test_loop_variables_take_the_classes_of_the_iterables_elements():
    src = """
    class Manager:
        def allocate(self):
            return 1

    class A:
        def run(self):
            return 1

    class B:
        def run(self):
            return 2

    def make(i) -> Manager:
        return Manager()

    class Coordinator:
        def __init__(self, n, named: dict[str, A]):
            self.managers = tuple(make(i) for i in range(n))
            self.pair = [A(), B()]
            self.named = named

        def step(self):
            for m in self.managers:
                m.allocate()

        def comprehension(self):
            return [m.allocate() for m in self.managers]

        def numbered(self):
            for i, r in enumerate(self.pair):
                r.run()

        def values(self):
            for k, v in self.named.items():
                v.run()

    def annotated(rs: list[A], ts: "tuple[B, ...]"):
        for r in rs:
            r.run()
        for t in ts:
            t.run()

    def rebound(rs: list[A]):
        for r in rs:
            r.run()
        r = B()
        r.run()

    class Queue:
        def __init__(self, by_id: dict[int, A]):
            self.running: "deque[A]" = deque()
            self.by_id = by_id
            self.table = {"x": B()}

        def schedule(self):
            queue = self.running
            while queue:
                head = queue[0]  # bound in a loop: no one value, but an A
                head.run()

        def lookups(self, i):
            self.by_id[i].run()
            self.table["x"].run()
    """
    g = _graph(src)
    assert "m.Manager.allocate" in g["m.Coordinator.step"]
    assert "m.Manager.allocate" in g["m.Coordinator.comprehension"]
    assert {"m.A.run", "m.B.run"} <= set(g["m.Coordinator.numbered"])
    assert "m.A.run" in g["m.Coordinator.values"]
    assert {"m.A.run", "m.B.run"} <= set(g["m.annotated"])
    # a name bound by a loop and by an assignment may be either
    assert set(g["m.rebound"]) == {"m.A.run", "m.B.run"}
    # a subscript gives a sequence's elements and a mapping's values
    assert g["m.Queue.schedule"] == ["m.A.run"]  # `self.running: deque[A]`, annotated where it is assigned
    assert set(g["m.Queue.lookups"]) == {"m.A.run", "m.B.run"}
    # before: a loop variable had no type, and these calls no edge
    assert _hot(src, "m.Coordinator.step") >= {"m.Manager.allocate"}


def test_a_union_annotated_receiver_reaches_each_members_method():
    src = """
    from typing import Union
    import abc

    class Base(abc.ABC):
        @abc.abstractmethod
        def decode(self, ids): ...

    class Mistral(Base):
        def decode(self, ids):
            return "m"

    class Other(Base):
        def decode(self, ids):
            return "o"

    class Plain:
        def decode(self, ids):
            return "p"

    AnyTokenizer = Union[Plain, Base]

    def detokenize(tok: AnyTokenizer, ids):
        return tok.decode(ids)

    def either(tok: "Plain | None"):
        return tok.decode([])

    def declared(tok: Base):
        return tok.decode([])
    """
    g = _graph(src)
    # the stub's implementations: one of them runs, whichever the member is
    assert set(g["m.detokenize"]) >= {"m.Plain.decode", "m.Base.decode", "m.Mistral.decode", "m.Other.decode"}
    assert "m.Plain.decode" in g["m.either"]
    # a receiver declared as the base alone is unchanged: its implementation is chosen by configuration
    assert g["m.declared"] == ["m.Base.decode"]


def test_elements_of_an_attribute_of_an_object_a_factory_returns():
    """`for m in self.coordinator.managers` where `coordinator` comes from a factory that returns one of
    two subclasses (no one type: the classes come from its annotated return)."""
    src = """
    class Manager:
        def take(self):
            return []

    def make_manager(i) -> Manager:
        return Manager()

    class Coordinator:
        def __init__(self, n):
            self.managers = tuple(make_manager(i) for i in range(n))

    class PlainCoordinator(Coordinator):
        pass

    class CachingCoordinator(Coordinator):
        pass

    def make_coordinator(n, caching) -> Coordinator:
        if not caching:
            return PlainCoordinator(n)
        return CachingCoordinator(n)

    class Cache:
        def __init__(self, n):
            self.coordinator = make_coordinator(n, n > 1)

        def drain(self):
            out = []
            for m in self.coordinator.managers:
                out.extend(m.take())
            return out
    """
    assert "m.Manager.take" in _graph(src)["m.Cache.drain"]


_REGISTRARS = (
    CustomOpRegistrar(
        "*.register_op", op=("op_name", 0), function=("op_func", 1), namespace="eng", library=("target_lib", 2)
    ),
    CustomOpRegistrar("torch.library.custom_op", decorator=True, op=("name", 0)),
)


def _ops_graph(src: str, registrars=_REGISTRARS) -> dict:
    util = """
    def register_op(op_name, op_func, target_lib=None):
        pass
    """
    return call_graph(
        Program(
            [
                index_source(textwrap.dedent(util), "util.py", "util", False),
                index_source(textwrap.dedent(src), "m.py", "m", False),
            ],
            custom_op_registrars=registrars,
        ),
        external=False,
    )


def test_a_torch_custom_op_call_runs_the_function_registered_under_its_name():
    src = """
    import torch
    from torch.library import Library
    from util import register_op

    other_lib = Library("other", "FRAGMENT")

    def all_reduce(x):
        return x

    def gather(x):
        return x

    def scatter(x):
        return x

    def unnamed(x):
        return x

    register_op(op_name="all_reduce", op_func=all_reduce)
    register_op("gather", gather, other_lib)
    NAME = "unnamed"
    register_op(NAME, unnamed)

    def setup():
        register_op("scatter", scatter)

    def hidden(x):
        return x

    SPEC = {"op_name": "renamed"}
    register_op(op_func=hidden, **SPEC)

    @torch.library.custom_op("mylib::fused", mutates_args=())
    def fused(x):
        return x

    def overload(x):
        return torch.ops.eng.all_reduce.default(x)

    def forward(x):
        torch.ops.eng.all_reduce(x)
        torch.ops.other.gather(x)
        torch.ops.eng.scatter(x)
        torch.ops.mylib.fused(x)

    def elsewhere(x):
        torch.ops._C.all_reduce(x)
        torch.ops.eng.gather(x)
        torch.ops.eng.unnamed(x)
        torch.ops.eng.hidden(x)
    """
    g = _ops_graph(src)
    assert sorted(set(g["m.forward"])) == ["m.all_reduce", "m.fused", "m.gather", "m.scatter"]
    # an overload of the op too; not the C++ namespace's op of the same name, nor
    # an op registered in another library, nor one whose name is not a constant
    # string or may come through **kwargs (never guessed from the function's name)
    assert g["m.overload"] == ["m.all_reduce"]
    assert g["m.elsewhere"] == []
    # without registrars (no preset names one) no call of torch.ops is an edge
    assert _ops_graph(src, ())["m.forward"] == []


def test_the_hot_walk_enters_custom_ops():
    src = """
    import torch
    from util import register_op

    def collective(x):
        return probe(x)

    def probe(x):
        return x

    register_op("collective", collective)

    class Layer:
        def forward(self, x):
            return torch.ops.eng.collective(x)
    """
    program = Program(
        [
            index_source("def register_op(op_name, op_func, target_lib=None):\n    pass\n", "util.py", "util", False),
            index_source(textwrap.dedent(src), "m.py", "m", False),
        ],
        custom_op_registrars=_REGISTRARS,
    )
    hp = hot_paths(program, (HotRoot("*.Layer.forward", "per-layer"),))
    assert {"m.collective", "m.probe"} <= set(hp.chains)


def test_an_attribute_bound_to_the_result_of_calling_itself_resolves_to_nothing():
    # Django's RangeField: a class attribute names a class, and the
    # constructor replaces it with an instance of it. Asking what calling the
    # attribute runs asks the same question again; it must end, not recurse.
    src = """
    class IntegerField:
        def to_python(self, v):
            return int(v)

    class RangeField:
        base_field = IntegerField

        def __init__(self):
            self.base_field = self.base_field()

        @classmethod
        def make(cls):
            return cls.base_field

        def value(self, v):
            return self.base_field.to_python(v)

        def again(self):
            return self.make()()
    """
    g = _graph(src)
    assert "m.IntegerField.to_python" not in g.get("m.RangeField.again", [])
    assert "m.RangeField.value" in g


def test_work_that_clears_the_flag_guarding_it_runs_once():
    # `if self.calc: self.calibrate(...)` where calibrate ends with `self.calc
    # = False` (vLLM's kv-scale calibration): the first call only
    src = """
    class Attention:
        def __init__(self, calc, debug):
            self.calc = calc
            self.warm = True
            self.debug = debug

        def forward(self, q):
            if not self.fused:
                self.fuse()
            if self.calc:
                self.calibrate(q)
            if self.warm:
                self.warm_up(q)
                self.warm = False
            if self.debug:
                self.note(q)
            return q

        def calibrate(self, q):
            self.scale = q
            self.calc = False

        def fuse(self):
            self.fused = True

        def warm_up(self, q):
            return q

        def note(self, q):
            return q

    class Layer:
        def __init__(self, attention: Attention):
            self.attention = attention

        def forward(self, q):
            if not self.attention.fused:
                self.attention.fuse()
            return self.attention.forward(q)
    """
    hot = _hot(src, "m.Attention.forward")
    assert "m.Attention.calibrate" not in hot  # clears its own guard
    assert "m.Attention.fuse" not in hot  # `if not self.fused:` and it sets `fused = True`
    assert "m.Attention.warm_up" not in hot  # the guarded block clears it
    assert "m.Attention.note" in hot  # nothing clears `debug`: it runs on every call
    assert "m.Attention.fuse" not in _hot(src, "m.Layer.forward")  # the flag of the object it calls
