"""Live: every rank's flight recorder and Python stacks, fetched from PyTorch's debug server
while the job still hangs, saved as ordinary files and analysed like any dump directory.

PyTorch (>= 2.13) starts one HTTP worker per rank with
`torch.distributed.debug.start_debug_server()` and registers its address in the job's TCPStore
(MASTER_ADDR:MASTER_PORT) under the prefix `debug_server`, key `rank<N>`, value
`http://<hostname>:<port>`. This module reads those keys with PyTorch's own store client, then
POSTs read-only handlers of every worker concurrently:

    fr_trace_json    the c10d flight recorder, as JSON (the dump format; NCCL jobs:
                     dump_nccl_trace_json when fr_trace_json holds no entries)
    dump_traceback   every thread's Python stack (faulthandler's format)

and writes `rank_<N>.json` per rank and one `stacks_<YYYYmmdd_HHMMSS>.txt` in the format of the
debug server's own periodic snapshots (a PARTIAL DATA header naming the workers that did not
answer, and why). Nothing else is ever called (never the profiler, never anything that changes
the job); nothing fetched is run.

Workers are untrusted, and so is every value in the store. The limits:

- A rank's answers (its dump, its stacks) must arrive complete within `timeout` seconds of the
  request, headers and body together: a worker that trickles bytes is cut off at the deadline.
- A redirect (3xx) is never followed: it is that rank's error, and its body is never read.
- One answer is at most `max_bytes` (default 256 MiB) and one fetch's answers together at most
  `max_total_bytes` (default 2 GiB); answers stream to a hidden folder in `out` and are renamed
  into place at the end, never held whole in memory. Only answers up to 1 MiB are parsed (to
  count a dump's entries); larger ones are scanned in bounded pieces.
- Anything that goes wrong with one rank (its address, its answer, an exception checking it) is
  that rank's error, named in the stacks file's PARTIAL DATA header or the summary line; the
  other ranks are saved.
- A store value must be exactly `http://host:port` (printable ASCII, at most 4096 bytes); the
  stacks file names that normalized form. A worker's answer is written with its control
  characters (but tab and newline) removed and every line that the stacks reader could take for
  the file's own structure (`=== Rank`, `PARTIAL DATA`, `Rank N:`, `Error:`) prefixed with `| `,
  so that no worker can speak for another rank.
- At most 2^20 ranks (`world_size`).

The server has no authentication: PyTorch says to use it only on trusted networks, and so does
this client.

    python -m fr_analyze._live fetch HOST:PORT --out DIR [--world-size N] [--timeout S]
        [--host-map NAME=ADDR,...] [--max-bytes B] [--max-total-bytes B]

is what `fr-analyze live` runs (isolated from the current directory); `fr_analyze.live()` is the
same from Python.
"""

import argparse
import concurrent.futures
import datetime
import http.client
import json
import math
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from fr_analyze.errors import Error, LiveError, MissingDependencyError

STORE_PREFIX = "debug_server"
# The only handlers ever called: each reads state and changes nothing.
DUMP_HANDLER = "fr_trace_json"
NCCL_DUMP_HANDLER = "dump_nccl_trace_json"
STACKS_HANDLER = "dump_traceback"
READ_ONLY_HANDLERS = (DUMP_HANDLER, NCCL_DUMP_HANDLER, STACKS_HANDLER)
# A rank's flight recorder holds at most a few thousand entries: a few MB as JSON.
DEFAULT_MAX_BYTES = 256 << 20
# Every rank's answers together: 8 ranks of 256 MiB each.
DEFAULT_MAX_TOTAL_BYTES = 2 << 30
MAX_TIMEOUT_S = 3600
# Probing the store for rank<N> keys, or --world-size: no job has more ranks.
MAX_PROBED_RANKS = 1 << 20
PROBE_BATCH = 256
# Requests in flight at once (two per rank: its dump and its stacks).
MAX_CONCURRENT_REQUESTS = 128
# Answers up to this size are parsed to count a dump's entries; larger ones are scanned.
PARSE_LIMIT = 1 << 20
CHUNK = 1 << 16
# A store value longer than this is not an address.
MAX_ADDRESS_BYTES = 4096
# What an error message keeps of a worker's text (a 404's body, a redirect's Location).
ERROR_TEXT_CHARS = 200


