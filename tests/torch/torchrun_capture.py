#!/usr/bin/env python3
"""Captures whole torchrun jobs: runs tests/torch/torchrun_job.py under PyTorch's own launcher
(`python -m torch.distributed.run`, CPU, Gloo) with one injected fault, and keeps the evidence
exactly as torchrun and the job leave it.

    py=$(bash scripts/venv.sh)
    "$py" tests/torch/torchrun_capture.py OUT --scenario exception [--timeout 5] [--golden]

OUT gets (one agent):
  console.log                 the launcher's console (stdout and stderr together, as a user's
                              `torchrun ... 2>&1 | tee` keeps it): the workers' lines, tee'd with
                              `[default<local rank>]:` prefixes (--tee 3), the agent's warnings
                              and its failure table ("Root Cause (first observed failure)")
  logdir/<run id>/attempt_0/<local rank>/{stdout.log,stderr.log,error.json}
                              torchrun's --log-dir tree (--redirects 3); error.json is what
                              @record wrote through torchrun's TORCHELASTIC_ERROR_FILE, for the
                              workers that raised
  dumps/nccl_trace_rank_<r>   every rank that lived to dump: pickle with stacks, written from its
                              `except` handler or its SIGTERM handler (the agent SIGTERMs the
                              survivors after the first failure), or on demand after the last
                              step (healthy)
  expected.json               what was injected, never computed from any analyzer (see below)
With --scenario two_agents, two agents of 4 ranks each (`--nnodes 2 --node-rank 0/1`, static
rendezvous on 127.0.0.1 and a free port) write node0/ and node1/, each with its own console.log,
logdir/ and dumps/; expected.json stays at OUT.

The job: world 4 = TP 2 x DP 2 (8 = TP 2 x DP 4 for two agents), 6 steps, fault at step 3 on
rank 2 (rank 6 for two agents), group timeout --timeout seconds (5).

Scenarios and what the job does at the fault (see torchrun_job.py):
  exception   ValueError before the DP all_reduce
  segfault    SIGSEGV there (torchrun reports exitcode -11; faulthandler, which @record's
              error handler enables, prints "Fatal Python error: Segmentation fault")
  sigkill     SIGKILL there, with no kernel log (torchrun reports exitcode -9)
  hang        sleeps in user code before the DP all_reduce; its peers hit Gloo's timeout
  desync      all_gather where its TP group all_reduces
  healthy     nothing; every rank dumps after the last step and the job exits 0
  size_mismatch / dtype_mismatch
              its TP all_reduce takes one more row / float64; Gloo aborts its TP peer
  uneven_data its data shard ends after fault-step batches: it leaves the loop for the epoch-end
              all_reduce of the default group while its peers still train
  early_exit  returns from training before the DP all_reduce and exits 0, no error, no dump
  two_agents  RuntimeError on global rank 6 (node 1, local rank 2), two agents of 4 ranks

expected.json: scenario, fault_rank, fault_step, culprit_ranks, failure_class, root_cause_kind
(the preferred answer), root_cause_kinds (every answer the evidence supports), root_cause_ranks
(the ranks a root cause may name), notes, the layout, torch_version, and what the run left:
ranks_dumped, launcher_exit_codes, launchers_timed_out, wall_s. The harness exits 1 when the
capture lacks evidence its fault should leave (a survivor without a dump, a launcher that exited
the wrong way, a job it had to stop), after writing OUT as it is.

--golden copies the capture into tests/data/torchrun/<torch version>/<scenario>/ (dumps
zstd-compressed as make_fixture.py does, logs as they are, file_times.json with every file's
modification time); `--golden-from OUT` does so for an earlier capture; `--case NAME` names the
folder otherwise (a second capture of a scenario whose events came out in another order).

The launchers get a hard deadline (--hard-timeout). Whatever happens, the harness then stops each
launcher by its pid (SIGTERM, which the agent forwards, then SIGKILL), then every worker by its pid
(each is a session leader: torchrun starts them with start_new_session), found through /proc as
the launchers' descendants and by a token in their environment, and checks that none is left.
"""

import argparse
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
JOB = os.path.join(HERE, "torchrun_job.py")
SCENARIOS = ["exception", "segfault", "sigkill", "hang", "desync", "healthy", "two_agents",
             "segfault_and_error", "nan", "uneven_data", "early_exit",
             "size_mismatch", "dtype_mismatch", "exit_code", "cpu_alloc"]
