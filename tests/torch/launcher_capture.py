#!/usr/bin/env python3
"""Captures one real job started by a launcher other than torchrun, with one injected fault:

    PY=build/launchers-venv/bin/python   # torch 2.13.0, lightning, accelerate, ray[train]
    $PY tests/torch/launcher_capture.py OUT --launcher lightning|accelerate|ray_retry|deepspeed \
        [--golden]

  lightning   tests/torch/lightning_job.py: Trainer(accelerator="cpu", devices=4,
              strategy="ddp"), Lightning starting its own ranks; rank 2 raises ValueError in
              training_step at step 3
  accelerate  `accelerate launch --multi_gpu --num_processes 4 tests/torch/accelerate_job.py`
              (Accelerator(cpu=True), torchrun underneath); rank 2 raises ValueError at step 3
  ray_retry   `tests/torch/ray_job.py --scenario retry`: Ray Train with FailureConfig(max_failures
              =1); attempt 1 fails on rank 2, the retry on rank 3; dumps in dumps/attempt_<n>/
  deepspeed   `deepspeed --num_gpus 4 --no_local_rank tests/torch/torchrun_job.py` (DeepSpeed's
              launcher on its CPU accelerator, Gloo; the training step of the torchrun jobs);
              rank 2 raises ValueError at step 3

OUT gets console.log (the launcher's console, stdout and stderr together, exactly as printed),
dumps/, expected.json (the answer from the injected fault, never from an analyzer) and
file_times.json (every file's modification time, which decides whether an op was stuck).
--golden copies OUT into tests/data/<launcher>/<version>/<scenario>/ (Ray: tests/data/ray/...).
The launcher has a hard deadline; then every process it left (found by a token in the
environment and as its descendants) is stopped by pid.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from importlib import metadata

import torchrun_capture

HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCHERS = ["lightning", "accelerate", "ray_retry", "deepspeed"]
FAULT_RANK, FAULT_STEP = 2, 3


def command(launcher):
    """(argv, package whose version names the golden folder, scenario, launcher's words)."""
    py = sys.executable
    if launcher == "lightning":
        return ([py, os.path.join(HERE, "lightning_job.py"), "--fault-rank", str(FAULT_RANK),
                 "--fault-step", str(FAULT_STEP), "--dumps", "dumps"], "lightning", "exception",
                'PyTorch Lightning Trainer(accelerator="cpu", devices=4, strategy="ddp") '
                "(DDPStrategy, Gloo, timeout 60 s), ranks started by Lightning itself")
    if launcher == "accelerate":
        return ([os.path.join(os.path.dirname(py), "accelerate"), "launch", "--multi_gpu",
                 "--num_processes", "4", "--num_machines", "1", "--mixed_precision", "no",
                 "--dynamo_backend", "no", "--main_process_port",
                 str(torchrun_capture.free_port()), os.path.join(HERE, "accelerate_job.py"),
                 "--fault-rank", str(FAULT_RANK), "--fault-step", str(FAULT_STEP),
                 "--dumps", "dumps"], "accelerate", "exception",
                "accelerate launch --multi_gpu --num_processes 4 (torchrun underneath), "
                "Accelerator(cpu=True), Gloo, timeout 5 s")
    if launcher == "ray_retry":
        return ([py, os.path.join(HERE, "ray_job.py"), "--scenario", "retry", "--fault-rank",
                 str(FAULT_RANK), "--dumps", "dumps"], "ray", "retry",
                "Ray Train TorchTrainer, ScalingConfig(num_workers=4, use_gpu=False), "
                "FailureConfig(max_failures=1)")
    if launcher == "deepspeed":
        return ([os.path.join(os.path.dirname(py), "deepspeed"), "--num_gpus", "4",
                 "--master_port", str(torchrun_capture.free_port()), "--no_local_rank",
                 torchrun_capture.JOB, "--scenario", "exception", "--fault-rank",
                 str(FAULT_RANK), "--fault-step", str(FAULT_STEP), "--steps", "6", "--tp", "2",
                 "--timeout", "5", "--dumps", "dumps"], "deepspeed", "exception",
                "deepspeed --num_gpus 4 (DeepSpeed's launcher on its CPU accelerator), "
                "Gloo, TP 2 x DP 2, timeout 5 s")
    raise ValueError(launcher)


def expected_answer(launcher):
    """(failure_class, culprit_ranks, root-cause kinds, notes), from what was injected."""
    if launcher == "ray_retry":
        return ("missing_participant", [FAULT_RANK], ["python_exception"],
                f"attempt 1: rank {FAULT_RANK} raised ValueError and Ray killed the worker group "
                f"(FailurePolicy RETRY); attempt 2: rank {FAULT_RANK + 1} raised and the job "
                f"failed (RAISE). The first failure caused the restart and is the root cause; "
                f"each attempt's dumps are in dumps/attempt_<n>/ and must never be matched "
                f"together: the analysed dumps are attempt 1's")
    return ("missing_participant", [FAULT_RANK], ["python_exception"],
            f"rank {FAULT_RANK} raised ValueError in its training step before the step's DDP "
            f"all_reduce; its peers wait for it there and fail with Gloo's closed connection or "
            f"timeout: they are victims")


def ranks_in(folder):
    if not os.path.isdir(folder):
        return []
    return sorted(int(name.rsplit("_", 1)[1]) for name in os.listdir(folder)
                  if name.startswith("nccl_trace_rank_") and "." not in name)


def capture(out, launcher):
    out = os.path.abspath(out)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    cmd, package, scenario, words = command(launcher)
    token = uuid.uuid4().hex
    env = dict(os.environ, PYTHONUNBUFFERED="1", TORCH_FR_BUFFER_SIZE="2000")
    env[torchrun_capture.TOKEN_VAR] = token
    started = time.time()
    with open(os.path.join(out, "console.log"), "wb") as console:
        proc = subprocess.Popen(cmd, cwd=out, env=env, stdin=subprocess.DEVNULL, stdout=console,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=torchrun_capture.no_core_files)
        try:
            exit_code, timed_out = proc.wait(timeout=300), False
        except subprocess.TimeoutExpired:
            exit_code, timed_out = None, True
    wall_s = round(time.time() - started, 1)
    killed = torchrun_capture.stop_everything([proc], token)
    # ray_job.py's attempt counters: the harness's bookkeeping, not the job's evidence.
    shutil.rmtree(os.path.join(out, "dumps.attempts"), ignore_errors=True)
    failure_class, culprits, kinds, notes = expected_answer(launcher)
    dumps = os.path.join(out, "dumps")
    if launcher == "ray_retry":
        attempts = {name: ranks_in(os.path.join(dumps, name)) for name in sorted(os.listdir(dumps))}
        ranks_dumped = attempts.get("attempt_1", [])
    else:
        attempts = None
        ranks_dumped = ranks_in(dumps)
    expected = {
        "scenario": scenario, "fault_rank": FAULT_RANK, "fault_step": FAULT_STEP,
        "failure_class": failure_class, "culprit_ranks": culprits,
        "root_cause_kind": kinds[0], "root_cause_kinds": kinds, "root_cause_ranks": culprits,
        "notes": notes, "launcher": f"{words}; {package} {metadata.version(package)}",
        "launcher_command": [os.path.basename(cmd[0])]
        + [os.path.relpath(a, os.path.dirname(os.path.dirname(HERE))) if a.startswith("/")
           else a for a in cmd[1:]],
        "launcher_exit_code": exit_code, "launcher_timed_out": timed_out,
        "processes_killed_by_harness": len(killed), "ranks_dumped": ranks_dumped,
        "world_size": 4, "backend": "gloo",
        "group_timeout_s": 60.0 if launcher == "lightning" else 5.0,
        "torch_version": metadata.version("torch").split("+")[0],
        "package_version": metadata.version(package), "wall_s": wall_s,
    }
    if attempts is not None:
        expected["ranks_dumped_by_attempt"] = attempts
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=2)
        f.write("\n")
    torchrun_capture.write_file_times(out)
    return expected


def golden_dir(launcher, expected):
    package = command(launcher)[1]
    return os.path.join(os.path.dirname(HERE), "data", package, expected["package_version"],
                        expected["scenario"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--launcher", choices=LAUNCHERS, required=True)
    parser.add_argument("--golden", action="store_true")
    args = parser.parse_args()
    expected = capture(args.out, args.launcher)
    if args.golden:
        case = golden_dir(args.launcher, expected)
        shutil.rmtree(case, ignore_errors=True)
        shutil.copytree(args.out, case, ignore=shutil.ignore_patterns("*.tmp"))
        print(case)
    print(json.dumps({k: expected[k] for k in ("scenario", "launcher_exit_code", "ranks_dumped",
                                                "wall_s")}))


if __name__ == "__main__":
    main()
