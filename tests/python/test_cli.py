"""The fr-analyze command line, run as a subprocess the way a user runs it."""

import json
import os
import pickle
import shutil
import subprocess


def run(cli, *args):
    return subprocess.run([cli, *map(str, args)], capture_output=True, text=True)


def test_summary_names_ranks_groups_and_rejected_files(cli, example_job, tmp_path):
    job = tmp_path / "job"
    shutil.copytree(example_job, job)
    os.remove(job / "nccl_trace_rank_5")  # the crashed rank left no dump
    data = (job / "nccl_trace_rank_2").read_bytes()
    (job / "nccl_trace_rank_2").write_bytes(data[: len(data) // 3])
    (job / "nccl_trace_rank_0.pipe").write_bytes(b"")

    result = run(cli, "load", job, "--format", "json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["ranks_loaded"] == [0, 1, 3, 4, 6, 7]
    assert summary["ranks_missing"] == [5]
    assert [f["rank"] for f in summary["files_rejected"]] == [2]
    assert "nccl_trace_rank_2" in summary["files_rejected"][0]["error"]
    assert "byte" in summary["files_rejected"][0]["error"]
    assert [os.path.basename(f["path"]) for f in summary["files_skipped"]] == ["nccl_trace_rank_0.pipe"]
    world = [g for g in summary["process_groups"] if g["desc"] == "default_pg"]
    assert len(world) == 1 and world[0]["ranks"] == list(range(8))

    text = run(cli, "load", job)
    assert text.returncode == 0
    assert "ranks missing:  5" in text.stdout
    assert "nccl_trace_rank_2" in text.stdout


def test_output_is_deterministic(cli, example_job):
    for command in ("analyze", "load"):
        for fmt in ("text", "json", "proto"):  # proto is binary: compare bytes
            first, second = (
                subprocess.run([cli, command, str(example_job), "--jobs", jobs, "--format", fmt,
                                "-o", "/dev/stdout"], capture_output=True)
                for jobs in ("1", "2"))
            assert first.stdout == second.stdout and first.stdout, (command, fmt)


def test_analyze_names_the_hung_rank_and_exits_1(cli, example_job):
    result = run(cli, example_job, "--format", "json")
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["schema_version"] == 1
    verdict = report["verdict"]
    assert verdict["failure_class"] == "missing_participant"
    assert verdict["culprit_ranks"] == [5]
    assert verdict["process_group"]["desc"] == "DP"
    assert 5 in verdict["process_group"]["ranks"]
    assert verdict["op"] == "all_reduce"
    assert verdict["next_actions"]
    assert report["inputs"]["ranks_missing"] == []
    roles = {r["rank"]: r["role"] for r in report["ranks"]}
    assert roles[5] == "culprit"
    assert {r for r, role in roles.items() if role == "victim"} == {1, 3, 7}

    text = run(cli, example_job)
    assert text.returncode == 1
    assert text.stdout.startswith("fr-analyze: missing_participant")
    assert "culprits: 5" in text.stdout


def test_healthy_job_gives_none_and_exit_0(cli, tmp_path):
    job = tmp_path / "healthy"
    subprocess.run([cli, "example", str(job), "--stuck-rank", "-1"], check=True,
                   capture_output=True)
    result = run(cli, job, "--format", "json")
    assert result.returncode == 0, result.stdout
    report = json.loads(result.stdout)
    assert report["verdict"]["failure_class"] == "none"
    assert report["verdict"]["culprit_ranks"] == []


def test_entries_aligns_ranks_by_group_and_seq(cli, example_job):
    result = run(cli, "entries", example_job, "--pg-filter", "DP", "--ranks", "1,5")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    header = [l for l in lines if l.startswith("seq")]
    assert header and "rank 1" in header[-1] and "rank 5" in header[-1]
    # The DP group of rank 5: at the last seq rank 1 waits while rank 5 never issued it.
    group_lines = [l for l in lines if "rank 5" not in l and l.startswith("#")]
    assert any("all_reduce sched" in l and l.rstrip().endswith("-") for l in group_lines)


def test_dump_prints_what_pickle_load_returns(cli, example_job):
    path = example_job / "nccl_trace_rank_3"
    result = run(cli, "dump", path, "--format", "json")
    assert result.returncode == 0, result.stderr
    with open(path, "rb") as f:
        expected = pickle.load(f)  # our own file, written by the example job
    # json.loads turns tuples into lists, exactly as the contract says fr-analyze prints them.
    assert json.loads(result.stdout) == json.loads(json.dumps(expected))


def test_dump_refuses_code_and_names_the_offset(cli, tmp_path):
    evil = tmp_path / "nccl_trace_rank_0"
    marker = tmp_path / "pwned"
    evil.write_bytes(b"\x80\x02cos\nsystem\n(S'touch " + str(marker).encode() + b"'\ntR.")
    result = run(cli, "dump", evil)
    assert result.returncode == 2
    assert "GLOBAL" in result.stderr and "byte 2" in result.stderr
    assert str(evil) in result.stderr
    assert not marker.exists()


def test_usage_errors_exit_2(cli, tmp_path):
    assert run(cli).returncode == 2
    assert run(cli, tmp_path / "does-not-exist").returncode == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run(cli, empty)
    assert result.returncode == 2
    assert "no readable flight-recorder dump" in result.stderr
    assert run(cli, "analyze", empty, "--format", "yaml").returncode == 2


def test_every_subcommand_names_what_is_wrong_with_its_arguments(cli, example_job, tmp_path):
    dump_file = next(example_job.iterdir())
    cases = [
        (["analyze", example_job, "--bogus"], "unknown option --bogus"),
        (["load", example_job, "--format"], "--format needs a value"),
        (["entries", example_job, example_job], "unexpected argument"),
        (["dump", dump_file, "--bogus"], "unknown option --bogus"),
        (["dump", dump_file, dump_file], "unexpected argument"),
        (["example", tmp_path / "a", "--world-size"], "--world-size needs a value"),
        (["example", tmp_path / "a", "--bogus", "1"], "unknown option --bogus"),
        (["simulate", tmp_path / "b", tmp_path / "c"], "unexpected argument"),
        (["simulate", tmp_path / "b", "--fault", "bogus"], "unknown fault bogus"),
    ]
    for args, message in cases:
        result = run(cli, *args)
        assert result.returncode == 2, args
        assert message in result.stderr, (args, result.stderr)
        assert "usage:" in result.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_file_names_that_are_not_utf8_still_give_valid_json(cli, example_job, tmp_path):
    job = tmp_path / "job"
    shutil.copytree(example_job, job)
    # Linux file names are bytes; a stray one must not make the JSON invalid.
    with open(os.path.join(os.fsencode(job), b"notes-\xff.txt"), "wb") as f:
        f.write(b"not a dump")
    for command in (["load"], ["analyze"]):
        result = subprocess.run([cli, *command, str(job), "--format", "json"], capture_output=True)
        assert result.returncode in (0, 1), result.stderr
        assert b"libprotobuf" not in result.stderr
        report = json.loads(result.stdout.decode("utf-8"))  # strict: raises on invalid UTF-8
        skipped = report["files_skipped"] if command == ["load"] else report["inputs"]["files_skipped"]
        assert [os.path.basename(f["path"]) for f in skipped] == ["notes-\ufffd.txt"]


def test_unreadable_dumps_beside_a_quiet_log_are_never_healthy(cli, example_job, tmp_path):
    """Every dump unreadable: exit 2 with or without a text file beside them (a log that shows
    no failure cannot stand in for the dumps); a log that shows a failure is still reported."""
    job = tmp_path / "job"
    job.mkdir()
    for dump in sorted(example_job.iterdir())[:4]:
        (job / dump.name).write_bytes(dump.read_bytes()[:40])
    alone = run(cli, "analyze", job)
    assert alone.returncode == 2
    (job / "notes.txt").write_text("copied from the cluster on Tuesday\nall ranks were running\n")
    with_notes = run(cli, "analyze", job, "--format", "json")
    assert with_notes.returncode == 2, with_notes.stdout
    assert with_notes.stdout == ""
    assert "no readable flight-recorder dump" in with_notes.stderr
    # A real kernel OOM line (the README's example wording): the logs now say why, exit 1.
    (job / "dmesg.txt").write_text(
        "[1475006.280997] Memory cgroup out of memory: Killed process 3021834 (pt_main_thread) "
        "total-vm:235929600kB, anon-rss:1048576kB, file-rss:0kB, shmem-rss:0kB, UID:0 "
        "pgtables:4096kB oom_score_adj:0\n")
    with_oom = run(cli, "analyze", job, "--format", "json")
    assert with_oom.returncode == 1, with_oom.stderr
    assert '"host_oom"' in with_oom.stdout
