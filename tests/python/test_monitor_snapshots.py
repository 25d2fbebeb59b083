"""Monitor snapshots beside the dumps (`nvidia-smi --query-gpu=... --format=csv -l 5` logs,
`nvidia-smi -q` reports, `ps` listings; one folder per host): recognized by content, they add what
the GPUs and processes were doing to the report as findings, and leave the dumps' verdict alone.
The expected GPU, rank and processes are the ones each test made idle or orphaned."""

import json
import subprocess

HEADER = ("timestamp, name, pci.bus_id, index, utilization.gpu [%], memory.used [MiB], "
          "memory.total [MiB], power.draw [W]\n")


def gpu_log(idle_gpu, gpus=8, samples=16):
    """Training at full power, then every GPU spinning at idle power but `idle_gpu` at 0%."""
    lines = [HEADER]
    for s in range(samples):
        for g in range(gpus):
            util, watts = (97, 640 + g) if s < 10 else ((0, 90) if g == idle_gpu else (100, 118 + g))
            lines.append(f"2026/03/14 11:{s * 5 // 60:02}:{s * 5 % 60:02}.000, NVIDIA H100 80GB HBM3, "
                         f"00000000:{0x18 + g:02X}:00.0, {g}, {util} %, 70000 MiB, 81559 MiB, "
                         f"{watts:.2f} W\n")
    return "".join(lines)


def test_an_idle_gpu_among_spinning_ones_is_a_finding_beside_the_verdict(cli, tmp_path):
    job = tmp_path / "job"
    subprocess.run([cli, "simulate", str(job), "--fault", "stuck_before_op", "--fault-rank", "5"],
                   check=True, capture_output=True)
    before = json.loads(subprocess.run([cli, "analyze", str(job), "--format", "json"],
                                       capture_output=True, text=True).stdout)
    (job / "node00").mkdir()
    (job / "node00" / "gpu.csv").write_text(gpu_log(idle_gpu=5))
    proc = subprocess.run([cli, "analyze", str(job), "--format", "json"], capture_output=True,
                          text=True)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert report["verdict"]["culprit_ranks"] == before["verdict"]["culprit_ranks"] == [5]
    assert report["verdict"]["failure_class"] == before["verdict"]["failure_class"]
    gpu = [f for f in report["findings"] if f["kind"] == "gpu_idle_while_peers_busy"]
    assert len(gpu) == 1
    assert len(gpu[0]["evidence"]) == 1
    assert gpu[0]["evidence"][0].startswith("node00 GPU 5 (00000000:1D:00.0) at ")
    assert "0% busy" in gpu[0]["evidence"][0]
    # Not read as a job log as well.
    assert all(not f["path"].endswith("gpu.csv") for f in report.get("log_files", []))
    # The HTML report lists it with the findings.
    html = subprocess.run([cli, "report", str(job)], capture_output=True, text=True).stdout
    assert "gpu_idle_while_peers_busy" in html and "node00 GPU 5" in html


def test_spinning_gpus_at_idle_power_show_the_hang_signature(cli, tmp_path):
    job = tmp_path / "job"
    subprocess.run([cli, "simulate", str(job), "--fault", "stuck_before_op", "--fault-rank", "5"],
                   check=True, capture_output=True)
    for host in ("node00", "node01"):
        (job / host).mkdir()
        (job / host / "gpu.csv").write_text(gpu_log(idle_gpu=-1, gpus=4))
    report = json.loads(subprocess.run([cli, "analyze", str(job), "--format", "json"],
                                       capture_output=True, text=True).stdout)
    hang = [f for f in report["findings"] if f["kind"] == "gpu_hang_signature"]
    assert len(hang) == 1 and len(hang[0]["evidence"]) == 8
    assert "NCCL hang signature" in hang[0]["summary"]
    assert not [f for f in report["findings"] if f["kind"] == "gpu_idle_while_peers_busy"]


def query_reports(idle_gpu, gpus=8, samples=8):
    """`nvidia-smi -q -l 5` on one host: training, then every GPU but `idle_gpu` spinning at idle
    power while `idle_gpu` sits at 0%."""
    out = []
    for s in range(samples):
        out.append("\n==============NVSMI LOG==============\n\n"
                   f"Timestamp                                 : Sat Mar 14 11:21:{5 * s:02} 2026\n"
                   "Driver Version                            : 535.104.05\n\n"
                   f"Attached GPUs                             : {gpus}\n")
        for g in range(gpus):
            util, watts = (97, 640 + g) if s < 4 else ((0, 90) if g == idle_gpu else (100, 118 + g))
            out.append(f"GPU 00000000:{0x18 + g:02X}:00.0\n"
                       "    Product Name                          : NVIDIA H100 80GB HBM3\n"
                       "    FB Memory Usage\n"
                       "        Total                             : 81559 MiB\n"
                       "        Used                              : 70000 MiB\n"
                       "    Utilization\n"
                       f"        Gpu                               : {util} %\n"
                       "    GPU Power Readings\n"
                       f"        Instantaneous Power Draw          : {watts:.2f} W\n")
    return "".join(out)