# segfault_and_error's second faulty rank: in neither the TP nor the DP group of rank 2, so that
# neither fault waits on the other.
SECOND_FAULT_RANK = 1
DUMP_PREFIX = "nccl_trace_rank_"
TOKEN_VAR = "FR_TORCHRUN_CAPTURE_TOKEN"


def expected_answer(scenario, fault_rank, world=4, tp=2, fault_step=3):
    """The answer a correct analyzer must give, from what was injected (never from an analyzer):
    (failure_class, culprit_ranks, preferred root-cause kind, acceptable kinds, notes).
    world, tp and fault_step say what the evidence can hold: with world == tp the TP group has
    no sibling group to compare its op with, and at step 0 no rank has an earlier op."""
    if scenario == "healthy":
        return ("none", [], "none", ["none"],
                "no fault: every collective completed; dumped on demand")
    if scenario in ("exception", "two_agents"):
        return ("missing_participant", [fault_rank], "python_exception", ["python_exception"],
                "the rank raised in user code and exited; its peers wait for it in the next "
                "collective of each of its groups and fail with Gloo's 'Connection closed by peer' "
                "or time out: they are victims")
    if scenario == "segfault":
        return ("missing_participant", [fault_rank], "segfault", ["segfault"],
                "the rank died of SIGSEGV in native code (torchrun: exitcode -11 (SIGSEGV)); "
                "@record's error handler enabled faulthandler, which printed 'Fatal Python "
                "error: Segmentation fault' and the Python stacks of every thread; no error.json "
                "and no dump from that rank")
    if scenario == "sigkill":
        return ("missing_participant", [fault_rank], "unknown", ["unknown", "host_kill"],
                "one worker died of SIGKILL (torchrun: exitcode -9) and no kernel or scheduler "
                "log says who sent it: the OOM killer or a kill from outside would look the same. "
                "`unknown` naming the killed rank is the honest answer; `host_kill` is tolerated. "
                "host_oom would claim what no line shows. Its peers wait for it either way, so it "
                "is the culprit")
    if scenario == "hang":
        return ("missing_participant", [fault_rank], "collective_timeout", ["collective_timeout"],
                "the rank sleeps in user code before a DP all_reduce; the others hit Gloo's "
                "timeout (RuntimeError 'Timed out waiting ...ms'), which is the cascade, not a "
                "cause; the hung rank is SIGTERMed by the agent (exitcode -15) and prints no error")
    if scenario == "desync":
        return ("op_mismatch", [fault_rank], "collective_timeout",
                ["collective_timeout", "unknown"],
                "the rank all_gathers where its TP group all_reduces; the logs show only the "
                "timeouts (and closed connections) that follow, so from the logs alone it is a "
                "collective timeout; the dumps show the mismatch. A python_exception on a rank "
                "whose RuntimeError carries Gloo's timeout is wrong")
    if scenario == "segfault_and_error":
        both = sorted({fault_rank, SECOND_FAULT_RANK})
        return ("missing_participant", both, "segfault", ["segfault", "python_exception"],
                f"two independent faults at the same point of the same step: rank {fault_rank} "
                f"died of SIGSEGV (exitcode -11), rank {SECOND_FAULT_RANK} raised OSError "
                "'[Errno 28] No space left on device' writing its metrics; neither is in a group "
                "of the other, so both initiated and both must be named (their peers are "
                "victims). Either fault's kind is acceptable; the root cause must name both ranks")
    if scenario == "nan":
        return ("insufficient_evidence", [], "non_finite", ["non_finite"],
                f"rank {fault_rank}'s activations went NaN; the TP and DP all_reduces carried "
                "the NaN to every rank, and every rank raised FloatingPointError ('Loss became "
                "infinite or NaN') after the same collective, which completed everywhere. No "
                "rank waits on another and none is the loss's source as far as any rank can "
                "see: the root cause is non_finite naming no single culprit, and nothing may "
                "send the user to the network")
    if scenario == "uneven_data":
        return ("missing_participant", [fault_rank], "collective_timeout",
                ["collective_timeout", "unknown"],
                f"rank {fault_rank}'s data shard held fewer batches than its peers'"
                ": it left the epoch early and waits in the epoch-end all_reduce of the "
                "default group, which no peer reaches, while its TP and DP peers wait for it in "
                "the step's all_reduces (and a DP peer of its TP partner waits behind that "
                "partner). Every rank hits Gloo's timeout and raises; the one rank that is "
                "elsewhere, holding every other, is the culprit; the ranks waiting for it (or "
                "for a rank that waits for it) are victims, not a second culprit")
    if scenario == "exit_code":
        return ("missing_participant", [fault_rank], "unknown", ["unknown", "python_exception"],
                f"rank {fault_rank} calls sys.exit(3) before the DP all_reduce: no traceback (its "
                "except handler still dumps), torchrun reports exitcode 3 for it. Its peers wait for it and fail on the "
                "closed connection: victims. The logs say it exited with status 3 and not why")
    if scenario == "cpu_alloc":
        return ("missing_participant", [fault_rank], "python_exception",
                ["python_exception", "host_oom"],
                f"rank {fault_rank} asks the host allocator for 16 TiB before the DP all_reduce: "
                "RuntimeError from DefaultCPUAllocator ('can't allocate memory'), raised in "
                "user code; its peers fail on the closed connection")
    if scenario == "early_exit":
        return ("missing_participant", [fault_rank], "collective_timeout",
                ["collective_timeout", "unknown"],
                f"rank {fault_rank} returned from its training loop before the step's DP "
                "all_reduce and its process exited 0: no error, no traceback, no dump. Its "
                "peers wait for it, then fail on Gloo's closed connection or timeout, and "
                "torchrun reports them, not it (exit 0 is a success to the agent). The rank that "
                "left is the culprit; the reporters are victims; nothing in any log says why it "
                "left, so the root cause names no fault of its own kind")
    if scenario in ("size_mismatch", "dtype_mismatch"):
        what = ("a tensor one row longer" if scenario == "size_mismatch"
                else "a float64 tensor where its peer's is float32")
        peer = fault_rank ^ 1
        if world == tp and fault_step == 0:
            both = sorted({fault_rank, peer})
            return ("size_mismatch", both, "python_exception", ["python_exception", "unknown"],
                    f"rank {fault_rank} all_reduces {what} in the only TP group at the first "
                    f"step; Gloo aborts rank {peer} ('Received data size doesn't match expected "
                    "size', SIGABRT, no dump). No sibling group issued the op and no rank has an "
                    "earlier one: nothing the job left says which of the two is off, only that "
                    "their sizes (in bytes) differ. The honest answer is a size mismatch naming "
                    "both ranks, not the peer that aborted alone")
        if world == tp:
            return (scenario, [fault_rank], "python_exception", ["python_exception", "unknown"],
                    f"rank {fault_rank} all_reduces {what} in the only TP group (no sibling "
                    f"group to compare with) at step {fault_step}; its own earlier all_reduces "
                    f"in that group took the job's shape and dtype, as its peer's still does. "
                    f"Gloo aborts rank {peer}, which receives more bytes than its op holds "
                    "('Received data size doesn't match expected size', SIGABRT, no dump). The "
                    "rank whose op changed is the culprit; the peer that aborted is a victim")
        return (scenario, [fault_rank], "python_exception",
                ["python_exception", "unknown"],
                f"rank {fault_rank} all_reduces {what} in its TP group at the fault step; its TP "
                "peer issued the same all_reduce with the job's shape and dtype. The dumps show "
                "the faulty rank's op beside the same op of the other TP group and of its own "
                "previous steps; Gloo aborts the peer, which receives more bytes than its op "
                "holds ('Received data size doesn't match expected size', SIGABRT, no dump). "
                "The rank whose op differs is the culprit, and the root cause (the peer's "
                "report of the mismatch) must name it; the peer that aborted is a victim")
    raise ValueError(scenario)


