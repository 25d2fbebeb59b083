#!/usr/bin/env python3
"""The console (`fr-analyze serve`) against its targets, measured over real HTTP on a console
started as a subprocess, each figure a median of repeated runs (these machines are shared and
noisy: a ratio against a baseline of the same run, or the server's own time).

1. Upload to verdict. A simulated TP 8 x PP 4 x DP N job (default 512 ranks x 2000 entries, one
   rank stuck, as run_benchmarks.py and fr_trace_compare.py write it: about 180 MB of dumps) is
   packed as a user packs a job's folder (`tar --zstd -cf` and `tar czf`: zstd level 3, gzip
   level 6; --formats) and POSTed to /api/analyses as one multipart `files` part, streamed from
   disk with a Content-Length, until the 201 answer with the report. Each upload goes to a fresh
   console with an empty store (a job's archive is uploaded once: no blob is already stored),
   started and warmed up (its first page and a small upload) before the clock starts, right
   after the previous console's folder was removed (--settle-s waits longer: see settle(); a
   tar's dumps are written after the answer, so the inode scans it describes no longer come
   before it). The
   baseline, in the same run and interleaved with the uploads: `fr-analyze analyze DIR --format
   json -o FILE` on the unpacked dumps. Page cache warm for both. Target: the upload at most 2x
   the baseline (median of --repeats each). Both must name the stuck rank. After each upload,
   on the same console, the downloads the console makes on demand: the HTML report and the
   Perfetto timeline, each fetched twice (the first makes it from the stored inputs, after
   their compression that follows the answer; the second is the kept file). Then each archive
   once more, to a fresh console, sent at --link-mbps (default 100 Mbit/s) as from a user's
   machine: the time from its last byte to the verdict, against the same baseline (no target:
   on loopback the body takes 0.02 s and the upload is bound by the CPU; over a link the
   unpacking and the worker's reading of the dumps happen while the body arrives).
2. History and fleet pages with 10,000 stored analyses. The store is filled through
   Store.save, as the console writes it after an analysis: failed and healthy jobs over 8-64
   hosts (8 GPUs each) of a 1024-host fleet spread over 90 days, root-cause kinds spread as
   in a real fleet, a few repeat-offender hosts that initiate far more failures than their
   share, reports of a few KB (verdict, root cause with evidence lines, log files and clocks per
   host); the columns come from the console's own summarize(). Then GET /analyses and
   /api/analyses?limit=50 (also filtered by kind= and host=), /fleet and /api/fleet, each
   --requests times after 2 warm-up requests, on one keep-alive connection: median and p95 of
   the server's time (its Server-Timing header) and of the client's. Targets: history under
   200 ms, fleet under 500 ms (medians). On SQLite (the default store) and, when a server is at
   hand, PostgreSQL: --postgres auto starts a throwaway PostgreSQL 15 cluster (Debian's
   /usr/lib/postgresql/15/bin, as root through `runuser -u postgres`) on a free port with
   fsync off (the fill is faster; reads are not affected), runs VACUUM ANALYZE after the fill
   as autovacuum would on a live server, and removes it at the end; --postgres URL uses a
   database you give (its tables are created, and 10,000 rows added).

When the upload misses its target (or with --breakdown), the stages of an upload are timed one
by one in this process with the console's own code: before the answer, multipart parsing to
disk, unpacking, the worker process (inside it: load, analyze, JSON, protobuf), the row's
transaction; after the answer, the inputs' SHA-256 and their zstd compression into the blob
store; on the first downloads, restoring the inputs and the worker making the
HTML report and the Perfetto timeline (inside it: HTML, timeline).

    PYTHONPATH=$PWD/build/dev/python FR_ANALYZE_CLI=$PWD/build/dev/tools/fr-analyze \\
        FR_ANALYZE_PYTHON=$PWD/build/venv/bin/python build/venv/bin/python bench/console_bench.py
    ... bench/console_bench.py --quick          # 64 ranks, 1,000 analyses: under a minute

Exit status 1 when a target is missed (--no-fail: only print), 2 when the benchmark itself
could not run (a wrong verdict, an HTTP error, a console that does not start). --quick checks
the page targets only: at 64 ranks the upload's fixed costs (a worker process starting Python)
dominate a 0.05 s analysis, so its ratio is printed, not checked. Big temporary files go under
--workdir (default: the system's temporary folder) and are removed at the end.
"""

import argparse
import hashlib
import http.client
import json
import math
import os
import pathlib
import pwd
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UPLOAD_TARGET_RATIO = 2.0
HISTORY_TARGET_MS = 200.0
FLEET_TARGET_MS = 500.0
PG_BIN = "/usr/lib/postgresql/15/bin"


class BenchError(Exception):
    """The benchmark itself could not run (exit status 2)."""


def median(values):
    return statistics.median(values)


def p95(values):
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def warm(path):
    """Reads a file, or every file under a folder, so that it is in the page cache."""
    paths = [path] if os.path.isfile(path) else [
        os.path.join(root, name) for root, _, files in os.walk(path) for name in files]
    for p in paths:
        with open(p, "rb") as f:
            while f.read(1 << 20):
                pass


def directory_bytes(directory):
    return sum(os.path.getsize(os.path.join(root, name))
               for root, _, files in os.walk(directory) for name in files)


# ---------------------------------------------------------------------------------------------
# The console as a subprocess.

