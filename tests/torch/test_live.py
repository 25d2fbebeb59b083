"""`fr-analyze live` on real torchrun jobs that still run: PyTorch's debug server in every rank
(torch.distributed.debug.start_debug_server, with its frontend's periodic snapshots), a fault
injected by tests/torch/torchrun_job.py, and the tool pointed at the job's MASTER_ADDR:PORT from
outside while the job hangs. The expected answer is the injected fault: the rank and the function
the harness holds it in (`inject`), never what fr-analyze printed before.

Run with the venv (scripts/venv.sh: torch, requests) and FR_ANALYZE_CLI set; the CLI's Python
helper (`python -m fr_analyze._live`) runs in this interpreter with the built package
(FR_ANALYZE_PYTHONPATH, default: the python/ folder beside the CLI's tools/ folder).
"""

import json
import os
import pathlib
import re
import subprocess
import sys
import time

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from live_job import LiveJob  # noqa: E402

FAULT_RANK = 2
# Where torchrun_job.py holds the faulty rank: its `inject` function (the hang scenario sleeps
# there, "data loading that never returns").
FAULT_FUNCTION = "inject"


def helper_env(cli):
    env = dict(os.environ, FR_ANALYZE_PYTHON=sys.executable)
    package = os.environ.get("FR_ANALYZE_PYTHONPATH") or str(
        pathlib.Path(cli).resolve().parent.parent / "python")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package, env.get("PYTHONPATH")) if p)
    return env


def run_json(cli, args, timeout=240):
    proc = subprocess.run([cli, *args, "--format", "json"], capture_output=True, text=True,
                          timeout=timeout, env=helper_env(cli))
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        pytest.fail(f"fr-analyze {args[0]} exited {proc.returncode} without a JSON report: "
                    f"{proc.stderr[-3000:]}")
    return proc.returncode, report, proc.stderr


def group_of(report, rank):
    for group in report.get("live_stacks", []):
        if rank in group.get("ranks", []):
            return group
    pytest.fail(f"rank {rank} is in no live stack group: {report.get('live_stacks')}")


def snapshot_seconds(path):
    m = re.search(r"_(\d{8})_(\d{6})\.txt$", path)
    return time.mktime(time.strptime(m.group(1) + m.group(2), "%Y%m%d%H%M%S"))


def held_for(job, needle):
    """Seconds between the first snapshot whose text holds `needle` and the newest one."""
    first = None
    for path in job.snapshots():
        with open(path, errors="replace") as f:
            if needle in f.read():
                first = first or path
            else:
                first = None
    return 0 if first is None else snapshot_seconds(job.snapshots()[-1]) - snapshot_seconds(first)


def test_live_names_the_rank_held_in_user_code_and_its_frame(cli, tmp_path):
    save = tmp_path / "fetched"
    with LiveJob(tmp_path / "job", scenario="hang", fault_rank=FAULT_RANK) as job:
        needle = f" in {FAULT_FUNCTION}\n"
        job.wait_for(lambda stacks: needle in stacks,
                     what=f"rank {FAULT_RANK} in {FAULT_FUNCTION}")
        time.sleep(3)  # its peers reach the collectives it never joins
        code, report, err = run_json(cli, ["live", job.master, "--save", str(save)])
        verdict = report["verdict"]
        assert code == 1, err
        assert verdict["failure_class"] == "missing_participant", verdict["summary"]
        assert verdict["culprit_ranks"] == [FAULT_RANK], verdict["summary"]
        held = group_of(report, FAULT_RANK)
        assert held["ranks"] == [FAULT_RANK]
        assert held["place"] == "outside communication"
        assert held["frames"][0].startswith(f"{FAULT_FUNCTION} (")
        for rank in {0, 1, 2, 3} - {FAULT_RANK}:
            assert group_of(report, rank)["place"] == "in torch.distributed"
        assert sorted(os.listdir(save))[:4] == [f"rank_{r}.json" for r in range(4)]

        # The same from Python, while the job still hangs.
        script = ("import json, fr_analyze\n"
                  f"report = fr_analyze.live({job.master!r})\n"
                  "print(json.dumps([report.verdict.failure_class,"
                  " list(report.verdict.culprit_ranks)]))\n")
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=240, env=helper_env(cli), cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert json.loads(proc.stdout) == ["missing_participant", [FAULT_RANK]]

        # What was saved, analysed offline, gives the same answer.
        code, offline, err = run_json(cli, ["analyze", str(save)])
        assert code == 1, err
        assert offline["verdict"]["failure_class"] == "missing_participant"
        assert offline["verdict"]["culprit_ranks"] == [FAULT_RANK]
        # The culprit's stack shown with the verdict is where it is held, not its last op.
        for finding in offline["findings"]:
            if finding["kind"] == offline["verdict"]["failure_class"] and finding.get("stack"):
                assert finding["stack"][0].startswith(f"{FAULT_FUNCTION} ("), finding["stack_at"]

        # The frontend's own dump_dir (stacks only: torch 2.13's fr_trace snapshots fail on Gloo)
        # once rank 2 has stayed there for longer than the stall threshold (10 s).
        deadline = time.time() + 120
        while held_for(job, needle) < 14 and time.time() < deadline:
            time.sleep(1)
        code, frontend, err = run_json(cli, ["analyze", job.dump_dir])
        assert code == 1, err
        assert frontend["verdict"]["failure_class"] == "missing_participant", \
            frontend["verdict"]["summary"]
        assert frontend["verdict"]["culprit_ranks"] == [FAULT_RANK]
        assert sorted(frontend["verdict"]["victim_ranks"]) == sorted({0, 1, 3})
        assert any(f.get("read_as") == "python_stacks"
                   for f in frontend["inputs"]["files_skipped"])


