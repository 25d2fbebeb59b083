"""Causes, not reporters: a rank that *reports* a failure (a lost connection, a timeout, a kill it
received) is usually a victim. Each case is a pasted log or a job directory made of lines in the
wording real jobs print (each quoted with the public source it comes from; host names, addresses,
ranks and times edited to build one job), with the fault the case sets up as the expected answer.
"""

import json
import pathlib
import subprocess

import pytest


REAL = pathlib.Path(__file__).resolve().parent.parent / "data" / "logs" / "real"


def analyze(cli, path_or_stdin, *, stdin=None):
    args = [cli, "analyze", path_or_stdin, "--format", "json"]
    result = subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=120)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout), result.returncode


# NVRM lines: Xid 63 from github.com/stas00/ml-engineering (compute/accelerator/nvidia/debug.md);
# Xid 74 from github.com/NVIDIA/NVSentinel (docs on WORKFLOW_NVLINK_ERR); the syslog prefix as
# journald writes kernel lines (tests/data/logs/real/syslog_kernel.log).
XID63 = ("Aug 10 15:36:05 node01 kernel: NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: "
         "New row marked for remapping, reset gpu to activate.\n")
XID74 = ("Aug 10 15:56:40 node02 kernel: NVRM: Xid (PCI:0003:00:00): 74, pid='<unknown>', "
         "name=<unknown>, NVLink: fatal error detected on link 14(0x0, 0x0, 0x10000, 0x0, 0x0, "
         "0x0, 0x0)\n")


def test_a_row_remapping_notice_is_not_a_failure(cli):
    report, status = analyze(cli, "-", stdin=XID63)
    assert report["verdict"]["root_cause"]["kind"] == "none"
    assert status == 0


def test_a_fatal_xid_later_outranks_an_earlier_notice(cli):
    report, status = analyze(cli, "-", stdin=XID63 + XID74)
    cause = report["verdict"]["root_cause"]
    assert cause["kind"] == "xid", cause["summary"]
    assert cause["detail"]["xid"] == "74"
    assert cause["hosts"] == ["node02"]
    assert status == 1


# NCCL's interface and init lines: github.com/NVIDIA/nccl/issues/1814 ("Bootstrap : Using
# bond0:172.36.134.184<0>", "comm 0x... rank 36 nranks 64 cudaDev 4 ... - Init COMPLETE"); the IB
# completion error: github.com/NVIDIA/nccl/issues/1405; the socket error:
# github.com/NVIDIA/nccl/issues/1232 ("socketProgress: Connection closed by remote peer
# node2<42830>").
BOOT = """\
node01:3468:3468 [0] NCCL INFO Bootstrap : Using bond0:10.0.0.1<0>
node02:5520:5520 [0] NCCL INFO Bootstrap : Using bond0:10.0.0.2<0>
node03:7701:7701 [0] NCCL INFO Bootstrap : Using bond0:10.0.0.3<0>
node01:3468:3905 [0] NCCL INFO comm 0x557fe785f7a0 rank 0 nranks 3 cudaDev 0 nvmlDev 0 busId 18000 commId 0x5ae77eb5ea4ec1ee - Init COMPLETE
node02:5520:5906 [0] NCCL INFO comm 0x560dfc7a10e0 rank 1 nranks 3 cudaDev 0 nvmlDev 0 busId 18000 commId 0x5ae77eb5ea4ec1ee - Init COMPLETE
node03:7701:7790 [0] NCCL INFO comm 0x55f00a1b2c30 rank 2 nranks 3 cudaDev 0 nvmlDev 0 busId 18000 commId 0x5ae77eb5ea4ec1ee - Init COMPLETE
"""
IB_ERROR = ("{host}:{pid}:3905 [0] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer "
            "{peer}<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid "
            "fd00:1148:9000:5000:4:200:3:ff22 remoteGidsfd00:1148:9000:5000:4:200:3:ff1f\n")
SOCKET_ERROR = ("{host}:{pid}:3906 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection "
                "closed by remote peer {peer}<42830>\n")


