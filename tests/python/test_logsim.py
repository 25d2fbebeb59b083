"""Properties of the log simulator itself (tests/logsim). The analyzer is not run here."""

import hashlib
import json
import os
import re
import subprocess
import sys
from datetime import datetime, timedelta

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "logsim"))
import logsim  # noqa: E402

EPOCH = datetime(1970, 1, 1)
GLOG_C10 = re.compile(r"\[rank(\d+)\]:\[E(\d{1,2})(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{9}) ")


def _read_lines(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as fh:
        return fh.read().split("\n")


def _check_expected(root, exp):
    assert exp["kind"] in logsim.FAULTS
    n = exp["ranks"]
    for rel in exp["files"]:
        assert os.path.isfile(os.path.join(root, rel)), rel
    assert exp["culprit_ranks"] == sorted(exp["culprit_ranks"])
    assert all(0 <= r < n for r in exp["culprit_ranks"])
    g = exp["gpus_per_host"]
    assert exp["culprit_hosts"] == sorted({f"node{r // g:03d}" for r in exp["culprit_ranks"]})
    assert set(exp["hosts"]) == {f"node{i:03d}" for i in range((n + g - 1) // g)}
    if exp["kind"] in ("host_kill", "none"):
        assert exp["culprit_ranks"] == []
    else:
        assert len(exp["culprit_ranks"]) >= 1
        assert not set(exp["culprit_ranks"]) & set(exp["victim_ranks"])
    if exp["kind"] == "none":
        assert exp["evidence"] == [] and exp["watchdog"] == []
        return
    assert exp["evidence"], "a fault must leave evidence"
    assert exp["evidence"][0]["primary"]
    for ev in exp["evidence"]:
        lines = _read_lines(root, ev["file"])
        assert ev["contains"] in lines[ev["line"] - 1], (ev, lines[ev["line"] - 1])
    for w in exp["watchdog"]:
        line = _read_lines(root, w["file"])[w["line"] - 1]
        assert "Watchdog caught collective operation timeout" in line
        assert f"SeqNum={exp['collective']['seq']}," in line
        assert w["rank"] not in exp["culprit_ranks"]


@pytest.mark.parametrize("fault", logsim.FAULTS)
def test_every_fault_small_every_layout(tmp_path, fault):
    for i, layout in enumerate(logsim.LAYOUTS):
        root = tmp_path / layout
        exp = logsim.simulate(str(root), 16, fault, layout, seed=11 + i)
        assert json.loads((root / "expected.json").read_text()) == json.loads(json.dumps(exp))
        assert exp["layout"] == layout and exp["kind"] == fault
        _check_expected(str(root), exp)


@pytest.mark.parametrize("fault", logsim.FAULTS)
def test_every_fault_8_and_512_ranks(tmp_path, fault):
    for ranks, layout in ((8, "per_host"), (512, "torchrun_logdir" if fault != "host_kill"
                                            else "slurm_combined")):
        root = str(tmp_path / str(ranks))
        exp = logsim.simulate(root, ranks, fault, layout, seed=5)
        assert exp["ranks"] == ranks
        _check_expected(root, exp)
        if fault not in ("none", "host_kill") and ranks == 512:
            assert len(exp["victim_ranks"]) == 511


def _glog_time(m, year):
    mon, day = int(m.group(2)), int(m.group(3))
    d = datetime(year, mon, day, int(m.group(4)), int(m.group(5)), int(m.group(6)))
    return (d - EPOCH).total_seconds() + int(m.group(7)) / 1e9


@pytest.mark.parametrize("traps", [(), ("drift",), ("midnight_crossing",), ("year_crossing",)])
@pytest.mark.parametrize("version", logsim.TIMESTAMPED_TORCH)
def test_watchdog_times_are_true_time_in_host_clock(tmp_path, traps, version):
    exp = logsim.simulate(str(tmp_path), 64, "xid", "per_rank", seed=7, traps=traps,
                          torch_version=version)
    assert len(exp["watchdog"]) >= 8   # the launcher may kill some before their watchdog fires
    t0 = exp["t0"]
    days = set()
    for w in exp["watchdog"]:
        line = _read_lines(str(tmp_path), w["file"])[w["line"] - 1]
        m = GLOG_C10.match(line)
        assert m, line
        assert int(m.group(1)) == w["rank"]
        h = exp["hosts"][w["host"]]
        t = w["true_time"]
        local = t + h["offset_ms"] / 1000 + h["drift_ppm"] * 1e-6 * (t - t0)
        year = (EPOCH + timedelta(seconds=local)).year    # glog prints no year
        assert abs(_glog_time(m, year) - local) < 1e-3, (line, local)
        days.add((m.group(2), m.group(3)))
    if "midnight_crossing" in traps or "year_crossing" in traps:
        assert len(days) == 2, "some hosts print the day before, some the day after"
    if "year_crossing" in traps:
        assert days == {("12", "31"), ("1", "01")}


def _tree_digest(root):
    h = hashlib.sha256()
    for dirpath, _, files in sorted(os.walk(root)):
        for f in sorted(files):
            p = os.path.join(dirpath, f)
            h.update(os.path.relpath(p, root).encode())
            with open(p, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


def test_deterministic_by_seed(tmp_path):
    a = logsim.simulate(str(tmp_path / "a"), 32, "collective_timeout", "slurm_combined", seed=3,
                        traps=["second_unrelated_error"])
    b = logsim.simulate(str(tmp_path / "b"), 32, "collective_timeout", "slurm_combined", seed=3,
                        traps=["second_unrelated_error"])
    c = logsim.simulate(str(tmp_path / "c"), 32, "collective_timeout", "slurm_combined", seed=4,
                        traps=["second_unrelated_error"])
    assert a == b
    assert _tree_digest(tmp_path / "a") == _tree_digest(tmp_path / "b")
    assert _tree_digest(tmp_path / "a") != _tree_digest(tmp_path / "c")


@pytest.mark.parametrize("fault", logsim.FAULTS)
def test_pasted_is_one_small_file(tmp_path, fault):
    exp = logsim.simulate(str(tmp_path), 512, fault, "pasted", seed=2)
    assert exp["files"] == ["pasted.log"] and exp["stdin_file"] == "pasted.log"
    lines = _read_lines(str(tmp_path), "pasted.log")
    assert 20 < len(lines) < 600
    assert os.path.getsize(tmp_path / "pasted.log") < 400_000
    _check_expected(str(tmp_path), exp)


def test_xid_names_only_the_bus_and_init_lines_map_it_to_the_culprit(tmp_path):
    exp = logsim.simulate(str(tmp_path), 64, "xid", "torchrun_logdir", seed=9)
    assert "xid_bus_id_only" in exp["traps"]
    ev = exp["evidence"][0]
    line = _read_lines(str(tmp_path), ev["file"])[ev["line"] - 1]
    m = re.search(r"NVRM: Xid \(PCI:0000:([0-9a-f]{2}):00\): 79, pid='<unknown>', "
                  r"name=<unknown>, GPU has fallen off the bus\.", line)
    assert m, line
    host = ev["file"].split("/")[0]
    found = []
    for rel in exp["files"]:
        if rel.startswith(host + "/attempt_0/") and rel.endswith("stdout.log"):
            for ln in _read_lines(str(tmp_path), rel):
                mm = re.search(r"rank (\d+) nranks (\d+) .*busId ([0-9a-f]+) .*Init COMPLETE", ln)
                if mm and int(mm.group(2)) == 64 and mm.group(3) == m.group(1) + "000":
                    found.append(int(mm.group(1)))
    assert found == exp["culprit_ranks"]


def test_collective_timeout_is_found_from_sequence_numbers(tmp_path):
    exp = logsim.simulate(str(tmp_path), 32, "collective_timeout", "per_rank", seed=4,
                          torch_version="2.6")
    n = exp["collective"]["seq"]
    c = exp["culprit_ranks"][0]
    assert {w["rank"] for w in exp["watchdog"]} == set(range(32)) - {c}
    text = (tmp_path / f"rank_{c}.log").read_text()
    assert f"SeqNum={n}," not in text
    assert f"Last enqueued NCCL work: {n - 1}, last completed NCCL work: {n - 1}." in text
    victim = (tmp_path / f"rank_{(c + 1) % 32}.log").read_text()
    assert f"last completed NCCL work: {n - 1}." in victim


def test_skew_trap_makes_a_victim_look_first(tmp_path):
    for fault in ("cuda_oom", "segfault", "xid", "transport_error"):
        exp = logsim.simulate(str(tmp_path / fault), 32, fault, "per_host", seed=1,
                              traps=["skew_points_at_victim"])
        assert exp["raw_earliest_is_victim"], fault
        ch = exp["culprit_hosts"][0]
        assert exp["hosts"][ch]["offset_ms"] > 0


def test_root_cause_table_trap_names_a_victim(tmp_path):
    for fault in ("cuda_oom", "python_exception", "segfault", "xid"):
        exp = logsim.simulate(str(tmp_path / fault), 16, fault, "torchrun_logdir", seed=6,
                              traps=["root_cause_table_names_victim"])
        ch = exp["culprit_hosts"][0]
        t = [t for t in exp["root_cause_tables"] if t["host"] == ch]
        assert t and not t[0]["is_culprit"], fault
        line = _read_lines(str(tmp_path / fault), t[0]["file"])[t[0]["line"] - 1]
        assert line.strip().startswith(f"rank      : {t[0]['rank']} ")


def test_second_unrelated_error_comes_after_the_fault(tmp_path):
    exp = logsim.simulate(str(tmp_path), 16, "cuda_oom", "per_rank", seed=8,
                          traps=["second_unrelated_error", "many_victims"])
    assert exp["distractors"]
    for d in exp["distractors"]:
        assert d["rank"] not in exp["culprit_ranks"]
        ln = _read_lines(str(tmp_path), d["file"])[d["line"] - 1]
        assert "DataLoader worker" in ln or "bus error" in ln


def test_kernel_log_styles(tmp_path):
    pats = {"dmesg": r"^\[\s*\d+\.\d{6}\] ", "dmesg_T": r"^\[\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\] ",
            "kern.log": r"^\w{3} [ \d]\d \d\d:\d\d:\d\d node\d{3} kernel: ",
            "journal": r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00 node\d{3} kernel: "}
    for style, pat in pats.items():
        exp = logsim.simulate(str(tmp_path / style), 16, "host_oom", "per_rank", seed=1,
                              kernel_log=style)
        ev = exp["evidence"][0]
        lines = [x for x in _read_lines(str(tmp_path / style), ev["file"]) if x]
        assert all(re.match(pat, x) for x in lines), style
        assert "Killed process" in lines[ev["line"] - 1]


def test_old_torch_generations_have_their_wording(tmp_path):
    exp = logsim.simulate(str(tmp_path / "a"), 16, "xid", "per_rank", seed=1, torch_version="1.13")
    w = exp["watchdog"][0]
    line = _read_lines(str(tmp_path / "a"), w["file"])[w["line"] - 1]
    assert re.match(r"\[E ProcessGroupNCCL\.cpp:\d+\] \[Rank \d+\] Watchdog caught collective "
                    r"operation timeout: WorkNCCL\(SeqNum=\d+, OpType=\w+, Timeout\(ms\)=\d+\) "
                    r"ran for \d+ milliseconds before timing out\.$", line), line
    exp = logsim.simulate(str(tmp_path / "b"), 16, "xid", "per_rank", seed=1, torch_version="2.8")
    text = (tmp_path / "b" / exp["watchdog"][0]["file"]).read_text()
    assert "NumelIn=" in text and "PG GUID 0(default_pg)" in text
    assert "failure detected by watchdog at work sequence id:" in text


def test_bulk_nccl_info_reaches_bytes_target(tmp_path):
    exp = logsim.simulate(str(tmp_path), 16, "segfault", "slurm_combined", seed=1,
                          nccl_info=True, bytes_target=4_000_000)
    total = sum(os.path.getsize(tmp_path / f) for f in exp["files"])
    assert 3_000_000 < total < 6_000_000
    _check_expected(str(tmp_path), exp)


def test_cli(tmp_path):
    out = subprocess.run([sys.executable, os.path.join(HERE, "..", "logsim", "logsim.py"),
                          "--out", str(tmp_path), "--ranks", "16", "--fault", "host_kill",
                          "--layout", "torchrun_logdir", "--seed", "1",
                          "--trap", "drift,many_victims"],
                         check=True, capture_output=True, text=True)
    assert json.loads(out.stdout)["kind"] == "host_kill"
    exp = json.loads((tmp_path / "expected.json").read_text())
    assert exp["traps"] == ["drift", "many_victims"]
    _check_expected(str(tmp_path), exp)
