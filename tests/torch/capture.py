#!/usr/bin/env python3
"""Captures real flight-recorder dumps: launches a real multi-process PyTorch job on CPU (Gloo),
injects one fault, and lets every rank write its dump through PyTorch's own API.

    py=$(bash scripts/torch-venv.sh)
    "$py" tests/torch/capture.py OUT --scenario stuck_before_op [--json] [--no-stacks]
        [--late-rank R [--late-s S]]

OUT gets:
  dumps/nccl_trace_rank_<r>   one file per rank that lived to dump, named as PyTorch names them
                              (the default TORCH_NCCL_DEBUG_INFO_TEMP_FILE prefix), written by
                              torch._C._distributed_c10d._dump_fr_trace (or _dump_fr_trace_json)
  logs/rank<r>.log            what each worker printed (tracebacks of the victims included)
  expected.json               what the harness injected: failure_class, culprit_ranks, fault
                              details, the torch version; never computed from any analyzer

The job is a TP x PP x DP training step (rank = (dp * PP + pp) * TP + tp): TP all_reduce,
all_gather and reduce_scatter, a PP send/recv between stages, DP all_reduce of "gradients",
a broadcast, all_to_all with uneven splits, barrier, batch_isend_irecv and a coalesced pair of
all_reduces. Faults are injected at one step on one rank. Process groups get a short timeout
(--timeout) so that victims fail the way Gloo fails (a timeout error); every rank dumps when it
fails, or at the job's deadline if it is still alive (a hung culprit: the dump a signal handler
would write), as a post-mortem hook does.

Scenarios and what they inject:
  healthy           nothing; every rank dumps on demand after its last step
  stuck_before_op   the fault rank sleeps ("data loading") before the DP all_reduce of the step
  rank_exits        the fault rank exits (os._exit) before the DP all_reduce; it leaves no dump
                    (Gloo's dumps cannot show it: see docs/real-pytorch.md)
  op_mismatch       the fault rank calls all_gather where its TP group calls all_reduce
  size_mismatch     the fault rank all_reduces a longer tensor than its TP peers (Gloo aborts
                    the peer: the capture fails, see docs/real-pytorch.md)
  dtype_mismatch    the fault rank all_reduces float64 where its TP peers use float32

--dump-after S makes every rank dump S seconds after the ranks met, before any timeout: with
--timeout 60 the stuck_before_op scenario is a hang in progress (no watchdog has fired), and
healthy with many --steps is a running job dumped on demand.

--late-rank R adds a rank that is slow but healthy at the fault step (it sleeps --late-s before
its first op of that step): the order in which ranks begin waiting is then fixed rather than left
to the scheduler, and an analyzer that orders ranks by when their ops were enqueued, rather than
by how far each got, is caught blaming innocent ranks.
"""

import argparse
import datetime
import json
import os
import socket
import subprocess
import sys
import threading
import time
import traceback

SCENARIOS = ["healthy", "stuck_before_op", "rank_exits", "op_mismatch", "size_mismatch",
             "dtype_mismatch"]
DUMP_PREFIX = "nccl_trace_rank_"


def expected_verdict(scenario, fault_rank):
    """The verdict a correct analyzer must reach, from what was injected (never from an analyzer)."""
    if scenario == "healthy":
        return "none", []
    if scenario in ("stuck_before_op", "rank_exits"):
        return "missing_participant", [fault_rank]
    return scenario, [fault_rank]


# ----------------------------------------------------------------------------------------------
# The worker: one rank of the job.