def test_live_on_a_healthy_job_finds_nothing(cli, tmp_path):
    with LiveJob(tmp_path / "job", scenario="healthy") as job:
        job.wait_for(lambda stacks: stacks.count("in train") >= 4, what="all four ranks training")
        code, report, err = run_json(cli, ["live", job.master])
        assert code == 0, report["verdict"]["summary"]
        assert report["verdict"]["failure_class"] == "none"
        assert sorted(r for g in report["live_stacks"] for r in g["ranks"]) == [0, 1, 2, 3]


def test_live_names_a_stopped_rank_from_its_silent_worker(cli, tmp_path):
    with LiveJob(tmp_path / "job", scenario="healthy") as job:
        job.wait_for(lambda stacks: stacks.count("in train") >= 4, what="all four ranks training")
        job.stop_rank(FAULT_RANK)
        time.sleep(4)  # its peers block in collectives it never joins
        code, report, err = run_json(cli, ["live", job.master, "--timeout", "3"])
        verdict = report["verdict"]
        assert code == 1, err
        assert verdict["culprit_ranks"] == [FAULT_RANK], verdict["summary"]
        silent = group_of(report, FAULT_RANK)
        assert silent["place"] == "no answer"
        assert "did not answer in time" in " ".join(
            f["summary"] for f in report["findings"] if FAULT_RANK in f.get("ranks", []))


def test_watch_shows_progress_then_the_verdict(cli, tmp_path):
    with LiveJob(tmp_path / "job", scenario="hang", fault_rank=FAULT_RANK,
                 fault_step=150) as job:
        job.wait_for(lambda stacks: stacks.count("in train") >= 4, what="all four ranks training")
        code, report, err = run_json(
            cli, ["live", job.master, "--watch", "2", "--stall", "6"], timeout=300)
        assert code == 1, err
        assert report["verdict"]["culprit_ranks"] == [FAULT_RANK], report["verdict"]["summary"]
        polls = [line for line in err.splitlines() if line.startswith("poll ")]
        assert polls, err
        assert group_of(report, FAULT_RANK)["frames"][0].startswith(f"{FAULT_FUNCTION} (")


def test_watch_does_not_call_a_shared_checkpoint_a_hang(cli, tmp_path):
    """Every rank writes a checkpoint outside communication (tests/torch/torchrun_job.py's
    `checkpoint` scenario): rank 3 for 15 s, rank 0, which writes the metadata too, for 60 s, so
    ranks 1-3 wait in the next collectives while rank 0 alone is still writing, far longer than
    --stall. Then the job trains on. Watching it all the while must never say it is stuck.
    (With 36 s, rank 3's 9 s in save_checkpoint came and went between the debug server's
    snapshots on a loaded 2-core machine, and the test never saw every rank there.)"""
    import signal

    with LiveJob(tmp_path / "job", scenario="checkpoint", fault_step=20, hang_s=60) as job:
        job.wait_for(lambda stacks: stacks.count(" in save_checkpoint") >= 4,
                     what="every rank in save_checkpoint")
        watch = subprocess.Popen([cli, "live", job.master, "--watch", "2", "--save",
                                  str(tmp_path / "fetched")], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=helper_env(cli))
        # Until rank 0 has left its checkpoint and the job trains on.
        job.wait_for(lambda stacks: " in save_checkpoint" not in stacks
                     and stacks.count(" in train") >= 4, timeout=240,
                     what="the checkpoint over and every rank training")
        still_watching = watch.poll() is None
        watch.send_signal(signal.SIGINT)
        out, err = watch.communicate(timeout=120)
        assert still_watching, f"live --watch stopped during the checkpoint:\n{out}\n{err}"
        assert watch.returncode == 130, err
        assert "nothing stuck so far" in err
        polls = [line for line in err.splitlines() if line.startswith("poll ")]
        # It did see rank 0 alone outside communication while the others waited.
        assert any("rank(s) 0 outside communication" in line for line in polls), err


def test_live_says_why_when_no_job_is_there(cli, tmp_path):
    import torchrun_capture

    port = torchrun_capture.free_port()
    proc = subprocess.run([cli, "live", f"127.0.0.1:{port}", "--timeout", "2"],
                          capture_output=True, text=True, timeout=60, env=helper_env(cli))
    assert proc.returncode == 2
    assert f"cannot reach the job's store at 127.0.0.1:{port}" in proc.stderr
    assert proc.stdout == ""


def test_watch_stops_on_an_interrupt_sent_while_it_fetches(cli, tmp_path):
    """`kill -INT` of `live --watch` (a script, a supervisor, this test) reaches the command alone,
    often while its Python helper is fetching. It must stop the watch, not vanish: CI once saw the
    watch poll on for minutes after the interrupt it had swallowed during a fetch."""
    import signal

    import torchrun_capture

    port = torchrun_capture.free_port()  # no store there: the fetch waits its whole --timeout
    watch = subprocess.Popen([cli, "live", f"127.0.0.1:{port}", "--watch", "2", "--timeout", "60"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=helper_env(cli))
    children = pathlib.Path(f"/proc/{watch.pid}/task/{watch.pid}/children")
    deadline = time.monotonic() + 60
    while not children.read_text().split() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert children.read_text().split(), "the helper never started"
    time.sleep(3.0)  # inside the fetch: torch imported, the store's connection retried in C++
    started = time.monotonic()
    watch.send_signal(signal.SIGINT)
    out, err = watch.communicate(timeout=60)
    assert watch.returncode == 130, err
    assert "live: stopped" in err
    assert "cannot reach" not in err, "the interrupt waited for the fetch to fail"
    assert time.monotonic() - started < 15, err
