"""`live` against hostile workers (issue 35): a real TCPStore started here, its
`debug_server/rank<N>` keys naming fake workers started here on free ports, each misbehaving in
one way (trickling bytes, redirecting, nesting JSON, answering too much, quoting the stacks
file's headers), and a store value holding newlines. What a user notices is asserted: the fetch
ends by its deadline, the honest ranks are saved, the hostile rank is named with its error, and
the analyzer reading the saved folder back credits no rank with another's answer.

Needs torch (the venv of scripts/venv.sh); the CLI tests need FR_ANALYZE_CLI.
"""

import datetime
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time

import pytest

dist = pytest.importorskip("torch.distributed")

import fr_analyze  # noqa: E402
from fr_analyze import _live  # noqa: E402
from fr_analyze.errors import Error, LiveError, MissingDependencyError  # noqa: E402

WORLD = 4
HONEST_FRAME = "honest_step"
SPOOFED_FRAME = "spoofed_by_rank_0"
READ_ONLY_PATHS = {f"/handler/{h}" for h in _live.READ_ONLY_HANDLERS}


# --- Fake workers --------------------------------------------------------------------------

def dump_json(rank: int) -> bytes:
    """A flight-recorder dump as fr_trace_json answers it: one completed all_reduce."""
    return json.dumps({
        "version": "2.10", "comm_lib_version": "gloo", "nccl_comm_state": {},
        "pg_config": {"0": {"name": "0", "desc": "default_pg",
                            "ranks": str(list(range(WORLD)))}},
        "pg_status": {"0": {"last_enqueued_collective": "1", "last_started_collective": "1",
                            "last_completed_collective": "1"}},
        "entries": [{
            "record_id": 0, "pg_id": 0, "process_group": ["0", "default_pg"],
            "collective_seq_id": 1, "p2p_seq_id": 0, "op_id": 1,
            "profiling_name": "gloo:all_reduce", "time_created_ns": 1_700_000_000_000_000_000,
            "input_sizes": [[4]], "input_dtypes": ["Float"], "output_sizes": [[4]],
            "output_dtypes": ["Float"], "state": "completed", "time_discovered_started_ns": 0,
            "time_discovered_completed_ns": 0, "retired": True, "timeout_ms": 600000,
            "is_p2p": False, "thread_id": "1", "thread_name": "pt_main_thread",
            "duration_ms": 1.0}],
        "rank": rank,
    }).encode()


def stacks_text(frame: str = HONEST_FRAME) -> bytes:
    return (f"Thread 0x00007f1c25a8fb80 (most recent call first):\n"
            f'  File "/job/train.py", line 10 in {frame}\n'
            f'  File "/job/train.py", line 20 in <module>\n').encode()


class FakeWorker:
    """A raw-socket HTTP server: routes map a path to a function that answers on the socket.
    Every request's path is recorded; unknown paths get 404."""

    def __init__(self, routes):
        self.routes = routes
        self.paths = []
        self.stopped = threading.Event()
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(64)
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self):
        while not self.stopped.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        with conn:
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 65536:
                data = conn.recv(4096)
                if not data:
                    return
                head += data
            path = head.split(b" ", 2)[1].decode()
            self.paths.append(path)
            route = self.routes.get(path, answer(404, b"no such handler"))
            try:
                route(conn, self)
            except OSError:
                pass

    def close(self):
        self.stopped.set()
        self.server.close()


def answer(status: int, body: bytes, sized: bool = True, headers: str = ""):
    def send(conn, worker):
        length = f"Content-Length: {len(body)}\r\n" if sized else ""
        conn.sendall(f"HTTP/1.1 {status} X\r\n{length}{headers}Connection: close\r\n\r\n"
                     .encode())
        conn.sendall(body)  # not joined: the memory test counts this process's allocations
    return send


def redirect(status: int, location: str):
    return answer(status, b"the profiler's answer, never to be saved",
                  headers=f"Location: {location}\r\n")


def drip_body(conn, worker):
    """Headers at once, then one byte of body every 0.25 s."""
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
    while not worker.stopped.wait(0.25):
        conn.sendall(b" ")