def test_peers_that_lose_a_silent_node_name_that_node(cli):
    """node02 printed nothing after its init; both other nodes' transport errors name its
    address. node02 (rank 1) is the suspect; the ranks that reported the errors are victims."""
    text = (BOOT + IB_ERROR.format(host="node01", pid=3468, peer="10.0.0.2") +
            IB_ERROR.format(host="node03", pid=7701, peer="10.0.0.2"))
    report, status = analyze(cli, "-", stdin=text)
    cause = report["verdict"]["root_cause"]
    assert cause["hosts"] == ["node02"], cause["summary"]
    assert cause["ranks"] == [1]
    assert cause["kind"] == "unknown"
    assert report["verdict"]["culprit_ranks"] == [1]
    assert "node02" in cause["summary"] and "printed no error" in cause["summary"]
    assert status == 1


def test_a_node_failure_names_the_node_the_peers_lost(cli):
    """The same, and Slurm says NODE FAILURE minutes later (on the controller's clock): a kill
    from outside, with the node that went down named, no rank blamed."""
    # github.com/ZettaAI/zetta_utils/issues/671 (the CANCELLED line; reason edited).
    slurm = ("slurmstepd: error: *** JOB 494583 ON node01 CANCELLED AT 2024-04-20T09:14:37 DUE TO "
             "NODE FAILURE ***\n")
    text = BOOT + IB_ERROR.format(host="node01", pid=3468, peer="10.0.0.2") + slurm
    report, _ = analyze(cli, "-", stdin=text)
    cause = report["verdict"]["root_cause"]
    assert cause["kind"] == "host_kill", cause["summary"]
    assert cause["hosts"] == ["node02"]
    assert report["verdict"]["culprit_ranks"] == []


def test_the_peer_of_a_lost_connection_reports_its_consequence(cli):
    """node01 loses node02 first; node02's own error about node01 is the consequence on the
    peer: one rank is named, not both."""
    text = (BOOT + SOCKET_ERROR.format(host="node01", pid=3468, peer="node02") +
            SOCKET_ERROR.format(host="node02", pid=5520, peer="node01"))
    report, _ = analyze(cli, "-", stdin=text)
    cause = report["verdict"]["root_cause"]
    assert cause["kind"] == "transport_error", cause["summary"]
    assert cause["ranks"] == [0]


def test_a_peer_that_failed_on_its_own_is_the_cause(cli):
    """node01's transport error names node02, whose worker crashed: the crash is the cause."""
    # "Fatal Python error: Segmentation fault" as srun -l prints it:
    # tests/data/logs/real/segfault_srun.log.
    text = (BOOT + IB_ERROR.format(host="node01", pid=3468, peer="10.0.0.2") +
            "node02:5520:5520 [0] NCCL INFO comm 0x560dfc7a10e0 rank 1 nranks 3 - Abort\n"
            "1: Fatal Python error: Segmentation fault\n")
    report, _ = analyze(cli, "-", stdin=text)
    cause = report["verdict"]["root_cause"]
    assert cause["kind"] == "segfault", cause["summary"]
    assert 0 not in cause["ranks"]


def test_a_preemption_outranks_what_the_killed_ranks_print(tmp_path, cli):
    """Slurm preempts the job; the agent is signalled and the workers lose their peers. The
    transport error reads earlier than the kill on the raw clocks (the CANCELLED time is the
    controller's), yet it is the kill's consequence."""
    job = tmp_path / "job"
    (job / "node01").mkdir(parents=True)
    # The agent's lines: github.com/pytorch/pytorch/issues/150916.
    (job / "node01" / "torchrun.log").write_text(
        SOCKET_ERROR.format(host="node01", pid=3468, peer="node02") +
        "W0420 09:09:37.530000 1359 torch/distributed/elastic/agent/server/api.py:719] Received "
        "15 death signal, shutting down workers\n"
        "W0420 09:09:37.531000 1359 torch/distributed/elastic/multiprocessing/api.py:897] "
        "Sending process 3468 closing signal SIGTERM\n")
    (job / "slurm-494583.out").write_text(
        "slurmstepd: error: *** JOB 494583 ON node01 CANCELLED AT 2024-04-20T09:10:07 DUE TO "
        "PREEMPTION ***\n")
    report, _ = analyze(cli, str(job))
    cause = report["verdict"]["root_cause"]
    assert cause["kind"] == "host_kill", cause["summary"]
    assert report["verdict"]["culprit_ranks"] == []
    assert "consequence" in cause["summary"]


