"""Hostile and messy input on the command line: never a hang, a blow-up or a wrong answer.

Each test builds the directory a user could have, runs fr-analyze as a subprocess with a
deadline, and checks what the user would see: the verdict, the exit status, what is listed.
"""

import json
import os
import random
import shutil
import subprocess
import sys
import time

import pytest

DEADLINE_S = 20


def run(cli, *args, **kwargs):
    return subprocess.run([cli, *map(str, args)], capture_output=True, text=True,
                          timeout=DEADLINE_S, **kwargs)


@pytest.fixture
def healthy_job(cli, tmp_path):
    """An 8-rank job with nothing wrong, written by `fr-analyze example`."""
    directory = tmp_path / "healthy"
    subprocess.run([cli, "example", str(directory), "--world-size", "8", "--stuck-rank", "-1"],
                   check=True, capture_output=True)
    return directory


@pytest.fixture
def hung_job(cli, tmp_path):
    """An 8-rank job whose rank 5 never reached the last all_reduce."""
    directory = tmp_path / "hung"
    subprocess.run([cli, "example", str(directory), "--world-size", "8", "--stuck-rank", "5"],
                   check=True, capture_output=True)
    return directory


def verdict(cli, directory, *args):
    result = run(cli, directory, "--format", "json", *args)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def test_dump_of_a_fifo_fails_at_once_instead_of_hanging(cli, tmp_path):
    fifo = tmp_path / "nccl_trace_rank_0"
    os.mkfifo(fifo)
    result = run(cli, "dump", fifo)  # no writer: a blocking open() would never return
    assert result.returncode == 2
    assert "a FIFO, not a regular file" in result.stderr


def test_a_fifo_among_the_dumps_is_skipped_and_the_job_analysed(cli, hung_job, tmp_path):
    job = tmp_path / "job"
    shutil.copytree(hung_job, job)
    os.mkfifo(job / "nccl_trace_rank_9")
    report = verdict(cli, job)
    assert report["verdict"]["failure_class"] == "missing_participant"
    assert report["verdict"]["culprit_ranks"] == [5]


def test_a_backtracking_rank_pattern_on_a_long_name_finishes_quickly(cli, healthy_job, tmp_path):
    job = tmp_path / "job"
    shutil.copytree(healthy_job, job)
    (job / ("a" * 40 + "!")).write_bytes(b"x")
    started = time.monotonic()
    result = run(cli, "load", job, "--format", "json",
                 "--rank-pattern", r"(?:[a-z_]+)+_(\d+)")
    assert time.monotonic() - started < 5
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["ranks_loaded"] == list(range(8))


def test_a_stray_copy_named_for_rank_999999_changes_nothing(cli, healthy_job, tmp_path):
    job = tmp_path / "job"
    shutil.copytree(healthy_job, job)
    shutil.copy(job / "nccl_trace_rank_3", job / "nccl_trace_rank_999999")
    out = tmp_path / "report.json"
    # Measured from a small helper process: a child's peak RSS includes what it had when it was
    # forked, which from a large test process (pandas, earlier analyses) is that process's size.
    helper = ("import os, subprocess, sys\n"
              "p = subprocess.Popen(sys.argv[1:])\n"
              "_, status, usage = os.wait4(p.pid, 0)\n"
              "print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)\n")
    measured = subprocess.run([sys.executable, "-c", helper, cli, str(job), "--format", "json",
                               "-o", str(out)], capture_output=True, text=True, timeout=DEADLINE_S)
    status, max_rss_kib = map(int, measured.stdout.split())
    assert status == 0, measured.stderr
    report = json.loads(out.read_text())
    assert report["verdict"]["failure_class"] == "none"
    assert report["inputs"]["ranks_loaded"] == list(range(8))
    assert not report["inputs"].get("ranks_missing")
    skipped = {os.path.basename(f["path"]): f["reason"] for f in report["inputs"]["files_skipped"]}
    assert "nccl_trace_rank_999999" in skipped
    # Nothing per implied rank: a million ranks at even 64 bytes each would pass this.
    assert max_rss_kib < 64 * 1024


