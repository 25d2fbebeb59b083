#!/usr/bin/env bash
# Builds the release fr-analyze (build/release) with profile-guided optimization: an instrumented
# build (build/pgo-train) loads and analyses simulated jobs, and the release build is compiled
# with the profile that run wrote (build/pgo-profile). Loading dumps is about a tenth faster than
# without it. Extra arguments go to the release configure step, e.g.
#   bash scripts/build-release.sh -DFR_BUILD_BENCHMARKS=ON
# builds the benchmarks against the same optimized library. Expects the packages of
# scripts/install-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
profile="$PWD/build/pgo-profile"
jobs="$PWD/build/pgo-jobs"

cmake --preset pgo-train -DFR_PGO_DIR="$profile" >/dev/null
cmake --build build/pgo-train --target fr-analyze
trainer=build/pgo-train/tools/fr-analyze

# The training run: what users run most. Pickles of every shape the example writes (stacks, p2p,
# a stuck rank), a JSON job, a failure of each kind through the analysis, and a job's logs. Exit
# status 1 is a failure verdict, which these jobs are built to produce. Only a trainer whose bytes
# changed trains again (its checksum is kept with the profile; file times lie after a checkout or
# a copy).
retrained=0
trainer_sum=$(sha256sum "$trainer" | cut -d' ' -f1)
if [ ! -f "$profile/trained" ] || [ "$(cat "$profile/trained")" != "$trainer_sum" ]; then
  rm -rf "$profile" "$jobs"
  "$trainer" example "$jobs/example" --world-size 64 --entries 2000 --stuck-rank 9 >/dev/null
  "$trainer" load "$jobs/example" --format json >/dev/null
  "$trainer" analyze "$jobs/example" --format json >/dev/null || [ $? -eq 1 ]
  "$trainer" simulate "$jobs/json" --tp 2 --pp 2 --dp 4 --json >/dev/null
  "$trainer" analyze "$jobs/json" >/dev/null || [ $? -eq 1 ]
  for fault in crashed_rank op_mismatch gpu_stall straggler; do
    "$trainer" simulate "$jobs/$fault" --tp 2 --pp 2 --dp 2 --fault "$fault" >/dev/null
    "$trainer" analyze "$jobs/$fault" --format json >/dev/null || [ $? -eq 1 ]
  done
  "$trainer" simulate "$jobs/p2p" --tp 2 --pp 2 --dp 2 --fault missing_recv --fault-group pp \
    >/dev/null
  "$trainer" analyze "$jobs/p2p" --format json >/dev/null || [ $? -eq 1 ]
  /usr/bin/python3 tests/logsim/logsim.py --out "$jobs/logs" --ranks 64 --fault host_oom \
    --nccl-info --bytes-target 20000000 >/dev/null
  "$trainer" analyze "$jobs/logs" --format json >/dev/null || [ $? -eq 1 ]
  rm -rf "$jobs"
  echo "$trainer_sum" >"$profile/trained"
  retrained=1
fi

cmake --preset release -DFR_PGO=use -DFR_PGO_DIR="$profile" "$@" >/dev/null
# Build rules do not know the profile: after training, every object is compiled again with it.
if [ "$retrained" = 1 ]; then cmake --build build/release --target clean; fi
cmake --build build/release