def worker(args):
    import torch
    import torch.distributed as dist
    from torch._C import _distributed_c10d as c10d

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    tp, pp = args.tp, args.pp
    dp = world // (tp * pp)
    timeout = datetime.timedelta(seconds=args.timeout)
    dump_path = os.path.join(args.out, "dumps", f"{DUMP_PREFIX}{rank}")
    dump_lock = threading.Lock()

    def dump_and_exit(code):
        # One dump per process, through PyTorch's own API; written to a temporary name first so a
        # reader never sees half a file.
        with dump_lock:
            if args.json:
                data = c10d._dump_fr_trace_json(includeCollectives=True,
                                                onlyActive=args.only_active)
            else:
                data = c10d._dump_fr_trace(includeCollectives=True,
                                           includeStackTraces=args.stacks,
                                           onlyActive=args.only_active)
            if isinstance(data, str):
                data = data.encode()
            with open(dump_path + ".tmp", "wb") as f:
                f.write(data)
            os.replace(dump_path + ".tmp", dump_path)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)

    def dump_at_deadline(deadline):
        time.sleep(max(0.0, deadline - time.time()))
        print(f"rank {rank}: still alive at the deadline; dumping", flush=True)
        dump_and_exit(0)

    dist.init_process_group("gloo", timeout=timeout)

    def rank_of(d, p, t):
        return (d * pp + p) * tp + t

    my_d, rem = divmod(rank, tp * pp)
    my_p, my_t = divmod(rem, tp)
    # Every rank creates every group, in the same order, as PyTorch requires.
    tp_group = pp_group = dp_group = None
    for d in range(dp):
        for p in range(pp):
            g = dist.new_group([rank_of(d, p, t) for t in range(tp)], timeout=timeout,
                               group_desc="TP")
            if (d, p) == (my_d, my_p):
                tp_group = g
    for d in range(dp):
        for t in range(tp):
            g = dist.new_group([rank_of(d, p, t) for p in range(pp)], timeout=timeout,
                               group_desc="PP")
            if (d, t) == (my_d, my_t):
                pp_group = g
    for p in range(pp):
        for t in range(tp):
            g = dist.new_group([rank_of(d, p, t) for d in range(dp)], timeout=timeout,
                               group_desc="DP")
            if (p, t) == (my_p, my_t):
                dp_group = g

    faulty = rank == args.fault_rank
    # The rendezvous above ends at nearly the same moment on every rank, however long the ranks
    # took to start (importing torch on a loaded machine): the deadline counts from here. Steps
    # before the fault take well under a second; a victim fails after one timeout, and victims of
    # victims after a few more.
    deadline = time.time() + (args.dump_after if args.dump_after > 0
                              else args.timeout * 3 + args.settle)
    threading.Thread(target=dump_at_deadline, args=(deadline,), daemon=True).start()

    def data_loading(step):
        if rank == args.late_rank and step == args.fault_step:
            # Late, not stuck: a slow host (page cache, a logging call) holds this rank back at
            # the fault step, so whatever it waits for next, it begins waiting late.
            print(f"rank {rank}: late by {args.late_s} s at step {step}", flush=True)
            time.sleep(args.late_s)
        if faulty and step == args.fault_step and args.scenario == "stuck_before_op":
            print(f"rank {rank}: stuck in data loading at step {step}", flush=True)
            time.sleep(3600)

    def attention(step):
        x = torch.ones(8)
        if faulty and step == args.fault_step:
            if args.scenario == "op_mismatch":
                out = [torch.empty(8) for _ in range(tp)]
                dist.all_gather(out, x, group=tp_group)
                return
            if args.scenario == "size_mismatch":
                x = torch.ones(12)
            if args.scenario == "dtype_mismatch":
                x = torch.ones(8, dtype=torch.float64)
        dist.all_reduce(x, group=tp_group)

    def pipeline(step):
        # Stage p sends its activations to stage p + 1 (plain send/recv).
        act = torch.full((4,), float(step))
        if my_p + 1 < pp:
            dist.send(act, dst=rank_of(my_d, my_p + 1, my_t))
        if my_p > 0:
            dist.recv(act, src=rank_of(my_d, my_p - 1, my_t))

    def exchange(step):
        # batch_isend_irecv around the TP ring and a coalesced pair of all_reduces.
        if tp > 1:
            nxt, prv = rank_of(my_d, my_p, (my_t + 1) % tp), rank_of(my_d, my_p, (my_t - 1) % tp)
            ops = [dist.P2POp(dist.isend, torch.ones(3), nxt, group=tp_group),
                   dist.P2POp(dist.irecv, torch.empty(3), prv, group=tp_group)]
            for work in dist.batch_isend_irecv(ops):
                work.wait()
        with dist._coalescing_manager(group=dp_group, async_ops=True) as cm:
            dist.all_reduce(torch.ones(2), group=dp_group)
            dist.all_reduce(torch.ones(5), group=dp_group)
        cm.wait()

    def data_parallel(step):
        if faulty and step == args.fault_step and args.scenario == "rank_exits":
            print(f"rank {rank}: exiting at step {step}", flush=True)
            sys.stdout.flush()
            os._exit(1)
        grads = torch.ones(6)
        dist.all_reduce(grads, group=dp_group)
        # all_to_all with uneven splits: member i sends i + 1 elements to every peer.
        if dp > 1:
            me = dist.get_rank(dp_group)
            send = torch.ones((me + 1) * dp)
            recv = torch.empty(sum(i + 1 for i in range(dp)))
            dist.all_to_all_single(recv, send, output_split_sizes=[i + 1 for i in range(dp)],
                                   input_split_sizes=[me + 1] * dp, group=dp_group)
        dist.broadcast(torch.ones(2), src=rank_of(0, my_p, my_t), group=dp_group)

    def tensor_parallel_extra(step):
        shard = torch.ones(4)
        out = torch.empty(4 * tp)
        dist.all_gather_into_tensor(out, shard, group=tp_group)
        dist.reduce_scatter_tensor(torch.empty(4), out, group=tp_group)

    try:
        for step in range(args.steps):
            data_loading(step)
            attention(step)
            tensor_parallel_extra(step)
            pipeline(step)
            exchange(step)
            data_parallel(step)
            if step % 4 == 3:
                dist.barrier()
        print(f"rank {rank}: finished {args.steps} steps", flush=True)
        if args.scenario == "healthy":
            dump_and_exit(0)
        time.sleep(3600)  # a faulty job: wait for the deadline like everyone else
    except Exception:  # a victim: Gloo raised (timeout, peer gone); dump as a crash hook would
        traceback.print_exc()
        dump_and_exit(1)


