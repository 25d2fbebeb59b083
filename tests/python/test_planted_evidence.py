"""Evidence that is not what it looks like (issue 35): no log pasted, a log that quotes error
messages, the tool's own reports saved beside the evidence, a worker's line that reads like
mpirun's, pdsh's host prefix, and outputs written over the inputs from Python.

Each test builds what a user could have, runs the real CLI (or the package) on it, and checks
what the user sees. Lines are real wording: tests/data/logs/real (each with its public source),
the real captures under tests/data, or the tool's own output.
"""

import json
import os
import pathlib
import shutil
import subprocess

import pytest

import fr_analyze

DATA = pathlib.Path(__file__).resolve().parents[1] / "data"
REAL = DATA / "logs" / "real"
DEADLINE_S = 60


def run(cli, *args, **kwargs):
    return subprocess.run([cli, *map(str, args)], capture_output=True, timeout=DEADLINE_S,
                          **kwargs)


def real_lines(name):
    """The lines of a real log fixture, without its source comment."""
    return [line for line in (REAL / name).read_text().splitlines(keepends=True)
            if not line.startswith("# source:")]


@pytest.mark.parametrize("pasted", [b"", b"\n \n\t\n", bytes(range(256)) * 64,
                                    b"\x7fELF\x02\x01\x01" + b"\x00" * 4000])
def test_no_log_on_stdin_is_no_healthy_log(cli, pasted):
    result = run(cli, "analyze", "-", input=pasted)
    assert result.returncode == 2, result.stdout
    assert result.stdout == b""
    assert result.stderr.startswith(b"fr-analyze: standard input: <pasted>: ")
    with pytest.raises(fr_analyze.DumpFormatError):
        fr_analyze.analyze_log(pasted)


def test_a_real_log_on_stdin_still_gives_its_verdict(cli):
    result = run(cli, "analyze", "-", "--format", "json",
                 input="".join(real_lines("cuda_oom.log")).encode())
    assert result.returncode == 1, result.stderr
    assert json.loads(result.stdout)["verdict"]["root_cause"]["kind"] == "cuda_oom"


def test_a_paste_reads_the_same_from_the_cli_and_from_python(cli):
    """One paste, one name: the evidence of a log on the CLI's stdin and of the same text given
    to fr_analyze.analyze_log points at the same file, "<pasted>" (the console lists it too)."""
    text = "".join(real_lines("cuda_oom.log"))
    from_cli = json.loads(run(cli, "analyze", "-", "--format", "json",
                              input=text.encode()).stdout)
    from_python = fr_analyze.analyze_log(text).to_dict()
    files = [{e["file"] for e in r["verdict"]["root_cause"]["evidence"]}
             for r in (from_cli, from_python)]
    assert files[0] == files[1] == {"<pasted>"}, files
    assert from_cli["verdict"]["root_cause"] == from_python["verdict"]["root_cause"]


def test_own_html_and_json_reports_beside_the_evidence_are_not_logs(cli, tmp_path):
    # A job whose only log is a watchdog timeout cascade; the tool's reports (their advice quotes
    # "CUDA error", "out of memory" and the like) are saved into the same folder.
    job = tmp_path / "job"
    job.mkdir()
    (job / "train.log").write_text("".join(real_lines("watchdog_default_pg.log")))
    first = json.loads(run(cli, "analyze", job, "--format", "json").stdout)
    oom = "".join(real_lines("cuda_oom.log"))
    assert fr_analyze.analyze_log(oom).write_html(str(job / "report.html")) > 0
    (job / "report.json").write_bytes(
        run(cli, "analyze", "-", "--format", "json", input=oom.encode()).stdout)
    html = (job / "report.html").read_text()
    assert "CUDA out of memory" in html  # the report does quote the OOM it explains
    again = json.loads(run(cli, "analyze", job, "--format", "json").stdout)
    assert [f["path"] for f in again["log_files"]] == [str(job / "train.log")]
    assert again["verdict"]["root_cause"]["kind"] == first["verdict"]["root_cause"]["kind"]
    assert again["verdict"]["root_cause"]["kind"] != "cuda_oom"


def test_a_tip_quoting_an_error_does_not_blame_the_rank_that_printed_it(cli, tmp_path):
    job = tmp_path / "job"
    job.mkdir()
    oom = real_lines("cuda_oom.log")[0].strip()
    timeouts = "".join(real_lines("watchdog_default_pg.log"))
    (job / "train.log").write_text(
        f'[rank0]:Tip: when you see "{oom[:60]}", lower the micro-batch size\n' + timeouts)
    report = json.loads(run(cli, "analyze", job, "--format", "json").stdout)
    assert report["verdict"]["root_cause"]["kind"] != "cuda_oom"


def test_a_workers_line_quoting_mpirun_does_not_blame_a_rank(cli, tmp_path):
    console = (DATA / "mpirun" / "4.1.4" / "segfault" / "console.log").read_text()
    noticed = next(line for line in console.splitlines() if line.startswith("mpirun noticed"))
    job = tmp_path / "job"
    job.mkdir()
    (job / "console.log").write_text("[1,0]<stdout>:" + noticed.replace("rank 2", "rank 3") + "\n")
    report = json.loads(run(cli, "analyze", job, "--format", "json").stdout)
    cause = report["verdict"]["root_cause"]
    assert cause["kind"] != "segfault"
    assert 3 not in cause.get("ranks", [])


