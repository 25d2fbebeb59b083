"""fr_analyze.record() in real jobs: a training script whose only flight-recorder code is
`fr_analyze.record(DIR)` (tests/torch/record_job.py) runs under torchrun (4 ranks, Gloo, CPU)
with one fault injected, and what it left in DIR is judged as a user would judge it: a dump from
every rank that went through an exception or a SIGTERM, the job's own error still in its console,
and `fr-analyze analyze` (the CLI under test) naming the rank the test injected the fault into.

The jobs run with none of PyTorch's flight-recorder variables set: whatever they need, record()
must set. The group timeout is long (120 s), so that nothing but the fault, the injected rank's
exit or the test's SIGTERM ends the job.

Run with the venv (scripts/venv.sh) and FR_ANALYZE_CLI set; the jobs import the package built
beside the CLI (the python/ folder next to its tools/ folder), or FR_ANALYZE_PYTHONPATH.
"""

import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import time
import uuid

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import torchrun_capture  # noqa: E402

JOB = HERE / "record_job.py"
FAULT_RANK, FAULT_STEP, STEPS, WORLD = 2, 8, 12, 4
# The launcher and its workers get this long before the harness stops them (a job that hangs
# where it should have ended fails the test, it does not stall the suite).
JOB_DEADLINE_S = 120
# How long the hung job stays hung before the operator's SIGTERM: past a second and past a
# hundred of the job's median gaps between ops, which is when the analyzer calls a wait with no
# timeout reached yet a hang in progress (docs/analysis.md), with room for a loaded machine.
HANG_S = 8
# Every variable of PyTorch's flight recorder, and the package's own default folder: none may
# come from the environment the tests run in.
FR_VARIABLES = ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_FR_DUMP_TEMP_FILE",
                "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "TORCH_NCCL_DUMP_ON_TIMEOUT",
                "FR_ANALYZE_DUMPS")


def job_env(cli, token):
    env = {k: v for k, v in os.environ.items() if k not in FR_VARIABLES}
    package = os.environ.get("FR_ANALYZE_PYTHONPATH") or str(
        pathlib.Path(cli).resolve().parent.parent / "python")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package, env.get("PYTHONPATH")) if p)
    env.update({torchrun_capture.TOKEN_VAR: token, "PYTHONUNBUFFERED": "1",
                "PYTHONDONTWRITEBYTECODE": "1"})
    return env


class Torchrun:
    """One torchrun job, stopped by pid whatever happens (the launcher, then its workers, each
    a session leader of its own: torchrun_capture.stop_everything)."""

    def __init__(self, cli, console, dumps, *args):
        self.token = uuid.uuid4().hex
        self.console = console
        console.parent.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes", "1",
               "--nproc-per-node", str(WORLD), str(JOB), "--dumps", str(dumps),
               "--fault-rank", str(FAULT_RANK), "--fault-step", str(FAULT_STEP),
               "--steps", str(STEPS), *args]
        with open(console, "wb") as out:
            self.proc = subprocess.Popen(cmd, cwd=console.parent, env=job_env(cli, self.token),
                                         stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True,
                                         preexec_fn=torchrun_capture.no_core_files)
        self.started = time.monotonic()

    def text(self):
        return self.console.read_text(errors="replace")

    def wait_for(self, pattern, timeout):
        limit = time.monotonic() + timeout
        while time.monotonic() < limit:
            if re.search(pattern, self.text()):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        pytest.fail(f"the job never printed {pattern!r}:\n{self.text()[-3000:]}")

    def wait(self):
        """The launcher's exit status, or a failure when it outlives the deadline."""
        try:
            return self.proc.wait(timeout=max(1, JOB_DEADLINE_S -
                                              (time.monotonic() - self.started)))
        except subprocess.TimeoutExpired:
            pytest.fail(f"torchrun outlived {JOB_DEADLINE_S} s:\n{self.text()[-3000:]}")

    def stop(self):
        torchrun_capture.stop_everything([self.proc], self.token)


@pytest.fixture
def torchrun(cli):
    jobs = []

    def start(console, dumps, *args):
        job = Torchrun(cli, console, dumps, *args)
        jobs.append(job)
        return job

    yield start
    for job in jobs:
        job.stop()


def ranks_dumped(folder):
    return sorted(int(p.name[len("nccl_trace_rank_"):]) for p in folder.iterdir()
                  if re.fullmatch(r"nccl_trace_rank_\d+", p.name))


def analyze(cli, folder):
    proc = subprocess.run([cli, "analyze", str(folder), "--format", "json"], capture_output=True,
                          text=True, timeout=120)
    try:
        return json.loads(proc.stdout)
    except ValueError:
        pytest.fail(f"fr-analyze exited {proc.returncode} without a JSON report: "
                    f"{proc.stderr[-2000:]}")


def describe(report):
    v = report["verdict"]
    return (f"failure_class={v.get('failure_class')} culprit_ranks={v.get('culprit_ranks')} "
            f"summary: {v.get('summary')}")


