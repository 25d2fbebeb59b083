#!/usr/bin/env python3
"""Memory at scale: the peak RSS of `fr-analyze analyze DIR` on simulated jobs of growing size
(200-entry ring buffers, as the 100k-rank target asks), per rank, against the job's size on disk
in the same run. A loader that kept every dump's copy of the default group's rank list would grow
per rank with the world size (PyTorch writes the whole list into every dump); what is measured
here must stay flat, and a 100k-rank job must stay under 2 GiB.

    python bench/scale_bench.py --cli build/release/tools/fr-analyze [--ranks 1024 4096 16384]
    python bench/scale_bench.py --cli build/release/tools/fr-analyze --ranks 100352 --zstd

Each job is written, analysed (peak RSS of the analysing process alone, from wait4), checked
(the verdict names the injected rank) and deleted before the next. A simulated 100k-rank NCCL
job is about 75 GB of dumps (each one spells out the 100k ranks of the default group); with
--zstd the dumps are written compressed, as users copy them off node-local disks (about 8 GB),
and fr-analyze reads them as they are. With two or more jobs the figure for 100k ranks is also
projected from the per-rank slope between the two largest.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

TARGET_RANKS = 100_000
TARGET_BYTES = 2 << 30


def analyse(cli, job, out):
    """Runs the analysis as a child of its own and returns (seconds, peak RSS in bytes)."""
    started = time.perf_counter()
    proc = subprocess.Popen([cli, "analyze", job, "--format", "json", "-o", out],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    stderr = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):  # 1: a failure was found, which is the point
        sys.exit(f"scale_bench: fr-analyze exited {code}: {stderr}")
    return seconds, usage.ru_maxrss * 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", required=True, help="the fr-analyze binary")
    parser.add_argument("--ranks", type=int, nargs="+", default=[1024, 4096, 16384],
                        help="job sizes (multiples of 32: TP 8 x PP 4 x DP)")
    parser.add_argument("--buffer", type=int, default=200)
    parser.add_argument("--workdir", help="where to write the jobs (default: a temporary folder)")
    parser.add_argument("--zstd", action="store_true",
                        help="write the dumps zstd-compressed (fits a 100k-rank job on disk)")
    parser.add_argument("--out", help="write the figures here as JSON")
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="fr-scale-bench-", dir=args.workdir)
    rows = []
    try:
        for ranks in args.ranks:
            if ranks % 32:
                sys.exit(f"scale_bench: {ranks} ranks is not a multiple of 32")
            job = os.path.join(workdir, f"job{ranks}")
            fault_rank = ranks // 2 + 5
            subprocess.run([args.cli, "simulate", job, "--tp", "8", "--pp", "4", "--dp",
                            str(ranks // 32), "--buffer", str(args.buffer), "--steps", "40",
                            "--fault", "stuck_before_op", "--fault-rank", str(fault_rank)]
                           + (["--zstd"] if args.zstd else []),
                           check=True, capture_output=True)
            size = sum(os.path.getsize(os.path.join(job, f)) for f in os.listdir(job))
            report = os.path.join(workdir, "report.json")
            seconds, rss = analyse(args.cli, job, report)
            with open(report) as f:
                verdict = json.load(f)["verdict"]
            culprits = verdict.get("culprit_ranks", [])
            rows.append({"ranks": ranks, "bytes_on_disk": size, "seconds": seconds,
                         "peak_rss": rss, "culprits_right": culprits == [fault_rank],
                         "under_target": ranks < TARGET_RANKS or rss < TARGET_BYTES})
            shutil.rmtree(job)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    print(f"{'ranks':>7} {'dumps MB':>9} {'analyse s':>9} {'peak RSS MB':>11} "
          f"{'RSS/disk':>8} {'KB/rank':>8}  culprit")
    for row in rows:
        row["rss_over_disk"] = row["peak_rss"] / row["bytes_on_disk"]
        row["kb_per_rank"] = row["peak_rss"] / row["ranks"] / 1e3
        print(f"{row['ranks']:>7} {row['bytes_on_disk'] / 1e6:>9.0f} {row['seconds']:>9.2f} "
              f"{row['peak_rss'] / 1e6:>11.0f} {row['rss_over_disk']:>8.2f} "
              f"{row['kb_per_rank']:>8.1f}  {'right' if row['culprits_right'] else 'WRONG'}")
    figures = {"jobs": rows}
    if len(rows) >= 2:
        a, b = rows[-2], rows[-1]
        slope = (b["peak_rss"] - a["peak_rss"]) / (b["ranks"] - a["ranks"])
        projected = b["peak_rss"] + slope * (TARGET_RANKS - b["ranks"])
        # Flat means linear memory: the largest job's bytes per rank over the smallest one's.
        growth = rows[-1]["kb_per_rank"] / rows[0]["kb_per_rank"]
        figures.update({"bytes_per_rank_slope": slope, "projected_100k_rss": projected,
                        "per_rank_growth": growth})
        print(f"per-rank memory, largest job over smallest: {growth:.2f}x "
              f"({rows[-1]['ranks'] // rows[0]['ranks']}x the ranks)")
        print(f"slope {slope / 1e3:.1f} KB per added rank; projected for {TARGET_RANKS} ranks: "
              f"{projected / 2**30:.2f} GiB (target {TARGET_BYTES / 2**30:.0f} GiB)")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(figures, f, indent=2)
    for row in rows:
        if row["ranks"] >= TARGET_RANKS:
            print(f"{row['ranks']} ranks measured: peak RSS {row['peak_rss'] / 2**30:.2f} GiB "
                  f"(target {TARGET_BYTES / 2**30:.0f} GiB): "
                  f"{'met' if row['under_target'] else 'NOT MET'}")
    if not all(row["culprits_right"] for row in rows):
        sys.exit("scale_bench: a verdict missed the injected rank")


if __name__ == "__main__":
    main()
