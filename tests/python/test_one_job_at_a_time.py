"""One job at a time: a directory that holds a previous run or a second job beside the job of
interest (prev_run/, a subfolder, per-host folders of both) is never mixed rank by rank. The newest
complete job is analysed, the other is listed (inputs.other_jobs) with its files set aside, and
`fr-analyze OTHER_FOLDER` reads it. Expected answers come from what the simulator injected into
each job (its "expected verdict" line), never from fr-analyze.

The simulator starts every job at the same moment and its ranks stop at the fault, so "older"
here means an earlier fault step (or fewer steps): the previous run's newest record is older
than the current job's.
"""

import json
import re
import shutil
import subprocess

import pytest


def simulate(cli, directory, fault_rank, steps, *extra):
    out = subprocess.run([cli, "simulate", str(directory), "--steps", str(steps),
                          "--fault-rank", str(fault_rank), *extra],
                         capture_output=True, text=True, check=True).stdout
    truth = re.search(r"expected verdict: (\w+), culprits \[([\d, ]*)\]", out)
    assert truth, out
    return truth.group(1), [int(x) for x in truth.group(2).replace(",", " ").split()]


def analyze(cli, directory):
    proc = subprocess.run([cli, "analyze", str(directory), "--format", "json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    return report["verdict"]["failure_class"], report["verdict"].get("culprit_ranks", []), report


def test_a_previous_run_in_a_subfolder_is_not_mixed_in(cli, tmp_path):
    job = tmp_path / "job"
    expected = simulate(cli, job, 5, 16)
    previous = simulate(cli, job / "prev_run", 2, 12)
    assert expected != previous
    got_class, got_culprits, report = analyze(cli, job)
    assert (got_class, got_culprits) == expected, report["verdict"]["summary"]
    others = report["inputs"]["other_jobs"]
    assert [o["folders"] for o in others] == [[str(job / "prev_run")]]
    assert others[0]["ranks"] == 8
    set_aside = [f for f in report["inputs"]["files_skipped"] if "prev_run" in f["path"]]
    assert len(set_aside) == 8
    assert all("another job" in f["reason"] for f in set_aside)
    # The other job is one command away, and gives its own injected answer.
    assert analyze(cli, job / "prev_run")[:2] == previous


def test_the_newer_job_is_the_one_analysed(cli, tmp_path):
    job = tmp_path / "job"
    simulate(cli, job, 5, 10)
    newer = simulate(cli, job / "second", 3, 60, "--fault-step", "50", "--tp", "1", "--pp", "2",
                     "--dp", "2")
    got_class, got_culprits, report = analyze(cli, job)
    assert (got_class, got_culprits) == newer, report["verdict"]["summary"]
    assert report["inputs"]["ranks_loaded"] == [0, 1, 2, 3]
    assert [o["folders"] for o in report["inputs"]["other_jobs"]] == [[str(job)]]


def test_per_host_folders_of_two_runs(cli, tmp_path):
    made = tmp_path / "made"
    expected = simulate(cli, made / "current", 5, 16)
    previous = simulate(cli, made / "previous", 1, 12)
    job = tmp_path / "job"
    # Each run as its hosts left it: ranks 0-3 on node0, 4-7 on node1.
    for run, target in (("current", job), ("previous", job / "prev_run")):
        for node, ranks in (("node0", range(0, 4)), ("node1", range(4, 8))):
            (target / node).mkdir(parents=True)
            for rank in ranks:
                name = f"nccl_trace_rank_{rank}"
                shutil.copy2(made / run / name, target / node / name)
    got_class, got_culprits, report = analyze(cli, job)
    assert (got_class, got_culprits) == expected, report["verdict"]["summary"]
    assert report["inputs"]["ranks_loaded"] == list(range(8))
    assert [o["folders"] for o in report["inputs"]["other_jobs"]] == [
        [str(job / "prev_run" / "node0"), str(job / "prev_run" / "node1")]]
    assert analyze(cli, job / "prev_run")[:2] == previous


def test_a_copy_in_a_backup_folder_is_no_second_job(cli, tmp_path):
    job = tmp_path / "job"
    expected = simulate(cli, job, 5, 16)
    (job / "backup").mkdir()
    shutil.copy2(job / "nccl_trace_rank_1", job / "backup" / "nccl_trace_rank_1")
    got_class, got_culprits, report = analyze(cli, job)
    assert (got_class, got_culprits) == expected
    assert report["inputs"].get("other_jobs", []) == []


def test_attempts_of_one_run_are_never_mixed_and_the_first_is_analysed(cli, tmp_path):
    # A launcher that restarts the job (Ray Train's FailureConfig, torchelastic's --max-restarts)
    # and keeps each attempt's dumps in attempt_<n>/: the first failure caused the restart, so
    # its attempt is analysed, even when a later one is newer and complete.
    job = tmp_path / "job"
    first = simulate(cli, job / "attempt_0", 5, 16)
    later = simulate(cli, job / "attempt_1", 2, 20)
    assert first != later
    got_class, got_culprits, report = analyze(cli, job)
    assert (got_class, got_culprits) == first, report["verdict"]["summary"]
    assert [o["folders"] for o in report["inputs"]["other_jobs"]] == [[str(job / "attempt_1")]]
    set_aside = [f for f in report["inputs"]["files_skipped"] if "attempt_1" in f["path"]]
    assert len(set_aside) == 8 and all("later attempt" in f["reason"] for f in set_aside)


def test_attempts_with_different_ranks_are_not_one_job(cli, tmp_path):
    # Ray kills the worker group after one rank fails: each attempt leaves the dumps of other
    # ranks, which no rank conflict would tell apart.
    made = tmp_path / "made"
    simulate(cli, made / "a0", 5, 16)
    simulate(cli, made / "a1", 2, 20)
    job = tmp_path / "job"
    for attempt, source, ranks in (("attempt_1", "a0", range(0, 4)),
                                   ("attempt_2", "a1", range(4, 8))):
        (job / attempt).mkdir(parents=True)
        for rank in ranks:
            shutil.copy2(made / source / f"nccl_trace_rank_{rank}", job / attempt)
    _, _, report = analyze(cli, job)
    assert report["inputs"]["ranks_loaded"] == [0, 1, 2, 3]
    assert [o["folders"] for o in report["inputs"]["other_jobs"]] == [[str(job / "attempt_2")]]


def shift_json_dumps(directory, seconds):
    """Moves every record of the JSON dumps in `directory` `seconds` earlier: an earlier run."""
    for path in directory.iterdir():
        dump = json.loads(path.read_text())
        for entry in dump.get("entries", []):
            for key in ("time_created_ns", "time_discovered_started_ns",
                        "time_discovered_completed_ns"):
                if entry.get(key):
                    entry[key] -= seconds * 1_000_000_000
        path.write_text(json.dumps(dump))


def test_leftover_dumps_of_an_earlier_larger_run_in_the_same_folder(cli, tmp_path):
    # An hour ago an 8-rank run (TP2 x PP2 x DP2) wrote nccl_trace_rank_0..7 here; now a healthy
    # 4-rank run (TP2 x DP2) overwrote ranks 0-3 and left 4-7 as they were.
    earlier = tmp_path / "earlier"
    simulate(cli, earlier, 5, 8, "--json", "--fault", "none")
    shift_json_dumps(earlier, 3600)
    job = tmp_path / "job"
    expected = simulate(cli, job, 1, 16, "--json", "--fault", "none", "--pp", "1")
    assert expected[0] == "none"
    for rank in range(4, 8):
        shutil.copy(earlier / f"nccl_trace_rank_{rank}", job / f"nccl_trace_rank_{rank}")
    failure_class, culprits, report = analyze(cli, job)
    assert (failure_class, culprits) == expected
    assert report["inputs"]["ranks_loaded"] == [0, 1, 2, 3]
    other = report["inputs"]["other_jobs"]
    assert len(other) == 1 and other[0]["ranks"] == 4
