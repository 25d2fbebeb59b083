#!/usr/bin/env bash
# The main job on a built-in example: installs what is missing, builds fr-analyze, writes the
# dumps of a simulated 8-rank job whose rank 5 never reached the last all_reduce, and analyses them.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build build/release --target fr-analyze
rm -rf build/example-job
build/release/tools/fr-analyze example build/example-job --world-size 8 --stuck-rank 5
set +e
build/release/tools/fr-analyze build/example-job
status=$?
set -e
# 0: nothing wrong found, 1: a failure verdict; both are a successful run of the example.
[ "$status" -le 1 ] || exit "$status"