class Console:
    """`fr-analyze serve` on a free port, in its own session (stopped as a group)."""

    def __init__(self, cli, data, db=None, log=None):
        self.port = free_port()
        argv = [cli, "serve", "--port", str(self.port), "--data", data]
        if db:
            argv += ["--db", db]
        env = dict(os.environ)
        env.setdefault("FR_ANALYZE_PYTHON", sys.executable)
        self.log_path = log or os.path.join(data + ".log")
        self.log = open(self.log_path, "wb")
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log,
                                        stderr=subprocess.STDOUT, env=env,
                                        start_new_session=True)
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                raise BenchError(f"the console exited {self.process.returncode}:\n"
                                 + self.log_text())
            try:
                status, _, _ = self.get("/")
                if status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise BenchError("the console did not answer within 60 s:\n" + self.log_text())
            time.sleep(0.1)

    def log_text(self):
        self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read()[-3000:].decode(errors="replace")

    def get(self, path, conn=None):
        """(status, server ms, client ms) of one GET; the body is read and dropped."""
        own = conn is None
        if own:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            started = time.perf_counter()
            conn.request("GET", path)
            response = conn.getresponse()
            response.read()
            client_ms = 1000 * (time.perf_counter() - started)
            return response.status, server_ms(response), client_ms
        finally:
            if own:
                conn.close()

    def post_file(self, path, name, rate=None, last_byte=None):
        """POSTs one file as the multipart `files` part of /api/analyses, streamed from disk;
        returns (status, parsed answer, client seconds, server seconds). `rate`: bytes per
        second to send at, as over a link of that speed (default: as fast as loopback takes
        them); `last_byte`, a list, gets the time the last byte was handed to the socket."""
        boundary = uuid.uuid4().hex
        head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; "
                f"filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n").encode()
        tail = f"\r\n--{boundary}--\r\n".encode()
        length = len(head) + os.path.getsize(path) + len(tail)

        def body():
            yield head
            began, sent = time.perf_counter(), 0
            with open(path, "rb") as f:
                while True:
                    block = f.read(256 << 10 if rate else 1 << 20)
                    if not block:
                        break
                    if rate:
                        sent += len(block)
                        time.sleep(max(0.0, began + sent / rate - time.perf_counter()))
                    yield block
            yield tail
            if last_byte is not None:
                last_byte.append(time.perf_counter())

        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1800)
        try:
            started = time.perf_counter()
            conn.request("POST", "/api/analyses", body=body(), headers={
                "Content-Type": f"multipart/form-data; boundary={boundary}",
                "Content-Length": str(length)})
            response = conn.getresponse()
            data = response.read()
            seconds = time.perf_counter() - started
        finally:
            conn.close()
        try:
            answer = json.loads(data)
        except ValueError:
            answer = {"error": data[:500].decode(errors="replace")}
        self.last_stages = server_stages(response)
        return response.status, answer, seconds, server_ms(response) / 1000

    def stop(self):
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.close()


def server_stages(response):
    """{stage: seconds} from the answer's Server-Timing entries after `app` (the console notes
    when the body was received, the archives unpacked, the worker done, the row saved)."""
    header = response.getheader("server-timing") or ""
    return {m.group(1): float(m.group(2)) / 1000
            for m in re.finditer(r"(\w+);dur=([\d.]+)", header) if m.group(1) != "app"}


def server_ms(response):
    header = response.getheader("server-timing") or ""
    m = re.search(r"dur=([\d.]+)", header)
    if not m:
        raise BenchError(f"no Server-Timing in the answer ({header!r})")
    return float(m.group(1))


# ---------------------------------------------------------------------------------------------
# 1. Upload to verdict.

