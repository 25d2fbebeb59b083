#!/usr/bin/env python3
"""A plain data-parallel training script whose only flight-recorder code is the line a user adds:
`fr_analyze.record(args.dumps)`. tests/torch/test_record.py runs it under torchrun (CPU, Gloo):

    python -m torch.distributed.run --standalone --nproc-per-node 4 tests/torch/record_job.py \
        --dumps DIR --fault exception|hang|none --fault-rank 2 --fault-step 8 [--at-exit]

torchrun sets RANK, WORLD_SIZE and MASTER_ADDR/PORT. Every step all_reduces the gradients over the
default group (Gloo) and prints `step S loss L`; every second step also all_gathers a norm. At
--fault-step, --fault-rank:
  exception  raises ValueError before the step's all_reduce (a bad batch); its peers fail when
             its process exits (Gloo: connection closed), and the launcher stops the rest
  hang       prints `rank R: loading data` and sleeps far past any timeout in user code; its
             peers wait in the all_reduce until someone sends SIGTERM
  none       nothing: the job ends normally (with --at-exit every rank dumps on the way out)
No dump is written by this script: whatever lands in --dumps is record()'s doing.
"""

import argparse
import datetime
import sys
import time

import fr_analyze

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--dumps", required=True)
parser.add_argument("--fault", choices=["exception", "hang", "none"], default="none")
parser.add_argument("--fault-rank", type=int, default=2)
# Late enough for a rhythm: the analyzer judges a wait against a rank's own gaps between ops
# once it has 8 of them (docs/analysis.md, "A hang in progress").
parser.add_argument("--fault-step", type=int, default=8)
parser.add_argument("--steps", type=int, default=12)
parser.add_argument("--timeout", type=float, default=120.0,
                    help="the group's timeout (s): longer than the test lets a hang last")
parser.add_argument("--at-exit", action="store_true")
args = parser.parse_args()

# The line this test is about: before init_process_group, as docs/dumps.md says.
recording = fr_analyze.record(args.dumps, at_exit=args.at_exit)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
rank = dist.get_rank()
print(f"rank {rank}: dumps go to {recording.path}", flush=True)

torch.manual_seed(0)
w = torch.randn(16, 1) * 0.1
data = torch.Generator().manual_seed(100 + rank)
for step in range(args.steps):
    x = torch.randn(32, 16, generator=data)
    w.requires_grad_(True)
    loss = torch.nn.functional.mse_loss(x @ w, x[:, :1] * 0.5)
    loss.backward()
    if rank == args.fault_rank and step == args.fault_step:
        if args.fault == "exception":
            raise ValueError(f"bad batch at step {step}: label out of range")
        if args.fault == "hang":
            print(f"rank {rank}: loading data", flush=True)
            time.sleep(3600)
    grad = torch.cat([w.grad.flatten(), loss.detach().reshape(1)])
    dist.all_reduce(grad)
    grad /= dist.get_world_size()
    with torch.no_grad():
        w = (w - 0.1 * grad[:-1].view_as(w)).detach()
    if step % 2 == 1:
        norms = [torch.empty(1) for _ in range(dist.get_world_size())]
        dist.all_gather(norms, w.norm().reshape(1))
    print(f"step {step} loss {grad[-1].item():.4f}", flush=True)
dist.destroy_process_group()
sys.exit(0)