@dataclass
class RankFetch:
    """One rank: its address and what it answered. `dump` is the path of its saved dump."""
    rank: int
    address: str
    dump: Optional[str] = None
    dump_bytes: int = 0
    dump_error: str = ""
    stacks_answered: bool = False
    stacks_error: str = ""
    seconds: float = 0.0
    # The stacks answer while the fetch runs (a temporary file), then "".
    _stacks_part: str = ""

    @property
    def errors(self) -> str:
        """Both errors in one line ("" when the rank answered both)."""
        parts = []
        if self.dump is None and self.dump_error:
            parts.append(f"{DUMP_HANDLER}: {self.dump_error}")
        if not self.stacks_answered and self.stacks_error and self.stacks_error != self.dump_error:
            parts.append(f"{STACKS_HANDLER}: {self.stacks_error}")
        return "; ".join(parts)


@dataclass
class FetchResult:
    """What one fetch found: the world size, every rank's address and what it answered."""
    master: str
    world_size: int
    out: str
    ranks: List[RankFetch] = field(default_factory=list)
    stacks_file: str = ""
    seconds: float = 0.0

    @property
    def answered(self) -> List[int]:
        return [r.rank for r in self.ranks if r.dump is not None or r.stacks_answered]

    @property
    def silent(self) -> List[int]:
        return [r.rank for r in self.ranks if r.dump is None and not r.stacks_answered]

    @property
    def failed(self) -> List[RankFetch]:
        """Ranks with any error (silent ones included)."""
        return [r for r in self.ranks if r.errors]


# --- Arguments -----------------------------------------------------------------------------

def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_int(value, name: str, low: int, high: int) -> int:
    if not _is_int(value) or not low <= value <= high:
        raise LiveError(f"live: {name} must be an integer in [{low}, {high}], not {value!r}")
    return value


def _check_timeout(value) -> float:
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value) or not 0 < value <= MAX_TIMEOUT_S):
        raise LiveError(f"live: timeout must be a number of seconds in (0, {MAX_TIMEOUT_S}], "
                        f"not {value!r}")
    return float(value)


_HOST = re.compile(r"[A-Za-z0-9._-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\]|[0-9A-Fa-f:.]{2,45}")


def parse_master(master: str) -> Tuple[str, int]:
    """ "host:port" or "[v6]:port" -> (host, port)."""
    bad = LiveError(f"live: {master!r} is not HOST:PORT (the job's MASTER_ADDR:MASTER_PORT)")
    if not isinstance(master, str) or ":" not in master:
        raise bad
    host, _, port = master.rpartition(":")
    if not _HOST.fullmatch(host) or not port.isascii() or not port.isdigit():
        raise bad
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not 0 < int(port) < 65536:
        raise bad
    return host, int(port)


def parse_host_map(text: Optional[str]) -> Dict[str, str]:
    """ "node0=10.0.0.5,node1=10.0.0.6" -> {"node0": "10.0.0.5", ...}."""
    mapping: Dict[str, str] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, address = item.partition("=")
        if not sep or not name or not address:
            raise LiveError(f"live: --host-map entry {item!r} is not NAME=ADDRESS")
        mapping[name] = address
    return _check_host_map(mapping)


def _check_host_map(host_map) -> Dict[str, str]:
    if host_map is None:
        return {}
    if not isinstance(host_map, Mapping):
        raise LiveError(f"live: host_map must be a dict of host name -> address, not "
                        f"{type(host_map).__name__}")
    checked: Dict[str, str] = {}
    for name, address in host_map.items():
        if not isinstance(name, str) or not isinstance(address, str):
            raise LiveError(f"live: host_map entry {name!r}: {address!r} is not str: str")
        bare = address[1:-1] if address.startswith("[") and address.endswith("]") else address
        if not _HOST.fullmatch(address) or not bare:
            raise LiveError(f"live: host_map address {address!r} of {name!r} is not a host name "
                            "or IP address")
        checked[name] = bare
    return checked