def simulate(cli, job, ranks):
    """Writes the job as run_benchmarks.py does; returns the culprits the simulator expects."""
    if ranks % 32:
        raise BenchError(f"--ranks {ranks} is not a multiple of TP 8 x PP 4")
    stuck = ranks // 2 + 3
    r = subprocess.run([cli, "simulate", job, "--tp", "8", "--pp", "4", "--dp", str(ranks // 32),
                        "--steps", "36", "--fault", "stuck_before_op", "--fault-rank", str(stuck),
                        "--fault-step", "30"], capture_output=True)
    if r.returncode != 0:
        raise BenchError("fr-analyze simulate failed:\n" + r.stderr.decode(errors="replace"))
    m = re.search(r"expected verdict: \w+, culprits \[([\d, ]*)\]", r.stdout.decode())
    return sorted(int(x) for x in re.findall(r"\d+", m.group(1))) if m else [stuck]


def pack(job, archive, form):
    """The job's folder as a user packs it: tar with the folder's name at the top."""
    name = os.path.basename(job)
    if form == "tar.zst":
        import zstandard

        with open(archive, "wb") as raw:
            # `tar --zstd` / `zstd` default: level 3, one thread.
            with zstandard.ZstdCompressor(level=3).stream_writer(raw) as out:
                with tarfile.open(fileobj=out, mode="w|") as tar:
                    tar.add(job, arcname=name)
    elif form == "tar.gz":
        with tarfile.open(archive, "w:gz", compresslevel=6) as tar:  # gzip's default level
            tar.add(job, arcname=name)
    elif form == "tar":
        with tarfile.open(archive, "w") as tar:
            tar.add(job, arcname=name)
    else:
        raise BenchError(f"unknown format {form!r} (tar.zst, tar.gz, tar)")


def run_cli(cli, job, report):
    started = time.perf_counter()
    r = subprocess.run([cli, "analyze", job, "--format", "json", "-o", report],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seconds = time.perf_counter() - started
    if r.returncode not in (0, 1):
        raise BenchError(f"fr-analyze analyze exited {r.returncode}:\n"
                         + r.stderr.decode(errors="replace"))
    with open(report) as f:
        return seconds, json.load(f)["verdict"]["culprit_ranks"]


def warm_up_console(console, workdir):
    """The server's first page and a small upload (imports, templates, a first worker)."""
    console.get("/")
    console.get("/analyses")
    small = os.path.join(workdir, "warm-up.log")
    with open(small, "w") as f:
        f.write("[rank0]: step 1 loss 2.31\n")
    status, answer, _, _ = console.post_file(small, "warm-up.log")
    if status not in (201, 422):
        raise BenchError(f"the warm-up upload answered {status}: {answer}")


def measure_upload(args, workdir):
    job = os.path.join(workdir, f"job{args.ranks}")
    print(f"writing a {args.ranks}-rank job ...", flush=True)
    expected = simulate(args.cli, job, args.ranks)
    job_bytes = directory_bytes(job)
    archives = {}
    for form in args.formats:
        archive = os.path.join(workdir, f"job{args.ranks}.{form}")
        started = time.perf_counter()
        pack(job, archive, form)
        archives[form] = archive
        print(f"packed {form}: {os.path.getsize(archive) / 1e6:.1f} MB "
              f"in {time.perf_counter() - started:.1f} s", flush=True)
    warm(job)
    for archive in archives.values():
        warm(archive)
    report = os.path.join(workdir, "cli-report.json")
    run_cli(args.cli, job, report)  # warm-up
    cli_times = []
    uploads = {form: {"client_s": [], "server_s": []} for form in args.formats}
    downloads = {}

    def downloads_after(console, answer):
        for name, seconds in time_downloads(console, answer["id"]).items():
            downloads.setdefault(name, []).append(seconds)

    for repeat in range(args.repeats):
        # Each measurement starts with nothing left to write back: the previous upload wrote
        # its 181 MB of members and blobs, whose writeback would otherwise slow whichever
        # measurement comes next (uploads reach a console one at a time, minutes apart).
        os.sync()
        seconds, culprits = run_cli(args.cli, job, report)
        if culprits != expected:
            raise BenchError(f"fr-analyze analyze blamed {culprits}, not {expected}")
        cli_times.append(seconds)
        print(f"  run {repeat + 1}: fr-analyze analyze {seconds:.2f} s", flush=True)
        for form, archive in archives.items():
            _, client_s, server_s, _, stages = upload_to_fresh_console(
                args, workdir, f"console-{form}-{repeat}", archive, expected, form,
                then=downloads_after)
            uploads[form]["client_s"].append(client_s)
            uploads[form]["server_s"].append(server_s)
            for stage, seconds in stages.items():
                uploads[form].setdefault("stages_s", {}).setdefault(stage, []).append(seconds)
            print(f"  run {repeat + 1}: upload {form} {client_s:.2f} s "
                  f"(server {server_s:.2f} s: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in stages.items()) + ")", flush=True)
            if args.link_mbps:
                total_s, after_s = upload_over_link(args, workdir, archive, expected, repeat)
                uploads[form].setdefault("link_total_s", []).append(total_s)
                uploads[form].setdefault("link_after_last_byte_s", []).append(after_s)
                print(f"  run {repeat + 1}: upload {form} at {args.link_mbps:g} Mbit/s "
                      f"{total_s:.2f} s, the verdict {after_s:.2f} s after the last byte",
                      flush=True)
    cli_s = median(cli_times)
    result = {"ranks": args.ranks, "job_bytes": job_bytes, "expected_culprits": expected,
              "settle_s": args.settle_s,
              "cli_s": cli_times, "cli_median_s": cli_s, "uploads": {},
              "downloads_s": {name: median(times) for name, times in downloads.items()}}
    for form, u in uploads.items():
        upload_s = median(u["client_s"])
        result["uploads"][form] = {
            "archive_bytes": os.path.getsize(archives[form]), "client_s": u["client_s"],
            "server_s": u["server_s"], "median_s": upload_s,
            "server_median_s": median(u["server_s"]), "ratio": upload_s / cli_s,
            "server_stages_median_s": {stage: median(times)
                                       for stage, times in u.get("stages_s", {}).items()}}
        if "link_total_s" in u:
            result["uploads"][form].update({
                "link_mbps": args.link_mbps, "link_total_s": u["link_total_s"],
                "link_after_last_byte_s": u["link_after_last_byte_s"],
                "link_after_last_byte_median_s": median(u["link_after_last_byte_s"]),
                "link_after_last_byte_ratio": median(u["link_after_last_byte_s"]) / cli_s})
    result["job"], result["archives"] = job, archives
    return result


# When the benchmark or a console it ran last removed files (time.monotonic()).
last_removal = [time.monotonic()]


def settle(args):
    """Waits until --settle-s (default 0) have passed since files were last removed. On an ext4
    file system without a journal (this project's VMs: /proc/fs/jbd2 is empty), creating a file
    skips every free inode of its group that was freed in the last 60 s (the kernel's
    recently_deleted() check, there for file systems without a journal) at a buffer-cache lookup
    each, scanning from the group's start for every new file. When the console wrote a tar's
    512 dumps before answering, back-to-back uploads each paid 0.2-0.5 CPU-s of that scanning
    (perf: find_inode_bit, recently_deleted, find_get_block_common in the unpacking thread),
    and the benchmark waited 61 s. Since 2026-12-08 those members reach the analysis from memory
    and are written after the answer; 61 still shows what an upload of loose files (written
    before the answer) costs once the scans are gone."""
    wait = last_removal[0] + args.settle_s - time.monotonic()
    if wait > 0:
        time.sleep(wait)


def upload_to_fresh_console(args, workdir, name, archive, expected, what, rate=None,
                            then=None):
    """POSTs `archive` to a fresh console (folder `name` under `workdir`), started and warmed up
    first, the page cache warm and nothing left to write back; `rate` as post_file's; `then`
    (console, answer) runs on the same console before it stops. Checks the answer names
    `expected`. Returns (answer, client seconds, server seconds, seconds from the request's
    last byte to its answer, {stage: server seconds})."""
    data = os.path.join(workdir, name)
    console = Console(args.cli, data)
    last_byte = []
    try:
        warm_up_console(console, workdir)
        warm(archive)
        os.sync()
        if rate is None:
            settle(args)
        status, answer, client_s, server_s = console.post_file(
            archive, os.path.basename(archive), rate=rate, last_byte=last_byte)
        answered = time.perf_counter()
        if status == 201 and then is not None:
            then(console, answer)
    finally:
        console.stop()
        shutil.rmtree(data, ignore_errors=True)
        if os.path.exists(data + ".log"):
            os.remove(data + ".log")
        last_removal[0] = time.monotonic()
    if status != 201:
        raise BenchError(f"the upload of {what} answered {status}: {answer}")
    culprits = answer["report"]["verdict"]["culprit_ranks"]
    if culprits != expected:
        raise BenchError(f"the console blamed {culprits}, not {expected}")
    return answer, client_s, server_s, answered - last_byte[0], console.last_stages


def upload_over_link(args, workdir, archive, expected, repeat):
    """One upload sent at --link-mbps, as from a user's machine over a network: on loopback the
    body arrives in 0.02 s and everything after it waits for the CPU; over a link, the
    unpacking and the worker's reading of the dumps happen while the body still arrives, and
    what a user waits for is the time from the last byte to the verdict. Returns (total
    seconds, seconds after the last byte)."""
    what = f"{os.path.basename(archive)} at {args.link_mbps:g} Mbit/s"
    _, client_s, _, after_s, _ = upload_to_fresh_console(
        args, workdir, f"console-link-{repeat}", archive, expected, what,
        rate=args.link_mbps * 1e6 / 8)
    return client_s, after_s


def time_downloads(console, analysis_id):
    """Seconds of each download the console makes on demand, fetched twice in a row."""
    times = {}
    for name in ("report.html", "timeline.perfetto-trace"):
        for attempt in ("first", "second"):
            status, _, client_ms = console.get(f"/analyses/{analysis_id}/{name}")
            if status != 200:
                raise BenchError(f"GET /analyses/{analysis_id}/{name} answered {status}")
            times[f"{name}, {attempt}"] = client_ms / 1000
    return times


def unpack_holding(root, archive, name):
    """Seconds to unpack `archive` as the console unpacks a tar for its early worker: the
    members that are dumps by name sent through a pipe (read to the end by a thread here, as
    the worker's reader would), the others written."""
    import threading

    from fr_analyze.console._uploads import HeldPipe, Limits, UploadFolder, unpack_archive

    scratch = pathlib.Path(root) / "holding"
    folder = UploadFolder(scratch / "files", Limits())
    shutil.copyfile(archive, folder.root / name)
    read_end, write_end = os.pipe()
    folder.holder = HeldPipe(write_end)

    def drain():
        while os.read(read_end, 1 << 20):
            pass

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    started = time.perf_counter()
    unpack_archive(folder, folder.root / name, name)
    seconds = time.perf_counter() - started
    folder.holder.close()
    reader.join()
    os.close(read_end)
    shutil.rmtree(scratch, ignore_errors=True)
    return seconds


def breakdown(workdir, archive):
    """The stages of one upload, one after another, with the console's own code."""
    import fr_analyze
    from fr_analyze.console import _analysis
    from fr_analyze.console._store import UNHASHED, Analysis, InputFile, Store
    from fr_analyze.console._uploads import Limits, MultipartWriter, UploadFolder, unpack_archive

    stages = []
    root = os.path.join(workdir, "breakdown")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    name = os.path.basename(archive)
    boundary = b"b" * 32
    folder = UploadFolder(pathlib.Path(root) / "files", Limits())
    writer = MultipartWriter(folder, boundary)
    started = time.perf_counter()
    writer.feed(b"--" + boundary + b"\r\nContent-Disposition: form-data; name=\"files\"; "
                b"filename=\"" + name.encode() + b"\"\r\n\r\n")
    with open(archive, "rb") as f:
        while True:
            block = f.read(64 << 10)  # about what the server hands the app per message
            if not block:
                break
            writer.feed(block)
    writer.feed(b"\r\n--" + boundary + b"--\r\n")
    writer.finish()
    writer.close()
    stages.append(("receive: multipart parsed and written to disk (a tar archive unpacking "
                   "meanwhile)", time.perf_counter() - started))
    started = time.perf_counter()
    writer.join_followers()
    followed = {path for path, _ in writer.followers}
    for path, sent in writer.uploaded:
        if path not in followed:
            unpack_archive(folder, folder.root / path, sent)
    stages.append(("the archive's unpacking past the receiving, every member written (as "
                   "for a zip)", time.perf_counter() - started))
    inputs = [InputFile(path, UNHASHED, size) for path, size in folder.listing()]
    if not name.lower().endswith(".zip"):
        stages.append(("the whole archive unpacked again as the console does a tar's: dumps "
                       "through a pipe", unpack_holding(root, archive, name)))

    env = dict(os.environ)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import fr_analyze"], check=True, env=env)
    python_s = time.perf_counter() - started
    out = os.path.join(root, "out")
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "fr_analyze.console._worker", str(folder.root), out],
                   check=True, env=env)
    stages.append(("worker process: report.json + report.pb", time.perf_counter() - started))
    stages.append(("  of which: start Python, import fr_analyze", python_s))
    with open(os.path.join(out, "report.json")) as f:
        text = f.read()
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    trace = fr_analyze.load(str(folder.root), progress=False)
    t_load = time.perf_counter()
    report = trace.analyze()
    t_analyze = time.perf_counter()
    report.to_json()
    t_json = time.perf_counter()
    report.to_proto_bytes()
    t_proto = time.perf_counter()
    report.to_html()
    t_html = time.perf_counter()
    timeline = os.path.join(root, "timeline.perfetto-trace")
    trace.write_timeline(timeline)
    t_timeline = time.perf_counter()
    timeline_bytes = os.path.getsize(timeline)
    os.remove(timeline)
    stages += [("  of which: load the dumps", t_load - started),
               ("  of which: analyze", t_analyze - t_load),
               ("  of which: report.json", t_json - t_analyze),
               ("  of which: report.pb", t_proto - t_json)]
    store = Store(pathlib.Path(root) / "data")
    store.migrate()
    analysis = Analysis(id=_analysis.new_id(), created_ms=int(time.time() * 1000),
                        report=text, inputs=inputs)
    _analysis.summarize(analysis, json.loads(text))
    started = time.perf_counter()
    store.save(analysis)
    stages.append(("save the row (one transaction)", time.perf_counter() - started))
    started = time.perf_counter()
    _analysis.hash_staged_inputs(store, analysis, folder.root)
    stages.append(("after the answer: the inputs hashed (SHA-256)", time.perf_counter() - started))
    started = time.perf_counter()
    _analysis.store_staged_inputs(store, analysis, folder.root)
    stages.append(("after the answer: the inputs into the blob store (zstd)",
                   time.perf_counter() - started))
    restored = pathlib.Path(root) / "restored"
    started = time.perf_counter()
    _analysis.restore_inputs(store, analysis, restored)
    stages.append(("first download: restore the inputs from the blob store",
                   time.perf_counter() - started))
    for what, names, parts in (
            ("the HTML report", "report.html,report.pb", [("report.html", t_html - t_proto)]),
            ("the timeline", "timeline.perfetto-trace",
             [(f"timeline.perfetto-trace ({timeline_bytes / 1e6:.0f} MB)",
               t_timeline - t_html)])):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "fr_analyze.console._worker", str(restored),
                        out, "--outputs", names], check=True, env=env)
        stages.append((f"first download of {what}: worker process",
                       time.perf_counter() - started))
        stages += [(f"  of which: {label}", seconds) for label, seconds in parts]
        shutil.rmtree(out, ignore_errors=True)
    store.engine.dispose()
    shutil.rmtree(root, ignore_errors=True)
    return stages


