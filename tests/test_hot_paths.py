"""``cachelint hot-paths``: each hot-root pattern, what it matched, how far each
root reaches; ``--why`` prints the chain that makes a function hot."""

from __future__ import annotations

import json
import shutil

from cachelint.api import hot_paths_report
from cachelint.config import Config, HotRoot, load_config_file

from .helpers import FIXTURES, run_cli

RUNNER = FIXTURES / "model_runner" / "before"


def _report(extra_roots=()):
    cfg = load_config_file(RUNNER / "pyproject.toml")
    if extra_roots:
        cfg = cfg.with_overrides(extend_hot_roots=tuple(extra_roots))
    return hot_paths_report([str(RUNNER)], cfg)


def test_each_pattern_lists_its_functions_and_their_reach():
    report = _report([HotRoot("*.Nothing.here", "per-token")])
    by_pattern = {r.pattern: r for r in report.roots}
    assert list(by_pattern) == ["*.ModelRunner.execute_model", "*.DecoderLayer.forward", "*.Nothing.here"]
    step = by_pattern["*.ModelRunner.execute_model"]
    # execute_model, get_sliding_window, forward_params, _with_encoder_outputs
    # and the encoder-decoder check it makes: what the fixture's step calls
    assert step.kind == "per-step"
    assert step.functions == (("engine.runner.ModelRunner.execute_model", 5),)
    assert by_pattern["*.DecoderLayer.forward"].functions == (("engine.layers.DecoderLayer.forward", 2),)
    assert by_pattern["*.Nothing.here"].functions == ()
    cov = report.coverage
    assert (cov.patterns, cov.matched, cov.roots, cov.functions) == (3, 2, 2, 7)
    assert not cov.vacuous
    # every hot function is reached by some root: the reach counts cover them
    assert len(report.hot.chains) == cov.functions


def test_why_prints_the_chain_with_each_call():
    report = _report()
    assert report.lookup("ModelConfig.get_sliding_window") == ["engine.config.ModelConfig.get_sliding_window"]
    steps = report.why("engine.config.ModelConfig.get_sliding_window")
    assert [s.qualname for s in steps] == [
        "engine.runner.ModelRunner.execute_model",
        "engine.config.ModelConfig.get_sliding_window",
    ]
    src = (RUNNER / "engine" / "runner.py").read_text().splitlines()
    call = steps[1]
    assert call.call == "self.model_config.get_sliding_window"
    assert "get_sliding_window(" in src[call.line - 1]
    assert src[steps[0].line - 1].lstrip().startswith("def execute_model(")
    # reached only from __init__: not hot
    assert report.why("engine.runner.ModelRunner._warm_up") is None
    assert report.cold_pattern("engine.runner.ModelRunner._warm_up") is None
    assert report.lookup("__init__") == ["engine.config.ModelConfig.__init__", "engine.runner.ModelRunner.__init__"]


def test_no_roots_says_nothing_is_hot(tmp_path):
    (tmp_path / "m.py").write_text("def step():\n    return 1\n")
    report = hot_paths_report([str(tmp_path)], Config(preset="python"))
    # the python preset's request-handler roots (by decorator) match nothing here
    assert all(r.functions == () for r in report.roots)
    assert report.coverage.matched == 0 and report.coverage.functions == 0 and report.coverage.vacuous