# --- The store -----------------------------------------------------------------------------

def _first_line(error: BaseException) -> str:
    """An exception as one line: PyTorch's c10 errors append a C++ backtrace to their text."""
    for line in str(error).splitlines():
        line = line.strip()
        if line:
            return f"{type(error).__name__}: {_clean(line)[:500]}"
    return type(error).__name__


def _import_torch_distributed():
    try:
        import torch.distributed as dist
    except ImportError as e:
        raise MissingDependencyError(
            "live: reading the job's store needs PyTorch (torch) in this Python: pip install "
            "torch, or run the job's own environment (the CLI: FR_ANALYZE_PYTHON naming its "
            f"python) ({_first_line(e)})") from None
    return dist


def _open_store(host: str, port: int, timeout: float):
    dist = _import_torch_distributed()
    made: dict = {}

    def connect() -> None:
        try:
            made["store"] = dist.TCPStore(host, port, is_master=False,
                                          timeout=datetime.timedelta(seconds=timeout))
        except Exception as e:  # DistNetworkError, RuntimeError, TimeoutError: all say the same
            made["error"] = e

    # TCPStore retries its connection in C++ for the whole timeout, where Ctrl-C cannot reach
    # Python: connecting in a thread keeps this one waiting in Python, so an interrupt stops
    # the fetch at once (the connection releases the GIL; the thread dies with the process).
    thread = threading.Thread(target=connect, name="fr-live-store", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(0.1)
    if "error" in made:
        raise LiveError(f"live: cannot reach the job's store at {host}:{port}: "
                        f"{_first_line(made['error'])}") from None
    return dist.PrefixStore(STORE_PREFIX, made["store"])


def _has(store, key: str) -> bool:
    return bool(store.check([key]))


def find_world_size(store) -> int:
    """The number of ranks registered: rank0, rank1, ... up to the first key missing."""
    n = 0
    while n < MAX_PROBED_RANKS:
        batch = [f"rank{r}" for r in range(n, n + PROBE_BATCH)]
        if store.check(batch):
            n += PROBE_BATCH
            continue
        for key in batch:
            if not _has(store, key):
                return n
            n += 1
        return n
    raise LiveError(f"live: more than {MAX_PROBED_RANKS} ranks registered; give --world-size")


# --- Addresses -----------------------------------------------------------------------------

@dataclass(frozen=True)
class _Address:
    scheme: str
    host: str
    port: int

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


_PRINTABLE_URL = re.compile(r"[\x21-\x7e]{1,%d}" % MAX_ADDRESS_BYTES)


def _registered_address(raw: bytes) -> _Address:
    """A store value as the worker's address, or ValueError saying why it is not one: exactly
    scheme://host:port (a trailing / allowed), printable ASCII, nothing else."""
    from urllib.parse import urlsplit

    if len(raw) > MAX_ADDRESS_BYTES:
        raise ValueError(f"store value of {len(raw)} bytes is not an http://host:port address")
    text = raw.decode("ascii", "replace").strip(" ")
    if not _PRINTABLE_URL.fullmatch(text):
        raise ValueError(f"store value {_clean(text)[:80]!r} is not an http://host:port address "
                         "(control characters, spaces or non-ASCII)")
    parts = urlsplit(text)
    try:
        port = parts.port
    except ValueError:
        port = None
    if (parts.scheme not in ("http", "https") or not parts.hostname or port is None or port == 0
            or parts.username is not None or parts.password is not None
            or parts.path not in ("", "/") or parts.query or parts.fragment
            or not _HOST.fullmatch(parts.hostname)):
        raise ValueError(f"store value {text[:80]!r} is not an http://host:port address")
    return _Address(parts.scheme, parts.hostname, port)


def _reachable(address: _Address, master_host: str, host_map: Dict[str, str]) -> _Address:
    """The worker's address with its host name mapped (--host-map), or replaced by the store's
    host when it does not resolve here (a name only the cluster's own DNS knows)."""
    mapped = host_map.get(address.host)
    if mapped is None:
        try:
            socket.getaddrinfo(address.host, address.port, type=socket.SOCK_STREAM)
            mapped = address.host
        except (OSError, UnicodeError):
            mapped = master_host
    return _Address(address.scheme, mapped, address.port)


# --- Requests ------------------------------------------------------------------------------

class _Budget:
    """The bytes every answer of one fetch may take together (max_total_bytes)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.used = 0
        self._lock = threading.Lock()

    def take(self, n: int) -> bool:
        with self._lock:
            if self.used + n > self.limit:
                return False
            self.used += n
            return True

    def give_back(self, n: int) -> None:
        with self._lock:
            self.used -= n


class _Deadline:
    """A request's total deadline: before each read the socket waits at most what is left, and
    at the deadline a timer shuts the socket down, so a worker that sends one byte a second
    cannot keep a read going past it."""

    def __init__(self, seconds: float, end: Optional[float] = None):
        self.seconds = seconds
        self.end = time.monotonic() + seconds if end is None else end
        self.expired = False
        self._lock = threading.Lock()
        self._conn: Optional[http.client.HTTPConnection] = None
        self._timer: Optional[threading.Timer] = None

    def left(self) -> float:
        return self.end - time.monotonic()

    def watch(self, conn: http.client.HTTPConnection) -> None:
        """Arms the timer before the connection is made: a TLS handshake is reads too."""
        with self._lock:
            self._conn = conn
            self._timer = threading.Timer(max(0.0, self.left()), self._cut)
            self._timer.daemon = True
            self._timer.start()

    def before_read(self) -> None:
        left = self.left()
        if left <= 0 or self.expired:
            self.expired = True
            raise TimeoutError("deadline passed")
        with self._lock:
            sock = self._conn.sock if self._conn is not None else None
            if sock is not None:
                sock.settimeout(left)

    def _cut(self) -> None:
        with self._lock:
            self.expired = True
            sock = self._conn.sock if self._conn is not None else None
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._conn = None


@dataclass
class _Answer:
    part: str = ""  # the temporary file holding a 200's body
    size: int = 0
    error: str = ""


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def _clean(text: str) -> str:
    """Text without control characters (tab and newline kept)."""
    return _CONTROL.sub("", text)


def _one_line(text: str, limit: int = ERROR_TEXT_CHARS) -> str:
    return " ".join(_clean(text).split())[:limit]


def _post(address: _Address, handler: str, deadline: _Deadline, max_bytes: int,
          budget: _Budget, folder: str) -> _Answer:
    """POSTs /handler/<handler> and streams a 200's body to a temporary file in `folder`.
    Errors in the frontend's own wording ("Timeout: ...", "ConnectionError: ...",
    "Error: 404 ..."); a 3xx is an error and is never followed."""
    seconds = deadline.end - time.monotonic()
    if seconds <= 0:
        return _Answer(error="Timeout: no time left for this request")
    kind = http.client.HTTPSConnection if address.scheme == "https" else http.client.HTTPConnection
    conn = kind(address.host, address.port, timeout=seconds)
    answer = _Answer()
    out = None
    taken = 0
    try:
        deadline.watch(conn)
        conn.connect()
        deadline.before_read()
        conn.request("POST", f"/handler/{handler}", body=b"",
                     headers={"Connection": "close", "Accept": "*/*"})
        deadline.before_read()
        resp = conn.getresponse()
        if 300 <= resp.status < 400:
            location = _one_line(resp.getheader("Location") or "")
            answer.error = (f"Error: {resp.status} redirect"
                            + (f" to {location}" if location else "") + " not followed")
            return answer
        if resp.status != 200:
            deadline.before_read()
            text = resp.read1(ERROR_TEXT_CHARS).decode("utf-8", "replace")
            answer.error = f"Error: {resp.status} {_one_line(text)}".strip()
            return answer
        if resp.length is not None and resp.length > max_bytes:
            answer.error = (f"Error: answer of {resp.length} bytes is larger than max_bytes "
                            f"({max_bytes}); not read")
            return answer
        fd, answer.part = tempfile.mkstemp(dir=folder, prefix=f"{handler}-", suffix=".part")
        out = os.fdopen(fd, "wb")
        while True:
            deadline.before_read()
            chunk = resp.read1(CHUNK)
            if not chunk:
                break
            if answer.size + len(chunk) > max_bytes:
                answer.error = f"Error: answer larger than max_bytes ({max_bytes}); not saved"
                break
            if not budget.take(len(chunk)):
                answer.error = (f"Error: the fetch's answers together exceed max_total_bytes "
                                f"({budget.limit}); not saved")
                break
            taken += len(chunk)
            out.write(chunk)
            answer.size += len(chunk)
        if deadline.expired and not answer.error:
            # The timer's shutdown reads as the end of a body without a length.
            raise TimeoutError("deadline passed")
    except Exception as e:  # noqa: BLE001  (every failure is this request's error)
        if deadline.expired or isinstance(e, (TimeoutError, socket.timeout)):
            answer.error = (f"Timeout: no complete answer within {deadline.seconds:g} s "
                            f"({answer.size} bytes read)")
        elif isinstance(e, (ConnectionError, OSError, http.client.HTTPException)):
            answer.error = f"ConnectionError: {_first_line(e)}"
        else:
            answer.error = f"Error: {_first_line(e)}"
    finally:
        deadline.close()
        conn.close()
        if out is not None:
            out.close()
        if answer.error and answer.part:
            _remove(answer.part)
            answer.part = ""
            budget.give_back(taken)
            answer.size = 0
    return answer


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


_NON_EMPTY_ENTRIES = re.compile(rb'"entries"\s{0,64}:\s{0,64}\[\s{0,64}[^\]\s]')


def _has_entries(path: str, size: int) -> bool:
    """Whether a saved dump answer holds flight-recorder entries, in bounded memory: answers up to
    PARSE_LIMIT are parsed; larger ones are scanned for a non-empty "entries" list."""
    if size <= PARSE_LIMIT:
        with open(path, "rb") as f:
            data = f.read(PARSE_LIMIT + 1)
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError, MemoryError):
            return False
        entries = doc.get("entries") if isinstance(doc, dict) else None
        return isinstance(entries, list) and len(entries) > 0
    tail = b""
    with open(path, "rb") as f:
        while True:
            chunk = f.read(CHUNK)
            if not chunk:
                return False
            if _NON_EMPTY_ENTRIES.search(tail + chunk):
                return True
            tail = chunk[-256:]


def _fetch_dump(address: _Address, got: RankFetch, timeout: float, max_bytes: int,
                budget: _Budget, folder: str) -> None:
    deadline = _Deadline(timeout)
    dump = _post(address, DUMP_HANDLER, deadline, max_bytes, budget, folder)
    if dump.part and not _has_entries(dump.part, dump.size):
        # NCCL's flight recorder is its own; a CPU job has no such handler's data (404/500).
        # Within the same deadline: the rank's dump is one answer.
        nccl = _post(address, NCCL_DUMP_HANDLER, _Deadline(timeout, end=deadline.end),
                     max_bytes, budget, folder)
        if nccl.part and _has_entries(nccl.part, nccl.size):
            _remove(dump.part)
            budget.give_back(dump.size)
            dump = nccl
        elif nccl.part:
            _remove(nccl.part)
            budget.give_back(nccl.size)
    got.dump, got.dump_bytes, got.dump_error = (dump.part or None), dump.size, dump.error


def _fetch_stacks(address: _Address, got: RankFetch, timeout: float, max_bytes: int,
                  budget: _Budget, folder: str) -> None:
    deadline = _Deadline(timeout)
    stacks = _post(address, STACKS_HANDLER, deadline, max_bytes, budget, folder)
    got._stacks_part, got.stacks_error = stacks.part, stacks.error
    got.stacks_answered = bool(stacks.part)


def _guarded(task, address, got: RankFetch, which: str, *args) -> None:
    """One rank's request: whatever goes wrong (a RecursionError, a MemoryError, a bug) is that
    rank's error, never the whole fetch's."""
    started = time.monotonic()
    try:
        task(address, got, *args)
    except Exception as e:  # noqa: BLE001
        error = f"Error: {_first_line(e)}"
        if which == "dump":
            got.dump, got.dump_error = None, error
        else:
            got.stacks_answered, got.stacks_error = False, error
    got.seconds = max(got.seconds, time.monotonic() - started)


# --- Writing -------------------------------------------------------------------------------

# What the stacks reader (lib/fr/stacks/python_stacks.cc) reads as the file's own structure,
# once a line's spaces and tabs are trimmed: a rank header, the PARTIAL DATA header, its
# "Rank N: why" lines and a rank's "Error: ..." line. A worker's line that starts so is prefixed.
_STRUCTURE = re.compile(r"[ \t]*(=|partial|rank|error)", re.IGNORECASE)
NEUTRAL_PREFIX = "| "


def _copy_answer(source: str, sink) -> None:
    """A worker's stacks answer into the stacks file: UTF-8 (invalid bytes replaced), control
    characters removed, structure-like lines neutralised; read in bounded pieces."""
    at_line_start = True
    wrote_any = False
    last = "\n"
    with open(source, "r", encoding="utf-8", errors="replace", newline="\n") as f:
        while True:
            piece = f.readline(CHUNK)
            if not piece:
                break
            piece = _clean(piece)
            if not piece:
                continue
            if at_line_start and _STRUCTURE.match(piece):
                piece = NEUTRAL_PREFIX + piece
            sink.write(piece)
            wrote_any = True
            last = piece[-1]
            # A line is checked at its first character that is not a space or tab (the reader
            # trims them), however many pieces of blanks come first.
            at_line_start = piece.endswith("\n") or (at_line_start and not piece.strip(" \t"))
    if wrote_any and last != "\n":
        sink.write("\n")


def _write_stacks(path: str, ranks: List[RankFetch], header_urls: List[str]) -> None:
    """The debug server's stacks snapshot format (torch/distributed/debug: StacksHandler.dump)."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8", newline="\n") as sink:
        failed = [r for r in ranks if not r.stacks_answered]
        if failed:
            sink.write(f"PARTIAL DATA: {len(ranks) - len(failed)}/{len(ranks)} workers "
                       "responded\n")
            for r in failed:
                sink.write(f"  Rank {r.rank}: {_one_line(r.stacks_error or 'no answer', 500)}\n")
            sink.write("\n")
        for r, url in zip(ranks, header_urls):
            sink.write(f"=== Rank {r.rank}: {url} ===\n")
            if r.stacks_answered:
                _copy_answer(r._stacks_part, sink)
                sink.write("\n")
            else:
                code = "408" if r.stacks_error.startswith("Timeout") else "503"
                sink.write(f"Error: {code}\n")
    os.replace(tmp, path)


