#!/usr/bin/env python3
"""Reading a job's dumps on a Dask cluster, against the local load in the same run: a simulated
job written to disk, loaded by fr_analyze.load() on this machine (one thread, and all cores), then
on a LocalCluster of 1 and 2 worker processes (started and warmed up before timing). Prints the
times, their ratios, the overhead per rank of going through Dask (the 1-worker time less the
1-thread local time, over the ranks), and checks that every run gives the same report.

    PYTHONPATH=build/dev/python python bench/dask_bench.py --cli build/dev/tools/fr-analyze

Ratios, not absolute times: these machines are shared and noisy.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def best_of(repeats, fn):
    best, result = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", required=True, help="the fr-analyze binary (writes the job)")
    parser.add_argument("--tp", type=int, default=8)
    parser.add_argument("--pp", type=int, default=4)
    parser.add_argument("--dp", type=int, default=16)
    parser.add_argument("--buffer", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", help="write the figures here as JSON")
    args = parser.parse_args()

    import distributed
    import fr_analyze
    from fr_analyze import _dask

    ranks = args.tp * args.pp * args.dp
    workdir = tempfile.mkdtemp(prefix="fr-dask-bench-")
    try:
        job = os.path.join(workdir, "job")
        subprocess.run([args.cli, "simulate", job, "--tp", str(args.tp), "--pp", str(args.pp),
                        "--dp", str(args.dp), "--buffer", str(args.buffer), "--fault",
                        "stuck_before_op", "--fault-rank", str(ranks // 2 + 1)],
                       check=True, capture_output=True)
        size = sum(os.path.getsize(os.path.join(job, f)) for f in os.listdir(job))
        figures = {"ranks": ranks, "bytes": size}
        reports = {}
        for jobs in (1, 0):
            name = "local_1_thread" if jobs == 1 else "local_all_cores"
            seconds, trace = best_of(args.repeats, lambda: fr_analyze.load(job, jobs=jobs,
                                                                          progress=False))
            figures[name] = seconds
            reports[name] = trace.analyze().to_json()
        for workers in (1, 2):
            with distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                          processes=True, dashboard_address=None) as cluster:
                with distributed.Client(cluster) as client:
                    # Warm-up: every worker imports fr_analyze before the clock starts.
                    client.run(lambda: __import__("fr_analyze._core"))
                    seconds, trace = best_of(
                        args.repeats, lambda: fr_analyze.load(job, client=client))
            figures[f"dask_{workers}_workers"] = seconds
            reports[f"dask_{workers}_workers"] = trace.analyze().to_json()
        same = len(set(reports.values())) == 1
        overhead_us = (figures["dask_1_workers"] - figures["local_1_thread"]) / ranks * 1e6
        figures["overhead_per_rank_us"] = overhead_us
        figures["same_report"] = same
        mb = size / 1e6
        print(f"job            {ranks} ranks x {args.buffer} entries, {mb:.0f} MB of dumps")
        for name in ("local_1_thread", "local_all_cores", "dask_1_workers", "dask_2_workers"):
            seconds = figures[name]
            print(f"{name:16s} {seconds:7.3f} s  {mb / seconds:7.1f} MB/s  "
                  f"{seconds / figures['local_1_thread']:5.2f}x local 1 thread")
        print(f"dask overhead  {overhead_us:.0f} us per rank (1 worker less 1 local thread)")
        print(f"2 workers      {figures['dask_1_workers'] / figures['dask_2_workers']:.2f}x "
              f"the speed of 1")
        print(f"same report    {'yes' if same else 'NO'}")
        if args.out:
            with open(args.out, "w", encoding="utf-8") as f:
                json.dump(figures, f, indent=1)
        return 0 if same else 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