# torchrun's agent starting at 10:00:00 (tests/data/logs/real/torchrun_agent.log wording, dates
# edited), then rank 3's traceback (tests/data/logs/real/python_traceback.log's form), untimed.
AGENT_THEN_RANK3_TRACEBACK = (
    "I1201 10:00:00.000000 32974 torch/distributed/run.py:793] Setting OMP_NUM_THREADS "
    "environment variable for each process to be 1 in default, to avoid your system being "
    "overloaded, please further tune the variable for optimal performance in your "
    "application as needed.\n"
    "[rank3]: Traceback (most recent call last):\n"
    '[rank3]:   File "/app/train.py", line 85, in <module>\n'
    "[rank3]:     main()\n"
    "[rank3]: ValueError: batch has no labels\n"
)


def test_a_signalled_launcher_is_a_kill_only_when_nothing_failed_inside(cli):
    """srun signals the other nodes' agents after one task failed: the task's exception, not
    the signal, is the cause."""
    # [rank0]: traceback: tests/data/logs/real/python_traceback.log; agent: pytorch issue 150916.
    text = ("[rank0]: Traceback (most recent call last):\n"
            '[rank0]:   File "/app/src/llamafactory/launcher.py", line 185, in <module>\n'
            "[rank0]:     run_exp()\n"
            "[rank0]: AttributeError: 'AcceleratorState' object has no attribute "
            "'mixed_precision'\n"
            "W0409 07:28:49.530000 1359 torch/distributed/elastic/agent/server/api.py:719] "
            "Received 15 death signal, shutting down workers\n")
    report, _ = analyze(cli, "-", stdin=text)
    cause = report["verdict"]["root_cause"]
    assert cause["kind"] == "python_exception", cause["summary"]
    assert cause["ranks"] == [0]


def test_a_kernel_fault_from_before_the_job_is_not_its_cause(tmp_path, cli):
    """kern.log keeps days of history: an Xid on Nov 28 says nothing about a job that started on
    Dec 1 and died of a Python exception."""
    job = tmp_path / "job"
    (job / "node01").mkdir(parents=True)
    (job / "node01" / "kern.log").write_text(
        "Nov 28 03:12:01 node01 kernel: NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the "
        "bus\n")
    # Then the agent reports rank 3's exit (the same file's wording).
    (job / "node01" / "torchrun.log").write_text(
        AGENT_THEN_RANK3_TRACEBACK
        + "E1201 10:23:20.000000 32974 torch/distributed/elastic/multiprocessing/api.py:874] "
        "failed (exitcode: 1) local_rank: 3 (pid: 33054) of binary: /usr/bin/python3\n")
    report, _ = analyze(cli, str(job))
    cause = report["verdict"]["root_cause"]
    assert cause["kind"] == "python_exception", cause["summary"]
    assert cause["ranks"] == [3]


def test_an_exception_the_process_survived_is_not_a_death(cli):
    """PyTorch's debug-server dumper logs a KeyError traceback and rank 0 trains on (a real
    capture, tests/data/logs/real/debug_server_dumper_keyerror.log): not a cause. The same
    traceback as the rank's last words is its death."""
    with open(REAL / "debug_server_dumper_keyerror.log", encoding="utf-8") as f:
        lines = f.read().splitlines(keepends=True)
    report, status = analyze(cli, "-", stdin="".join(lines))
    assert report["verdict"]["root_cause"]["kind"] == "none", \
        report["verdict"]["root_cause"]["summary"]
    assert status == 0
    last_traceback_line = max(i for i, line in enumerate(lines) if "KeyError" in line)
    report, _ = analyze(cli, "-", stdin="".join(lines[:last_traceback_line + 1]))
    cause = report["verdict"]["root_cause"]
    assert cause["kind"] == "python_exception", cause["summary"]
    assert cause["ranks"] == [0]


# NCCL's version lines: "gpu-st-ml-2:49542:49542 [0] NCCL INFO NCCL version 2.29.2+cuda12.8"
# (its "Bootstrap: Using enp39s0:10.0.10.226<0>" beside it, the newer form without the space)
# and "lrdn2296:4063850:4063850 [1] NCCL INFO NCCL version 2.22.3+cuda12.2", from two public
# logs (found with the code search of this project's tool library); a third host edited in.
VERSIONS = """\
gpu-st-ml-1:50292:50292 [0] NCCL INFO NCCL version 2.29.2+cuda12.8
gpu-st-ml-2:49542:49542 [0] NCCL INFO NCCL version 2.29.2+cuda12.8
lrdn2296:4063850:4063850 [1] NCCL INFO NCCL version 2.22.3+cuda12.2
"""