# --- The fetch -----------------------------------------------------------------------------

def _read_addresses(store, n: int, explicit: bool) -> List[Tuple[Optional[_Address], str]]:
    """(address, why not) per rank from the store."""
    found: List[Tuple[Optional[_Address], str]] = []
    for rank in range(n):
        key = f"rank{rank}"
        if explicit and not _has(store, key):
            found.append((None, "not registered in the store"))
            continue
        try:
            found.append((_registered_address(store.get(key)), ""))
        except ValueError as e:
            found.append((None, str(e)))
    return found


def fetch(master: str, *, out: str, world_size: Optional[int] = None, timeout: float = 10.0,
          max_bytes: int = DEFAULT_MAX_BYTES, max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
          host_map: Optional[Dict[str, str]] = None,
          progress: Optional[Callable[[int, int], None]] = None) -> FetchResult:
    """Fetches every rank's flight recorder and stacks into `out` (created if missing)."""
    host, port = parse_master(master)
    if world_size is not None:
        _check_int(world_size, "world_size", 1, MAX_PROBED_RANKS)
    timeout = _check_timeout(timeout)
    _check_int(max_bytes, "max_bytes", 1, 1 << 62)
    _check_int(max_total_bytes, "max_total_bytes", 1, 1 << 62)
    mapping = _check_host_map(host_map)
    if not isinstance(out, (str, os.PathLike)):
        raise LiveError(f"live: the output folder must be a path, not {type(out).__name__}")
    out = os.fspath(out)
    if progress is not None and not callable(progress):
        raise LiveError("live: progress must be callable")
    started = time.monotonic()
    store = _open_store(host, port, timeout)
    try:
        n = world_size if world_size is not None else find_world_size(store)
        if n == 0:
            raise LiveError(
                f"live: no rank registered a debug server in the store at {host}:{port} (key "
                f"'{STORE_PREFIX}/rank0' is missing): call torch.distributed.debug."
                "start_debug_server() in every rank after init_process_group")
        addresses = _read_addresses(store, n, world_size is not None)
    except LiveError:
        raise
    except Exception as e:  # the store went away while being read
        raise LiveError(f"live: reading the job's store at {host}:{port} failed: "
                        f"{_first_line(e)}") from None
    try:
        os.makedirs(out, exist_ok=True)
        parts = tempfile.mkdtemp(prefix=".fr-analyze-live-", dir=out)
    except OSError as e:
        raise LiveError(f"live: cannot write into {out}: {_first_line(e)}") from None
    result = FetchResult(master=master, world_size=n, out=out)
    budget = _Budget(max_total_bytes)
    ranks: List[RankFetch] = []
    header_urls: List[str] = []
    try:
        jobs: Dict[concurrent.futures.Future, int] = {}
        with concurrent.futures.ThreadPoolExecutor(
                max_workers=max(1, min(MAX_CONCURRENT_REQUESTS, 2 * n))) as pool:
            for rank, (address, why) in enumerate(addresses):
                header_urls.append(f"{address.url}/handler/{STACKS_HANDLER}?" if address
                                   else f"rank{rank}")
                if address is None:
                    ranks.append(RankFetch(rank, "", dump_error=why, stacks_error=why))
                    continue
                got = RankFetch(rank, address.url)
                ranks.append(got)
                try:
                    reach = _reachable(address, host, mapping)
                except Exception as e:  # noqa: BLE001
                    got.dump_error = got.stacks_error = f"Error: {_first_line(e)}"
                    continue
                for which, task in (("dump", _fetch_dump), ("stacks", _fetch_stacks)):
                    future = pool.submit(_guarded, task, reach, got, which, timeout, max_bytes,
                                         budget, parts)
                    jobs[future] = rank
            pending = {rank: 0 for rank in jobs.values()}
            for rank in jobs.values():
                pending[rank] += 1
            done = 0
            for future in concurrent.futures.as_completed(jobs):
                future.result()  # _guarded raises nothing but BaseException
                rank = jobs[future]
                pending[rank] -= 1
                if pending[rank] == 0:
                    done += 1
                    if progress is not None:
                        progress(done, len(pending))
        result.ranks = ranks
        for got in ranks:
            if got.dump is not None:
                final = os.path.join(out, f"rank_{got.rank}.json")
                os.replace(got.dump, final)
                got.dump = final
        name = f"stacks_{time.strftime('%Y%m%d_%H%M%S')}.txt"
        result.stacks_file = os.path.join(out, name)
        _write_stacks(result.stacks_file, ranks, header_urls)
    except OSError as e:
        raise LiveError(f"live: cannot write into {out}: {_first_line(e)}") from None
    finally:
        for got in ranks:
            got._stacks_part = ""
        shutil.rmtree(parts, ignore_errors=True)
    result.seconds = time.monotonic() - started
    return result