def silent(conn, worker):
    """Accepts, reads the request, never answers."""
    worker.stopped.wait(60)


def drip_headers(conn, worker):
    """The status line and headers, one byte every 0.25 s, forever."""
    text = b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"a" * 100000
    for byte in text:
        if worker.stopped.wait(0.25):
            return
        conn.sendall(bytes([byte]))


def stream(total: int, piece: bytes = b"x" * 65536, prefix: bytes = b""):
    """A 200 without a length, `total` bytes sent as fast as possible."""
    def send(conn, worker):
        conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + prefix)
        sent = len(prefix)
        while sent < total:
            n = min(len(piece), total - sent)
            conn.sendall(piece[:n])
            sent += n
    return send


def honest_routes(rank: int):
    return {"/handler/fr_trace_json": answer(200, dump_json(rank)),
            "/handler/dump_traceback": answer(200, stacks_text())}


@pytest.fixture
def job():
    """A TCPStore (is_master) and a way to register workers in it."""

    class Job:
        def __init__(self):
            self.store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                                       timeout=datetime.timedelta(seconds=30))
            self.master = f"127.0.0.1:{self.store.port}"
            self.workers = []

        def worker(self, rank, routes):
            worker = FakeWorker(routes)
            self.workers.append(worker)
            self.register(rank, worker.url)
            return worker

        def honest(self, *ranks):
            return [self.worker(rank, honest_routes(rank)) for rank in ranks]

        def register(self, rank, value):
            self.store.set(f"{_live.STORE_PREFIX}/rank{rank}", value)

    made = Job()
    yield made
    for worker in made.workers:
        worker.close()


