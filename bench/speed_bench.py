#!/usr/bin/env python3
"""How close fr-analyze runs to the cost of merely reading its input: one benchmark per target of
the speed issue, each a ratio against a baseline measured in the same run (these machines are
shared and noisy).

    python3 bench/speed_bench.py --cli build/release/tools/fr-analyze            # 1024 and 4096
    python3 bench/speed_bench.py --cli ... --only warm,outputs --ranks 1024
    python3 bench/speed_bench.py --cli ... --only scale --scale-ranks 100352     # minutes, 5 GB

Targets (the issue's numbering):
  warm     `analyze DIR --format json` within 2x the wall time of `cat DIR/*`, page cache warm;
           peak RSS at most 0.3x the input's bytes.
  cold     the same with the files evicted from the page cache before each run
           (posix_fadvise DONTNEED on every file, which needs no root): within 1.2x of cat.
  scale    the 100,352-rank job (zstd dumps) in at most 30 s and under 2 GiB peak.
  logs     `analyze DIR` over a simulated 512-rank job's logs (tests/logsim, NCCL_DEBUG=INFO)
           within 2x the time of `grep -c NCCL` over the same files.
  outputs  each output (text, JSON, the HTML report, the Perfetto timeline) adds at most 20% to
           the analysis: the time of each command less that of `analyze --format proto` (the
           smallest output) on the same dumps, against the latter.
Each measurement is the median of --repeat runs, baseline and fr-analyze alternating. --check
exits 1 when a target is missed.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "logsim"))

# Failure verdicts exit 1: the simulated jobs are built to fail.
OK_CODES = (0, 1)


def run(command, stdout=subprocess.DEVNULL):
    """Runs `command`; returns (wall seconds, peak RSS bytes) from wait4."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=stdout, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    stderr = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code not in OK_CODES:
        raise SystemExit(f"{command[0]} exited {code}: {stderr[-2000:]}")
    return wall, usage.ru_maxrss * 1024


def files_of(directory):
    return sorted(os.path.join(root, name) for root, _, names in os.walk(directory)
                  for name in names)