# ---------------------------------------------------------------------------------------------
# 2. History and fleet with many stored analyses.

KIND_WEIGHTS = [("xid", 14), ("python_exception", 16), ("cuda_oom", 10), ("collective_timeout", 10),
                ("transport_error", 9), ("host_oom", 7), ("host_kill", 8), ("cuda_error", 5),
                ("segfault", 4), ("init_failure", 6), ("non_finite", 4), ("unknown", 7)]
BUS_IDS = ["0000:18:00", "0000:2a:00", "0000:3a:00", "0000:5d:00", "0000:9a:00", "0000:ab:00",
           "0000:ba:00", "0000:db:00"]
EVIDENCE_TEXT = {
    "xid": "NVRM: Xid (PCI:{bus}): 79, pid=41237, name=python, GPU has fallen off the bus.",
    "python_exception": "[rank{rank}]: RuntimeError: shape '[8, -1, 4096]' is invalid for input "
                        "of size 3932160",
    "cuda_oom": "[rank{rank}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                "2.00 GiB. GPU {local} has a total capacity of 79.10 GiB",
    "collective_timeout": "[rank{rank}]:[E ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog "
                          "caught collective operation timeout: WorkNCCL(SeqNum=8123, "
                          "OpType=ALLREDUCE, NumelIn=262144) ran for 600000 milliseconds",
    "transport_error": "{host}:41237:41890 [{local}] NCCL WARN NET/IB : Got completion from "
                       "peer 10.1.4.23<46312> with status=12 opcode=0 len=0 vendor err 129",
    "host_oom": "Out of memory: Killed process 41237 (python) total-vm:812345678kB, "
                "anon-rss:501234567kB",
    "host_kill": "slurmstepd: error: *** STEP 81234.0 ON {host} CANCELLED AT "
                 "2026-11-03T04:12:55 DUE TO TIME LIMIT ***",
    "cuda_error": "[rank{rank}]: RuntimeError: CUDA error: an illegal memory access was "
                  "encountered",
    "segfault": "python[41237]: segfault at 0 ip 00007f3a1c2b4e10 sp 00007ffd1e2a3b40 error 4 "
                "in libnccl.so.2",
    "init_failure": "torch.distributed.DistStoreError: Timed out after 901 seconds waiting "
                    "for clients. 511/512 clients joined.",
    "non_finite": "[rank{rank}]: iteration 1200 | loss nan | grad norm inf",
    "unknown": "[rank{rank}]:[E ProcessGroupNCCL.cpp:1664] [PG ID 0 PG GUID 0(default_pg) "
               "Rank {rank}] Process group watchdog thread terminated with exception",
}
CLASS_OF_KIND = {"transport_error": "stuck_collective", "host_kill": "insufficient_evidence",
                 "init_failure": "insufficient_evidence"}