def nccl_init_line(rank, bus):
    """The line NCCL prints when rank `rank`'s communicator is up on node00, GPU at PCI bus `bus`."""
    return (f"[rank{rank}]:node00:41{rank:02}:42{rank:02} [{rank}] NCCL INFO ncclCommInitRankConfig "
            f"comm 0x55eeda5248{rank:02} rank {rank} nranks 8 cudaDev {rank} nvmlDev {rank} "
            f"busId {bus:x}000 commId 0xd81d57f397d2de73 - Init COMPLETE\n")


def test_query_reports_tie_the_idle_gpu_to_its_rank_and_mark_it_on_the_timeline(cli, tmp_path):
    job = tmp_path / "job"
    subprocess.run([cli, "simulate", str(job), "--fault", "stuck_before_op", "--fault-rank", "5"],
                   check=True, capture_output=True)
    host = job / "node00"
    host.mkdir()
    (host / "smi-q.txt").write_text(query_reports(idle_gpu=5))
    # Each rank's NCCL init line names its GPU's bus id (0x18 + rank, as nvidia-smi lists them).
    (host / "ranks.log").write_text("".join(nccl_init_line(r, 0x18 + r) for r in range(8)))
    report = json.loads(subprocess.run([cli, "analyze", str(job), "--format", "json"],
                                       capture_output=True, text=True).stdout)
    assert report["verdict"]["culprit_ranks"] == [5]
    idle = [f for f in report["findings"] if f["kind"] == "gpu_idle_while_peers_busy"]
    assert len(idle) == 1
    assert idle[0]["ranks"] == [5]
    assert "node00 GPU 5 (00000000:1D:00.0), rank 5" in idle[0]["evidence"][0]
    trace = json.loads(subprocess.run(
        [cli, "timeline", str(job), "--format", "chrome-json"],
        capture_output=True, text=True).stdout)
    marks = [e for e in trace["traceEvents"]
             if e.get("ph") == "i" and e.get("name") == "gpu_idle_while_peers_busy"]
    assert len(marks) == 1
    assert marks[0]["tid"] == 5  # on the rank's own track


def test_workers_outliving_their_launcher_are_a_finding(cli, tmp_path):
    job = tmp_path / "job"
    subprocess.run([cli, "simulate", str(job), "--fault", "stuck_before_op", "--fault-rank", "5"],
                   check=True, capture_output=True)
    host = job / "node01"
    host.mkdir()
    listing = ["    PID    PPID STAT     ELAPSED COMMAND",
               "      1       0 Ss      3-02:11:09 /sbin/init"]
    # torchrun (pid 4100) is gone; its four workers were reparented to init.
    listing += [f"   {4101 + w}       1 Rl         42:08 /usr/bin/python3 -u train.py --lr 3e-4"
                for w in range(4)]
    (host / "ps.txt").write_text("\n".join(listing) + "\n")
    proc = subprocess.run([cli, "analyze", str(job), "--format", "json"], capture_output=True,
                          text=True)
    report = json.loads(proc.stdout)
    orphans = [f for f in report["findings"] if f["kind"] == "launcher_gone_workers_alive"]
    assert len(orphans) == 1
    assert len(orphans[0]["evidence"]) == 4
    assert "pid 4101 (parent 1 is init)" in orphans[0]["evidence"][0]
    # Not read as a log, and in the text and HTML reports too.
    assert all(not f["path"].endswith("ps.txt") for f in report.get("log_files", []))
    text = subprocess.run([cli, "analyze", str(job)], capture_output=True, text=True).stdout
    assert "[launcher_gone_workers_alive, medium] 4 worker process(es) on 1 host(s)" in text
    html = subprocess.run([cli, "report", str(job)], capture_output=True, text=True).stdout
    assert "launcher_gone_workers_alive" in html
    # And from Python, in the findings table.
    import fr_analyze

    findings = fr_analyze.analyze(str(job)).findings_df()
    row = findings[findings["kind"] == "launcher_gone_workers_alive"]
    assert len(row) == 1 and "4 worker process(es)" in row.iloc[0]["summary"]