def evict(files):
    """Drops the files' pages from the page cache (no root needed). Only clean pages go: files
    just written are flushed first."""
    os.sync()
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def simulate(cli, directory, ranks, zstd=False):
    """A TP 8 x PP 4 x DP job, one rank stuck: 2000-entry buffers, or with `zstd` the scale job
    of bench/scale_bench.py (200-entry buffers, 40 steps, compressed dumps)."""
    if os.path.isdir(directory):
        return
    tp, pp = 8, 4
    command = [cli, "simulate", directory, "--tp", str(tp), "--pp", str(pp),
               "--dp", str(max(1, ranks // (tp * pp)))]
    if zstd:
        command += ["--zstd", "--buffer", "200", "--steps", "40"]
    started = time.monotonic()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    print(f"  simulated {ranks} ranks in {time.monotonic() - started:.1f} s", flush=True)


def alternate(baseline, measured, repeat, before=None):
    """Median wall times of two commands run alternately, and the measured one's peak RSS."""
    base_times, times, peaks = [], [], []
    for _ in range(repeat):
        if before:
            before()
        base_times.append(run(baseline)[0])
        if before:
            before()
        wall, peak = run(measured)
        times.append(wall)
        peaks.append(peak)
    return statistics.median(base_times), statistics.median(times), max(peaks)


class Results:
    def __init__(self):
        self.rows = []

    def add(self, target, what, measured, baseline, ratio, limit, unit="x"):
        met = ratio <= limit
        self.rows.append((target, what, measured, baseline, ratio, limit, unit, met))
        print(f"  {what}: {measured} against {baseline}: {ratio:.2f}{unit} "
              f"(target {limit}{unit}) {'met' if met else 'MISSED'}", flush=True)

    def table(self):
        print("\n| target | what | fr-analyze | baseline | ratio | target |")
        print("|---|---|---|---|---|---|")
        for target, what, measured, baseline, ratio, limit, unit, met in self.rows:
            mark = "" if met else " (missed)"
            print(f"| {target} | {what} | {measured} | {baseline} | {ratio:.2f}{unit}{mark} "
                  f"| {limit}{unit} |")

    def all_met(self):
        return all(row[-1] for row in self.rows)


def bench_warm(args, work, results, cold=False):
    for ranks in args.ranks:
        job = os.path.join(work, f"job{ranks}")
        simulate(args.cli, job, ranks)
        files = files_of(job)
        size = sum(os.path.getsize(f) for f in files)
        cat = ["cat", *files]
        analyze = [args.cli, "analyze", job, "--format", "json"]
        if not cold:
            run(cat)  # warm the cache
            base, mine, peak = alternate(cat, analyze, args.repeat)
            results.add("1 warm", f"{ranks} ranks ({size / 1e6:.0f} MB)", f"{mine:.3f} s",
                        f"{base:.3f} s (cat)", mine / base, 2.0)
            results.add("1 memory", f"{ranks} ranks peak RSS", f"{peak / 1e6:.0f} MB",
                        f"{size / 1e6:.0f} MB input", peak / size, 0.3)
        else:
            base, mine, _ = alternate(cat, analyze, args.repeat, before=lambda: evict(files))
            results.add("2 cold", f"{ranks} ranks ({size / 1e6:.0f} MB)", f"{mine:.3f} s",
                        f"{base:.3f} s (cat)", mine / base, 1.2)


def bench_outputs(args, work, results):
    ranks = max(args.ranks)
    job = os.path.join(work, f"job{ranks}")
    simulate(args.cli, job, ranks)
    out = os.path.join(work, "out")
    os.makedirs(out, exist_ok=True)
    commands = {
        "text": [args.cli, "analyze", job, "--format", "text", "-o", f"{out}/report.txt"],
        "JSON": [args.cli, "analyze", job, "--format", "json", "-o", f"{out}/report.json"],
        "HTML": [args.cli, "report", job, "-o", f"{out}/report.html"],
        "Perfetto": [args.cli, "timeline", job, "-o", f"{out}/timeline.perfetto-trace"],
    }
    proto = [args.cli, "analyze", job, "--format", "proto", "-o", f"{out}/report.pb"]
    run(proto)
    for name, command in commands.items():
        base, mine, _ = alternate(proto, command, args.repeat)
        written = os.path.getsize(command[-1])
        extra = max(mine - base, 0.0)
        results.add("5 outputs", f"{name} at {ranks} ranks ({written / 1e6:.1f} MB written)",
                    f"+{extra:.3f} s", f"{base:.3f} s (analysis, proto out)", extra / base, 0.2)


def bench_logs(args, work, results):
    import logsim  # noqa: E402 (tests/logsim, put on the path above)

    job = os.path.join(work, "logs")
    if not os.path.isdir(job):
        logsim.simulate(job, args.log_ranks, "xid", "torchrun_logdir", seed=1, nccl_info=True,
                        bytes_target=int(args.log_bytes))
    files = files_of(job)
    size = sum(os.path.getsize(f) for f in files)
    # grep writes to a pipe it must fill: GNU grep stops at the first match on /dev/null.
    grep = ["grep", "-c", "NCCL", *files]
    analyze = [args.cli, "analyze", job, "--format", "json"]
    run(grep)
    base_times, times = [], []
    for _ in range(args.repeat):
        base_times.append(run(grep, stdout=subprocess.PIPE)[0])
        times.append(run(analyze)[0])
    base, mine = statistics.median(base_times), statistics.median(times)
    results.add("4 logs", f"{args.log_ranks} ranks' logs ({size / 1e6:.0f} MB)", f"{mine:.3f} s",
                f"{base:.3f} s (grep -c)", mine / base, 2.0)


def bench_scale(args, work, results):
    ranks = args.scale_ranks
    job = os.path.join(args.scale_dir or work, f"scale{ranks}")
    simulate(args.cli, job, ranks, zstd=True)
    wall, peak = run([args.cli, "analyze", job, "--format", "json"])
    results.add("3 scale", f"{ranks} ranks, zstd dumps", f"{wall:.1f} s", "30 s target",
                wall / 30.0, 1.0, unit="x of 30 s")
    # The floor on this machine: decompressing the same files and nothing else, on every core.
    cores = os.cpu_count() or 1
    started = time.perf_counter()
    find = subprocess.Popen(["find", job, "-type", "f", "-print0"], stdout=subprocess.PIPE)
    subprocess.run(["xargs", "-0", "-P", str(cores), "-n", "2000", "zstd", "-qdc"],
                   stdin=find.stdout, stdout=subprocess.DEVNULL, check=True)
    find.wait()
    zstd_s = time.perf_counter() - started
    results.add("3 scale", f"{ranks} ranks against decompressing alone", f"{wall:.1f} s",
                f"{zstd_s:.1f} s (zstd -dc on {cores} cores)", wall / zstd_s, 30.0 / zstd_s)
    results.add("3 scale memory", f"{ranks} ranks peak RSS", f"{peak / 2**30:.2f} GiB",
                "2 GiB target", peak / 2**31, 1.0, unit="x of 2 GiB")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cli", required=True)
    parser.add_argument("--ranks", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--only", default="warm,cold,logs,outputs",
                        help="comma-separated: warm, cold, logs, outputs, scale")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--log-bytes", type=float, default=1e9)
    parser.add_argument("--log-ranks", type=int, default=512)
    parser.add_argument("--scale-ranks", type=int, default=100352)
    parser.add_argument("--scale-dir", help="where the scale job is written (kept if given)")
    parser.add_argument("--dir", help="work directory (kept; default: a temporary one)")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes, every part once: that the benchmark runs (the tests)")
    args = parser.parse_args()
    if args.smoke:
        args.ranks, args.repeat, args.log_ranks, args.log_bytes = [64], 1, 8, 2e6
        args.scale_ranks, args.only = 128, "warm,cold,logs,outputs,scale"
    work = args.dir or tempfile.mkdtemp(prefix="fr-speed-")
    os.makedirs(work, exist_ok=True)
    results = Results()
    try:
        for part in args.only.split(","):
            print(f"{part}:", flush=True)
            if part == "warm":
                bench_warm(args, work, results)
            elif part == "cold":
                bench_warm(args, work, results, cold=True)
            elif part == "outputs":
                bench_outputs(args, work, results)
            elif part == "logs":
                bench_logs(args, work, results)
            elif part == "scale":
                bench_scale(args, work, results)
            else:
                raise SystemExit(f"unknown part {part!r}")
    finally:
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)
    results.table()
    return 0 if not args.check or results.all_met() else 1


if __name__ == "__main__":
    sys.exit(main())
