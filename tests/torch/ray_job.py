#!/usr/bin/env python3
"""A real Ray Train job (TorchTrainer, 4 CPU workers, Gloo) running the training step of
tests/torch/torchrun_job.py, with one fault injected on one world rank; every rank that can dumps
its flight recorder (from its `except` handler) into DUMPS/attempt_<n>/nccl_trace_rank_<rank>.

    python tests/torch/ray_job.py --scenario exception|sigkill|retry --fault-rank 2 --dumps DIR

retry: FailureConfig(max_failures=1): the first attempt fails on --fault-rank, the retry on the
next rank, so the job's final error names the second failure while the first one caused the
restart. The console (Ray's driver output, with its worker prefixes and colour codes) is what a
user of Ray Train sees; run it with stdout and stderr captured to a file.
"""

import argparse
import datetime
import os
import signal
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def train_loop(config):
    import torch
    import torch.distributed as dist

    import ray.train

    # A Ray worker runs this function, not the script: the script's folder is not on its path.
    sys.path.insert(0, config["here"])
    import fr_dump  # the dump every launcher's job writes when it fails
    import torchrun_job  # the training step and the faults, shared with the torchrun jobs

    context = ray.train.get_context()
    rank = context.get_world_rank()
    world = context.get_world_size()
    # Beside the dumps, not among them: the job's own bookkeeping.
    attempt_dir = config["dumps"].rstrip("/") + ".attempts"
    # Which attempt this is: a marker file per world rank, created on first entry.
    os.makedirs(attempt_dir, exist_ok=True)
    marker = os.path.join(attempt_dir, f"rank_{rank}")
    attempt = 1
    if os.path.exists(marker):
        attempt = int(open(marker).read()) + 1
    with open(marker, "w") as f:
        f.write(str(attempt))
    fault_rank = config["fault_rank"]
    scenario = config["scenario"]
    if scenario == "retry":
        # The first attempt raises on the fault rank, the retry on the next one.
        fault_rank = fault_rank if attempt == 1 else (fault_rank + 1) % world
        scenario = "exception"
    args = argparse.Namespace(scenario=scenario, fault_rank=fault_rank, fault_step=3, steps=6,
                              tp=2, step_s=0.05, hang_s=3600.0)
    tp = args.tp
    timeout = datetime.timedelta(seconds=5)
    my_dp, my_tp = divmod(rank, tp)
    tp_group = dp_group = None
    for d in range(world // tp):
        g = dist.new_group([d * tp + t for t in range(tp)], timeout=timeout, group_desc="TP")
        if d == my_dp:
            tp_group = g
    for t in range(tp):
        g = dist.new_group([d * tp + t for d in range(world // tp)], timeout=timeout,
                           group_desc="DP")
        if t == my_tp:
            dp_group = g
    print(f"world_rank={rank} pid={os.getpid()} attempt={attempt}", flush=True)
    try:
        torchrun_job.train(args, rank, my_dp, my_tp, tp_group, dp_group)
    except BaseException:
        # Said nowhere on the console: Ray's driver output stays as its goldens captured it.
        fr_dump.dump(os.path.join(config["dumps"], f"attempt_{attempt}"), rank, announce=False)
        raise


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", choices=["exception", "sigkill", "retry"], required=True)
    parser.add_argument("--fault-rank", type=int, default=2)
    parser.add_argument("--dumps", required=True)
    args = parser.parse_args()
    import ray
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer

    ray.init(num_cpus=4, include_dashboard=False,
             runtime_env={"env_vars": {"TORCH_FR_BUFFER_SIZE": "2000"}})
    trainer = TorchTrainer(
        train_loop,
        train_loop_config={"here": HERE, "dumps": os.path.abspath(args.dumps),
                           "fault_rank": args.fault_rank, "scenario": args.scenario},
        torch_config=TorchConfig(backend="gloo"),
        scaling_config=ScalingConfig(num_workers=4, use_gpu=False),
        run_config=RunConfig(
            storage_path=tempfile.mkdtemp(prefix="ray-results-"),
            failure_config=FailureConfig(max_failures=1 if args.scenario == "retry" else 0)),
    )
    trainer.fit()


if __name__ == "__main__":
    main()
