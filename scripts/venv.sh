#!/usr/bin/env bash
# Creates (or reuses) build/venv: the Python 3.11 venv that the tests, the notebook and the
# benchmarks run in, with every Python dependency from PyPI, PyTorch's CPU build included (the
# real-PyTorch tests capture jobs with it and the benchmark runs PyTorch's own analyzer, which
# also needs tabulate; the Dask tests run a LocalCluster of distributed; PyTorch's debug server and
# `fr-analyze live` fetch with requests; the console's tests run its extra, `fr_analyze[console]`,
# and drive Debian's headless Chromium with Playwright, which downloads no browser; atheris fuzzes
# the console's uploads; pytest-xdist runs the Python suite one test per core).
# Prints the venv's python.
#
#   py=$(bash scripts/venv.sh)       # then: "$py" -m pytest tests/python
#
# torch is pinned to 2.13.0, the CPU wheel these machines keep on disk (FR_TORCH_VERSION
# overrides). The venv is built from the first Python 3.11 found (find_python311).
#
# Sourced, this file only defines find_python311 (scripts/build-wheel.sh builds for that Python):
#
#   source scripts/venv.sh; python=$(find_python311)

# Prints the first Python 3.11 with venv and ensurepip: pyenv's python3.11 or python3 on PATH
# (pip reaches PyPI), else Debian's /usr/bin/python3. Fails, printing nothing, when none is.
find_python311() {
  local candidate
  for candidate in python3.11 python3 /usr/bin/python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info[:2] != (3, 11))' \
        2>/dev/null; then
      command -v "$candidate"
      return 0
    fi
  done
  return 1
}

# Sourced: the function above is all the caller asked for.
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0
set -euo pipefail
cd "$(dirname "$0")/.."
torch_version=${FR_TORCH_VERSION:-2.13.0}
venv=${FR_VENV:-build/venv}
packages=("torch==$torch_version" numpy pandas matplotlib tqdm pytest pytest-xdist nbclient nbformat ipykernel tabulate requests protobuf
  distributed
  starlette uvicorn sqlalchemy alembic jinja2 python-multipart zstandard isal "psycopg[binary]" playwright
  atheris)
python=$(find_python311) ||
  { echo "venv.sh: no Python 3.11 with venv and ensurepip found" >&2; exit 2; }
# The stamp names what is installed: a changed list rebuilds the venv.
stamp="$venv/.fr-packages-$(printf '%s\n' "${packages[@]}" | md5sum | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  rm -rf "$venv"
  echo "venv.sh: creating $venv from $python ($("$python" --version 2>&1))" >&2
  "$python" -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check "${packages[@]}" >&2
  touch "$stamp"
fi
echo "$PWD/$venv/bin/python"
