#!/usr/bin/env python3
"""The training script tests/torch/torchrun_capture.py hands to torchrun: one rank of a small
tensor- and data-parallel job on CPU (Gloo) with one fault injected on one rank at one step.

    python -m torch.distributed.run --nproc-per-node 4 ... tests/torch/torchrun_job.py \
        --scenario exception --fault-rank 2 --dumps OUT/dumps [--tp 2] [--timeout 5]

torchrun sets RANK, WORLD_SIZE and LOCAL_RANK. The world is TP x DP (rank = dp * TP + tp); the
groups come from dist.new_group with group_desc "TP" and "DP" and the short --timeout, so that a
rank whose peer never arrives fails the way Gloo fails (a timeout, or the peer's closed
connection). The default group, used only to start, gets --init-timeout.

A step: a row-parallel linear layer whose partial outputs are summed by a TP all_reduce, then a DP
all_reduce of the gradients (with the loss in the same buffer), then an SGD update; every rank
prints `step S loss L` as training scripts do. Every third step the TP group all_gathers its
shard norms for logging.

Faults (--scenario), injected on --fault-rank at --fault-step:
  healthy    nothing; every rank dumps its flight recorder on demand after the last step
  exception  raises ValueError before the step's DP all_reduce (a bad batch)
  runtime    raises RuntimeError there (the two-agent job uses it)
  segfault   a real SIGSEGV there (reads address 0 through ctypes)
  sigkill    sends itself SIGKILL there (what the OOM killer or `kill -9` does)
  hang       sleeps in user code there ("data loading") far longer than the group timeout; its
             DP peer hits Gloo's timeout
  desync     calls all_gather in its TP group where the group all_reduces
  checkpoint no fault: at --fault-step EVERY rank writes a "checkpoint" (save_checkpoint,
             outside any collective; rank 0 for --hang-s, the others a shorter share of it),
             then trains on: a pause every rank shares
  segfault_and_error  two independent faults at the same point of the same step: --fault-rank
             segfaults as in `segfault`, and --second-fault-rank (in neither of its groups)
             fails to write its metrics file (OSError ENOSPC, "No space left on device"): two
             initiators, neither waiting on the other
  early_exit --fault-rank returns from training before the step's DP all_reduce, as a rank
             whose loop ends on a bad condition (`if ...: return`), and its process exits 0
             with no error and no dump while its peers wait for it
  nan        --fault-rank's partial output turns NaN before the TP all_reduce: the TP sum
             carries it to its TP peer, the DP all_reduce of the gradients and loss to every
             rank, and every rank raises FloatingPointError on the non-finite loss at once (as
             trainers that check the loss do); no rank waits for another

Dumps: every rank that lives to do so writes its flight recorder through PyTorch's own
torch._C._distributed_c10d._dump_fr_trace (pickle, with stacks) to DUMPS/nccl_trace_rank_<rank>
(tmp file + rename: fr_dump.py, shared with the other launchers' jobs), from the `except` handler
of main (then re-raises, so that @record writes torchrun's error.json) and from its SIGTERM
handler (torchrun's agent SIGTERMs the survivors once one worker failed; the handler then dies of
SIGTERM as if it had none). Python runs signal handlers between bytecodes of the main thread,
which never comes while that thread waits inside a Gloo collective, so the handler's work is done
by a thread woken through signal.set_wakeup_fd.
One dump per process, whichever path comes first: a SIGTERM that arrives while the `except`
handler is dumping waits for that dump, then kills the process, whose traceback and error.json may
then never be written (as with a survivor without any handler). The first dump with stacks costs
about 2 s of CPU (PyTorch imports its symbolizer), so on a small machine the survivors' dumps and
deaths come seconds after the fault, as on a loaded node.
"""

import argparse
import ctypes
import datetime
import errno
import os
import signal
import sys
import threading
import time
import traceback

# The flight recorder records nothing unless its buffer size is set before the first group.
os.environ.setdefault("TORCH_FR_BUFFER_SIZE", "2000")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.distributed.elastic.multiprocessing.errors import record  # noqa: E402

# Beside this script, whose folder Python puts first on sys.path: the dump every launcher's job
# writes when it fails.
import fr_dump  # noqa: E402

SCENARIOS = ["healthy", "exception", "runtime", "segfault", "sigkill", "hang", "desync",
             "checkpoint", "segfault_and_error", "nan", "uneven_data",
             "size_mismatch", "dtype_mismatch", "early_exit", "exit_code", "cpu_alloc"]


class Recorder:
    """Writes this process's flight-recorder dump once, whichever path (except, SIGTERM) asks."""

    def __init__(self, dumps, rank):
        self.dumps, self.rank = dumps, rank
        self.lock = threading.Lock()
        self.done = False

    def dump(self, why):
        with self.lock:
            if self.done:
                return
            fr_dump.dump(self.dumps, self.rank, why)
            self.done = True


