"""The console's analysis worker reads an upload's files while the upload is still being
unpacked: the server names each file as soon as it is written ({"file": PATH} lines before the
job, python/fr_analyze/console/_worker.py), the worker reads it at once (_core.EarlyReads), and
the job's load takes those results instead of reading the files again. What a user sees must
not change: the report is the CLI's on the finished folder, a file changed after it was named
is read as it is now, and a name that is no file, or a log, costs nothing."""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

from test_console_api import cli_json, without_dump_time

TIMEOUT = 120
# How long the worker is left to read what it was told of before its job comes. Its one reading
# thread runs at the lowest priority (it must not slow the server's unpacking), so on a machine
# busy with other tests it may take a while; the reads take milliseconds.
READING_SECONDS = 3.0


def start_worker(home: pathlib.Path) -> subprocess.Popen:
    """The worker as the console starts it ahead of an upload: waiting for lines on stdin."""
    return subprocess.Popen([sys.executable, "-m", "fr_analyze.console._worker", "--wait",
                             str(home)], cwd=home, stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def send(worker: subprocess.Popen, message: dict) -> None:
    worker.stdin.write((json.dumps(message) + "\n").encode())
    worker.stdin.flush()


def finish(worker: subprocess.Popen, folder: pathlib.Path, source: str,
           output: pathlib.Path) -> dict:
    """Hands the job over, as run_worker does, and returns the report it wrote."""
    send(worker, {"folder": str(folder), "source": source, "output": str(output),
                  "paste": False, "outputs": []})
    _, stderr = worker.communicate(timeout=TIMEOUT)  # closes its stdin: the job was all
    assert worker.returncode == 0, stderr.decode()
    assert not (output / "error.json").exists(), (output / "error.json").read_text()
    return json.loads((output / "report.json").read_text())


def early_counts(output: pathlib.Path) -> dict:
    return json.loads((output / "early-reads.json").read_text())


def upload_folder(job: pathlib.Path, tmp_path: pathlib.Path) -> pathlib.Path:
    """An upload's folder as the console writes it: files/dumps/..., plus a log beside them."""
    files = tmp_path / "files"
    shutil.copytree(job, files / "dumps")
    (files / "dumps" / "train.log").write_text("step 100 loss 2.31\n")
    return files


def test_files_named_before_the_job_give_the_clis_report(cli, simulated_job, tmp_path):
    files = upload_folder(simulated_job, tmp_path)
    dumps = sorted(p for p in (files / "dumps").iterdir() if p.suffix != ".log")
    worker = start_worker(tmp_path)
    for path in sorted((files / "dumps").iterdir()):
        send(worker, {"file": str(path)})
    send(worker, {"file": str(files / "dumps" / "never-written")})  # named, then refused
    time.sleep(READING_SECONDS)
    report = finish(worker, files, "dumps", tmp_path / "out")
    assert without_dump_time(report) == without_dump_time(cli_json(cli, "dumps", cwd=files))
    assert report["verdict"]["culprit_ranks"] == [5]  # the rank `simulate` made hang
    counts = early_counts(tmp_path / "out")
    # Each dump read early was used as it was; the log was never read as a dump.
    assert 1 <= counts["files_read"] <= len(dumps), counts
    assert counts["files_used"] == counts["files_read"], counts


def test_a_dump_changed_after_it_was_named_is_read_as_it_is_now(cli, simulated_job, tmp_path):
    files = upload_folder(simulated_job, tmp_path)
    worker = start_worker(tmp_path)
    for path in sorted((files / "dumps").iterdir()):
        send(worker, {"file": str(path)})
    time.sleep(READING_SECONDS)
    # Rank 2's dump cut in half after it was read: the report must reject it, as the CLI does.
    rank2 = next(p for p in (files / "dumps").iterdir() if p.name.endswith("_2"))
    data = rank2.read_bytes()
    rank2.write_bytes(data[: len(data) // 2])
    report = finish(worker, files, "dumps", tmp_path / "out")
    expected = cli_json(cli, "dumps", cwd=files)
    assert without_dump_time(report) == without_dump_time(expected)
    assert any(r["path"].endswith(rank2.name) for r in report["inputs"]["files_rejected"]), \
        report["inputs"]["rejected"]
    counts = early_counts(tmp_path / "out")
    assert counts["files_used"] <= counts["files_read"], counts


def test_a_worker_told_of_no_file_answers_as_before(cli, simulated_job, tmp_path):
    # A pasted log or a re-run: no line before the job, and no early reads at all.
    files = upload_folder(simulated_job, tmp_path)
    worker = start_worker(tmp_path)
    report = finish(worker, files, "dumps", tmp_path / "out")
    assert without_dump_time(report) == without_dump_time(cli_json(cli, "dumps", cwd=files))
    assert not (tmp_path / "out" / "early-reads.json").exists()


def test_a_worker_whose_upload_was_refused_stops_without_a_report(simulated_job, tmp_path):
    # The server closes the worker's stdin (or kills it) when the upload is refused mid-way.
    files = upload_folder(simulated_job, tmp_path)
    worker = start_worker(tmp_path)
    for path in sorted((files / "dumps").iterdir()):
        send(worker, {"file": str(path)})
    _, stderr = worker.communicate(timeout=TIMEOUT)  # stdin closed with no job
    assert worker.returncode == 0, stderr.decode()
    assert not any(tmp_path.glob("**/report.json"))
    assert os.listdir(tmp_path) == ["files"]