def test_a_rank_that_raises_leaves_a_dump_from_every_rank(cli, torchrun, tmp_path):
    """Rank 2 raises ValueError in step 8. It dumps on its way out (its uncaught exception);
    its peers' collective fails when it exits, and those that are still alive when torchrun
    stops the job dump on its SIGTERM. The folder is the job's: the launcher's console is kept
    there too, as `torchrun ... | tee DIR/console.log` keeps it, since it is the rank's traceback
    there that tells a crash from a pause: its peers' ops failed the moment it exited, seconds
    before their dumps, too young for the dumps alone to call them stuck."""
    job_dir = tmp_path / "job"
    job = torchrun(job_dir / "console.log", job_dir, "--fault", "exception")
    status = job.wait()
    console = job.text()
    assert status == 1, f"torchrun exited {status}:\n{console[-3000:]}"
    assert ranks_dumped(job_dir) == list(range(WORLD)), console[-3000:]
    # Renamed into place: no temporary file is left for a reader to trip on.
    assert not [p.name for p in job_dir.iterdir() if p.name.startswith(".")]
    # The job's own error shows in full, and where the dump went.
    assert "ValueError: bad batch at step 8" in console
    assert f"flight recorder dumped to {job_dir / 'nccl_trace_rank_2'} (uncaught ValueError)" \
        in console
    report = analyze(cli, job_dir)
    assert report["verdict"]["culprit_ranks"] == [FAULT_RANK], describe(report)
    assert report["verdict"]["failure_class"] == "missing_participant", describe(report)
    assert report["inputs"]["ranks_loaded"] == list(range(WORLD))


def test_a_hung_job_stopped_with_sigterm_leaves_a_dump_from_every_rank(cli, torchrun, tmp_path):
    """Rank 2 sleeps in step 8 ("data loading") while its peers wait in the all_reduce; the
    operator sends SIGTERM to torchrun, which passes it to every worker: each dumps on the way
    down, the three blocked inside a Gloo collective included (where Python never runs a signal
    handler until the collective returns), then dies of the signal. The dumps alone name the
    sleeping rank (the console says only that the job was killed from outside)."""
    dumps = tmp_path / "dumps"
    job = torchrun(tmp_path / "console.log", dumps, "--fault", "hang")
    job.wait_for(rf"rank {FAULT_RANK}: loading data", timeout=JOB_DEADLINE_S / 2)
    time.sleep(HANG_S)
    job.proc.send_signal(signal.SIGTERM)  # to torchrun alone, as `kill PID` does
    status = job.wait()
    console = job.text()
    assert status != 0, console[-3000:]
    assert ranks_dumped(dumps) == list(range(WORLD)), console[-3000:]
    on_sigterm = re.findall(r"flight recorder dumped to \S+nccl_trace_rank_(\d+) \(SIGTERM\)",
                            console)
    assert sorted(map(int, on_sigterm)) == list(range(WORLD)), console[-3000:]
    # Each worker ended as SIGTERM ends a process: nobody had to SIGKILL it.
    assert "exitcode  : -9" not in console and "SIGKILL" not in console, console[-3000:]
    report = analyze(cli, dumps)
    assert report["verdict"]["culprit_ranks"] == [FAULT_RANK], describe(report)
    assert report["verdict"]["failure_class"] == "missing_participant", describe(report)


@pytest.mark.parametrize("at_exit", [True, False])
def test_at_exit_dumps_a_job_that_ends_normally_only_when_asked(cli, tmp_path, at_exit):
    """One process, a world of one (no launcher needed): a run that ends normally leaves its
    dump, every collective it ran in order, with at_exit=True, and nothing without it."""
    dumps = tmp_path / "dumps"
    steps = 4
    env = job_env(cli, uuid.uuid4().hex)
    env.update({"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(torchrun_capture.free_port())})
    proc = subprocess.run([sys.executable, str(JOB), "--dumps", str(dumps), "--steps", str(steps),
                           *(["--at-exit"] if at_exit else [])], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=JOB_DEADLINE_S)
    assert proc.returncode == 0, proc.stderr[-3000:]
    if not at_exit:
        assert ranks_dumped(dumps) == [], proc.stderr[-3000:]
        return
    assert ranks_dumped(dumps) == [0], proc.stderr[-3000:]
    assert f"flight recorder dumped to {dumps / 'nccl_trace_rank_0'} (exit)" in proc.stderr
    # What the job ran: an all_reduce every step, an all_gather every second one.
    ran = ["all_gather" if i % 3 == 2 else "all_reduce" for i in range(steps + steps // 2)]
    decoded = subprocess.run([cli, "dump", str(dumps / "nccl_trace_rank_0")], capture_output=True,
                             text=True, timeout=60, check=True)
    entries = json.loads(decoded.stdout)["entries"]
    assert [e["profiling_name"] for e in entries] == [f"gloo:{op}" for op in ran]
    assert [e["collective_seq_id"] for e in entries] == list(range(1, len(ran) + 1))
