#!/usr/bin/env bash
# Creates (or reuses) build/torch-venv: a Python 3.11 venv with the CPU build of PyTorch and the
# Python packages that the real-PyTorch tests and benchmarks use. Prints the venv's python.
#
#   py=$(bash scripts/torch-venv.sh)       # then: "$py" tests/torch/capture.py ...
#
# PyTorch must be 2.13.0 (the wheel these machines keep on disk; FR_TORCH_VERSION overrides).
# The venv is built from the first python3.11 on PATH (pyenv's on these machines), whose pip
# reaches PyPI; Debian's /usr/bin/python3 is 3.11 too and serves when no other is found.
set -euo pipefail
cd "$(dirname "$0")/.."
torch_version=${FR_TORCH_VERSION:-2.13.0}
venv=${FR_TORCH_VENV:-build/torch-venv}
python=""
for candidate in python3.11 python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null 2>&1 &&
    "$candidate" -c 'import sys, venv; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
    python=$(command -v "$candidate")
    break
  fi
done
[ -n "$python" ] || { echo "torch-venv: no Python 3.11 with venv found" >&2; exit 2; }
stamp="$venv/.fr-torch-$torch_version"
if [ ! -f "$stamp" ]; then
  rm -rf "$venv"
  "$python" -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check "torch==$torch_version" numpy pytest >&2
  touch "$stamp"
fi
echo "$PWD/$venv/bin/python"
