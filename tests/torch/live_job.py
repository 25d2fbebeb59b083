"""A real torchrun job with PyTorch's debug server in every rank, held running (or hanging) while
a test looks at it from outside, then stopped by the test: launcher first, then its workers.

    with LiveJob(tmp, scenario="hang", fault_rank=2) as job:
        job.wait_for(lambda stacks: "in inject" in stacks)   # rank 2 is in the injected sleep
        run fr-analyze live job.master ...
        job.dump_dir                      # the frontend's periodic snapshots (stacks_<time>.txt)

The job is tests/torch/torchrun_job.py (4 ranks, TP=2 x DP=2, Gloo on CPU) with a group timeout
of 600 s, so that nothing fails by itself while the test looks: the job hangs as a real one
does before its watchdog fires.
"""

import glob
import os
import signal
import subprocess
import sys
import time
import uuid

import torchrun_capture

JOB = torchrun_capture.JOB


def _rank_pid(token, rank):
    """The pid of the worker with this RANK among this job's processes."""
    needle = f"RANK={rank}".encode()
    for pid in torchrun_capture.with_token(token):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if needle in env and b"torchrun_job.py" in cmdline:
            return pid
    return None


class LiveJob:
    def __init__(self, tmp, scenario, fault_rank=2, fault_step=3, steps=100000, step_s=0.05,
                 dump_interval=2.0, hang_s=3600.0):
        self.tmp = str(tmp)
        self.fault_step = fault_step
        self.scenario = scenario
        self.fault_rank = fault_rank
        self.steps = steps
        self.step_s = step_s
        self.dump_interval = dump_interval
        self.hang_s = hang_s
        self.port = torchrun_capture.free_port()
        self.frontend_port = torchrun_capture.free_port()
        self.master = f"127.0.0.1:{self.port}"
        self.dump_dir = os.path.join(self.tmp, "debug_dumps")
        self.console = os.path.join(self.tmp, "console.log")
        self.token = uuid.uuid4().hex
        self.proc = None
        self.stopped_pids = []

    def __enter__(self):
        os.makedirs(self.tmp, exist_ok=True)
        env = dict(os.environ, PYTHONUNBUFFERED="1", TORCH_FR_BUFFER_SIZE="2000")
        env[torchrun_capture.TOKEN_VAR] = self.token
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "4",
               "--rdzv-backend", "static", "--master-addr", "127.0.0.1",
               "--master-port", str(self.port), "--node-rank", "0", "--nnodes", "1",
               JOB, "--scenario", self.scenario, "--fault-rank", str(self.fault_rank),
               "--fault-step", str(self.fault_step), "--steps", str(self.steps), "--step-s", str(self.step_s),
               "--hang-s", str(self.hang_s),
               "--timeout", "600", "--dumps", os.path.join(self.tmp, "dumps"),
               "--debug-server-port", str(self.frontend_port),
               "--debug-dump-dir", self.dump_dir,
               "--debug-dump-interval", str(self.dump_interval)]
        with open(self.console, "wb") as console:
            self.proc = subprocess.Popen(cmd, cwd=self.tmp, env=env, stdin=subprocess.DEVNULL,
                                         stdout=console, stderr=subprocess.STDOUT,
                                         start_new_session=True,
                                         preexec_fn=torchrun_capture.no_core_files)
        return self

    def __exit__(self, *exc):
        for pid in self.stopped_pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        torchrun_capture.stop_everything([self.proc], self.token)
        return False

    def snapshots(self):
        return sorted(glob.glob(os.path.join(self.dump_dir, "stacks_*.txt")))

    def newest_stacks(self):
        files = self.snapshots()
        if not files:
            return ""
        with open(files[-1], errors="replace") as f:
            return f.read()

    def wait_for(self, condition, timeout=240, what="the job's state"):
        """Waits until condition(newest stacks snapshot text) holds; fails with the console."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                break
            if condition(self.newest_stacks()):
                return
            time.sleep(0.5)
        with open(self.console, errors="replace") as f:
            tail = f.read()[-3000:]
        raise AssertionError(f"timed out waiting for {what} (launcher exit "
                             f"{self.proc.poll()}); console:\n{tail}")

    def stop_rank(self, rank):
        """SIGSTOPs a worker (as a debugger or a stuck page-in would hold it)."""
        pid = _rank_pid(self.token, rank)
        assert pid is not None, f"no worker with RANK={rank}"
        os.kill(pid, signal.SIGSTOP)
        self.stopped_pids.append(pid)
        return pid
