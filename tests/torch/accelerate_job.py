#!/usr/bin/env python3
"""A real Hugging Face Accelerate job on CPU (Gloo, group timeout 5 s): a small regression model
prepared by `Accelerator(cpu=True)`, launched by

    accelerate launch --multi_gpu --num_processes 4 tests/torch/accelerate_job.py \
        --fault-rank 2 --fault-step 3 --dumps DIR

(`accelerate launch` runs torchrun underneath; `--cpu --num_processes 4` would start one process
only). The --fault-rank raises ValueError before its --fault-step's backward. Every rank dumps its
flight recorder from its `except` handler into DUMPS/nccl_trace_rank_<rank>, then re-raises.
"""

import argparse
import datetime
import os

# The flight recorder records nothing unless its buffer size is set before the first group.
os.environ.setdefault("TORCH_FR_BUFFER_SIZE", "2000")

import torch  # noqa: E402

from accelerate import Accelerator, InitProcessGroupKwargs  # noqa: E402

# Beside this script, whose folder Python puts first on sys.path: the dump every launcher's job
# writes when it fails.
import fr_dump  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fault-rank", type=int, default=2)
    parser.add_argument("--fault-step", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--dumps", required=True)
    args = parser.parse_args()
    accelerator = Accelerator(cpu=True, kwargs_handlers=[
        InitProcessGroupKwargs(backend="gloo", timeout=datetime.timedelta(seconds=5))])
    rank = accelerator.process_index
    torch.manual_seed(1234)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(64 * args.steps, 16)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x[:, :1] * 0.5),
                                         batch_size=16)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    try:
        for step, (xb, yb) in enumerate(loader):
            if step == args.steps:
                break
            loss = torch.nn.functional.mse_loss(model(xb), yb)
            if rank == args.fault_rank and step == args.fault_step:
                raise ValueError(f"bad batch at step {step}: label out of range")
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            accelerator.print(f"step {step} loss {loss.item():.4f}")
    except BaseException:
        fr_dump.dump(args.dumps, rank)
        raise


if __name__ == "__main__":
    main()
