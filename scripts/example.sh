#!/usr/bin/env bash
# The main job on a built-in example: installs what is missing, builds fr-analyze (optimized with
# a profile of its own training run, see build-release.sh), simulates an
# 8-rank TP x PP x DP training job (2 x 2 x 2) in which rank 5 gets stuck before a data-parallel
# collective, writes every rank's flight-recorder dump, and analyses them.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build-release.sh
rm -rf build/example-job
build/release/tools/fr-analyze simulate build/example-job --tp 2 --pp 2 --dp 2 \
  --fault stuck_before_op --fault-rank 5
set +e
build/release/tools/fr-analyze build/example-job
status=$?
set -e
# 0: nothing wrong found, 1: a failure verdict; both are a successful run of the example.
[ "$status" -le 1 ] || exit "$status"
