"""Fetch real vLLM source from PyPI into a cache directory outside the repo.

    python tests/vllm_source.py 0.10.2      # prints the directory holding vllm/

Downloads the wheel with ``pip download vllm==X --no-deps --only-binary :all:``
(the sdist does not build without torch), extracts only ``vllm/**/*.py``, and
reuses the result on later runs. The cache root is ``$CACHELINT_TEST_CACHE``
or ``~/.cache/cachelint-tests``. No vLLM code ever enters this repository.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path


def cache_root() -> Path:
    return Path(os.environ.get("CACHELINT_TEST_CACHE", Path.home() / ".cache" / "cachelint-tests"))


def vllm_source(version: str) -> Path:
    """Directory containing the ``vllm`` package of that release (read-only use)."""
    root = cache_root()
    dest = root / "src" / f"vllm-{version}"
    marker = dest / ".complete"
    if marker.exists():
        return dest
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".lock-{version}", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            return dest
        wheels = root / "wheels"
        wheels.mkdir(exist_ok=True)
        wheel = _find_wheel(wheels, version)
        if wheel is None:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    f"vllm=={version}",
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
            wheel = _find_wheel(wheels, version)
            if wheel is None:
                raise RuntimeError(f"pip download did not produce a vllm {version} wheel in {wheels}")
        tmp = dest.with_name(dest.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        with zipfile.ZipFile(wheel) as z:
            for name in z.namelist():
                if name.startswith("vllm/") and name.endswith(".py"):
                    z.extract(name, tmp)
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
        marker.write_text(wheel.name + "\n")
    return dest


def _find_wheel(wheels: Path, version: str) -> Path | None:
    found = sorted(wheels.glob(f"vllm-{version}-*.whl"))
    return found[0] if found else None


def copy_tree(version: str, target: Path) -> Path:
    """A writable copy of the vllm package (for --fix tests)."""
    src = vllm_source(version) / "vllm"
    shutil.copytree(src, target / "vllm")
    return target


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python tests/vllm_source.py VERSION", file=sys.stderr)
        sys.exit(2)
    print(vllm_source(sys.argv[1]))
