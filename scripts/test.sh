#!/usr/bin/env bash
# Every test: installs what is missing, builds everything (library, CLI, Python module,
# benchmarks), then runs the GoogleTest suites, the fuzz-corpus replays, the benchmark smoke run
# (all through ctest), the pytest suite (the package and CLI used as a user would; it also
# pip-installs the package into a fresh venv with build isolation, reusing build/dev instead of
# building again), and the real-PyTorch tests, which capture live Gloo jobs whose dumps
# fr-analyze must diagnose.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# Python tests, the notebook and the real-PyTorch tests run in one venv with their dependencies
# from PyPI (scripts/venv.sh); the Python module is built for its interpreter.
python=$(bash scripts/venv.sh)
echo "test.sh: $(command -v cmake) ($(cmake --version | head -n 1)), $("$python" --version)"
cmake --preset dev -DPython3_EXECUTABLE="$python" >/dev/null
cmake --build build/dev
# bench_smoke times itself against a baseline in the same run, so it runs alone after the rest.
(cd build/dev && ctest --output-on-failure --timeout 600 -E bench_smoke -j "$(nproc)" &&
  ctest --output-on-failure --timeout 600 -R bench_smoke)
# The users' wheel (tests/python/test_installed.py) is built and installed by .ci/run, or here
# with FR_ANALYZE_WHEEL=$(bash scripts/build-wheel.sh): its profile-guided release build would
# add minutes to this command.
# The Python suite mostly waits (servers, browsers), so it runs one test per core with
# pytest-xdist (2.6 -> 1.6 min on 2 cores). The real-PyTorch suite runs one test at a time: its
# live tests catch a rank in a 9 s window between the debug server's snapshots, which a second
# torchrun job on the same 2 cores made them miss (1 run in 3).
PYTHONPATH="$PWD/build/dev/python" FR_ANALYZE_CLI="$PWD/build/dev/tools/fr-analyze" \
  "$python" -m pytest -q -n "$(nproc)" tests/python
FR_ANALYZE_CLI="$PWD/build/dev/tools/fr-analyze" "$python" -m pytest -q tests/torch
