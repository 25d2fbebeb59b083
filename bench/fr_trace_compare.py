#!/usr/bin/env python3
"""fr-analyze against PyTorch's own analyzer (torch.distributed.flight_recorder.fr_trace), both
run on the same dumps in the same run (ratios, because these machines are shared and noisy).

1. Simulated jobs: a TP 8 x PP 4 x DP N job (default 64, 512 and 1024 ranks; full 2000-entry
   buffers with stacks; one rank stuck before a collective) is written with `fr-analyze
   simulate`, then `fr-analyze analyze DIR --format json` and
   `python -m torch.distributed.flight_recorder.fr_trace DIR -p nccl_trace_rank_
   --allow-incomplete-ranks` both run on it: wall time, peak RSS (os.wait4), and whether each
   names the rank the simulator stuck. fr_trace runs under a timeout (--timeout) and is recorded
   as "timed out" when it passes it.
2. Captured jobs (--captured DIR...): directories of the real-PyTorch capture harness, each with
   dumps/ (nccl_trace_rank_<N>) and expected.json ({"failure_class", "culprit_ranks"}); both
   analyzers run on dumps/ and are scored against expected.json.

    bench/fr_trace_compare.py --build build/release                   # 64, 512, 1024 ranks
    bench/fr_trace_compare.py --build build/release --sizes 64,512 --check
    bench/fr_trace_compare.py --build build/release --captured runs/*/ --sizes ''
    bench/fr_trace_compare.py --build build/dev --smoke               # seconds

PyTorch's python comes from scripts/torch-venv.sh (the project's venv; --torch-python overrides);
--smoke never creates the venv and skips fr_trace when it is absent. fr_trace needs the
`tabulate` package to print a mismatch table (without it, it dies with NameError on the first
mismatch of a coalesced group); torch does not install it, so outside --smoke this driver
installs it into the venv with pip when it is missing, and says so.

How fr_trace's culprit is read. fr_trace prints no verdict; it logs (on stderr) one block per
collective it could not match, which starts with one of
    "Not all ranks joining collective, sequence number: N"   then "missing ranks: {R, ...}"
    "Collective sequence number: N has errors"               then "error msg: Culprit rank R; ..."
    "Input/output mismatch in the collective sequence number: N"     (names no rank)
and a "group info: PG:DESC" line. The culprit it names is taken to be the rank set of the first
block that names any rank: that is where its output points a reader first. The run is right when
that set equals the expected culprits and fr_trace exited 0 without a traceback; a crash (exit
status != 0 or a Python traceback) or no block naming a rank is recorded as such. Every rank any
block names is also recorded ("named anywhere"), a more lenient reading.

Prints a table and writes the figures as JSON (--out). With --check, exits 1 when fr-analyze is
not at least 100x faster than fr_trace at 512 ranks (a timed-out fr_trace counts with its
timeout as a lower bound) or names a wrong culprit on a job where fr_trace names the right one.
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FR_TRACE_MODULE = "torch.distributed.flight_recorder.fr_trace"
DUMP_PREFIX = "nccl_trace_rank_"
TARGET_RATIO = 100
TARGET_RANKS = 512


# ---------------------------------------------------------------------------------------------
# Running a child: wall time, peak RSS, optional timeout.

def run(cmd, timeout=None, env=None):
    """Runs `cmd` with its output in temporary files (no pipe to fill up). Returns a dict: wall_s,
    peak_rss_bytes (the child's, from os.wait4), exit_code, timed_out, stdout, stderr (bytes).
    With `timeout` seconds, the child's process group is killed when it runs past it."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, start_new_session=True)
        lock = threading.Lock()
        state = {"exited": False, "killed": False}

        def kill():
            # Only while the child is unreaped: its pid (and group) cannot have been reused.
            with lock:
                if not state["exited"]:
                    state["killed"] = True
                    os.killpg(proc.pid, signal.SIGKILL)

        timer = threading.Timer(timeout, kill) if timeout else None
        if timer:
            timer.start()
        try:
            # Wait without reaping, so that the timer can still kill safely until we say so.
            os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        except BaseException:
            kill()
            raise
        finally:
            wall = time.perf_counter() - start
            with lock:
                state["exited"] = True
            if timer:
                timer.cancel()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {
            "wall_s": wall,
            "peak_rss_bytes": usage.ru_maxrss * 1024,
            "exit_code": proc.returncode,
            "timed_out": state["killed"],
            "stdout": out.read(),
            "stderr": err.read(),
        }


def warm_page_cache(directory):
    """Reads every file under `directory` once, so that both analyzers read from memory."""
    for root, _, files in os.walk(directory):
        for name in files:
            with open(os.path.join(root, name), "rb") as f:
                while f.read(1 << 20):
                    pass


def directory_bytes(directory):
    return sum(os.path.getsize(os.path.join(root, name))
               for root, _, files in os.walk(directory) for name in files)


# ---------------------------------------------------------------------------------------------
# PyTorch's python.

def torch_python(create, override=None):
    """The torch venv's python: `override`, else scripts/torch-venv.sh's (which creates the venv)
    when `create`, else that of a venv the scripts finished building before (FR_VENV,
    FR_TORCH_VENV, build/venv, build/torch-venv: the first with its stamp file) or None."""
    if override:
        return override
    if create:
        proc = subprocess.run(["bash", os.path.join(REPO, "scripts", "torch-venv.sh")],
                              stdout=subprocess.PIPE, text=True, check=True)
        return proc.stdout.strip().splitlines()[-1]
    candidates = [os.environ.get("FR_VENV"), os.environ.get("FR_TORCH_VENV"),
                  os.path.join("build", "venv"), os.path.join("build", "torch-venv")]
    for venv in filter(None, candidates):
        venv = os.path.join(REPO, venv)  # an absolute path stays as it is
        python = os.path.join(venv, "bin", "python")
        # The venv scripts touch a stamp (.fr-...) once everything is installed.
        stamped = os.path.isdir(venv) and any(n.startswith(".fr-") for n in os.listdir(venv))
        if stamped and os.access(python, os.X_OK):
            return python
    return None


def torch_facts(python, install_tabulate):
    """torch's version, whether tabulate was there (or installed now), and the seconds that
    merely starting fr_trace's module takes (python + import torch)."""
    facts = {"python": python}
    proc = subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        facts["error"] = proc.stderr.strip().splitlines()[-1:] or ["torch does not import"]
        return facts
    facts["torch_version"] = proc.stdout.strip()
    has_tabulate = subprocess.run([python, "-c", "import tabulate"],
                                  stderr=subprocess.DEVNULL).returncode == 0
    facts["tabulate"] = "present" if has_tabulate else "missing"
    if not has_tabulate and install_tabulate:
        print("fr_trace needs tabulate, which torch does not install: pip install tabulate "
              f"into {os.path.dirname(os.path.dirname(python))}", file=sys.stderr)
        pip = subprocess.run([python, "-m", "pip", "install", "-q",
                              "--disable-pip-version-check", "tabulate"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        facts["tabulate"] = "installed by this driver" if pip.returncode == 0 else "missing"
    start = run([python, "-c", f"import {FR_TRACE_MODULE}"])
    facts["import_s"] = start["wall_s"]
    return facts


# ---------------------------------------------------------------------------------------------
# Reading fr_trace's log.

_BLOCK_STARTS = (
    ("missing_ranks", re.compile(r"^Not all ranks joining collective, sequence number: (\S+)")),
    ("errors", re.compile(r"^Collective sequence number: (\S+) has errors")),
    ("size_mismatch",
     re.compile(r"^Input/output mismatch in the collective sequence number: (\S+)")),
)


def parse_fr_trace(text):
    """What fr_trace's log says (see the module's docstring for the rule)."""
    blocks = []
    notes = {"no_errors_found": 0, "cannot_decide": 0, "too_many_mismatches": 0}
    for line in text.splitlines():
        for kind, pattern in _BLOCK_STARTS:
            m = pattern.match(line)
            if m:
                blocks.append({"kind": kind, "seq": m.group(1), "group": None, "ranks": []})
                break
        else:
            if line.startswith("No errors found for this collective entry"):
                notes["no_errors_found"] += 1
            elif line.startswith("We cannot decide what's wrong"):
                notes["cannot_decide"] += 1
            elif line.startswith("Too many mismatches for process_group"):
                notes["too_many_mismatches"] += 1
            elif blocks:
                block = blocks[-1]
                if line.startswith("group info: ") and block["group"] is None:
                    block["group"] = line[len("group info: "):].strip()
                elif line.startswith("missing ranks: "):
                    block["ranks"] = sorted(int(r) for r in re.findall(r"\d+", line[15:]))
                elif line.startswith("error msg: "):
                    block["ranks"] = sorted({int(r) for r in
                                             re.findall(r"Culprit rank (\d+)", line)})
    traceback_at = text.find("Traceback (most recent call last)")
    crash = None
    if traceback_at >= 0:
        tail = [l for l in text[traceback_at:].splitlines() if l.strip()]
        crash = tail[-1].strip() if tail else "traceback"
    naming = [b for b in blocks if b["ranks"]]
    first = naming[0] if naming else None
    named = sorted({r for b in blocks for r in b["ranks"]})
    distinct = {}
    for b in naming:
        key = (b["kind"], b["group"], tuple(b["ranks"]))
        distinct[key] = distinct.get(key, 0) + 1
    return {
        "blocks": len(blocks),
        "first_block": first,
        "culprits": first["ranks"] if first else None,
        "named_anywhere": named,
        "distinct_reports": [
            {"kind": k, "group": g, "ranks": list(r), "times": n}
            for (k, g, r), n in sorted(distinct.items(), key=lambda kv: -kv[1])[:8]],
        "notes": notes,
        "traceback": crash,
    }


# ---------------------------------------------------------------------------------------------
# The two analyzers on one directory.

def run_fr_analyze(cli, dumps, jobs):
    r = run([cli, "analyze", dumps, "--format", "json", "--jobs", str(jobs)])
    result = {"wall_s": r["wall_s"], "peak_rss_bytes": r["peak_rss_bytes"],
              "exit_code": r["exit_code"]}
    if r["exit_code"] not in (0, 1):
        result["status"] = "failed"
        result["error"] = r["stderr"].decode(errors="replace").strip()[-500:]
        result["culprits"] = None
        return result
    report = json.loads(r["stdout"])
    result["status"] = "ok"
    result["failure_class"] = report["verdict"]["failure_class"]
    result["culprits"] = sorted(report["verdict"].get("culprit_ranks", []))
    result["entries"] = int(report.get("stats", {}).get("entries", 0))
    return result


def run_fr_trace(python, dumps, timeout):
    r = run([python, "-m", FR_TRACE_MODULE, dumps, "-p", DUMP_PREFIX, "--allow-incomplete-ranks"],
            timeout=timeout)
    log = (r["stdout"] + b"\n" + r["stderr"]).decode(errors="replace")
    parsed = parse_fr_trace(log)
    if r["timed_out"]:
        status = "timed out"
    elif r["exit_code"] != 0 or parsed["traceback"]:
        status = "crashed"
    elif parsed["culprits"] is None:
        status = "no culprit"
    else:
        status = "ok"
    return {
        "wall_s": r["wall_s"],
        "peak_rss_bytes": r["peak_rss_bytes"],
        "exit_code": r["exit_code"],
        "status": status,
        "culprits": parsed["culprits"] if status == "ok" else None,
        "parsed": parsed,
        "log_bytes": len(log),
    }


def measure_both(cli, python, dumps, jobs, timeout, repeats):
    """fr-analyze (all `jobs` threads and 1 thread) before and after fr_trace, best of each;
    fr_trace once (at scale it takes minutes). Page cache warmed first."""
    warm_page_cache(dumps)
    fr = {"threads": jobs}
    runs_n, runs_1 = [], []

    def fr_round():
        runs_n.append(run_fr_analyze(cli, dumps, jobs))
        if jobs != 1:
            runs_1.append(run_fr_analyze(cli, dumps, 1))

    for _ in range(repeats):
        fr_round()
    trace = run_fr_trace(python, dumps, timeout) if python else None
    for _ in range(repeats):
        fr_round()
    best = min(runs_n, key=lambda r: r["wall_s"])
    fr.update(best)
    fr["peak_rss_bytes"] = max(r["peak_rss_bytes"] for r in runs_n)
    fr["wall_s_1_thread"] = min(r["wall_s"] for r in runs_1) if runs_1 else best["wall_s"]
    return fr, trace


def score(expected, fr, trace):
    """Right/wrong per analyzer and the speed ratios, into one row."""
    want = sorted(expected)
    row = {"expected_culprits": want, "fr_analyze": fr, "fr_trace": trace}
    fr["right"] = fr.get("culprits") == want
    if trace is not None:
        if want:
            trace["right"] = trace["status"] == "ok" and trace["culprits"] == want
        else:  # a job with no culprit: right when fr_trace names nobody either
            trace["right"] = trace["status"] == "no culprit"
        trace["named_expected_anywhere"] = (
            bool(want) and set(want) <= set(trace["parsed"]["named_anywhere"]))
        # A speed ratio needs both to have run to their end (a timed-out fr_trace gives a bound).
        if fr["status"] == "ok" and trace["status"] in ("ok", "no culprit", "timed out"):
            row["ratio"] = trace["wall_s"] / fr["wall_s"]
            row["ratio_1_thread"] = trace["wall_s"] / fr["wall_s_1_thread"]
            row["ratio_is_lower_bound"] = trace["status"] == "timed out"
    return row


# ---------------------------------------------------------------------------------------------
# Jobs.

def simulate(cli, job, ranks, smoke):
    """Writes a simulated job with one rank stuck; returns the culprits the simulator expects."""
    shutil.rmtree(job, ignore_errors=True)
    if smoke:
        shape = ["--tp", "2", "--pp", "2", "--dp", str(max(1, ranks // 4)), "--steps", "8"]
        step = "6"
    else:
        if ranks % 32:
            sys.exit(f"--sizes: {ranks} is not a multiple of TP 8 x PP 4")
        # 36 steps fill the 2000-entry ring buffers (as in run_benchmarks.py).
        shape = ["--tp", "8", "--pp", "4", "--dp", str(ranks // 32), "--steps", "36"]
        step = "30"
    stuck = ranks // 2 + 3
    r = run([cli, "simulate", job, *shape, "--fault", "stuck_before_op", "--fault-rank",
             str(stuck), "--fault-step", step])
    if r["exit_code"] != 0:
        sys.exit(f"fr-analyze simulate failed:\n{r['stderr'].decode(errors='replace')}")
    # The simulator says what a right analysis finds: "expected verdict: CLASS, culprits [R]".
    m = re.search(r"expected verdict: (\w+), culprits \[([\d, ]*)\]", r["stdout"].decode())
    if m:
        return m.group(1), sorted(int(x) for x in re.findall(r"\d+", m.group(2)))
    return "missing_participant", [stuck]


def compare(cli, python, sizes, captured, workdir, timeout, jobs, smoke, repeats=None):
    """Runs every comparison; returns the figures (a dict)."""
    repeats = repeats or (1 if smoke else 2)
    figures = {"smoke": smoke, "timeout_s": timeout, "fr_trace_args": [
        "-p", DUMP_PREFIX, "--allow-incomplete-ranks"], "simulated": [], "captured": []}
    for ranks in sizes:
        job = os.path.join(workdir, f"frt_job{ranks}")
        failure_class, want = simulate(cli, job, ranks, smoke)
        fr, trace = measure_both(cli, python, job, jobs, timeout, repeats)
        row = score(want, fr, trace)
        row.update({"ranks": ranks, "input_bytes": directory_bytes(job),
                    "expected_failure_class": failure_class})
        figures["simulated"].append(row)
        shutil.rmtree(job, ignore_errors=True)
        print_row(row, f"{ranks} ranks")
    for directory in captured:
        dumps = os.path.join(directory, "dumps")
        with open(os.path.join(directory, "expected.json")) as f:
            expected = json.load(f)
        fr, trace = measure_both(cli, python, dumps, jobs, timeout, repeats)
        row = score(expected.get("culprit_ranks", []), fr, trace)
        row.update({"directory": directory, "input_bytes": directory_bytes(dumps),
                    "expected_failure_class": expected.get("failure_class")})
        figures["captured"].append(row)
        print_row(row, os.path.basename(os.path.normpath(directory)))
    return figures


# ---------------------------------------------------------------------------------------------
# Output and targets.

def _culprit_text(side):
    if side is None:
        return "skipped"
    if side["status"] != "ok":
        return side["status"]
    mark = "right" if side["right"] else "WRONG"
    return f"{side['culprits']} {mark}"


def print_row(row, label):
    fr, trace = row["fr_analyze"], row["fr_trace"]
    line = (f"fr_trace vs fr-analyze, {label} ({row['input_bytes'] / 1e6:.0f} MB, expected "
            f"{row['expected_culprits']}): fr-analyze {fr['wall_s']:.2f} s "
            f"({fr['wall_s_1_thread']:.2f} s 1 thread), {fr['peak_rss_bytes'] / 1e6:.0f} MB, "
            f"{_culprit_text(fr)}")
    if trace is not None:
        ratio = ""
        if "ratio" in row:
            bound = ">=" if row["ratio_is_lower_bound"] else ""
            ratio = f", ratio {bound}{row['ratio']:.0f}x ({bound}{row['ratio_1_thread']:.0f}x 1 thread)"
        line += (f"; fr_trace {trace['wall_s']:.1f} s, {trace['peak_rss_bytes'] / 1e6:.0f} MB, "
                 f"{_culprit_text(trace)}{ratio}")
        p = trace["parsed"]
        if p["first_block"]:
            b = p["first_block"]
            line += (f"\n  fr_trace: {p['blocks']} reports; first naming a rank: {b['kind']} "
                     f"in {b['group']} seq {b['seq']} -> {b['ranks']}; named anywhere: "
                     f"{_short(p['named_anywhere'])}")
        if p["traceback"]:
            line += f"\n  fr_trace died: {p['traceback'][:200]}"
    print(line, flush=True)


def _short(ranks, limit=12):
    return str(ranks) if len(ranks) <= limit else f"{ranks[:limit]}... ({len(ranks)} ranks)"


def print_table(figures):
    rows = figures["simulated"] + figures["captured"]
    if not rows:
        return
    facts = figures.get("torch", {})
    print(f"\nfr-analyze vs fr_trace (torch {facts.get('torch_version', '?')}, fr_trace start-up "
          f"alone {facts.get('import_s', float('nan')):.1f} s)")
    print(f"{'job':>18} {'MB':>6} {'fr-analyze s':>12} {'RSS MB':>7} {'culprit':>14} "
          f"{'fr_trace s':>10} {'RSS MB':>7} {'culprit':>14} {'ratio':>8}")
    for row in rows:
        label = (f"{row['ranks']} ranks" if "ranks" in row
                 else os.path.basename(os.path.normpath(row["directory"])))[:18]
        fr, trace = row["fr_analyze"], row["fr_trace"]
        t_wall = t_rss = "-"
        if trace is not None:
            t_wall = f"{trace['wall_s']:.1f}"
            t_rss = f"{trace['peak_rss_bytes'] / 1e6:.0f}"
        ratio = "-"
        if "ratio" in row:
            ratio = (">=" if row["ratio_is_lower_bound"] else "") + f"{row['ratio']:.0f}x"
        print(f"{label:>18} {row['input_bytes'] / 1e6:>6.0f} {fr['wall_s']:>12.2f} "
              f"{fr['peak_rss_bytes'] / 1e6:>7.0f} {_culprit_text(fr)[:14]:>14} {t_wall:>10} "
              f"{t_rss:>7} {_culprit_text(trace)[:14]:>14} {ratio:>8}")


def missed_targets(figures):
    """The --check targets this run missed (a list of sentences)."""
    missed = []
    rows = figures["simulated"] + figures["captured"]
    at_target = [r for r in figures["simulated"] if r["ranks"] == TARGET_RANKS]
    if not at_target:
        missed.append(f"no {TARGET_RANKS}-rank comparison with fr_trace was run")
    for row in at_target:
        if "ratio" not in row:
            status = row["fr_trace"]["status"] if row["fr_trace"] else "skipped"
            missed.append(f"no speed ratio at {TARGET_RANKS} ranks (fr-analyze "
                          f"{row['fr_analyze']['status']}, fr_trace {status})")
        elif row["ratio"] < TARGET_RATIO:
            missed.append(f"fr-analyze only {row['ratio']:.0f}x faster than fr_trace at "
                          f"{TARGET_RANKS} ranks (target {TARGET_RATIO}x)")
    for row in rows:
        trace = row["fr_trace"]
        if trace and trace["right"] and not row["fr_analyze"]["right"]:
            label = row.get("directory") or f"{row['ranks']} ranks"
            missed.append(f"{label}: fr-analyze blamed {row['fr_analyze'].get('culprits')}, "
                          f"fr_trace the right {trace['culprits']}")
    return missed


def run_section(cli, sizes, captured, workdir, timeout, jobs, smoke, torch_override=None,
                table=True):
    """The comparison as a section of a larger benchmark run: finds PyTorch (never creating the
    venv in smoke mode), runs (a line per job as it goes), prints the table (`table`). Returns
    the figures, or None when skipped."""
    python = torch_python(create=not smoke, override=torch_override)
    if python is None:
        print("fr_trace comparison skipped: no torch venv (create it with scripts/torch-venv.sh)")
        return None
    facts = torch_facts(python, install_tabulate=not smoke)
    if "error" in facts:
        if smoke:
            print(f"fr_trace comparison skipped: {facts['error']}")
            return None
        sys.exit(f"torch venv unusable: {facts['error']}")
    print(f"fr_trace from torch {facts['torch_version']} ({python}); tabulate {facts['tabulate']}; "
          f"start-up alone {facts['import_s']:.1f} s", flush=True)
    figures = compare(cli, python, sizes, captured, workdir, timeout, jobs, smoke)
    figures["torch"] = facts
    if table:
        print_table(figures)
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True, help="CMake build directory")
    parser.add_argument("--sizes", default="64,512,1024",
                        help="ranks of the simulated jobs, comma-separated ('' for none)")
    parser.add_argument("--captured", nargs="*", default=[], metavar="DIR",
                        help="capture-harness directories (dumps/ and expected.json)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds fr_trace may take")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="fr-analyze threads (default: all cores)")
    parser.add_argument("--torch-python", help="python with torch (default: the torch venv)")
    parser.add_argument("--smoke", action="store_true", help="a 16-rank job, no targets")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--out", help="write the figures here as JSON")
    parser.add_argument("--workdir", help="where to write the dumps (default: a temp dir)")
    args = parser.parse_args()
    sizes = [16] if args.smoke else [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.smoke:
        args.timeout = min(args.timeout, 120)
    cli = os.path.join(args.build, "tools", "fr-analyze")
    workdir = args.workdir or tempfile.mkdtemp(prefix="fr_trace_bench_")
    try:
        figures = run_section(cli, sizes, args.captured, workdir, args.timeout, args.jobs,
                              args.smoke, args.torch_python)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    if figures is None:
        return 0
    if args.out:
        with open(args.out, "w") as f:
            json.dump(figures, f, indent=2)
    if args.check and not args.smoke:
        missed = missed_targets(figures)
        if missed:
            print("targets missed: " + "; ".join(missed))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