OFFENDER_KINDS = ["xid", "xid", "cuda_error", "transport_error", "host_oom", "segfault"]


def synthetic_analyses(n, seed=7, fleet_hosts=1024, days=90):
    """`n` plausible stored analyses (Analysis objects with their blobs), oldest first."""
    from fr_analyze.console import _analysis
    from fr_analyze.console._store import Analysis, InputFile

    rng = random.Random(seed)
    hosts = [f"gpu-{i:04d}" for i in range(fleet_hosts)]
    offenders = {hosts[i]: (kind, rng.choice(BUS_IDS)) for i, kind in zip(
        rng.sample(range(fleet_hosts), len(OFFENDER_KINDS)), OFFENDER_KINDS)}
    kinds, weights = zip(*KIND_WEIGHTS)
    labels = ["", "", "pretrain-70b", "pretrain-8b", "sft", "nightly", "eval"]
    now_ms = int(time.time() * 1000)
    span_ms = days * 86400000
    for i in range(n):
        created = now_ms - span_ms + i * span_ms // n + rng.randrange(60000)
        per_job = rng.choices([8, 16, 32, 64], weights=[4, 3, 2, 1])[0]
        start = rng.randrange(fleet_hosts)
        job_hosts = [hosts[(start + k) % fleet_hosts] for k in range(per_job)]
        world = per_job * 8
        analysis = Analysis(id=uuid.UUID(int=rng.getrandbits(128)).hex[:16], created_ms=created,
                            name=f"job-{100000 + i}", label=rng.choice(labels),
                            fr_version="0.9.0", seconds=round(rng.uniform(0.2, 9.0), 3))
        log_sizes = [rng.randrange(1 << 20, 64 << 20) for _ in job_hosts]
        analysis.inputs = [InputFile(f"logs/{h}/node.log", hashlib.sha256(
            f"{i}:{h}".encode()).hexdigest(), size) for h, size in zip(job_hosts, log_sizes)]
        analysis.input_bytes = sum(log_sizes)
        blobs = [(x.sha256, x.size, x.size // 9) for x in analysis.inputs]
        if rng.random() < 0.015:
            analysis.status = "failed"
            analysis.error = "the analysis ran past its time limit (600 s) and was stopped"
            yield analysis, blobs
            continue
        healthy = rng.random() < 0.25
        in_job = [h for h in job_hosts if h in offenders]
        if healthy:
            kind, culprit_host, bus = "none", None, ""
        elif in_job and rng.random() < 0.6:
            culprit_host = in_job[0]
            kind, bus = offenders[culprit_host]
        else:
            culprit_host = rng.choice(job_hosts)
            kind = rng.choices(kinds, weights=weights)[0]
            bus = rng.choice(BUS_IDS)
        report = synthetic_report(rng, kind, job_hosts, world, culprit_host, bus, created)
        analysis.report = json.dumps(report, indent=1) + "\n"
        _analysis.summarize(analysis, report)
        yield analysis, blobs


def synthetic_report(rng, kind, job_hosts, world, culprit_host, bus, created_ms):
    """A report shaped as `fr-analyze analyze --format json` writes one for a job's logs."""
    when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created_ms / 1000 - 900)) + ".412Z"
    local = rng.randrange(8)
    if culprit_host is None:
        culprits, cls = [], "none"
    else:
        rank = job_hosts.index(culprit_host) * 8 + local
        culprits = [] if kind in ("host_kill", "init_failure") else [rank]
        cls = CLASS_OF_KIND.get(kind, "missing_participant")
        if kind in ("collective_timeout", "unknown") and rng.random() < 0.5:
            cls = rng.choice(["gpu_stall", "op_mismatch", "stuck_collective", "p2p_unmatched"])
    evidence = []
    if culprit_host is not None:
        text = EVIDENCE_TEXT[kind].format(bus=bus, rank=culprits[0] if culprits else 0,
                                          local=local, host=culprit_host)
        evidence.append({"file": f"logs/{culprit_host}/node.log", "line": rng.randrange(1, 90000),
                         "rank": culprits[0] if culprits else -1, "host": culprit_host,
                         "raw_time": when, "time": when, "text": text, "kind": kind})
        for victim in rng.sample(job_hosts, min(4, len(job_hosts))):
            v = job_hosts.index(victim) * 8 + rng.randrange(8)
            evidence.append({"file": f"logs/{victim}/node.log", "line": rng.randrange(1, 90000),
                             "rank": v, "host": victim, "raw_time": when, "time": when,
                             "text": EVIDENCE_TEXT["collective_timeout"].format(rank=v),
                             "kind": "collective_timeout"})
    detail = {"xid": 79, "bus_id": bus, "pid": 41237} if kind in ("xid", "cuda_error") else {}
    cause = {"kind": kind, "ranks": culprits,
             "hosts": [culprit_host] if culprit_host is not None else [], "time": when,
             "time_ns": (created_ms - 900000) * 1000000, "evidence": evidence, "detail": detail,
             "confidence": "high" if kind != "unknown" else "low",
             "summary": (f"{kind} on {culprit_host} took rank {culprits} down first; the "
                         "others timed out waiting for it." if culprit_host
                         else "The job ran to its end."),
             "disagreement": ""}
    victims = [r for r in range(world) if r not in culprits] if culprit_host else []
    return {
        "schema_version": 1,
        "verdict": {
            "failure_class": cls, "culprit_ranks": culprits, "victim_ranks": victims,
            "process_group": {"name": "0", "desc": "default_pg", "ranks": []},
            "collective_seq_id": rng.randrange(1000, 90000) if culprit_host else -1,
            "op": "allreduce" if culprit_host else "", "confidence": cause["confidence"],
            "summary": cause["summary"],
            "next_actions": ["Read the culprit's log around the root cause's time.",
                             "Check the host's kernel log and the GPU's health."]
            if culprit_host else [],
            "chains": [], "root_cause": cause,
            "launcher": {"names": ["slurm", "torchrun"], "death_line": evidence[0]
                         if evidence else {}, "note": ""}},
        "inputs": {"ranks_loaded": [], "ranks_missing": [], "files_rejected": [],
                   "files_skipped": [], "ranks_claimed": [], "ranks_claimed_count": 0,
                   "versions": [], "dump_time_ns": 0, "dump_time_source": "unknown: no dumps",
                   "dump_time_confidence": "low"},
        "process_groups": [], "findings": [], "stragglers": [],
        "stats": {"entries": 0, "counters": {}},
        "ranks": [{"rank": r, "role": "culprit", "last_op": "", "host": culprit_host}
                  for r in culprits],
        "log_files": [{"path": f"logs/{h}/node.log", "format": "torchrun", "lines":
                       rng.randrange(20000, 400000), "events": rng.randrange(20, 900), "host": h,
                       "rank": -1} for h in job_hosts],
        "log_errors": [], "live_stacks": [],
        "timeline": {"hosts": [{"host": h, "offset_ms": round(rng.uniform(-900, 900), 1),
                                "drift_ppm": round(rng.uniform(-40, 40), 1),
                                "method": "nccl_init+watchdog", "confidence": "high"}
                               for h in job_hosts]},
    }


