"""Fetch a released package's Python source from PyPI into a cache directory outside the repo.

    python tests/vllm_source.py 0.10.2              # prints the directory holding vllm/
    python tests/vllm_source.py sglang 0.5.23       # any package: the directory holding sglang/

Downloads the wheel with ``pip download NAME==X --no-deps --only-binary :all:``
(vLLM's sdist does not build without torch), extracts only ``NAME/**/*.py``,
and reuses the result on later runs: ``$CACHE/src/NAME-X/NAME``. The cache
root is ``$CACHELINT_TEST_CACHE`` or ``~/.cache/cachelint-tests``. No engine
code ever enters this repository.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

# the releases the engine-preset tests run on (docs/engines.md was measured on them)
SGLANG_VERSION = "0.5.23"
LMDEPLOY_VERSION = "0.18.0"


def cache_root() -> Path:
    return Path(os.environ.get("CACHELINT_TEST_CACHE", Path.home() / ".cache" / "cachelint-tests"))


def package_source(package: str, version: str) -> Path:
    """Directory containing the ``package`` directory of that release (read-only use)."""
    root = cache_root()
    dest = root / "src" / f"{package}-{version}"
    marker = dest / ".complete"
    if marker.exists():
        return dest
    root.mkdir(parents=True, exist_ok=True)
    # the vLLM lock keeps its old name: a run of an older checkout shares it
    lock_name = f".lock-{version}" if package == "vllm" else f".lock-{package}-{version}"
    with open(root / lock_name, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            return dest
        wheels = root / "wheels"
        wheels.mkdir(exist_ok=True)
        wheel = _find_wheel(wheels, package, version)
        if wheel is None:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    f"{package}=={version}",
                    "--no-deps",
                    "--only-binary",
                    ":all:",
                    "--disable-pip-version-check",
                    "-q",
                    "-d",
                    str(wheels),
                ],
                check=True,
            )
            wheel = _find_wheel(wheels, package, version)
            if wheel is None:
                raise RuntimeError(f"pip download did not produce a {package} {version} wheel in {wheels}")
        tmp = dest.with_name(dest.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        with zipfile.ZipFile(wheel) as z:
            for name in z.namelist():
                if name.startswith(f"{package}/") and name.endswith(".py"):
                    z.extract(name, tmp)
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
        marker.write_text(wheel.name + "\n")
    return dest


def vllm_source(version: str) -> Path:
    """Directory containing the ``vllm`` package of that release (read-only use)."""
    return package_source("vllm", version)


def _find_wheel(wheels: Path, package: str, version: str) -> Path | None:
    found = sorted(wheels.glob(f"{package}-{version}-*.whl"))
    return found[0] if found else None


def copy_tree(version: str, target: Path) -> Path:
    """A writable copy of the vllm package (for --fix tests)."""
    src = vllm_source(version) / "vllm"
    shutil.copytree(src, target / "vllm")
    return target


if __name__ == "__main__":
    if len(sys.argv) == 2:
        print(vllm_source(sys.argv[1]))
    elif len(sys.argv) == 3:
        print(package_source(sys.argv[1], sys.argv[2]))
    else:
        print("usage: python tests/vllm_source.py [PACKAGE] VERSION", file=sys.stderr)
        sys.exit(2)
