#!/usr/bin/env python3
"""End-to-end log analysis throughput: `fr-analyze analyze DIR` over a simulated 512-rank job's
logs with NCCL_DEBUG=INFO on (tests/logsim), against `grep -c NCCL` over the same files in the
same run (a ratio, because these machines are shared and noisy), with the analyzer's peak RSS.

    python bench/log_analysis_bench.py --cli build/release/tools/fr-analyze --bytes 1e9

Prints MB/s of the whole analysis (discovery, reading, parsing, one clock, root cause, report)
and of grep, their ratio, and whether the root cause found is the injected one. --check exits 1
below --target-mbps (200 MB/s).
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "logsim"))
import logsim  # noqa: E402


def total_bytes(directory):
    return sum(os.path.getsize(os.path.join(root, name))
               for root, _, names in os.walk(directory) for name in names)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cli", required=True)
    parser.add_argument("--bytes", type=float, default=1e9)
    parser.add_argument("--ranks", type=int, default=512)
    parser.add_argument("--fault", default="xid")
    parser.add_argument("--dir")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--target-mbps", type=float, default=200)
    args = parser.parse_args()
    directory = args.dir or tempfile.mkdtemp(prefix="fr-logbench-")
    try:
        job = os.path.join(directory, "job")
        shutil.rmtree(job, ignore_errors=True)
        started = time.monotonic()
        expected = logsim.simulate(job, args.ranks, args.fault, "torchrun_logdir", seed=1,
                                   nccl_info=True, bytes_target=int(args.bytes))
        size = total_bytes(job)
        print(f"input          {args.ranks} ranks, {size / 1e6:.1f} MB of logs "
              f"(written in {time.monotonic() - started:.1f} s)")
        files = [os.path.join(root, name) for root, _, names in os.walk(job) for name in names]
        with open(os.devnull, "w") as sink:
            # grep's output goes to a pipe it must fill: GNU grep stops at the first match when
            # writing to /dev/null.
            started = time.monotonic()
            subprocess.run(["grep", "-c", "NCCL", *files], stdout=subprocess.PIPE, check=False)
            grep_s = time.monotonic() - started
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        result = subprocess.run([args.cli, "analyze", job, "--format", "json", "--jobs", "1"],
                                capture_output=True, text=True)
        analyze_s = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        report = json.loads(result.stdout)
        cause = report["verdict"]["root_cause"]
        cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        print(f"grep -c NCCL   {grep_s:.3f} s  {size / 1e6 / grep_s:8.1f} MB/s")
        print(f"fr-analyze     {analyze_s:.3f} s  {size / 1e6 / analyze_s:8.1f} MB/s wall, "
              f"{size / 1e6 / max(cpu_s, 1e-9):.1f} MB/s per core ({analyze_s / grep_s:.2f}x "
              f"grep's time)")
        print(f"peak RSS       {after.ru_maxrss / 1024:.1f} MB (largest child so far)")
        found = cause["kind"] == expected["kind"] and cause["ranks"] == expected["culprit_ranks"]
        print(f"root cause     {cause['kind']} {cause['ranks']} "
              f"(injected {expected['kind']} {expected['culprit_ranks']}: "
              f"{'found' if found else 'MISSED'})")
        per_core = size / 1e6 / max(cpu_s, 1e-9)
        if args.check and (per_core < args.target_mbps or not found):
            return 1
        return 0
    finally:
        if not args.dir:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