def install_sigterm_dump(recorder):
    """On SIGTERM: dump, then die of SIGTERM (exit code -15, as torchrun expects of a survivor)."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)

    def on_signal(signum, frame):
        pass  # the thread below does the work; this handler only makes Python wake the fd

    signal.signal(signal.SIGTERM, on_signal)
    signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)

    def watch():
        while True:
            signum = os.read(read_fd, 1)
            if signum and signum[0] == signal.SIGTERM:
                break
        print("received SIGTERM; dumping the flight recorder", file=sys.stderr, flush=True)
        try:
            recorder.dump("SIGTERM")
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            # Only the main thread may call signal.signal; libc's signal() sets the process's
            # disposition from any thread.
            libc = ctypes.CDLL(None, use_errno=True)
            libc.signal.restype = ctypes.c_void_p
            libc.signal(int(signal.SIGTERM), ctypes.c_void_p(0))  # SIG_DFL
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
            os._exit(128 + signal.SIGTERM)

    threading.Thread(target=watch, name="sigterm-dump", daemon=True).start()


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", choices=SCENARIOS, default="healthy")
    parser.add_argument("--fault-rank", type=int, default=2)
    parser.add_argument("--second-fault-rank", type=int, default=1,
                        help="the other faulty rank of segfault_and_error")
    parser.add_argument("--fault-step", type=int, default=3)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--tp", type=int, default=2)
    parser.add_argument("--timeout", type=float,
                        default=float(os.environ.get("FR_JOB_TIMEOUT_S", "5")),
                        help="process-group timeout in seconds (env FR_JOB_TIMEOUT_S)")
    parser.add_argument("--init-timeout", type=float, default=120.0,
                        help="the default group's timeout (start-up)")
    parser.add_argument("--hang-s", type=float, default=3600.0,
                        help="how long the hang scenario sleeps (torchrun's SIGTERM ends it)")
    parser.add_argument("--step-s", type=float, default=0.05,
                        help="compute time per step (a sleep), so the job has a rhythm")
    parser.add_argument("--dumps", required=True, help="folder of the flight-recorder dumps")
    parser.add_argument("--debug-server-port", type=int, default=0,
                        help="start PyTorch's debug server in every rank (rank 0's frontend on "
                             "this port); 0: none")
    parser.add_argument("--debug-dump-dir", default=None,
                        help="the debug server's periodic snapshots (stacks_<time>.txt, ...)")
    parser.add_argument("--debug-dump-interval", type=float, default=2.0)
    return parser.parse_args()


def ranks_from_mpirun():
    """Under Open MPI's mpirun (no torchrun), the rank and world come from its environment; the
    store address from MASTER_ADDR/MASTER_PORT passed with `mpirun -x`."""
    if "RANK" not in os.environ and "OMPI_COMM_WORLD_RANK" in os.environ:
        os.environ["RANK"] = os.environ["OMPI_COMM_WORLD_RANK"]
        os.environ["WORLD_SIZE"] = os.environ["OMPI_COMM_WORLD_SIZE"]
        os.environ["LOCAL_RANK"] = os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0")


@record
def main():
    args = parse_args()
    ranks_from_mpirun()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    recorder = Recorder(args.dumps, rank)
    install_sigterm_dump(recorder)
    torch.manual_seed(1234)
    timeout = datetime.timedelta(seconds=args.timeout)
    tp = args.tp
    dp = world // tp
    # The default group only meets once, at start-up, where ranks that imported torch on a loaded
    # machine may arrive many seconds apart: it gets a start-up timeout, the TP and DP groups the
    # short one.
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.init_timeout))
    if args.debug_server_port:
        # Every rank serves its flight recorder and Python stacks over HTTP and registers its
        # address in the job's store; rank 0 also runs the frontend, which snapshots them all.
        from torch.distributed.debug import start_debug_server
        start_debug_server(port=args.debug_server_port, dump_dir=args.debug_dump_dir,
                           dump_interval=args.debug_dump_interval)
        print("debug server started", file=sys.stderr, flush=True)
    try:
        my_dp, my_tp = divmod(rank, tp)
        tp_group = dp_group = None
        # Every rank creates every group, in the same order.
        for d in range(dp):
            g = dist.new_group([d * tp + t for t in range(tp)], timeout=timeout, group_desc="TP")
            if d == my_dp:
                tp_group = g
        for t in range(tp):
            g = dist.new_group([d * tp + t for d in range(dp)], timeout=timeout, group_desc="DP")
            if t == my_tp:
                dp_group = g
        train(args, rank, my_dp, my_tp, tp_group, dp_group)
        if args.scenario == "healthy":
            recorder.dump("on demand after the last step")
            dist.destroy_process_group()
    except BaseException:
        if args.scenario == "segfault_and_error":
            # As a training script that logs its failure before it cleans up: the traceback is
            # out before the dump's seconds, during which the agent's SIGTERM (sent for the other
            # rank's segfault) would end the process before Python printed it at exit.
            traceback.print_exc()
            sys.stderr.flush()
        recorder.dump("exception")
        raise


def train(args, rank, my_dp, my_tp, tp_group, dp_group):
    gen = torch.Generator().manual_seed(my_tp)
    w1 = torch.randn(16, 8, generator=gen) * 0.3        # column shard: in 16 -> hidden 8 of 16
    w2 = torch.randn(8, 1, generator=gen) * 0.3         # row shard: hidden 8 -> out 1
    data = torch.Generator().manual_seed(100 + my_dp)
    faulty = rank == args.fault_rank or (args.scenario == "segfault_and_error"
                                         and rank == args.second_fault_rank)
    steps = args.steps
    if faulty and args.scenario == "uneven_data":
        # This rank's shard of the dataset holds fewer batches: it leaves the epoch early and goes
        # on to the epoch's end while its peers still train.
        steps = args.fault_step
    for step in range(steps):
        x = torch.randn(32, 16, generator=data)
        target = x[:, :1] * 0.5
        w1.requires_grad_(True)
        w2.requires_grad_(True)
        partial = torch.relu(x @ w1) @ w2
        if faulty and step == args.fault_step and args.scenario == "nan":
            partial = partial * float("nan")  # an overflow in this rank's half of the layer
        total = partial.detach().clone()
        if faulty and step == args.fault_step and args.scenario == "desync":
            # The wrong collective: this rank gathers where its TP group reduces.
            parts = [torch.empty_like(total) for _ in range(args.tp)]
            dist.all_gather(parts, total, group=tp_group)
            total = sum(parts)
        elif faulty and step == args.fault_step and args.scenario == "size_mismatch":
            # A shape that differs on this rank only (its batch kept one more sample).
            total = torch.cat([total, total[:1]])
            dist.all_reduce(total, group=tp_group)
            total = total[:-1]
        elif faulty and step == args.fault_step and args.scenario == "dtype_mismatch":
            # This rank's half of the layer ran in double precision (a missed autocast).
            wide = total.double()
            dist.all_reduce(wide, group=tp_group)
            total = wide.float()
        else:
            dist.all_reduce(total, group=tp_group)
        out = partial + (total - partial.detach())
        loss = torch.nn.functional.mse_loss(out, target)
        loss.backward()
        time.sleep(args.step_s)  # the rest of the step's compute
        if faulty and step == args.fault_step and args.scenario == "early_exit":
            print(f"stopping early at step {step}", flush=True)
            return
        if faulty and step == args.fault_step:
            inject(args, rank, step)
        flat = torch.cat([w1.grad.flatten(), w2.grad.flatten(), loss.detach().reshape(1)])
        dist.all_reduce(flat, group=dp_group)
        flat /= dist.get_world_size(dp_group)
        if not torch.isfinite(flat[-1]):
            raise FloatingPointError(f"Loss became infinite or NaN at iteration={step}!")
        with torch.no_grad():
            n1 = w1.numel()
            w1 = (w1 - 0.1 * flat[:n1].view_as(w1)).detach()
            w2 = (w2 - 0.1 * flat[n1:n1 + w2.numel()].view_as(w2)).detach()
        if step == args.fault_step and args.scenario == "checkpoint":
            save_checkpoint(args, rank, w1, w2)
        if step % 3 == 2:
            norms = [torch.empty(1) for _ in range(args.tp)]
            dist.all_gather(norms, w1.norm().reshape(1), group=tp_group)
        print(f"step {step} loss {flat[-1].item():.4f}", flush=True)
    if args.scenario == "uneven_data":
        # The epoch's end: every rank's metric averaged over the whole world (the default group).
        metric = torch.tensor([float(steps)])
        dist.all_reduce(metric)
        print(f"epoch done: {metric.item() / dist.get_world_size():.1f} batches per rank",
              flush=True)


def save_checkpoint(args, rank, w1, w2):
    """Every rank's pause outside communication: serializing its shard to slow storage. Shards
    take different times (rank 0 also writes the metadata: the longest), so the ranks done first
    wait in the next collective for the others, as in a real sharded checkpoint."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    torch.save({"w1": w1, "w2": w2}, os.devnull)
    time.sleep(args.hang_s * (world - rank) / world)  # the write to slow storage


def inject(args, rank, step):
    if args.scenario == "exception":
        raise ValueError(f"bad batch at step {step}: label out of range")
    if args.scenario == "runtime":
        raise RuntimeError(f"loss exploded at step {step}")
    if args.scenario == "segfault" or (args.scenario == "segfault_and_error"
                                       and rank == args.fault_rank):
        ctypes.string_at(0)
    if args.scenario == "segfault_and_error":
        # The second, unrelated fault: a full local disk where this rank appends its metrics.
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC),
                      f"/scratch/metrics/rank{rank}.jsonl")
    if args.scenario == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    if args.scenario == "hang":
        time.sleep(args.hang_s)  # "data loading" that never returns
    if args.scenario == "exit_code":
        sys.exit(3)  # a script's own check that gives up with a status, no traceback
    if args.scenario == "cpu_alloc":
        torch.empty(1 << 44, dtype=torch.uint8)  # 16 TiB: the host allocator refuses


if __name__ == "__main__":
    main()
