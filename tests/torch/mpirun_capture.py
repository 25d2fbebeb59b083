#!/usr/bin/env python3
"""Captures one real Open MPI job with one injected fault: `mpirun -np 4 --oversubscribe
--tag-output` running tests/torch/torchrun_job.py (rank and world from OMPI_COMM_WORLD_RANK and
OMPI_COMM_WORLD_SIZE, the store at MASTER_ADDR:MASTER_PORT passed with -x; Gloo on CPU; TP=2 x
DP=2), every surviving rank dumping its flight recorder from its `except` and SIGTERM handlers.

    python tests/torch/mpirun_capture.py OUT --scenario exception|segfault|hang

OUT gets console.log (mpirun's output exactly as it printed it), dumps/, expected.json (the
answer from the injected fault: torchrun_capture.expected_answer, never an analyzer's) and
file_times.json (the files' modification times, which decide whether an op was stuck).
Needs mpirun (Debian's openmpi-bin); as root, OMPI_ALLOW_RUN_AS_ROOT is set for it.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import uuid

import torchrun_capture

SCENARIOS = ["exception", "segfault", "hang"]


def mpirun_version():
    out = subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout
    return out.split()[3] if len(out.split()) > 3 else "unknown"  # "mpirun (Open MPI) 4.1.4"


def capture(out, scenario, fault_rank=2):
    out = os.path.abspath(out)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    token = uuid.uuid4().hex
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(torchrun_capture.free_port()),
               TORCH_FR_BUFFER_SIZE="2000", PYTHONUNBUFFERED="1",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env[torchrun_capture.TOKEN_VAR] = token
    job_args = ["--scenario", scenario, "--fault-rank", str(fault_rank), "--fault-step", "3",
                "--steps", "6", "--tp", "2", "--timeout", "5", "--hang-s", "120",
                "--dumps", "dumps"]
    cmd = ["mpirun", "-np", "4", "--oversubscribe", "--tag-output",
           "-x", "MASTER_ADDR", "-x", "MASTER_PORT", "-x", "TORCH_FR_BUFFER_SIZE",
           "-x", "PYTHONUNBUFFERED", "-x", torchrun_capture.TOKEN_VAR,
           sys.executable, torchrun_capture.JOB, *job_args]
    started = time.time()
    with open(os.path.join(out, "console.log"), "wb") as console:
        proc = subprocess.Popen(cmd, cwd=out, env=env, stdin=subprocess.DEVNULL, stdout=console,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=torchrun_capture.no_core_files)
        try:
            exit_code = proc.wait(timeout=180)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            exit_code = None
    killed = torchrun_capture.stop_everything([proc], token)
    failure_class, culprits, kind, kinds, notes = torchrun_capture.expected_answer(
        scenario, fault_rank)
    dumps = os.path.join(out, "dumps")
    ranks_dumped = sorted(int(name.rsplit("_", 1)[1]) for name in os.listdir(dumps)
                          if name.startswith("nccl_trace_rank_") and "." not in name) \
        if os.path.isdir(dumps) else []
    expected = {
        "scenario": scenario, "fault_rank": fault_rank, "fault_step": 3,
        "failure_class": failure_class, "culprit_ranks": culprits,
        "root_cause_kind": kind, "root_cause_kinds": kinds,
        "root_cause_ranks": [] if failure_class == "none" else culprits,
        "notes": notes + " (launched by Open MPI's mpirun --tag-output, which SIGTERMs the "
                 "others once one rank exits non-zero and SIGKILLs them soon after: not every "
                 "survivor finishes its dump)",
        "launcher": f"mpirun (Open MPI) {mpirun_version()}",
        "launcher_command": cmd[:12] + ["python", "tests/torch/torchrun_job.py", *job_args],
        "launcher_exit_code": exit_code, "launcher_timed_out": timed_out,
        "processes_killed_by_harness": len(killed), "ranks_dumped": ranks_dumped,
        "world_size": 4, "backend": "gloo", "group_timeout_s": 5.0,
        "torch_version": torchrun_capture.torch_version().split("+")[0],
        "wall_s": round(time.time() - started, 1),
    }
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=2)
        f.write("\n")
    torchrun_capture.write_file_times(out)
    return expected


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--scenario", choices=SCENARIOS, required=True)
    parser.add_argument("--fault-rank", type=int, default=2)
    args = parser.parse_args()
    expected = capture(args.out, args.scenario, args.fault_rank)
    print(json.dumps({k: expected[k] for k in ("scenario", "launcher_exit_code", "ranks_dumped",
                                                "wall_s")}))


if __name__ == "__main__":
    main()