def fill_store(data, db, n):
    """Saves `n` synthetic analyses through Store.save; returns figures about them."""
    import sqlalchemy as sa
    from fr_analyze.console._store import Store

    store = Store(pathlib.Path(data), db)
    store.migrate()
    started = time.perf_counter()
    report_bytes, offenders, host_rows = [], {}, 0
    for analysis, blobs in synthetic_analyses(n):
        store.save(analysis, blobs)
        if analysis.report:
            report_bytes.append(len(analysis.report))
        host_rows += len(analysis.hosts)
        if analysis.hosts_text:
            offenders[analysis.hosts_text] = offenders.get(analysis.hosts_text, 0) + 1
    fill_s = time.perf_counter() - started
    if store.engine.dialect.name == "postgresql":
        with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
            c.execute(sa.text("VACUUM ANALYZE"))
    store.engine.dispose()
    busiest = max(offenders, key=offenders.get)
    return {"analyses": n, "fill_s": fill_s, "host_rows": host_rows,
            "report_bytes_median": median(report_bytes), "report_bytes_max": max(report_bytes),
            "busiest_host": busiest, "busiest_host_initiated": offenders[busiest]}


def time_page(console, path, requests):
    conn = http.client.HTTPConnection("127.0.0.1", console.port, timeout=120)
    try:
        for _ in range(2):
            status, _, _ = console.get(path, conn)
            if status != 200:
                raise BenchError(f"GET {path} answered {status}")
        server, client = [], []
        for _ in range(requests):
            status, s, c = console.get(path, conn)
            if status != 200:
                raise BenchError(f"GET {path} answered {status}")
            server.append(s)
            client.append(c)
    finally:
        conn.close()
    return {"path": path, "server_ms": server, "server_median_ms": median(server),
            "server_p95_ms": p95(server), "client_median_ms": median(client),
            "client_p95_ms": p95(client)}