# ----------------------------------------------------------------------------------------------
# The launcher.


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(args):
    import torch

    world = args.tp * args.pp * args.dp
    if args.fault_rank is None:
        args.fault_rank = world - 3 if world > 3 else world - 1
    if not 0 <= args.fault_rank < world:
        sys.exit(f"--fault-rank {args.fault_rank} is outside the world of {world} ranks")
    os.makedirs(os.path.join(args.out, "dumps"), exist_ok=True)
    os.makedirs(os.path.join(args.out, "logs"), exist_ok=True)
    for name in os.listdir(os.path.join(args.out, "dumps")):
        os.remove(os.path.join(args.out, "dumps", name))
    port = free_port()
    procs = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1",
                   TORCH_FR_BUFFER_SIZE=str(args.buffer), TORCH_NCCL_TRACE_BUFFER_SIZE=str(args.buffer))
        cmd = [sys.executable, os.path.abspath(__file__), args.out, "--worker",
               "--scenario", args.scenario, "--tp", str(args.tp), "--pp", str(args.pp),
               "--dp", str(args.dp), "--steps", str(args.steps), "--fault-rank",
               str(args.fault_rank), "--fault-step", str(args.fault_step), "--timeout",
               str(args.timeout), "--settle", str(args.settle), "--buffer", str(args.buffer),
               "--late-rank", str(args.late_rank), "--late-s", str(args.late_s),
               "--dump-after", str(args.dump_after)]
        cmd += ["--json"] if args.json else []
        cmd += [] if args.stacks else ["--no-stacks"]
        cmd += ["--only-active"] if args.only_active else []
        log = open(os.path.join(args.out, "logs", f"rank{rank}.log"), "wb")
        procs.append((subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT), log))
    limit = time.time() + args.startup + args.timeout * 3 + args.settle + 60
    for proc, log in procs:
        try:
            proc.wait(timeout=max(1.0, limit - time.time()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    failure_class, culprits = expected_verdict(args.scenario, args.fault_rank)
    dumped = sorted(int(n[len(DUMP_PREFIX):]) for n in os.listdir(os.path.join(args.out, "dumps"))
                    if n.startswith(DUMP_PREFIX) and n[len(DUMP_PREFIX):].isdigit())
    expected = {
        "scenario": args.scenario,
        "failure_class": failure_class,
        "culprit_ranks": culprits,
        "fault_rank": None if args.scenario == "healthy" else args.fault_rank,
        "fault_step": None if args.scenario == "healthy" else args.fault_step,
        "world_size": world,
        "tp": args.tp, "pp": args.pp, "dp": args.dp, "steps": args.steps,
        "format": "json" if args.json else "pickle",
        "stacks": args.stacks and not args.json,
        "only_active": args.only_active,
        "timeout_s": args.timeout,
        "late_rank": None if args.late_rank < 0 else args.late_rank,
        "late_s": None if args.late_rank < 0 else args.late_s,
        "dump_after_s": args.dump_after if args.dump_after > 0 else None,
        "backend": "gloo",
        "torch_version": torch.__version__,
        "ranks_dumped": dumped,
    }
    with open(os.path.join(args.out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=2)
        f.write("\n")
    # A rank that should have dumped but did not: Gloo aborts a peer of some faults (a size
    # mismatch ends in gloo::EnforceNotMet and std::terminate), which destroys the evidence the
    # fault would leave. Such a capture says so and fails, rather than becoming a silent fixture.
    should_dump = [r for r in range(world)
                   if not (args.scenario == "rank_exits" and r == args.fault_rank)]
    if dumped != should_dump:
        sys.exit(f"capture: expected dumps of ranks {should_dump}, got {dumped} "
                 f"(see {args.out}/logs)")
    return expected


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--scenario", choices=SCENARIOS, default="stuck_before_op")
    parser.add_argument("--tp", type=int, default=2)
    parser.add_argument("--pp", type=int, default=2)
    parser.add_argument("--dp", type=int, default=2)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--fault-rank", type=int, default=None)
    parser.add_argument("--fault-step", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=3.0,
                        help="process-group timeout in seconds (victims fail after it)")
    parser.add_argument("--startup", type=float, default=120.0,
                        help="seconds the ranks may take to start and meet (import torch)")
    parser.add_argument("--settle", type=float, default=6.0,
                        help="seconds after the last victim's timeout before survivors dump")
    parser.add_argument("--buffer", type=int, default=2000, help="TORCH_FR_BUFFER_SIZE")
    parser.add_argument("--late-rank", type=int, default=-1,
                        help="a rank that is slow (not stuck) at the fault step; none by default")
    parser.add_argument("--late-s", type=float, default=0.5,
                        help="how long --late-rank sleeps before its first op of that step")
    parser.add_argument("--dump-after", type=float, default=0.0,
                        help="every rank still alive dumps this many seconds after the ranks "
                             "met, whatever the timeout (a hang in progress, or a healthy job "
                             "dumped on demand while it runs); default: after the timeouts")
    parser.add_argument("--json", action="store_true", help="dump with _dump_fr_trace_json")
    parser.add_argument("--no-stacks", dest="stacks", action="store_false")
    parser.add_argument("--only-active", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    if args.fault_step >= args.steps:
        sys.exit("--fault-step must be below --steps")
    expected = launch(args)
    print(json.dumps(expected))


if __name__ == "__main__":
    main()
