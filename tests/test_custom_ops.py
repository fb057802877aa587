"""Torch custom ops are call edges: ``torch.ops.<namespace>.<op>(...)`` runs the
function registered under that name (``custom-op-registrars`` in presets and
configuration), so work in a custom op's body on a hot path is found."""

from __future__ import annotations

import pytest

from cachelint.api import lint_sources
from cachelint.config import ConfigError, CustomOpRegistrar, parse_table, resolve_presets

SOURCES = {
    "eng/__init__.py": "",
    "eng/ops.py": (
        "import importlib.util\n\n"
        "import torch\n\n\n"
        "def register(op_name, op_func):\n"
        "    pass\n\n\n"
        "def fused_norm(x):\n"
        "    if importlib.util.find_spec('fast_norm') is not None:\n"
        "        return x\n"
        "    return x\n\n\n"
        "register(op_name='fused_norm', op_func=fused_norm)\n"
    ),
    "eng/layer.py": (
        "import torch\n\n\nclass Layer:\n    def forward(self, x):\n        return torch.ops.eng.fused_norm(x)\n"
    ),
}

ENTRY = {"call": "eng.ops.register", "op": "op_name", "function": "op_func", "namespace": "eng"}


def _findings(registrars: list | None) -> list[tuple[str, str]]:
    table: dict = {"preset": "python", "hot-roots": ["*.Layer.forward"]}
    if registrars is not None:
        table["extend-custom-op-registrars"] = registrars
    res = lint_sources(SOURCES, parse_table(table, "test"))
    return [(f.code, f.function) for f in res.findings]


def test_work_in_a_custom_op_body_is_on_the_callers_hot_path():
    assert ("CL002", "eng.ops.fused_norm") in _findings([ENTRY])
    # no registrar names `register`: the call through torch.ops is not an edge
    assert _findings(None) == []
    # an op of another namespace is another op
    assert _findings([dict(ENTRY, namespace="other")]) == []


def test_registrar_entries_are_checked():
    cfg = parse_table({"extend-custom-op-registrars": [ENTRY]}, "t")
    assert cfg.extend_custom_op_registrars == (
        CustomOpRegistrar("eng.ops.register", op=("op_name", None), function=("op_func", None), namespace="eng"),
    )
    bad = [
        {"op": "name"},  # neither call nor decorator
        {"call": "a", "decorator": "b", "function": "f"},
        {"call": "a"},  # a call entry names its function argument
        dict(ENTRY, **{"op-position": -1}),
        dict(ENTRY, colour="red"),
    ]
    for entry in bad:
        with pytest.raises(ConfigError, match="extend-custom-op-registrars"):
            parse_table({"extend-custom-op-registrars": [entry]}, "t")


def test_presets_name_the_engines_registrars():
    def patterns(packages: set[str]) -> set[tuple[str, str | None]]:
        cfg = resolve_presets(parse_table({}, "t"), packages)
        return {(r.pattern, r.namespace) for r in cfg.custom_op_registrars}

    assert patterns(set()) == {("torch.library.custom_op", None)}
    assert ("*.direct_register_custom_op", "vllm") in patterns({"vllm"})
    assert {("*.direct_register_custom_op", "sglang"), ("*.register_custom_op", "sglang")} <= patterns({"sglang"})