def test_a_zst_copy_a_backup_and_a_saved_report_keep_the_culprit(cli, hung_job, tmp_path):
    job = tmp_path / "job"
    shutil.copytree(hung_job, job)
    subprocess.run(["zstd", "-q", "-k", str(job / "nccl_trace_rank_5")], check=True)
    (job / "backup").mkdir()
    shutil.copy(job / "nccl_trace_rank_2", job / "backup" / "nccl_trace_rank_2")
    saved = run(cli, job, "--format", "json")
    (job / "rank_5.json").write_text(saved.stdout)  # the report saved into the directory

    report = verdict(cli, job)
    assert report["verdict"]["failure_class"] == "missing_participant"
    assert report["verdict"]["culprit_ranks"] == [5]
    assert report["inputs"]["ranks_loaded"] == list(range(8))
    assert not report["inputs"].get("files_rejected")
    skipped = {os.path.relpath(f["path"], job): f["reason"]
               for f in report["inputs"]["files_skipped"]}
    assert "same content" in skipped["nccl_trace_rank_5.zst"]
    assert "JSON of an fr-analyze report" in skipped["rank_5.json"]


def test_one_junk_file_named_like_a_rank_keeps_a_healthy_job_healthy(cli, healthy_job, tmp_path):
    job = tmp_path / "job"
    shutil.copytree(healthy_job, job)
    (job / "nccl_trace_rank_20").write_bytes(bytes(range(7, 250)))
    result = run(cli, job)
    assert result.returncode == 0, result.stdout
    assert result.stdout.startswith("fr-analyze: none")
    summary = json.loads(run(cli, "load", job, "--format", "json").stdout)
    assert summary["ranks_loaded"] == list(range(8))
    assert not summary.get("ranks_missing")


def test_a_link_to_a_secret_is_not_followed_and_never_quoted(cli, healthy_job, tmp_path):
    job = tmp_path / "job"
    shutil.copytree(healthy_job, job)
    secret = tmp_path / "shadow"
    secret.write_text("root:$y$j9T$TOPSECRETHASH:19000:0:99999:7:::\n")
    os.symlink(secret, job / "nccl_trace_rank_9")
    os.symlink(secret, job / "worker_10")

    for args in ((), ("--follow-links",)):
        for command in ("analyze", "load"):
            result = run(cli, command, job, "--format", "json", *args)
            assert result.returncode == 0, result.stderr
            assert "TOPSECRET" not in result.stdout + result.stderr
            assert "root:" not in result.stdout + result.stderr
    summary = json.loads(run(cli, "load", job, "--format", "json").stdout)
    reasons = {os.path.basename(f["path"]): f["reason"] for f in summary["files_skipped"]}
    assert "outside the input directory" in reasons["nccl_trace_rank_9"]
    followed = json.loads(run(cli, "load", job, "--format", "json", "--follow-links").stdout)
    reasons = {os.path.basename(f["path"]): f["reason"] for f in followed["files_skipped"]}
    assert "not a flight-recorder dump: text" in reasons["nccl_trace_rank_9"]
    assert followed["ranks_loaded"] == list(range(8))
    assert run(cli, "dump", secret).stderr.count("TOPSECRET") == 0


