"""What the console's tests share: a real `fr-analyze serve` on a free port, and a real PostgreSQL
server of their own. No mocks: the server is the CLI's subprocess, driven over HTTP.

    from console_fixtures import postgres, start_server  # noqa: F401 (postgres is a fixture)

    server = start_server(tmp_path / "data", "--token", "T")   # waits until it answers
    requests.get(server.url + "/api/analyses")
    server.stop()

    def test_on_postgres(postgres, tmp_path):                  # a session's PostgreSQL URL
        server = start_server(tmp_path / "data", "--db", fresh_database(postgres))

start_server runs `$FR_ANALYZE_CLI serve` (the built CLI, as users run it) or, without that
variable, `python -m fr_analyze.console`; both with FR_ANALYZE_PYTHON defaulting to this Python,
which has the console's dependencies.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from typing import Optional

import pytest

INSTALL_HINT = "scripts/install-deps.sh installs postgresql (Debian's postgresql package)"


def free_port() -> int:
    """A TCP port nobody listens on now (the server binds it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A running console: .url (http://127.0.0.1:PORT), .process, .data, .log; stop(), kill()."""

    def __init__(self, process: subprocess.Popen, url: str, data: pathlib.Path,
                 log: pathlib.Path, argv: list):
        self.process = process
        self.url = url
        self.data = data
        self.log = log
        self.argv = argv

    def console_pid(self) -> int:
        """The console's own process: the CLI's child, or the process itself (python -m)."""
        children = pathlib.Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        try:
            pids = children.read_text().split()
        except OSError:
            pids = []
        return int(pids[0]) if pids else self.process.pid

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def _signal_group(self, sig: int) -> None:
        # The CLI runs the console as its child: the whole process group goes together.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, sig)

    def stop(self) -> None:
        """Asks the server to stop (SIGTERM) and waits until it has; kills what is left after
        10 s. The CLI goes at once, its console child after a clean shutdown."""
        console = self.console_pid()
        if self.process.poll() is None:
            self._signal_group(signal.SIGTERM)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (self.process.poll() is None or
                                               _alive(console)):
            time.sleep(0.02)
        self._signal_group(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)

    def kill(self) -> None:
        """kill -9, as a crash or the OOM killer would: nothing of the server runs after."""
        self._signal_group(signal.SIGKILL)
        self.process.wait(timeout=10)

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *_) -> None:
        self.stop()


def _alive(pid: int) -> bool:
    """Whether the process runs (a zombie, dead but not yet reaped, does not)."""
    try:
        state = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def server_argv() -> list:
    cli = os.environ.get("FR_ANALYZE_CLI")
    if cli:
        return [cli, "serve"]
    return [sys.executable, "-m", "fr_analyze.console"]


def start_server(data_dir, *extra_args: str, env: Optional[dict] = None,
                 timeout: float = 30.0) -> Server:
    """Starts `fr-analyze serve --port P --data DATA_DIR EXTRA_ARGS...` on a free port and waits
    until it answers HTTP. Its output goes to DATA_DIR.log (shown when it fails to start)."""
    data = pathlib.Path(data_dir)
    log = data.with_name(data.name + ".log")
    environment = {**os.environ, **(env or {})}
    environment.setdefault("FR_ANALYZE_PYTHON", sys.executable)
    last = ""
    for _ in range(3):  # another process may take the free port between the probe and the bind
        port = free_port()
        argv = server_argv() + ["--port", str(port), "--data", str(data), *extra_args]
        with open(log, "ab") as out:
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                       env=environment, start_new_session=True)
        server = Server(process, f"http://127.0.0.1:{port}", data, log, argv)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and process.poll() is None:
            if _answers(port):
                return server
            time.sleep(0.05)
        server.stop()
        last = server.log_text()
        if "address already in use" not in last.lower():
            break
    raise RuntimeError(f"the console did not start: {' '.join(argv)}\n{last[-4000:]}")