def test_pdsh_host_prefixes_keep_the_exception(cli, tmp_path):
    job = tmp_path / "job"
    job.mkdir()
    (job / "deepspeed.log").write_text(
        "".join("worker-1: " + line for line in real_lines("python_traceback.log")))
    report = json.loads(run(cli, "analyze", job, "--format", "json").stdout)
    cause = report["verdict"]["root_cause"]
    assert cause["kind"] == "python_exception"
    assert cause["hosts"] == ["worker-1"]
    assert cause["ranks"] == [0]


def test_python_writers_never_overwrite_an_input(example_job, tmp_path):
    job = tmp_path / "job"
    shutil.copytree(example_job, job)  # conftest: 8 ranks, rank 5 stuck; copied, never touched
    (job / "slurm-1234.out").write_text("".join(real_lines("watchdog_default_pg.log")))
    dump = job / "nccl_trace_rank_3"
    original = dump.read_bytes()
    trace = fr_analyze.load(job)
    report = trace.analyze()
    os.symlink("nccl_trace_rank_3", job / "latest")
    for target in (dump, job / "latest", job / "slurm-1234.out"):
        with pytest.raises(fr_analyze.errors.OutputIsInputError):
            trace.write_timeline(str(target))
        with pytest.raises(fr_analyze.errors.OutputIsInputError):
            report.write_html(str(target))
    assert dump.read_bytes() == original
    # A new file beside them is fine, twice.
    for _ in range(2):
        assert report.write_html(str(job / "report.html")) > 0
        assert trace.write_timeline(str(job / "job.perfetto-trace")) > 0


def test_load_never_overwrites_a_log_beside_the_dumps(cli, example_job, tmp_path):
    job = tmp_path / "job"
    shutil.copytree(example_job, job)  # conftest: 8 ranks, rank 5 stuck; copied, never touched
    log = job / "slurm-1234.out"
    log.write_text("".join(real_lines("slurm_time_limit.log")))
    before = log.read_bytes()
    result = run(cli, "load", job, "-o", log)
    assert result.returncode == 2
    assert b"refusing to write" in result.stderr
    assert log.read_bytes() == before


def test_an_earlier_slurm_jobs_output_is_set_aside(cli, tmp_path):
    # Job 100 was OOM-killed yesterday; job 101, this one, hung in an all_reduce. Both outputs sit
    # in the folder the user points the tool at.
    job = tmp_path / "job"
    job.mkdir()
    (job / "slurm-100.out").write_text("".join(real_lines("slurm_oom.log")))
    (job / "slurm-101.out").write_text("".join(real_lines("watchdog_default_pg.log")))
    report = json.loads(run(cli, "analyze", job, "--format", "json").stdout)
    assert [f["path"] for f in report["log_files"]] == [str(job / "slurm-101.out")]
    assert report["verdict"]["root_cause"]["kind"] not in ("host_oom", "cuda_oom")
    set_aside = json.dumps(report)
    assert "slurm-100.out" in set_aside and "earlier Slurm job" in set_aside
    # Alone, job 100's output is read and its OOM found.
    (job / "slurm-101.out").unlink()
    alone = json.loads(run(cli, "analyze", job, "--format", "json").stdout)
    assert alone["verdict"]["root_cause"]["kind"] == "host_oom"


def test_a_verdict_over_no_dump_says_so_in_words(cli, tmp_path):
    # One stacks snapshot of a healthy moment (the real capture's first, before its fault) and
    # no dump: the verdict said "Only 0 of 0 ranks' dumps ... the dumps of ranks  would settle it".
    shutil.copy(DATA / "debug_server" / "2.13.0" / "hang" / "dump_dir" /
                "stacks_20261203_095233.txt", tmp_path)
    report = json.loads(run(cli, "analyze", tmp_path, "--format", "json").stdout)
    summary = report["verdict"]["summary"]
    assert report["verdict"]["failure_class"] == "insufficient_evidence"
    assert "0 of 0" not in summary and "ranks  " not in summary, summary
    assert "No flight-recorder dump" in summary, summary


def test_copied_dumps_and_logs_keep_the_year_of_the_jobs_records(cli, tmp_path):
    """Issue 35 item 16: dumps and logs copied a year later (`cp` without -p) carry the copy's
    file times. The kernel log's year-less lines took the year of the dumps' file times, so its
    Xid landed a year after the job. The dumps' own records say when the job ran."""
    import datetime

    job = tmp_path / "job"
    subprocess.run([cli, "simulate", str(job / "dumps"), "--fault", "stuck_before_op",
                    "--fault-rank", "5"], check=True, capture_output=True)
    first = json.loads(run(cli, "dump", job / "dumps" / "nccl_trace_rank_5", "--format",
                           "json").stdout)
    newest = max(e["time_created_ns"] for e in first["entries"]) // 1_000_000_000
    when = datetime.datetime.fromtimestamp(newest - 30, datetime.timezone.utc)
    xid = real_lines("xid.log")[0].strip()  # NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen ...
    (job / "kern.log").write_text(f"{when:%b} {when.day:2d} {when:%H:%M:%S} node00 kernel: {xid}\n")
    copied = (datetime.datetime(when.year + 1, 12, 31, tzinfo=datetime.timezone.utc)
              .timestamp())
    for path in [job / "kern.log", *(job / "dumps").iterdir()]:
        os.utime(path, (copied, copied))
    report = json.loads(run(cli, "analyze", job, "--format", "json").stdout)
    cause = report["verdict"]["root_cause"]
    assert cause["kind"] == "xid"
    assert cause["time"].startswith(f"{when:%Y-%m-%dT%H:%M:%S}"), cause["time"]