def test_cli(tmp_path):
    work = tmp_path / "proj"
    shutil.copytree(RUNNER, work)
    proc = run_cli("hot-paths", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert "*.ModelRunner.execute_model  (per-step): 1 function, reaching 5" in proc.stdout
    assert "    engine.runner.ModelRunner.execute_model  reaches 5" in proc.stdout
    assert (
        "2 hot-root patterns (presets: python), 2 matched; 2 root functions, 7 hot functions in 4 files." in proc.stdout
    )
    data = json.loads(run_cli("hot-paths", "--output-format", "json", cwd=work).stdout)
    assert data["hot_functions"] == 7
    assert data["roots"][1]["functions"] == [{"qualname": "engine.layers.DecoderLayer.forward", "reaches": 2}]

    why = run_cli("hot-paths", "--why", "fused_gelu", cwd=work)
    assert why.returncode == 0
    assert why.stdout.splitlines() == [
        "engine.layers.fused_gelu is hot (per-layer):",
        "    engine.layers.DecoderLayer.forward  (engine/layers.py:6)",
        "        a root: matches `*.DecoderLayer.forward` (per-layer)",
        "    -> engine.layers.fused_gelu",
        "        called as `fused_gelu(...)` at engine/layers.py:7",
    ]
    cold = run_cli("hot-paths", "--why", "ModelRunner._warm_up", cwd=work)
    assert cold.returncode == 1 and "is not hot" in cold.stdout
    missing = run_cli("hot-paths", "--why", "no_such_function", cwd=work)
    assert missing.returncode == 2 and "no function `no_such_function`" in missing.stderr
    ambiguous = run_cli("hot-paths", "--why", "__init__", cwd=work)
    assert ambiguous.returncode == 2 and "names 2 functions" in ambiguous.stderr
    assert json.loads(run_cli("hot-paths", "--why", "fused_gelu", "--output-format", "json", cwd=work).stdout)["chain"][
        1
    ] == {"qualname": "engine.layers.fused_gelu", "path": "engine/layers.py", "line": 7, "call": "fused_gelu"}


def test_why_names_the_cold_pattern_that_keeps_a_function_out(tmp_path):
    work = tmp_path / "proj"
    shutil.copytree(RUNNER, work)
    pp = work / "pyproject.toml"
    pp.write_text(
        pp.read_text().replace("[tool.cachelint]\n", '[tool.cachelint]\nextend-cold-functions = ["*.fused_gelu"]\n')
    )
    proc = run_cli("hot-paths", "--why", "fused_gelu", cwd=work)
    assert proc.returncode == 1
    assert "matches the cold-functions pattern `*.fused_gelu`" in proc.stdout


SERVER = """
from fastapi import APIRouter, FastAPI

router = APIRouter()


@router.post("/v1/generate")
async def generate(request):
    return render(request)


def render(request):
    return request


def build_app():
    app = FastAPI()

    @app.exception_handler(ValueError)
    async def on_error(request, exc):
        return str(exc)

    return app


def not_a_route():
    return 1
"""


def test_functions_registered_by_a_framework_decorator_are_per_request_roots(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.cachelint]\npreset = "python"\n')
    (tmp_path / "server.py").write_text(SERVER)
    report = hot_paths_report([str(tmp_path)], load_config_file(tmp_path / "pyproject.toml"))
    hot = report.hot
    assert hot.kind("server.generate") == "per-request"
    assert hot.kind("server.render") == "per-request"  # reached from the route
    assert hot.kind("server.build_app.<locals>.on_error") == "per-request"  # `app` built in the enclosing function
    assert not hot.is_hot("server.not_a_route") and not hot.is_hot("server.build_app")
    assert hot.roots["server.generate"].decorator and hot.roots["server.generate"].pattern == "fastapi.*.post"


def test_a_decorator_root_is_configurable_and_a_root_is_a_pattern_or_a_decorator(tmp_path):
    (tmp_path / "jobs.py").write_text(
        "from tasks import Queue\n\nq = Queue()\n\n\n@q.task\ndef step(x):\n    return x\n\n\ndef other():\n    return 2\n"
    )
    (tmp_path / "pyproject.toml").write_text(
        '[tool.cachelint]\npreset = "none"\nhot-roots = [{ decorator = "tasks.Queue.task", kind = "per-step" }]\n'
    )
    report = hot_paths_report([str(tmp_path)], load_config_file(tmp_path / "pyproject.toml"))
    assert report.hot.kind("jobs.step") == "per-step" and not report.hot.is_hot("jobs.other")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.cachelint]\nhot-roots = [{ pattern = "*.step", decorator = "tasks.*" }]\n'
    )
    proc = run_cli("check", ".", cwd=tmp_path)
    assert proc.returncode == 2 and "not both" in proc.stderr


STATE_MACHINE = """
class Runner:
    def __init__(self):
        self.state = None
        self._table = None

    def execute(self):
        # a state machine, not a memo: sample() empties the slot again on every step
        if self.state is not None:
            raise RuntimeError("sample() must run after execute()")
        batch = self.prepare()
        self.state = batch
        if self._table is None:  # a memo: build() runs once, though shutdown() empties it
            self._table = self.build()

    def shutdown(self):
        self._table = None

    def sample(self):
        state = self.state
        self.state = None
        return state

    def prepare(self):
        return [1, 2]

    def build(self):
        return {}
"""


def test_a_precondition_on_a_slot_is_not_a_fill_once_guard(tmp_path):
    """The code after `if self.state is not None: raise` runs on every call that succeeds
    (sample() empties the slot in between); a memo's `if self._table is None:` still runs once."""
    (tmp_path / "eng").mkdir()
    (tmp_path / "eng" / "__init__.py").write_text("")
    (tmp_path / "eng" / "runner.py").write_text(STATE_MACHINE)
    cfg = Config(hot_roots=(HotRoot("*.Runner.execute", "per-step"),), preset="none")
    report = hot_paths_report([str(tmp_path / "eng")], cfg)
    assert report.why("eng.runner.Runner.prepare") is not None
    assert report.why("eng.runner.Runner.build") is None