def test_output_over_an_input_dump_is_refused(cli, hung_job, tmp_path):
    job = tmp_path / "job"
    shutil.copytree(hung_job, job)
    os.symlink("nccl_trace_rank_3", job / "latest")
    original = (job / "nccl_trace_rank_3").read_bytes()
    for target in (job / "nccl_trace_rank_3", job / "latest", job / "." / "nccl_trace_rank_3"):
        result = run(cli, job, "-o", target)
        assert result.returncode == 2
        assert "refusing to write" in result.stderr
    result = run(cli, "dump", job / "nccl_trace_rank_3", "-o", job / "nccl_trace_rank_3")
    assert result.returncode == 2
    assert (job / "nccl_trace_rank_3").read_bytes() == original
    # A new file inside the directory is fine, and so is writing it again.
    for _ in range(2):
        assert run(cli, job, "-o", job / "report.txt").returncode == 1
    assert (job / "report.txt").read_text().startswith("fr-analyze: missing_participant")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_failed_write_is_exit_status_2(cli, hung_job):
    with open("/dev/full", "w") as full:
        result = subprocess.run([cli, str(hung_job)], stdout=full, stderr=subprocess.PIPE,
                                text=True, timeout=DEADLINE_S)
    assert result.returncode == 2
    assert "No space left on device" in result.stderr
    result = run(cli, hung_job, "-o", "/dev/full")
    assert result.returncode == 2


@pytest.mark.parametrize("args", [
    ("DIR", "-j", "99999999999999999999"),
    ("DIR", "-j", "100000"),
    ("DIR", "--dump-time", "99999999999999999999999"),
    ("DIR", "--dump-time", "-5"),
    ("simulate", "OUT", "--steps", "1000000000"),
    ("simulate", "OUT", "--steps", "1e9"),
    ("simulate", "OUT", "--dp", "100000"),
    ("simulate", "OUT", "--tp", "1024", "--dp", "1024"),
    ("example", "OUT", "--world-size", "99999999999999999999"),
])
def test_out_of_range_numbers_are_usage_errors(cli, hung_job, tmp_path, args):
    args = [str(hung_job) if a == "DIR" else str(tmp_path / "out") if a == "OUT" else a
            for a in args]
    result = run(cli, *args)
    assert result.returncode == 2
    assert "needs" in result.stderr or "at most" in result.stderr
    assert not (tmp_path / "out").exists()


# --- Regression tests named after what a user saw (issue 10, items 9, 10, 12, 13) ---------------

@pytest.fixture
def hung_json_job(cli, tmp_path):
    """TP2 x PP2 x DP2 as JSON dumps (simulated); rank 5 never reaches a DP collective."""
    directory = tmp_path / "hung_json"
    subprocess.run([cli, "simulate", str(directory), "--fault", "stuck_before_op", "--fault-rank",
                    "5", "--json"], check=True, capture_output=True)
    return directory


def rewrite_json_dump(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, sort_keys=True, separators=(",", ":")))


def test_a_damaged_victim_dump_is_unreadable_not_a_crashed_culprit(cli, hung_job):
    before = verdict(cli, hung_job)["verdict"]
    victim = hung_job / "nccl_trace_rank_2"
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    report = verdict(cli, hung_job)
    assert report["verdict"]["failure_class"] == before["failure_class"] == "missing_participant"
    assert report["verdict"]["culprit_ranks"] == [5]
    assert [f["rank"] for f in report["inputs"]["files_rejected"]] == [2]
    assert "rank 2 left no dump" not in report["verdict"]["summary"].lower()


def test_a_damaged_victim_dump_leaves_a_json_op_mismatch_alone(cli, tmp_path):
    directory = tmp_path / "mismatch"
    subprocess.run([cli, "simulate", str(directory), "--fault", "op_mismatch", "--fault-rank", "5",
                    "--fault-group", "tp", "--json"], check=True, capture_output=True)
    before = verdict(cli, directory)["verdict"]
    assert before["failure_class"] == "op_mismatch" and before["culprit_ranks"] == [5]
    victim = directory / "nccl_trace_rank_1"
    victim.write_bytes(b"{" + victim.read_bytes()[1:200])
    after = verdict(cli, directory)["verdict"]
    assert after["failure_class"] == "op_mismatch" and after["culprit_ranks"] == [5]


