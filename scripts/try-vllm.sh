#!/usr/bin/env bash
# Install cachelint into ./.venv, fetch a vLLM release's source from PyPI
# (the wheel, unpacked to ~/.cache/cachelint-tests; nothing enters this repo)
# and run cachelint on it: the findings, then the diff of every fix.
set -euo pipefail
version="${1:-0.10.2}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python3 -m venv "$repo/.venv"
"$repo/.venv/bin/pip" install -q --disable-pip-version-check "$repo"
src="$("$repo/.venv/bin/python" "$repo/tests/vllm_source.py" "$version")"
cd "$src"
echo "== cachelint check vllm --select CL001   (in $src)"
"$repo/.venv/bin/cachelint" check vllm --select CL001 || true
echo
echo "== cachelint check vllm --select CL001 --diff --unsafe-fixes   (writes nothing)"
"$repo/.venv/bin/cachelint" check vllm --select CL001 --diff --unsafe-fixes || true
echo
echo "== cachelint check vllm --statistics"
"$repo/.venv/bin/cachelint" check vllm --statistics || true
