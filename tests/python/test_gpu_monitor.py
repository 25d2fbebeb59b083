"""GPU monitor logs beside the dumps (`nvidia-smi --query-gpu=... --format=csv -l 5`, one file
per host): recognized by content, they add what the GPUs were doing to the report as findings,
and leave the dumps' verdict alone. The expected GPU is the one the test made idle."""

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
