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


def frame(path: str, data: bytes, mtime_ns: int) -> bytes:
    """One held member as the console sends it (HeldPipe; EarlyReads.read_held)."""
    name = path.encode()
    return (len(name).to_bytes(4, "little") + name + len(data).to_bytes(8, "little")
            + mtime_ns.to_bytes(8, "little") + data)


def start_holding_worker(home: pathlib.Path):
    """The worker as the console starts it, with the pipe of held members (its write end
    returned, open) and the line that makes it read them."""
    read_end, write_end = os.pipe()
    worker = subprocess.Popen([sys.executable, "-m", "fr_analyze.console._worker", "--wait",
                               str(home), "--held-fd", str(read_end)], cwd=home,
                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, pass_fds=(read_end,))
    os.close(read_end)
    send(worker, {"held": True})
    return worker, os.fdopen(write_end, "wb")


def test_members_held_in_memory_give_the_clis_report_on_the_written_folder(cli, simulated_job,
                                                                           tmp_path):
    # The console sends a tar's dumps to the worker through a pipe and writes them only after
    # the answer: the worker's report must be the CLI's on the folder once they are written,
    # dated by the members' own times, with the log beside them read from disk.
    files = tmp_path / "files"
    (files / "dumps").mkdir(parents=True)
    (files / "dumps" / "train.log").write_text("step 100 loss 2.31\n")
    taken_ns = 1_767_323_045_000_000_000
    members = {f"dumps/{p.name}": p.read_bytes() for p in sorted(simulated_job.iterdir())}
    worker, pipe = start_holding_worker(tmp_path)
    with pipe:
        for path, data in members.items():
            pipe.write(frame(path, data, taken_ns))
    # The pipe closed: every member was sent. Nothing of them is on disk yet.
    assert [p.name for p in (files / "dumps").iterdir()] == ["train.log"]
    report = finish(worker, files, "dumps", tmp_path / "out")
    # Every member was used from memory (decoded early, or by the load when still queued).
    assert early_counts(tmp_path / "out")["files_used"] == len(members)
    for path, data in members.items():  # what the console does after its answer
        (files / path).write_bytes(data)
        os.utime(files / path, ns=(taken_ns, taken_ns))
    assert report == cli_json(cli, "dumps", cwd=files)
    assert report["inputs"]["dump_time_ns"] == taken_ns
    assert report["verdict"]["culprit_ranks"] == [5]


def test_a_worker_whose_held_members_were_cut_off_says_so(simulated_job, tmp_path):
    # The server died (or refused the upload) in the middle of a member: the job's load must
    # fail and say why, never analyse the members that happened to arrive.
    files = tmp_path / "files"
    (files / "dumps").mkdir(parents=True)
    data = next(p for p in sorted(simulated_job.iterdir())).read_bytes()
    worker, pipe = start_holding_worker(tmp_path)
    with pipe:
        pipe.write(frame("dumps/nccl_trace_rank_0", data, 0)[:-100])
    send(worker, {"folder": str(files), "source": "dumps", "output": str(tmp_path / "out"),
                  "paste": False, "outputs": []})
    _, stderr = worker.communicate(timeout=TIMEOUT)
    assert worker.returncode == 0, stderr.decode()
    error = json.loads((tmp_path / "out" / "error.json").read_text())["error"]
    assert "ended inside" in error and "nccl_trace_rank_0" in error, error
    assert not (tmp_path / "out" / "report.json").exists()
