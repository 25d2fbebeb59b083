#!/usr/bin/env bash
# Every test: installs what is missing, builds everything (library, CLI, Python module,
# benchmarks), then runs the GoogleTest suites, the fuzz-corpus replays, the benchmark smoke run
# (all through ctest), the pytest suite (the package and CLI used as a user would; it also
# pip-installs the package into a fresh venv, reusing build/dev instead of building again), and
# the real-PyTorch tests: a venv with torch (scripts/torch-venv.sh) captures live Gloo jobs whose
# dumps fr-analyze must diagnose.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset dev >/dev/null
cmake --build build/dev
(cd build/dev && ctest --output-on-failure --timeout 600)
PYTHONPATH="$PWD/build/dev/python" FR_ANALYZE_CLI="$PWD/build/dev/tools/fr-analyze" \
  FR_ANALYZE_CMAKE_BUILD_DIR="$PWD/build/dev" /usr/bin/python3 -m pytest -q tests/python
torch_python=$(bash scripts/torch-venv.sh)
FR_ANALYZE_CLI="$PWD/build/dev/tools/fr-analyze" "$torch_python" -m pytest -q tests/torch