def live(master: str, *, world_size: Optional[int] = None, timeout: float = 10.0,
         save: Optional[str] = None, host_map: Optional[Dict[str, str]] = None,
         max_bytes: int = DEFAULT_MAX_BYTES, max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES):
    """Diagnoses a job that is still running (or hanging) from PyTorch's debug server.

    master: the job's MASTER_ADDR:MASTER_PORT (its TCPStore), e.g. "node0:29500". Every rank
    must have called torch.distributed.debug.start_debug_server(). Needs PyTorch in this Python.
    Fetches every rank's flight recorder and Python stacks (each rank's answers within `timeout`
    seconds, headers and body; one answer at most max_bytes, all together at most
    max_total_bytes; redirects are never followed), saves them in `save` (a folder; default: a
    temporary one kept as long as the report) as rank_<N>.json and stacks_<time>.txt, and returns
    fr_analyze.analyze() of that folder: the verdict, with Report.live_stacks (every rank's main
    thread, grouped by identical stacks). A worker that does not answer, or answers badly, is
    named there, never an error. host_map: {"worker host name": "address reachable from here"};
    a name that does not resolve is replaced by the store's host.
    Raises LiveError when the store cannot be reached, no rank registered a debug server, or an
    argument is of the wrong type or out of range (world_size in [1, 2^20], timeout in
    (0, 3600] s, byte limits >= 1); MissingDependencyError when PyTorch is not installed.
    """
    from fr_analyze._trace import load

    if save is not None and not isinstance(save, (str, os.PathLike)):
        raise LiveError(f"live: save must be a folder's path, not {type(save).__name__}")
    keep = None
    if save is None:
        keep = tempfile.TemporaryDirectory(prefix="fr-analyze-live-")
        save = keep.name
    fetch(master, out=save, world_size=world_size, timeout=timeout, max_bytes=max_bytes,
          max_total_bytes=max_total_bytes, host_map=host_map)
    report = load(os.fspath(save)).analyze()
    if keep is not None:
        report._live_dir = keep  # the files the report names live as long as it does
    return report