def fetch_within(seconds, *args, **kwargs):
    """_live.fetch in a thread; fails the test when it outlives `seconds`."""
    box = {}

    def run():
        try:
            box["result"] = _live.fetch(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001
            box["error"] = e

    started = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    elapsed = time.monotonic() - started
    if thread.is_alive():
        pytest.fail(f"the fetch still runs after {seconds} s")
    if "error" in box:
        raise box["error"]
    return box["result"], elapsed


def stacks_file_text(result):
    with open(result.stacks_file, encoding="utf-8") as f:
        return f.read()


def live_stacks(directory):
    report = json.loads(fr_analyze.load(str(directory)).analyze().to_json())
    return report.get("live_stacks", [])


def frames_of(groups, rank):
    return [frame for g in groups if rank in g.get("ranks", []) for frame in g.get("frames", [])]


def error_of(groups, rank):
    return " ".join(g.get("error", "") for g in groups if rank in g.get("ranks", []))


# --- 1: a total deadline per request -------------------------------------------------------

@pytest.mark.parametrize("drip", [drip_body, drip_headers, silent],
                         ids=["body", "headers", "silent"])
def test_a_worker_that_trickles_bytes_is_cut_off_at_the_deadline(job, tmp_path, drip):
    job.honest(0, 2, 3)
    job.worker(1, {"/handler/fr_trace_json": drip, "/handler/dump_traceback": drip})
    timeout = 2.0
    result, elapsed = fetch_within(20, job.master, out=str(tmp_path), timeout=timeout)
    # Both of a rank's requests run at once, each within the timeout; the margin is the
    # store's connection and the threads'.
    assert elapsed < timeout + 1.5, elapsed
    slow = result.ranks[1]
    assert slow.dump is None and slow.dump_error.startswith("Timeout"), slow
    assert slow.stacks_error.startswith("Timeout"), slow
    for rank in (0, 2, 3):
        assert (tmp_path / f"rank_{rank}.json").read_bytes() == dump_json(rank)
    assert not (tmp_path / "rank_1.json").exists()
    assert "  Rank 1: Timeout" in stacks_file_text(result)
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")], "temporary files left"


# --- 2 and 13: redirects are errors, never followed ---------------------------------------

def test_redirects_are_never_followed_nor_saved(job, tmp_path):
    canary = FakeWorker({"/latest/meta-data": answer(200, b"secret")})
    job.workers.append(canary)
    job.honest(0, 2, 3)
    hostile = job.worker(1, {
        "/handler/fr_trace_json": redirect(307, "/handler/profile?duration=600"),
        "/handler/dump_traceback": redirect(303, f"{canary.url}/latest/meta-data"),
    })
    result, _ = fetch_within(30, job.master, out=str(tmp_path), timeout=5)
    time.sleep(0.2)  # a followed redirect would have arrived by now
    assert canary.paths == [], "the 303's other host was contacted"
    assert set(hostile.paths) <= READ_ONLY_PATHS, hostile.paths
    bad = result.ranks[1]
    assert bad.dump is None and "307" in bad.dump_error and "not followed" in bad.dump_error
    assert not bad.stacks_answered and "303" in bad.stacks_error
    assert not (tmp_path / "rank_1.json").exists()
    text = stacks_file_text(result)
    assert re.search(r"^  Rank 1: Error: 303 redirect .* not followed$", text, re.M), text
    assert b"profiler" not in b"".join(p.read_bytes() for p in tmp_path.iterdir())
    groups = live_stacks(tmp_path)
    assert "303" in error_of(groups, 1), groups
    assert frames_of(groups, 0), groups  # the honest ranks are analysed


def test_the_cli_names_the_redirecting_rank(job, tmp_path):
    job.honest(0, 2, 3)
    job.worker(1, {"/handler/fr_trace_json": redirect(307, "/handler/profile"),
                   "/handler/dump_traceback": answer(200, stacks_text())})
    proc = subprocess.run(
        [sys.executable, "-m", "fr_analyze._live", "fetch", job.master, "--out", str(tmp_path),
         "--timeout", "5"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"rank 1: fr_trace_json: Error: 307 redirect to /handler/profile not "
                     r"followed", proc.stderr), proc.stderr
    assert sorted(os.listdir(tmp_path))[:3] == ["rank_0.json", "rank_2.json", "rank_3.json"]


# --- 3: one bad rank is one rejected rank --------------------------------------------------

def test_deeply_nested_json_rejects_that_rank_only(job, tmp_path):
    job.honest(0, 2, 3)
    nested = b"[" * 200000 + b"]" * 200000
    job.worker(1, {"/handler/fr_trace_json": answer(200, nested),
                   "/handler/dump_nccl_trace_json": answer(200, b'{"entries": ' + nested + b"}"),
                   "/handler/dump_traceback": answer(200, stacks_text())})
    result, _ = fetch_within(30, job.master, out=str(tmp_path), timeout=5)
    for rank in (0, 2, 3):
        assert (tmp_path / f"rank_{rank}.json").read_bytes() == dump_json(rank)
    trace = fr_analyze.load(str(tmp_path))
    assert sorted(r.rank for r in trace.ranks)[:3] == [0, 2, 3]
    trace.analyze()  # the nested answer is the loader's to reject, never a crash
    assert result.ranks[1].stacks_answered


def test_an_exception_checking_one_rank_is_that_ranks_error(job, tmp_path, monkeypatch):
    job.honest(0, 1, 2, 3)
    real = _live._has_entries

    def explode(path, size):
        if open(path, "rb").read() == dump_json(2):
            raise MemoryError("checking rank 2")
        return real(path, size)

    monkeypatch.setattr(_live, "_has_entries", explode)
    result, _ = fetch_within(30, job.master, out=str(tmp_path), timeout=5)
    assert "MemoryError: checking rank 2" in result.ranks[2].dump_error
    assert [r for r in range(WORLD) if (tmp_path / f"rank_{r}.json").exists()] == [0, 1, 3]


# --- 4 and 14: bounded memory, per answer and per fetch -----------------------------------

def test_an_answer_over_max_bytes_is_refused_and_not_saved(job, tmp_path):
    job.honest(0, 2, 3)
    job.worker(1, {"/handler/fr_trace_json": stream(50000),
                   "/handler/dump_traceback": answer(200, b"y" * 50000)})
    result, _ = fetch_within(30, job.master, out=str(tmp_path), timeout=5, max_bytes=8192)
    bad = result.ranks[1]
    assert "max_bytes" in bad.dump_error and "max_bytes" in bad.stacks_error, bad
    assert not (tmp_path / "rank_1.json").exists()
    assert "y" * 100 not in stacks_file_text(result)
    assert all((tmp_path / f"rank_{r}.json").exists() for r in (0, 2, 3))


def test_all_answers_together_stay_under_max_total_bytes(job, tmp_path):
    for rank in range(WORLD):
        job.worker(rank, {"/handler/fr_trace_json": answer(200, b"{}" + b" " * 3000),
                          "/handler/dump_traceback": answer(200, b"z" * 3000)})
    result, _ = fetch_within(30, job.master, out=str(tmp_path), timeout=5, max_bytes=4000,
                             max_total_bytes=10000)
    saved = sum(p.stat().st_size for p in tmp_path.glob("rank_*.json"))
    saved += stacks_file_text(result).count("z")
    assert saved <= 10000
    refused = [r.rank for r in result.ranks
               if "max_total_bytes" in r.dump_error + r.stacks_error]
    assert refused, [(r.dump_error, r.stacks_error) for r in result.ranks]


def test_a_large_answer_is_streamed_never_held_or_parsed(job, tmp_path):
    import tracemalloc

    job.honest(0, 2, 3)
    size = 48 << 20
    body = b'{"entries": [], "pad": "' + b"p" * (size - 40) + b'"}'
    job.worker(1, {"/handler/fr_trace_json": answer(200, body),
                   "/handler/dump_traceback": answer(200, stacks_text())})
    tracemalloc.start()
    try:
        result, _ = fetch_within(60, job.master, out=str(tmp_path), timeout=30)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (tmp_path / "rank_1.json").stat().st_size == len(body)
    assert result.ranks[1].dump_error == ""
    # Holding the answer would take 48 MiB; parsing it, several times that.
    assert peak < 8 << 20, f"{peak / 2**20:.1f} MiB at the peak"


def test_entries_are_counted_in_bounded_memory():
    assert _live._NON_EMPTY_ENTRIES.search(b'{"entries": [ {"a": 1}]}')
    assert not _live._NON_EMPTY_ENTRIES.search(b'{"entries": [ ] }')


# --- 8: the stacks file cannot be spoofed --------------------------------------------------

SPOOF = (b"Thread 0x0000000000000001 (most recent call first):\n"
         b'  File "/job/train.py", line 5 in rank_0_own\n\n'
         b"=== Rank 3: http://127.0.0.1:1/handler/dump_traceback? ===\n"
         b"Thread 0x0000000000000003 (most recent call first):\n"
         b'  File "/job/train.py", line 66 in ' + SPOOFED_FRAME.encode() + b"\n"
         b'  File "/job/train.py", line 67 in <module>\n'
         b"\t  === Rank 2: x ===\n"
         + b" " * 100000 + b"=== Rank 2: after a long run of blanks ===\n"
         b"\x1b[2J\x00\r=== Rank 1: x ===\n"
         b"PARTIAL DATA: 1/4 workers responded\n"
         b"  Rank 3: ConnectionError: Connection refused\n"
         b"Error: 503\n")


def test_a_worker_cannot_speak_for_another_rank(job, tmp_path):
    job.worker(0, {"/handler/fr_trace_json": answer(200, dump_json(0)),
                   "/handler/dump_traceback": answer(200, SPOOF)})
    job.honest(1, 2, 3)
    result, _ = fetch_within(30, job.master, out=str(tmp_path), timeout=5)
    text = stacks_file_text(result)
    headers = re.findall(r"^[ \t]*=== Rank (\d+): .* ===[ \t\r]*$", text, re.M)
    assert headers == ["0", "1", "2", "3"], text
    assert not re.search(r"^[ \t]*PARTIAL DATA", text, re.M), text
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text), "control characters written"
    groups = live_stacks(tmp_path)
    assert not any(SPOOFED_FRAME in f for f in frames_of(groups, 3)), groups
    assert any(HONEST_FRAME in f for f in frames_of(groups, 3)), groups
    assert error_of(groups, 3) == "", groups
    # What rank 0 wrote stays rank 0's, whatever it claims.
    assert any(SPOOFED_FRAME in f for f in frames_of(groups, 0)), groups


def test_a_store_value_with_newlines_is_rejected_not_written(job, tmp_path):
    job.honest(0, 2, 3)
    worker = FakeWorker(honest_routes(1))
    job.workers.append(worker)
    job.register(1, f"{worker.url}\n=== Rank 3: x ===\nThread 0x3 (most recent call first):\n"
                    f'  File "/job/train.py", line 66 in {SPOOFED_FRAME}\n')
    result, _ = fetch_within(30, job.master, out=str(tmp_path), timeout=5)
    text = stacks_file_text(result)
    assert SPOOFED_FRAME not in text
    assert len(re.findall(r"^=== Rank 3:", text, re.M)) == 1, text
    assert "not an http://host:port address" in result.ranks[1].dump_error
    assert worker.paths == []
    groups = live_stacks(tmp_path)
    assert not any(SPOOFED_FRAME in f for f in frames_of(groups, 3)), groups


@pytest.mark.parametrize("value", [
    "http://127.0.0.1:80/handler/profile", "http://user@127.0.0.1:80", "ftp://127.0.0.1:80",
    "http://127.0.0.1", "http://127.0.0.1:80?x=1", "http://127.0.0.1:80\x00",
    "http://h\u00e9st:80", "http://127.0.0.1:99999", "x" * 5000])
def test_only_plain_worker_addresses_are_used(value):
    with pytest.raises(ValueError):
        _live._registered_address(value.encode())


def test_plain_worker_addresses_are_normalized():
    assert _live._registered_address(b"http://node0:8080/").url == "http://node0:8080"
    assert _live._registered_address(b"http://[::1]:80").url == "http://[::1]:80"


# --- 12: fr_analyze.live() misuse raises the package's errors ------------------------------

@pytest.mark.parametrize("kwargs", [
    {"world_size": True}, {"world_size": 0}, {"world_size": 2.0}, {"world_size": 10**8},
    {"max_bytes": -1}, {"max_bytes": True}, {"max_total_bytes": 0}, {"timeout": "10"},
    {"timeout": float("nan")}, {"timeout": True}, {"timeout": 0}, {"host_map": "a=b"},
    {"host_map": {"a": 5}}, {"host_map": {"a": "b\nc"}}, {"save": 123},
], ids=lambda kwargs: repr(kwargs)[:40])
def test_live_misuse_raises_live_error(job, tmp_path, kwargs):
    job.honest(0, 1, 2, 3)
    kwargs.setdefault("save", str(tmp_path))
    started = time.monotonic()
    with pytest.raises(LiveError):
        fr_analyze.live(job.master, **kwargs)
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("master", [None, 29500, "node0", "node0:0", "node0:x", "a b:1",
                                    "node0:29500\n"])
def test_live_with_a_bad_master_raises_live_error(master):
    with pytest.raises(LiveError):
        fr_analyze.live(master)


def test_live_without_torch_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.distributed", None)
    monkeypatch.setitem(sys.modules, "requests", None)
    with pytest.raises(MissingDependencyError, match="pip install torch"):
        fr_analyze.live("127.0.0.1:1", timeout=1)


# --- 25: world size cap, one clean line, no runpy warning ---------------------------------

def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def helper(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "fr_analyze._live", "fetch", *args],
                          capture_output=True, text=True, timeout=timeout)