def test_hosts_running_different_nccl_releases_are_named(cli):
    report, status = analyze(cli, "-", stdin=VERSIONS)
    cause = report["verdict"]["root_cause"]
    assert cause["kind"] == "init_failure", cause["summary"]
    assert cause["hosts"] == ["lrdn2296"]
    assert "2.22.3+cuda12.2" in cause["summary"]
    same = "\n".join(line for line in VERSIONS.splitlines() if "lrdn" not in line) + "\n"
    report, status = analyze(cli, "-", stdin=same)
    assert report["verdict"]["root_cause"]["kind"] == "none"
    assert status == 0


def test_the_newer_bootstrap_wording_maps_addresses_too(cli):
    """NCCL 2.29 prints "Bootstrap: Using enp39s0:10.0.10.226<0>" (no space before the colon)."""
    text = (BOOT.replace("Bootstrap : Using bond0:", "Bootstrap: Using enp39s0:") +
            IB_ERROR.format(host="node01", pid=3468, peer="10.0.0.2"))
    report, _ = analyze(cli, "-", stdin=text)
    assert report["verdict"]["root_cause"]["hosts"] == ["node02"]


def test_an_untimed_traceback_is_placed_between_its_files_timed_lines(tmp_path, cli):
    """A traceback prints no time, and no launcher line dates rank 3's death: the timed lines
    around it in its file bound it. The report said "at" the earlier bound, as if it were the
    traceback's own time."""
    job = tmp_path / "job"
    job.mkdir()
    # Then a watchdog timeout of tests/data/logs/real/watchdog_default_pg.log, date and rank
    # edited.
    (job / "torchrun.log").write_text(
        AGENT_THEN_RANK3_TRACEBACK
        + "[rank1]:[E1201 10:10:00.500000000 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, "
        "NumelOut=9801523, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.\n")
    report, _ = analyze(cli, str(job))
    cause = report["verdict"]["root_cause"]
    assert cause["kind"] == "python_exception", cause["summary"]
    assert cause["ranks"] == [3]
    assert "between 10:00:00.000 UTC and 10:10:00.500 UTC" in cause["summary"], cause["summary"]
    traceback = [e for e in cause["evidence"] if "ValueError" in e["text"]]
    assert traceback and traceback[0]["raw_time"].startswith("(none: printed between "), traceback


# PyTorch 2.4+'s watchdog line, as in tests/data/logs/real/illegal_memory_access.log
# (github.com/pytorch/pytorch/issues/152780): "[PG ID 0 PG GUID 0(default_pg) Rank 0] Process
# group watchdog thread terminated with exception: [Rank 0] Watchdog caught collective operation
# timeout: WorkNCCL(SeqNum=..., OpType=ALLREDUCE, ...)". Here with the groups of a TP 4 x DP 2
# job (PG GUIDs named as new_group(group_desc=...) names them).
def watchdog_line(rank, pg, seq, numel, second):
    return (f"[rank{rank}]:[E823 11:14:{second:02d}.028280973 ProcessGroupNCCL.cpp:1595] "
            f"[PG ID {pg.split('(')[0]} PG GUID {pg} Rank {rank}] Process group watchdog thread "
            f"terminated with exception: [Rank {rank}] Watchdog caught collective operation "
            f"timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn={numel}, "
            f"NumelOut={numel}, Timeout(ms)=600000) ran for 600067 milliseconds before timing "
            f"out.\n")