def in_process_store_ms(data, db, host, repeats=5):
    """The store's own calls, without HTTP or templates: history (first page, unfiltered) and
    the fleet's two queries (median ms)."""
    from fr_analyze.console._store import Store

    store = Store(pathlib.Path(data), db)
    figures = {}
    calls = {"history()": lambda: store.history(limit=50),
             "history(host=)": lambda: store.history(limit=50, host=host),
             "fleet()": store.fleet, "failures_by_day()": store.failures_by_day}
    for name, call in calls.items():
        call()
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            call()
            times.append(1000 * (time.perf_counter() - started))
        figures[name] = median(times)
    store.engine.dispose()
    return figures


def measure_pages(args, workdir, name, db):
    data = os.path.join(workdir, f"pages-{name}")
    print(f"{name}: filling the store with {args.analyses} analyses ...", flush=True)
    fill = fill_store(data, db, args.analyses)
    print(f"{name}: filled in {fill['fill_s']:.0f} s ({fill['host_rows']} host rows, reports "
          f"{fill['report_bytes_median'] / 1e3:.1f} KB median, "
          f"{fill['report_bytes_max'] / 1e3:.0f} KB at most)", flush=True)
    host = fill["busiest_host"]
    paths = ["/analyses", "/api/analyses?limit=50", "/analyses?kind=xid",
             "/api/analyses?limit=50&kind=xid", f"/analyses?host={host}",
             f"/api/analyses?limit=50&host={host}", "/fleet", "/api/fleet"]
    console = Console(args.cli, data, db)
    try:
        pages = [time_page(console, path, args.requests) for path in paths]
    finally:
        console.stop()
    for page in pages:
        fleet = page["path"].split("?")[0] in ("/fleet", "/api/fleet")
        page["target_ms"] = FLEET_TARGET_MS if fleet else HISTORY_TARGET_MS
        page["met"] = page["server_median_ms"] < page["target_ms"]
    store_ms = in_process_store_ms(data, db, host)
    shutil.rmtree(data, ignore_errors=True)
    return {"database": name, "fill": fill, "pages": pages, "store_ms": store_ms}


# ---------------------------------------------------------------------------------------------
# A throwaway PostgreSQL.

class Postgres:
    def __init__(self, parent):
        self.dir = tempfile.mkdtemp(prefix="fr-console-bench-pg-", dir=parent)
        user = pwd.getpwnam("postgres")
        os.chown(self.dir, user.pw_uid, user.pw_gid)
        self.data = os.path.join(self.dir, "data")
        self.port = free_port()
        self.started = False
        try:
            self._as_postgres([f"{PG_BIN}/initdb", "-D", self.data, "-A", "trust", "-U",
                               "postgres", "-E", "UTF8", "--no-sync"])
            options = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 "
                       "-c fsync=off -c synchronous_commit=off -c full_page_writes=off")
            self._as_postgres([f"{PG_BIN}/pg_ctl", "-D", self.data, "-l",
                               os.path.join(self.dir, "log"), "-w", "-o", options, "start"])
            self.started = True
            self._as_postgres([f"{PG_BIN}/createdb", "-h", "127.0.0.1", "-p", str(self.port),
                               "-U", "postgres", "fr"])
        except BaseException:
            self.stop()
            raise
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/fr"

    @staticmethod
    def available():
        if not os.path.exists(f"{PG_BIN}/initdb") or os.geteuid() != 0:
            return "no PostgreSQL 15 at " + PG_BIN if os.geteuid() == 0 else "not root"
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "no postgres user"
        if shutil.which("runuser") is None:
            return "no runuser"
        try:
            import psycopg  # noqa: F401
        except ImportError:
            return "no psycopg in this Python"
        return None

    def _as_postgres(self, argv):
        r = subprocess.run(["runuser", "-u", "postgres", "--"] + argv, capture_output=True,
                           cwd=self.dir)
        if r.returncode != 0:
            raise BenchError(f"{' '.join(argv[:1])} failed:\n{r.stderr.decode(errors='replace')}")

    def stop(self):
        if self.started:
            subprocess.run(["runuser", "-u", "postgres", "--", f"{PG_BIN}/pg_ctl", "-D",
                            self.data, "-m", "fast", "-w", "stop"], capture_output=True,
                           cwd=self.dir)
        shutil.rmtree(self.dir, ignore_errors=True)


# ---------------------------------------------------------------------------------------------

def print_upload(upload, quick):
    print(f"\nupload to verdict: {upload['ranks']} ranks, {upload['job_bytes'] / 1e6:.0f} MB "
          f"of dumps, median of {len(upload['cli_s'])}, uploads on loopback "
          f"{upload['settle_s']:g} s after the last removal of files")
    print(f"  {'fr-analyze analyze DIR --format json':44s} {upload['cli_median_s']:6.2f} s")
    for form, u in upload["uploads"].items():
        label = f"POST /api/analyses, {form} ({u['archive_bytes'] / 1e6:.0f} MB)"
        print(f"  {label:44s} {u['median_s']:6.2f} s  (server {u['server_median_s']:.2f} s)  "
              f"ratio {u['ratio']:.1f}x  target {UPLOAD_TARGET_RATIO:g}x"
              + ("  (not checked in --quick)" if quick else
                 "" if u["ratio"] <= UPLOAD_TARGET_RATIO else "  MISSED"))
        if u.get("server_stages_median_s"):
            stages = u["server_stages_median_s"].items()
            print("    the console's stages (Server-Timing, medians): " + ", ".join(
                f"{stage} {seconds:.2f} s" for stage, seconds in stages))
        if "link_after_last_byte_s" in u:
            label = f"  the same at {u['link_mbps']:g} Mbit/s, after the last byte"
            print(f"{label:46s} {u['link_after_last_byte_median_s']:6.2f} s  (in all "
                  f"{median(u['link_total_s']):.2f} s)  "
                  f"{u['link_after_last_byte_ratio']:.1f}x the CLI")
    for name, seconds in upload["downloads_s"].items():
        print(f"  {'GET ' + name + ' download':44s} {seconds:6.2f} s")