# ----------------------------------------------------------------------------------------------
# Processes: found through /proc (psutil may not be installed).


def proc_children():
    """{pid: ppid} of every process we can see."""
    parents = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue
        # pid (comm) state ppid ...; comm may hold spaces and parentheses.
        fields = stat[stat.rfind(")") + 2:].split()
        if fields[0] == "Z":
            continue
        parents[int(name)] = int(fields[1])
    return parents


def descendants(pids):
    parents = proc_children()
    found, frontier = set(), set(pids)
    while frontier:
        nxt = {p for p, pp in parents.items() if pp in frontier and p not in found}
        found |= nxt
        frontier = nxt
    return found


def with_token(token):
    """Live processes whose environment carries this capture's token."""
    needle = f"{TOKEN_VAR}={token}".encode()
    found = set()
    for pid in proc_children():
        if pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.add(pid)
        except OSError:
            continue
    return found


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
        return stat[stat.rfind(")") + 2:].split()[0] != "Z"
    except OSError:
        return False


def signal_pid(pid, sig):
    """Signals pid's process group when pid leads one (torchrun's workers do), else pid."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_everything(launchers, token, grace=5.0):
    """Stops the launchers by pid, then their workers by pid; returns the pids it had to kill."""
    workers = descendants([p.pid for p in launchers]) | with_token(token)
    killed = []
    running = [p for p in launchers if p.poll() is None]
    for p in running:
        signal_pid(p.pid, signal.SIGTERM)  # the agent forwards it to its workers
        killed.append(p.pid)
    limit = time.time() + grace
    for p in running:
        try:
            p.wait(timeout=max(0.1, limit - time.time()))
        except subprocess.TimeoutExpired:
            signal_pid(p.pid, signal.SIGKILL)
            p.wait()
    workers |= with_token(token)
    for pid in sorted(workers):
        if alive(pid):
            signal_pid(pid, signal.SIGKILL)
            killed.append(pid)
    limit = time.time() + 10
    while time.time() < limit:
        left = [pid for pid in workers | with_token(token) if alive(pid)]
        if not left:
            break
        for pid in left:
            signal_pid(pid, signal.SIGKILL)
        time.sleep(0.1)
    left = sorted(pid for pid in workers | with_token(token) if alive(pid))
    if left:
        raise RuntimeError(f"torchrun_capture: processes {left} survived SIGKILL")
    return killed


# ----------------------------------------------------------------------------------------------
# Launching.


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def no_core_files():
    # A segfaulting worker must not leave a core file in the working tree.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def launch(args, node_dir, job_args, launcher_args, env):
    os.makedirs(node_dir, exist_ok=True)
    cmd = [sys.executable, "-m", "torch.distributed.run", *launcher_args,
           "--nproc-per-node", str(args.nproc), "--tee", "3", "--redirects", "3",
           "--log-dir", os.path.join(node_dir, "logdir"),
           JOB, *job_args, "--dumps", os.path.join(node_dir, "dumps")]
    console = open(os.path.join(node_dir, "console.log"), "wb")
    proc = subprocess.Popen(cmd, cwd=node_dir, env=env, stdin=subprocess.DEVNULL, stdout=console,
                            stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=no_core_files)
    console.close()
    return proc, cmd


def torch_version():
    from importlib import metadata
    return metadata.version("torch")  # "2.13.0+cpu"; importing torch would cost seconds


def capture(args):
    out = os.path.abspath(args.out)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    two = args.scenario == "two_agents"
    nodes = 2 if two else 1
    world = args.nproc * nodes
    if args.fault_rank is None:
        args.fault_rank = 6 if two else 2
    if not 0 <= args.fault_rank < world:
        sys.exit(f"--fault-rank {args.fault_rank} is outside the world of {world} ranks")
    job_scenario = "runtime" if two else args.scenario
    job_args = ["--scenario", job_scenario, "--fault-rank", str(args.fault_rank),
                "--fault-step", str(args.fault_step), "--steps", str(args.steps),
                "--tp", str(args.tp), "--timeout", str(args.timeout),
                "--second-fault-rank", str(SECOND_FAULT_RANK)]
    token = uuid.uuid4().hex
    env = dict(os.environ)
    # @record's error file is whatever torchrun hands each worker; nothing of ours may override it.
    env.pop("TORCHELASTIC_ERROR_FILE", None)
    env.update({TOKEN_VAR: token, "TORCH_FR_BUFFER_SIZE": str(args.buffer),
                "PYTHONDONTWRITEBYTECODE": "1"})
    launchers, commands, dirs = [], [], []
    timed_out = False
    start = time.time()
    try:
        if two:
            port = free_port()
            for node in range(nodes):
                node_dir = os.path.join(out, f"node{node}")
                proc, cmd = launch(args, node_dir, job_args,
                                   ["--nnodes", "2", "--node-rank", str(node),
                                    "--rdzv-backend", "static", "--master-addr", "127.0.0.1",
                                    "--master-port", str(port)], env)
                launchers.append(proc)
                commands.append(cmd)
                dirs.append(node_dir)
        else:
            proc, cmd = launch(args, out, job_args, ["--standalone", "--nnodes", "1"], env)
            launchers.append(proc)
            commands.append(cmd)
            dirs.append(out)
        deadline = start + args.hard_timeout
        for proc in launchers:
            try:
                proc.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                timed_out = True
                break
    finally:
        killed = stop_everything(launchers, token)
    wall = time.time() - start

    dumped = []
    for d in dirs:
        ddir = os.path.join(d, "dumps")
        if os.path.isdir(ddir):
            for name in os.listdir(ddir):
                if name.startswith(DUMP_PREFIX) and name[len(DUMP_PREFIX):].isdigit():
                    dumped.append(int(name[len(DUMP_PREFIX):]))
    failure_class, culprits, kind, kinds, notes = expected_answer(
        args.scenario, args.fault_rank, world, args.tp, args.fault_step)
    expected = {
        "scenario": args.scenario,
        "fault_rank": None if args.scenario == "healthy" else args.fault_rank,
        "fault_step": None if args.scenario == "healthy" else args.fault_step,
        "failure_class": failure_class,
        "culprit_ranks": culprits,
        "root_cause_kind": kind,
        "root_cause_kinds": kinds,
        # The rank the root cause must name where it names one: the injected rank (host_kill and
        # none name none); for nan, every rank, each of which raised on the NaN it received.
        "root_cause_ranks": list(range(world)) if args.scenario == "nan" else culprits,
        "notes": notes,
        "world_size": world,
        "nodes": nodes,
        "nproc_per_node": args.nproc,
        "tp": args.tp,
        "dp": world // args.tp,
        "steps": args.steps,
        "group_timeout_s": args.timeout,
        "backend": "gloo",
        "dump_format": "pickle",
        "stacks": True,
        "torch_version": torch_version().split("+")[0],
        "torch_build": torch_version(),
        "launcher_commands": [[os.path.relpath(c, REPO) if os.path.isabs(c) and c.startswith(REPO)
                               else c for c in cmd] for cmd in commands],
        "launcher_exit_codes": [p.returncode for p in launchers],
        "launchers_timed_out": timed_out,
        # What the launchers printed, not what fr-analyze makes of it: whether each agent's
        # console holds its failure table (the tests expect its line on the death only there).
        "launcher_failure_tables": failure_tables(dirs),
        "processes_killed_by_harness": len(killed),
        "ranks_dumped": sorted(dumped),
        "wall_s": round(wall, 1),
    }
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=2)
        f.write("\n")
    return expected


# torchrun's agent heads its table of failed workers with this; an agent that failed while it
# collected them (its own JSONDecodeError on an error.json that a worker was killed while
# writing, a real race of torchrun's) prints none.
FAILURE_TABLE = "Root Cause (first observed failure)"


def failure_tables(dirs):
    """Per agent (in `dirs` order): whether torchrun printed its table of failed workers."""
    printed = []
    for d in dirs:
        with open(os.path.join(d, "console.log"), "rb") as f:
            printed.append(FAILURE_TABLE.encode() in f.read())
    return printed


def capture_problems(expected):
    """Why a capture does not hold the evidence its fault should leave ([] when it does): a rank
    that should have dumped and did not (the agent SIGKILLs a survivor that takes longer than its
    shutdown timeout), a launcher that ended the wrong way, a job the harness had to stop. Such a
    capture fails rather than becoming a silent fixture or a test of the wrong thing."""
    problems = []
    # The faulty rank dies before its dump, or leaves without one.
    lost = {"segfault", "sigkill", "segfault_and_error", "early_exit"}
    dead = {expected["fault_rank"]} if expected["scenario"] in lost else set()
    if expected["scenario"] in ("size_mismatch", "dtype_mismatch"):
        # Gloo aborts (SIGABRT) the rank that receives more bytes than its op holds: the faulty
        # rank's TP peer (its tensor is the larger one), which then leaves no dump.
        dead = {expected["fault_rank"] ^ 1}
    should_dump = [r for r in range(expected["world_size"]) if r not in dead]
    if expected["ranks_dumped"] != should_dump:
        problems.append(f"expected dumps of ranks {should_dump}, got {expected['ranks_dumped']}")
    want = 0 if expected["scenario"] == "healthy" else 1
    if any(code != want for code in expected["launcher_exit_codes"]):
        problems.append(f"launcher exit codes {expected['launcher_exit_codes']}, expected {want}")
    if expected["launchers_timed_out"]:
        problems.append("the job outlived --hard-timeout and was stopped by the harness")
    return problems


# ----------------------------------------------------------------------------------------------
# Golden copies.



def write_file_times(out):
    """file_times.json: every captured file's modification time (ns), which the offline tests
    restore (the harness's own two files left out)."""
    times = {}
    for root, _, names in os.walk(out):
        for name in names:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, out)
            if rel not in ("expected.json", "file_times.json"):
                times[rel] = os.stat(path).st_mtime_ns
    with open(os.path.join(out, "file_times.json"), "w") as f:
        json.dump(times, f, indent=2, sort_keys=True)
        f.write("\n")