def test_an_unreachable_store_is_one_clear_line_and_no_warning(tmp_path):
    proc = helper(f"127.0.0.1:{closed_port()}", "--out", str(tmp_path), "--timeout", "1")
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("fr-analyze: live: cannot reach the job's store at 127.0.0.1:")
    assert "frame #" not in proc.stderr and "RuntimeWarning" not in proc.stderr


def test_a_huge_world_size_is_refused_clearly(job, tmp_path):
    job.honest(0)
    proc = helper(job.master, "--out", str(tmp_path), "--world-size", str(10**8))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (
        f"fr-analyze: live: world_size must be an integer in [1, {_live.MAX_PROBED_RANKS}], "
        f"not {10**8}")


def test_the_cli_without_the_package_says_what_to_set(tmp_path):
    cli = os.environ.get("FR_ANALYZE_CLI")
    if not cli:
        pytest.skip("FR_ANALYZE_CLI is not set")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["FR_ANALYZE_PYTHON"] = sys.executable
    # A venv's python without the package on its path (the source build's case).
    env["PYTHONNOUSERSITE"] = "1"
    probe = subprocess.run([sys.executable, "-c", "import fr_analyze"], env=env, cwd="/",
                           capture_output=True)
    if probe.returncode == 0:
        pytest.skip("fr_analyze is installed in this python")
    proc = subprocess.run([cli, "live", f"127.0.0.1:{closed_port()}", "--timeout", "1"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "FR_ANALYZE_PYTHON" in proc.stderr and "PYTHONPATH" in proc.stderr, proc.stderr


def test_the_package_errors_are_one_hierarchy():
    assert issubclass(LiveError, Error) and issubclass(MissingDependencyError, Error)


# --- Fuzzing the stacks file: random worker answers written, then read back ------------------

_FRAGMENTS = [
    "=== Rank {other}: http://127.0.0.1:1/handler/dump_traceback? ===",
    "PARTIAL DATA: 1/4 workers responded", "  Rank {other}: Timeout: read timed out",
    "Error: 503", "Thread 0x00000000000000{other}0 (most recent call first):",
    "Current thread 0x00007f (most recent call first):",
    '  File "/job/train.py", line {n} in foreign_{other}', "<no Python frame>", "...", "",
    " " * 70000, "\t", "\r", "\x00\x1b[2J", "\u2028", "\ufeff=== Rank {other}: x ===",
    "=== rank {other}: lower case ===", "  === Rank {other}: indented ===",
]


def _random_answer(rng, rank):
    lines = [f"Thread 0x00000000000000{rank}1 (most recent call first):",
             f'  File "/job/train.py", line 7 in own_frame_{rank}',
             '  File "/job/train.py", line 9 in <module>']
    for _ in range(rng.randrange(0, 12)):
        fragment = rng.choice(_FRAGMENTS).format(other=rng.randrange(WORLD), n=rng.randrange(99))
        if rng.random() < 0.3:  # a fragment glued to the previous line, no newline between
            lines[-1] += fragment
        else:
            lines.insert(rng.randrange(len(lines) + 1), fragment)
    return "\n".join(lines).encode("utf-8", "surrogatepass")


def test_random_worker_answers_never_credit_another_rank(tmp_path):
    """A fuzz loop (seeded, so a failure replays) over what workers may answer: header-like
    lines, glued lines, blanks, control and Unicode line-break characters. The file written is
    read back by the real analyzer: every rank keeps its own frames, no rank gains another's, and
    every rank of the fetch is in it once."""
    import random

    rng = random.Random(35)
    for case in range(int(os.environ.get("FR_FUZZ_CASES", "120"))):
        folder = tmp_path / f"case{case}"
        folder.mkdir()
        fetched = []
        for rank in range(WORLD):
            part = folder / f".answer{rank}"
            part.write_bytes(_random_answer(rng, rank))
            got = _live.RankFetch(rank=rank, address=f"http://127.0.0.1:{4000 + rank}")
            got.stacks_answered = True
            got._stacks_part = str(part)
            fetched.append(got)
        urls = [f"http://127.0.0.1:{4000 + r}/handler/dump_traceback?" for r in range(WORLD)]
        _live._write_stacks(str(folder / "stacks_20261204_120000.txt"), fetched, urls)
        for rank in range(WORLD):
            (folder / f".answer{rank}").unlink()
        groups = live_stacks(folder)
        assert sorted(r for g in groups for r in g.get("ranks", [])) == list(range(WORLD)), groups
        for rank in range(WORLD):
            frames = " ".join(frames_of(groups, rank))
            others = [f"own_frame_{o}" for o in range(WORLD) if o != rank]
            assert not any(o in frames for o in others), (case, rank, groups)