def _answers(port: int) -> bool:
    """Whether an HTTP server answers on the port (any status: a token server answers 401)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"GET /api/fleet HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            return s.recv(16).startswith(b"HTTP/1.1 ")
    except OSError:
        return False


def eventually(check, what: str, seconds: float = 60.0) -> None:
    """Waits until check() is true: for what the console does after its answer (storing the
    inputs, then retention). The deadline only bounds a test that fails."""
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.05)


# --- PostgreSQL --------------------------------------------------------------------------------
def postgres_bin() -> pathlib.Path:
    """The folder of initdb and pg_ctl: on PATH, or Debian's /usr/lib/postgresql/N/bin."""
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return pathlib.Path(found).parent
    for candidate in sorted(pathlib.Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (candidate / "initdb").exists() and (candidate / "pg_ctl").exists():
            return candidate
    pytest.fail(f"PostgreSQL's initdb/pg_ctl are missing: {INSTALL_HINT}", pytrace=False)


class PostgresServer:
    """A throwaway PostgreSQL cluster in a temporary folder, on a free TCP port of 127.0.0.1,
    trust authentication (nothing but this machine reaches it)."""

    def __init__(self):
        self.bin = postgres_bin()
        # Under /tmp itself, not pytest's 0700 root-owned folder: the postgres user must reach it.
        self.root = pathlib.Path(tempfile.mkdtemp(prefix="fr-console-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._as_postgres = os.geteuid() == 0

    def _run(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
        command = [str(self.bin / argv[0]), *argv[1:]]
        if self._as_postgres:
            # initdb refuses to run as root: the cluster belongs to the postgres user.
            command = ["runuser", "-u", "postgres", "--"] + command
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                                cwd=self.root)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed ({result.returncode}):\n"
                               f"{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
        return result

    def start(self) -> "PostgresServer":
        if self._as_postgres:
            if shutil.which("runuser") is None:
                pytest.fail("running as root needs runuser (util-linux) to start PostgreSQL",
                            pytrace=False)
            shutil.chown(self.root, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
                  "--encoding=UTF8", "--no-sync")
        options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} "
                   "-c fsync=off -c full_page_writes=off -c max_connections=100")
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l",
                  str(self.root / "server.log"), "-w", "-t", "60", "start")
        return self

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", timeout=60)
        shutil.rmtree(self.root, ignore_errors=True)


_postgres_lock = threading.Lock()
_postgres_users = 0
_postgres_server: Optional[PostgresServer] = None


@pytest.fixture(scope="session")
def postgres():
    """The URL of a PostgreSQL server started for this session (postgresql://postgres@...).
    Modules that import this fixture share one server; it stops when the session ends."""
    global _postgres_users, _postgres_server
    with _postgres_lock:
        if _postgres_server is None:
            _postgres_server = PostgresServer().start()
        _postgres_users += 1
        url = _postgres_server.url
    yield url
    with _postgres_lock:
        _postgres_users -= 1
        if _postgres_users == 0 and _postgres_server is not None:
            _postgres_server.stop()
            _postgres_server = None


def fresh_database(postgres_url: str) -> str:
    """Creates an empty database on that server and returns its URL (one per console, so that
    consoles in one session never see each other's analyses)."""
    import psycopg

    name = "console_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return postgres_url.rsplit("/", 1)[0] + "/" + name


_slow_job: Optional[pathlib.Path] = None


@pytest.fixture(scope="session")
def slow_job(cli, tmp_path_factory):
    """512 ranks of zstd-compressed dumps (18 MB) whose rank 5 hangs: an analysis of a few
    tenths of a second (more with its outputs), for the time and memory limits, a kill
    mid-analysis and a kill right after the answer. Made once per session."""
    global _slow_job
    if _slow_job is None:
        directory = tmp_path_factory.mktemp("slow") / "slow"
        subprocess.run([cli, "simulate", str(directory), "--fault", "stuck_before_op",
                        "--fault-rank", "5", "--tp", "8", "--pp", "8", "--dp", "8", "--zstd"],
                       check=True, capture_output=True, timeout=120)
        _slow_job = directory
    return _slow_job


def worker_processes(data, busy=False):
    """The analysis workers of the console on `data` (their command line names its folder);
    busy=True: only those at work on an upload (moved into its folder), not the one waiting."""
    found = []
    for proc in pathlib.Path("/proc").iterdir():
        try:
            line = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            folder = os.readlink(proc / "cwd") if busy else ""
        except (OSError, ValueError, IndexError):
            continue
        if "console._worker" in line and str(data) in line and state != "Z":
            if not busy or folder.startswith(str(data / "uploads") + "/"):
                found.append(int(proc.name))
    return found