def test_timeouts_split_over_groups_name_the_one_rank_all_of_them_wait_on(cli):
    # Rank 3 hangs before its TP group's all-reduce #57: its TP peers 0-2 time out in it; the
    # other TP group went on to the DP all-reduce #20, where 4-7 wait for 0-3 and time out. No
    # group's reporters are the cause: rank 3, silent in both, is.
    tp_stuck, dp_stuck = [0, 1, 2], [4, 5, 6, 7]
    log = "".join(watchdog_line(r, "1(TP)", 57, 4194304, 10 + r) for r in tp_stuck)
    log += "".join(watchdog_line(r, "2(DP)", 20, 9801523, 12 + r) for r in dp_stuck)
    report, status = analyze(cli, "-", stdin=log)
    verdict = report["verdict"]
    assert verdict["root_cause"]["kind"] == "collective_timeout"
    assert verdict["culprit_ranks"] == [3], verdict["summary"]
    assert sorted(verdict["victim_ranks"]) == tp_stuck + dp_stuck
    # Each group (by its PG GUID) is described with its own collective, not the first one's.
    summary = verdict["root_cause"]["summary"]
    assert "3 rank(s) in ALLREDUCE SeqNum 57 of 1;" in summary, summary
    assert "4 rank(s) in ALLREDUCE SeqNum 20 of 2)" in summary, summary
    assert status == 1


# fast-reid's error (github.com/JDAI-CV/fast-reid/issues/170, tests/data/world/
# fastreid_ddp_nan_iteration1), raised by each of four ranks under torchrun (its "[rankN]:"
# prefixes), then torchrun's failure table (tests/data/logs/real/torchrun_table.log).
def nan_traceback(rank):
    return (f"[rank{rank}]:Traceback (most recent call last):\n"
            f'[rank{rank}]:  File "/workspace/fastreid/engine/train_loop.py", line 238, in '
            f"_detect_anomaly\n"
            f"[rank{rank}]:    raise FloatingPointError(\n"
            f"[rank{rank}]:FloatingPointError: Loss became infinite or NaN at iteration=1200!\n")


def failure_table(first_rank):
    return ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
            "============================================================\n"
            "train.py FAILED\n"
            "------------------------------------------------------------\n"
            "Root Cause (first observed failure):\n"
            "[0]:\n"
            "  time      : 2023-05-19_16:39:58\n"
            "  host      : node01\n"
            f"  rank      : {first_rank} (local_rank: {first_rank})\n"
            "  exitcode  : 1 (pid: 78971)\n"
            "  error_file: <N/A>\n"
            "  traceback : To enable traceback see: "
            "https://pytorch.org/docs/stable/elastic/errors.html\n"
            "============================================================\n")


def test_a_loss_non_finite_on_every_rank_blames_no_rank(cli):
    ranks = [0, 1, 2, 3]
    report, status = analyze(cli, "-", stdin="".join(map(nan_traceback, ranks))
                             + failure_table(0))
    verdict = report["verdict"]
    cause = verdict["root_cause"]
    assert cause["kind"] == "non_finite", cause["summary"]
    assert cause["ranks"] == ranks
    assert cause["confidence"] != "high"
    # No rank is the culprit of a loss that went NaN on all of them: not the one torchrun saw
    # exit first, and no "stuck collective, suspect the network".
    assert verdict.get("culprit_ranks", []) == []
    assert verdict["failure_class"] not in ("stuck_collective", "missing_participant")
    assert status == 1


# Gloo's size check as github.com/pytorch/gloo/pull/456 quotes it, printed by C++'s terminate on
# rank 1; then torchrun's agent (tests/data/logs/real/torchrun_agent.log, pids and times edited)
# stops the others and reports rank 1's SIGABRT.
GLOO_ABORT = """\
[rank1]:terminate called after throwing an instance of 'gloo::EnforceNotMet'
[rank1]:  what():  [enforce fail at fbcode/gloo/transport/tcp/pair.cc:456] op.preamble.length <= op.nbytes. 194478720 vs 4
W0801 13:23:17.366000 32974 torch/distributed/elastic/multiprocessing/api.py:900] Sending process 33051 closing signal SIGTERM
E0801 13:23:20.000000 32974 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: -6) local_rank: 1 (pid: 33054) of binary: /home/ubuntu/pythonn3.11/bin/python3
"""


def test_gloos_size_check_is_the_cause_not_an_unexplained_abort(cli):
    report, status = analyze(cli, "-", stdin=GLOO_ABORT)
    cause = report["verdict"]["root_cause"]
    # Was "unknown": the cascade with no initiating event, the abort's reason unread.
    assert cause["kind"] == "python_exception", cause["summary"]
    assert cause["ranks"] == [1]
    assert "sizes differ across ranks" in cause["summary"]
    assert "194478720" in cause["summary"]
    assert status == 1