def store_golden(capture_dir, case):
    """Copies a capture to a golden case: dumps as .zst, everything else as it is, and the
    modification time every file had (file_times.json; the offline test restores them)."""
    capture_dir = os.path.abspath(capture_dir)
    shutil.rmtree(case, ignore_errors=True)
    os.makedirs(case)
    times = {}
    for root, _, files in os.walk(capture_dir):
        for name in sorted(files):
            src = os.path.join(root, name)
            rel = os.path.relpath(src, capture_dir)
            if name.endswith(".tmp"):
                continue
            if name == "expected.json" and root == capture_dir:
                shutil.copy(src, os.path.join(case, rel))
                continue
            dst = os.path.join(case, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if name.startswith(DUMP_PREFIX):
                dst += ".zst"
                subprocess.run(["zstd", "-q", "-19", src, "-o", dst], check=True)
            else:
                shutil.copyfile(src, dst)
            times[os.path.relpath(dst, case)] = os.stat(src).st_mtime_ns
    with open(os.path.join(case, "file_times.json"), "w") as f:
        json.dump(times, f, indent=1, sort_keys=True)
        f.write("\n")


def golden_dir(expected, case=None):
    return os.path.join(REPO, "tests", "data", "torchrun", expected["torch_version"],
                        case or expected["scenario"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?")
    parser.add_argument("--scenario", choices=SCENARIOS, default="exception")
    parser.add_argument("--nproc", type=int, default=4, help="ranks per agent")
    parser.add_argument("--tp", type=int, default=2)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--fault-rank", type=int, default=None,
                        help="global rank of the fault (2; 6 with two agents)")
    parser.add_argument("--fault-step", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=5.0,
                        help="process-group timeout in seconds")
    parser.add_argument("--hard-timeout", type=float, default=120.0,
                        help="seconds after which the harness stops the whole job")
    parser.add_argument("--buffer", type=int, default=2000, help="TORCH_FR_BUFFER_SIZE")
    parser.add_argument("--golden", action="store_true",
                        help="copy the capture to tests/data/torchrun/<torch>/<scenario>/")
    parser.add_argument("--golden-from", metavar="OUT",
                        help="only copy an earlier capture OUT to its golden folder")
    parser.add_argument("--case", help="the golden folder's name (default: the scenario), for "
                        "a second capture of a scenario whose evidence came out in another order")
    args = parser.parse_args()
    if args.golden_from:
        with open(os.path.join(args.golden_from, "expected.json")) as f:
            expected = json.load(f)
        store_golden(args.golden_from, golden_dir(expected, args.case))
        print(golden_dir(expected, args.case))
        return
    if not args.out:
        parser.error("OUT is required")
    if args.fault_step >= args.steps:
        sys.exit("--fault-step must be below --steps")
    expected = capture(args)
    print(json.dumps(expected))
    problems = capture_problems(expected)
    if problems:
        sys.exit(f"torchrun_capture: incomplete capture in {args.out}: " + "; ".join(problems))
    if args.golden:
        store_golden(args.out, golden_dir(expected, args.case))


if __name__ == "__main__":
    main()