def test_file_times_of_zero_keep_a_hung_job_hung(cli, hung_job):
    for name in os.listdir(hung_job):
        os.utime(hung_job / name, ns=(0, 0))
    result = run(cli, hung_job, "--format", "json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["verdict"]["failure_class"] == "missing_participant"
    assert report["verdict"]["culprit_ranks"] == [5]
    assert report["inputs"]["dump_time_source"].startswith("unknown")


def test_a_victim_entry_without_profiling_name_keeps_the_hang_verdict(cli, hung_json_job):
    before = verdict(cli, hung_json_job)["verdict"]

    def drop_a_name(data):
        # An older, completed entry of a victim: it must not become a "mismatch" of its own.
        del data["entries"][len(data["entries"]) // 2]["profiling_name"]

    rewrite_json_dump(hung_json_job / "nccl_trace_rank_1", drop_a_name)
    after = verdict(cli, hung_json_job)["verdict"]
    assert after["failure_class"] == before["failure_class"] == "missing_participant"
    assert after["culprit_ranks"] == before["culprit_ranks"] == [5]
    assert after["confidence"] == before["confidence"]


def test_sequence_numbers_past_32_bits_are_reported_whole(cli, hung_json_job):
    before = verdict(cli, hung_json_job)["verdict"]
    shift = 2**32

    def shift_seqs(data):
        for entry in data.get("entries", []):
            entry["collective_seq_id"] += shift
        for status in data.get("pg_status", {}).values():
            for key, value in status.items():
                if int(value) >= 0 and "collective" in key:
                    status[key] = str(int(value) + shift)

    for path in sorted(hung_json_job.iterdir()):
        rewrite_json_dump(path, shift_seqs)
    after = verdict(cli, hung_json_job)["verdict"]
    assert after["culprit_ranks"] == [5]
    assert after["collective_seq_id"] == before["collective_seq_id"] + shift
    assert f"#{before['collective_seq_id'] + shift}" in after["summary"]


def test_a_rank_past_32_bits_is_invalid_input_not_a_small_rank(cli, hung_json_job):
    def forge_rank(data):
        group = next(iter(data["pg_config"].values()))
        group["ranks"] = "[0, 4294967299]"

    rewrite_json_dump(hung_json_job / "nccl_trace_rank_0", forge_rank)
    report = verdict(cli, hung_json_job)
    rejected = report["inputs"]["files_rejected"]
    assert [f["rank"] for f in rejected] == [0]
    assert "rank 4294967299 is outside the range of ranks" in rejected[0]["error"]
    assert "pg_config" in rejected[0]["error"]
    assert 3 not in report["verdict"]["culprit_ranks"]
    assert 4294967299 not in report["inputs"]["ranks_missing"]


def test_one_nranks_claim_does_not_untie_ranks_from_gpus(cli, tmp_path):
    """A 16-rank job whose root cause is an Xid known only by its GPU's bus id: NCCL's init
    lines tie that bus id to a rank. One extra init line claiming a 32-rank communicator must
    not override what the other 16 ranks' lines agree on, and no host may be named ''."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "logsim"))
    import logsim

    job = tmp_path / "job"
    expected = logsim.simulate(str(job), 16, "xid", "per_host", seed=5, nccl_info=True)
    target = None
    for path in sorted(job.rglob("*")):
        if path.is_file() and "Init COMPLETE" in path.read_text(errors="replace"):
            target = path
            break
    assert target is not None, "the simulated logs carry NCCL init lines"
    line = next(l for l in target.read_text().splitlines()
                if "Init COMPLETE" in l and " nranks 16 " in l)
    with open(target, "a") as f:
        f.write(line.replace(" nranks 16 ", " nranks 32 ") + "\n")
    result = run(cli, "analyze", job, "--format", "json")
    report = json.loads(result.stdout)
    cause = report["verdict"]["root_cause"]
    assert cause["kind"] == "xid", cause["summary"]
    assert cause["ranks"] == expected["culprit_ranks"]
    assert all(h["host"] for h in report["timeline"]["hosts"]), report["timeline"]["hosts"]


def logsim_xid_job(directory):
    """A 16-rank job on two hosts whose rank 8's GPU fell off the bus: every rank's log and each
    host's kernel log (tests/logsim), with what was injected."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "logsim"))
    import logsim

    return logsim.simulate(str(directory), 16, "xid", "per_host", seed=7)


def nul_padded(data):
    # What a crash leaves: the file's last block allocated and never written.
    return data + b"\0" * (4096 - len(data) % 4096)


def utf16(data):
    return data.decode("utf-8").encode("utf-16")  # with its byte order mark


def long_first_line(data):
    return b"x" * 9000 + b"\n" + data


@pytest.mark.parametrize("damage", [nul_padded, utf16, long_first_line], ids=lambda d: d.__name__)
def test_a_padded_or_utf16_kernel_log_keeps_its_xid(cli, tmp_path, damage):
    job = tmp_path / "job"
    expected = logsim_xid_job(job)
    evidence = expected["evidence"][0]
    kernel_log = job / evidence["file"]
    kernel_log.write_bytes(damage(kernel_log.read_bytes()))

    report = verdict(cli, job)
    cause = report["verdict"]["root_cause"]
    assert (cause["kind"], cause["confidence"]) == (expected["kind"], "high"), cause["summary"]
    assert cause["ranks"] == expected["culprit_ranks"]
    xid_line = next(line for line in cause["evidence"] if evidence["contains"] in line["text"])
    assert xid_line["file"] == str(kernel_log)
    assert xid_line["line"] == evidence["line"] + (1 if damage is long_first_line else 0)
    assert "\0" not in xid_line["text"]
    read_as = {f["path"]: f["read_as"] for f in report["inputs"]["files_skipped"]}
    assert read_as[str(kernel_log)] == "log"


def test_every_file_set_aside_is_listed_with_why(cli, tmp_path):
    job = tmp_path / "job"
    expected = logsim_xid_job(job)
    (job / "notes.bin").write_bytes(random.Random(1).randbytes(4096))
    (job / "node001" / "dmesg.0").write_bytes(b"\0" * 8192)  # a kernel log never written
    report = verdict(cli, job)
    assert report["verdict"]["root_cause"]["kind"] == "xid"
    skipped = {os.path.relpath(f["path"], job): f for f in report["inputs"]["files_skipped"]}
    for log in expected["files"]:
        assert skipped[log]["read_as"] == "log", skipped[log]
    assert {path for path, f in skipped.items() if not f["read_as"]} == {
        "notes.bin", "node001/dmesg.0", "expected.json"}
    assert "not a log: binary data" in skipped["notes.bin"]["reason"]
    assert "NUL or control bytes and no text" in skipped["node001/dmesg.0"]["reason"]
    assert "not a log: JSON" in skipped["expected.json"]["reason"]


def peak_rss_run(cli, *args):
    """Runs fr-analyze; returns (exit status, peak RSS in KiB, stdout). Measured from a small helper
    process: a child's peak RSS includes what it had when it was forked, which from a large test
    process is that process's size."""
    helper = ("import os, subprocess, sys\n"
              "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE)\n"
              "out = p.stdout.read()\n"
              "_, status, usage = os.wait4(p.pid, 0)\n"
              "sys.stderr.write(f'{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}\\n')\n"
              "sys.stdout.write(out.decode())\n")
    measured = subprocess.run([sys.executable, "-c", helper, cli, *map(str, args)],
                              capture_output=True, text=True, timeout=DEADLINE_S)
    status, max_rss_kib = map(int, measured.stderr.split()[-2:])
    return status, max_rss_kib, measured.stdout


def gzip_bomb(path):
    """216 MB of JSON ("{}," and a little noise) as a 226 KB .gz: 955x, under gzip's ~1030x."""
    import zlib

    noise = random.Random(1)
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [packer.compress(b'{"version": "2.10", "entries": [')]
    chunk, total = b"{}," * 333_333, 0
    while total < 216_000_000:
        parts.append(packer.compress(chunk))
        parts.append(packer.compress(b'{"x": "' + noise.randbytes(48).hex().encode() + b'"},'))
        total += len(chunk) + 105
    parts.append(packer.compress(b"{}]}") + packer.flush())
    path.write_bytes(b"".join(parts))
    return total


def test_a_gzip_bomb_is_refused_within_a_few_megabytes(cli, hung_job, tmp_path):
    job = tmp_path / "job"
    shutil.copytree(hung_job, job)
    (job / "backup").mkdir()
    bomb = job / "backup" / "nccl_trace_rank_2.gz"
    expands_to = gzip_bomb(bomb)
    assert bomb.stat().st_size < 250_000 and expands_to / bomb.stat().st_size > 900
    started = time.monotonic()
    status, max_rss_kib, out = peak_rss_run(cli, job, "--format", "json")
    assert time.monotonic() - started < 5
    assert status == 1
    report = json.loads(out)
    assert report["verdict"]["culprit_ranks"] == [5]
    skipped = {os.path.relpath(f["path"], job): f["reason"]
               for f in report["inputs"]["files_skipped"]}
    assert "gzip data expands more than 100x" in skipped["backup/nccl_trace_rank_2.gz"]
    # 1000x let it reach 216 MB, and decoding that took 5 GB.
    assert max_rss_kib < 100 * 1024


def test_a_pg_config_claiming_a_million_ranks_is_reported_as_a_claim(cli, hung_json_job):
    def claim_a_million(data):
        data["pg_config"]["0"]["ranks"] = "[" + ", ".join(map(str, range(10**6))) + "]"

    rewrite_json_dump(hung_json_job / "nccl_trace_rank_0", claim_a_million)
    status, max_rss_kib, out = peak_rss_run(cli, hung_json_job, "--format", "json")
    assert status == 1
    report = json.loads(out)
    verdict = report["verdict"]
    assert (verdict["culprit_ranks"], verdict["confidence"]) == ([5], "high"), verdict["summary"]
    assert "1000000" not in verdict["summary"]
    inputs = report["inputs"]
    assert inputs["ranks_missing"] == []
    assert report["stats"]["ranks_expected"] == 8
    assert inputs["ranks_claimed_count"] == 10**6 - 8
    assert inputs["ranks_claimed"] == list(range(8, 1008))
    assert len(report["ranks"]) == 8
    for group in report["process_groups"]:
        for state in group["states"]:
            assert len(state["ranks"]) <= 1000
    # The claim's own text is 6.9 MB: the report may list its group once (120 MB before: a row,
    # a missing rank and a state per claimed rank).
    claim = len(", ".join(map(str, range(10**6))))
    assert len(out) < 2 * claim, len(out)
    assert max_rss_kib < 400 * 1024
    text = run(cli, hung_json_job).stdout
    assert "claimed: 999992 ranks" in text


def test_a_rank_whose_file_was_rejected_is_unreadable_not_missing(cli, hung_json_job):
    def forge_rank(data):
        group = next(iter(data["pg_config"].values()))
        group["ranks"] = "[0, 4294967299]"

    rewrite_json_dump(hung_json_job / "nccl_trace_rank_0", forge_rank)
    report = verdict(cli, hung_json_job)
    assert [f["rank"] for f in report["inputs"]["files_rejected"]] == [0]
    assert report["inputs"]["ranks_missing"] == []
    assert {r["rank"]: r["role"] for r in report["ranks"]}[0] == "unreadable"
    assert report["stats"]["ranks_expected"] == 8
    assert "missing: 0" not in run(cli, hung_json_job).stdout


def test_a_52_mb_json_dump_fits_in_less_memory_and_says_when_it_does_not(cli, tmp_path):
    job = tmp_path / "big"
    subprocess.run([cli, "simulate", str(job), "--json", "--steps", "1700", "--buffer", "200000",
                    "--tp", "2", "--pp", "1", "--dp", "1", "--fault", "none"], check=True,
                   capture_output=True)
    (job / "nccl_trace_rank_1").unlink()
    dump = job / "nccl_trace_rank_0"
    assert dump.stat().st_size > 50_000_000

    def load_within(megabytes):
        import resource

        def cap():
            limit = megabytes << 20
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        return subprocess.run([cli, "load", str(job), "--format", "json", "-j", "1"],
                              capture_output=True, text=True, timeout=60, preexec_fn=cap)

    # Both of simdjson's parsers were alive at once: 1.33 GB of address space, and under a 1 GB
    # limit the file failed with "byte 0: Error allocating memory".
    loaded = load_within(1000)
    assert loaded.returncode == 0, loaded.stdout + loaded.stderr
    assert json.loads(loaded.stdout)["ranks_loaded"] == [0]
    # Below what it needs, the file's error says that memory ran out, and names the file.
    starved = load_within(400)
    assert starved.returncode == 2
    assert f"{dump}: byte 0: ran out of memory decoding" in starved.stderr
    assert "Error allocating memory" not in starved.stderr


def test_an_unreadable_culprit_stays_the_culprit(cli, tmp_path):
    """A TP x PP x DP job whose rank 5 never issued its collective, and rank 5's dump cut short:
    the waits still end at rank 5. The report names it (every other dump points there: not
    insufficient evidence), at medium confidence, with where its dump broke, and never says
    that every member issued an op nobody can see in rank 5's dump."""
    job = tmp_path / "job"
    subprocess.run([cli, "simulate", job, "--tp", "2", "--pp", "2", "--dp", "2", "--fault",
                    "stuck_before_op", "--fault-rank", "5"], check=True, capture_output=True)
    dump = next(p for p in job.iterdir() if p.name.endswith("_5"))
    dump.write_bytes(dump.read_bytes()[:3000])
    result = run(cli, "analyze", job, "--format", "json")
    verdict = json.loads(result.stdout)["verdict"]
    assert verdict["failure_class"] == "missing_participant", verdict["summary"]
    assert verdict["culprit_ranks"] == [5] and verdict["confidence"] == "medium"
    assert "rank 5" in verdict["summary"].lower() and "byte " in verdict["summary"]
    assert "Every member" not in verdict["summary"]
    assert any("5" in action and "dump" in action for action in verdict["next_actions"])
    assert not any("nccl-tests" in action for action in verdict["next_actions"])


def test_a_timeline_of_many_ranks_takes_about_the_memory_of_the_analysis(cli, tmp_path):
    """The Perfetto writer built the whole Trace message before writing a byte: on 1024 ranks x 8
    steps it took 23 times the analysis's peak memory (1.39 GB against 60 MB; 196 MB now, the
    same bytes written), and 4096 ranks did not fit in 4 GiB. It streams packets now."""
    job = tmp_path / "job"
    subprocess.run([cli, "simulate", str(job), "--tp", "8", "--pp", "4", "--dp", "8", "--steps",
                    "8"], check=True, capture_output=True)

    def peak_kb(*args):
        proc = subprocess.Popen([cli, *map(str, args)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        assert proc.returncode in (0, 1), proc.stderr.read()
        return usage.ru_maxrss

    analysis = peak_kb("analyze", job, "--format", "json", "-o", tmp_path / "report.json")
    timeline = peak_kb("timeline", job, "-o", tmp_path / "job.perfetto-trace")
    assert (tmp_path / "job.perfetto-trace").stat().st_size > 10_000_000
    assert timeline < 4 * analysis, (timeline, analysis)