# At most this many ranks' errors are listed on the summary line.
MAX_ERRORS_LISTED = 16


def _summary(result: FetchResult) -> str:
    line = (f"live: {result.world_size} ranks registered at {result.master}; "
            f"{len(result.answered)} answered in {result.seconds:.1f} s")
    failed = result.failed
    if failed:
        listed = "; ".join(f"rank {r.rank}: {_one_line(r.errors, 300)}"
                           for r in failed[:MAX_ERRORS_LISTED])
        more = len(failed) - MAX_ERRORS_LISTED
        line += f"\nlive: {len(failed)} rank(s) with errors: {listed}"
        if more > 0:
            line += f"; and {more} more (in {result.stacks_file})"
    return line


def _main(argv: Optional[List[str]] = None) -> int:
    # PyTorch's C++ logging prints every store connection retry with a C++ backtrace on stderr:
    # the one line this helper prints says it all.
    os.environ["TORCH_CPP_LOG_LEVEL"] = "FATAL"
    os.environ["TORCH_SHOW_CPP_STACKTRACES"] = "0"
    parser = argparse.ArgumentParser(
        prog="python -m fr_analyze._live",
        description="Fetch every rank's flight recorder and Python stacks from PyTorch's debug "
        "server into a folder (what `fr-analyze live` runs).")
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("fetch")
    one.add_argument("master", help="the job's MASTER_ADDR:MASTER_PORT")
    one.add_argument("--out", required=True)
    one.add_argument("--world-size", type=int, default=None)
    one.add_argument("--timeout", type=float, default=10.0)
    one.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_BYTES)
    one.add_argument("--max-total-bytes", type=int, default=DEFAULT_MAX_TOTAL_BYTES)
    one.add_argument("--host-map", default="")
    one.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    tty = sys.stderr.isatty() and not args.quiet

    def progress(done: int, total: int) -> None:
        if tty:
            print(f"\rlive: fetched {done}/{total} ranks", end="", file=sys.stderr, flush=True)

    try:
        result = fetch(args.master, out=args.out, world_size=args.world_size,
                       timeout=args.timeout, max_bytes=args.max_bytes,
                       max_total_bytes=args.max_total_bytes,
                       host_map=parse_host_map(args.host_map), progress=progress)
    except Error as e:
        if tty:
            print(file=sys.stderr)
        print(f"fr-analyze: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Ctrl-C, or a SIGINT `fr-analyze live` passed on: its caller says the word under --quiet.
        if not args.quiet:
            print("\nfr-analyze: live: stopped" if tty else "fr-analyze: live: stopped",
                  file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001  (a bug: one line, and not Python's exit status 1)
        print(f"fr-analyze: live: internal error: {_first_line(e)}", file=sys.stderr)
        return 3
    if tty:
        print(file=sys.stderr)
    if not args.quiet:
        print(_summary(result), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(_main())