def print_pages(result):
    fill = result["fill"]
    print(f"\npages, {result['database']}, {fill['analyses']} analyses "
          f"({len(result['pages'][0]['server_ms'])} requests each; ms)")
    print(f"  {'request':44s} {'server med':>10} {'p95':>7} {'client med':>10} {'p95':>7} "
          f"{'target':>7}")
    for page in result["pages"]:
        path = page["path"].replace(fill["busiest_host"], "HOST")
        print(f"  {path:44s} {page['server_median_ms']:10.1f} {page['server_p95_ms']:7.1f} "
              f"{page['client_median_ms']:10.1f} {page['client_p95_ms']:7.1f} "
              f"{page['target_ms']:7.0f}" + ("" if page["met"] else "  MISSED"))
    print("  the store alone (ms): " + ", ".join(
        f"{name} {ms:.1f}" for name, ms in result["store_ms"].items()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", default=os.environ.get(
                            "FR_ANALYZE_CLI", os.path.join(REPO, "build/dev/tools/fr-analyze")),
                        help="the fr-analyze binary (default: $FR_ANALYZE_CLI)")
    parser.add_argument("--quick", action="store_true",
                        help="64 ranks, 1,000 analyses, 10 requests, SQLite only: under a minute")
    parser.add_argument("--ranks", type=int, help="ranks of the uploaded job (default 512)")
    parser.add_argument("--formats", help="archive formats, comma-separated: tar.zst, tar.gz, "
                                          "tar (default tar.zst,tar.gz; --quick: tar.zst)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--analyses", type=int, help="stored analyses (default 10000)")
    parser.add_argument("--requests", type=int, help="requests per page (default 20)")
    parser.add_argument("--postgres", help="auto (default; off in --quick), off, or a "
                                           "postgresql:// URL to use")
    parser.add_argument("--only", choices=["upload", "pages"], help="measure one part only")
    parser.add_argument("--link-mbps", type=float, default=100.0,
                        help="also upload each archive sent at this rate, as over a network, "
                             "and time the verdict after its last byte (default 100; 0: not)")
    parser.add_argument("--settle-s", type=float, default=0.0,
                        help="seconds between the last removal of files and each upload on "
                        "loopback (default 0; see settle())")
    parser.add_argument("--breakdown", action="store_true",
                        help="time the upload's stages even when its target is met")
    parser.add_argument("--no-fail", action="store_true", help="exit 0 when a target is missed")
    parser.add_argument("--workdir", help="where the big temporary files go")
    parser.add_argument("--out", help="write the figures here as JSON")
    args = parser.parse_args()
    args.ranks = args.ranks or (64 if args.quick else 512)
    args.analyses = args.analyses or (1000 if args.quick else 10000)
    args.requests = args.requests or (10 if args.quick else 20)
    args.formats = (args.formats or ("tar.zst" if args.quick else "tar.zst,tar.gz")).split(",")
    args.postgres = args.postgres or ("off" if args.quick else "auto")
    args.cli = os.path.abspath(args.cli)

    workdir = tempfile.mkdtemp(prefix="fr-console-bench-", dir=args.workdir)
    postgres = None
    figures, missed = {}, []
    try:
        if args.only != "pages":
            upload = measure_upload(args, workdir)
            print_upload(upload, args.quick)
            job, archives = upload.pop("job"), upload.pop("archives")
            figures["upload"] = upload
            for form, u in upload["uploads"].items():
                if u["ratio"] > UPLOAD_TARGET_RATIO and not args.quick:
                    missed.append(f"upload of {form} {u['ratio']:.1f}x the CLI "
                                  f"(target {UPLOAD_TARGET_RATIO:g}x)")
            if args.breakdown or (missed and not args.quick):
                form = args.formats[0]
                stages = breakdown(workdir, archives[form])
                figures["upload_breakdown"] = stages
                print(f"\nwhere an upload's time goes ({form}, one run, stages one after another"
                      " in this process, with the console's code):")
                for label, seconds in stages:
                    print(f"  {label:58s} {seconds:6.2f} s")
            shutil.rmtree(job, ignore_errors=True)
            for archive in archives.values():
                os.remove(archive)
        if args.only != "upload":
            databases = [("sqlite", None)]
            if args.postgres == "auto":
                why_not = Postgres.available()
                if why_not:
                    print(f"PostgreSQL skipped: {why_not}")
                else:
                    postgres = Postgres(args.workdir or tempfile.gettempdir())
                    databases.append(("postgresql", postgres.url))
            elif args.postgres != "off":
                databases.append(("postgresql", args.postgres))
            figures["pages"] = []
            for name, db in databases:
                result = measure_pages(args, workdir, name, db)
                print_pages(result)
                figures["pages"].append(result)
                for page in result["pages"]:
                    if not page["met"]:
                        missed.append(f"{name} {page['path']} {page['server_median_ms']:.0f} ms "
                                      f"(target {page['target_ms']:.0f} ms)")
    except BenchError as error:
        print(f"console_bench: {error}", file=sys.stderr)
        return 2
    finally:
        if postgres is not None:
            postgres.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(figures, f, indent=1)
    if missed:
        print("\ntargets missed: " + "; ".join(missed))
        return 0 if args.no_fail else 1
    print("\nevery target met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
