"""Live: every rank's flight recorder and Python stacks, fetched from PyTorch's debug server
while the job still hangs, saved as ordinary files and analysed like any dump directory.

PyTorch (>= 2.13) starts one HTTP worker per rank with
`torch.distributed.debug.start_debug_server()` and registers its address in the job's TCPStore
(MASTER_ADDR:MASTER_PORT) under the prefix `debug_server`, key `rank<N>`, value
`http://<hostname>:<port>`. This module reads those keys with PyTorch's own store client, then
POSTs two read-only handlers of every worker concurrently:

    fr_trace_json    the c10d flight recorder, as JSON (the dump format; NCCL jobs:
                     dump_nccl_trace_json when fr_trace_json holds no entries)
    dump_traceback   every thread's Python stack (faulthandler's format)

and writes `rank_<N>.json` per rank and one `stacks_<YYYYmmdd_HHMMSS>.txt` in the format of the
debug server's own periodic snapshots (a PARTIAL DATA header naming the workers that did not
answer, and why). Nothing else is ever called (never the profiler, never anything that changes
the job); every response is bounded in size and read as untrusted data; nothing fetched is run.

The server has no authentication: PyTorch says to use it only on trusted networks, and so does
this client.

    python -m fr_analyze._live fetch HOST:PORT --out DIR [--world-size N] [--timeout S]
        [--host-map NAME=ADDR,...]

is what `fr-analyze live` runs (isolated from the current directory); `fr_analyze.live()` is the
same from Python.
"""

import argparse
import concurrent.futures
import datetime
import json
import os
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

STORE_PREFIX = "debug_server"
# The only handlers ever called: each reads state and changes nothing.
DUMP_HANDLER = "fr_trace_json"
NCCL_DUMP_HANDLER = "dump_nccl_trace_json"
STACKS_HANDLER = "dump_traceback"
READ_ONLY_HANDLERS = (DUMP_HANDLER, NCCL_DUMP_HANDLER, STACKS_HANDLER)
# A rank's flight recorder holds at most a few thousand entries: a few MB as JSON.
DEFAULT_MAX_BYTES = 256 << 20
# Probing the store for rank<N> keys: past this many ranks, --world-size must say.
MAX_PROBED_RANKS = 1 << 20
PROBE_BATCH = 256


from fr_analyze.errors import LiveError  # noqa: E402  (the job could not be reached)


@dataclass
class RankFetch:
    rank: int
    address: str
    dump: Optional[bytes] = None
    dump_error: str = ""
    stacks: Optional[str] = None
    stacks_error: str = ""
    seconds: float = 0.0


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
        return [r.rank for r in self.ranks if r.dump is not None or r.stacks is not None]

    @property
    def silent(self) -> List[int]:
        return [r.rank for r in self.ranks if r.dump is None and r.stacks is None]


def parse_master(master: str) -> Tuple[str, int]:
    """ "host:port" or "[v6]:port" -> (host, port)."""
    if not isinstance(master, str) or ":" not in master:
        raise LiveError(f"live: {master!r} is not HOST:PORT (the job's MASTER_ADDR:MASTER_PORT)")
    host, _, port = master.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise LiveError(f"live: {master!r} is not HOST:PORT (the job's MASTER_ADDR:MASTER_PORT)")
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
    return mapping


def _open_store(host: str, port: int, timeout: float):
    try:
        import torch.distributed as dist
    except ImportError as e:
        raise LiveError(
            "live: reading the job's store needs PyTorch in this Python (the job's own "
            f"environment, or FR_ANALYZE_PYTHON naming one): {e}") from None
    try:
        store = dist.TCPStore(host, port, is_master=False,
                              timeout=datetime.timedelta(seconds=timeout))
    except Exception as e:  # DistNetworkError, RuntimeError, TimeoutError: all say the same
        raise LiveError(f"live: cannot reach the job's store at {host}:{port}: "
                        f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from None
    return dist.PrefixStore(STORE_PREFIX, store)


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


def _reachable(url: str, master_host: str, host_map: Dict[str, str]) -> str:
    """The worker's address with its host name mapped (--host-map), or replaced by the store's
    host when it does not resolve here (a name only the cluster's own DNS knows)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.port is None:
        raise ValueError(f"not an http://host:port address: {url!r}")
    host = parts.hostname
    mapped = host_map.get(host)
    if mapped is None:
        try:
            socket.getaddrinfo(host, parts.port, type=socket.SOCK_STREAM)
            mapped = host
        except OSError:
            mapped = master_host
    netloc = f"[{mapped}]:{parts.port}" if ":" in mapped else f"{mapped}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, "", "", ""))


def _post(session, url: str, timeout: float, max_bytes: int) -> Tuple[Optional[bytes], str]:
    """(body, "") or (None, why): the frontend's own wording ("Timeout: ...",
    "ConnectionError: ...", "Error: 404 ...")."""
    import requests

    try:
        with session.post(url, timeout=(min(timeout, 5.0), timeout), stream=True) as resp:
            chunks, size = [], 0
            for chunk in resp.iter_content(1 << 16):
                size += len(chunk)
                if size > max_bytes:
                    return None, f"Error: response larger than {max_bytes} bytes, not read"
                chunks.append(chunk)
            body = b"".join(chunks)
            if resp.status_code != 200:
                text = body[:200].decode("utf-8", "replace").strip()
                return None, f"Error: {resp.status_code} {text}".strip()
            return body, ""
    except requests.exceptions.Timeout as e:
        return None, f"Timeout: {e}"
    except requests.exceptions.ConnectionError as e:
        return None, f"ConnectionError: {e}"
    except requests.exceptions.RequestException as e:
        return None, f"{type(e).__name__}: {e}"


def _entries_in(body: bytes) -> int:
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return -1
    entries = doc.get("entries") if isinstance(doc, dict) else None
    return len(entries) if isinstance(entries, list) else -1


def _fetch_rank(session, rank: int, address: str, timeout: float, max_bytes: int) -> RankFetch:
    started = time.monotonic()
    got = RankFetch(rank=rank, address=address)
    got.dump, got.dump_error = _post(session, f"{address}/handler/{DUMP_HANDLER}", timeout,
                                     max_bytes)
    if got.dump is not None and _entries_in(got.dump) == 0:
        # NCCL's flight recorder is its own; a CPU job has no such handler's data (404/500).
        nccl, _ = _post(session, f"{address}/handler/{NCCL_DUMP_HANDLER}", timeout, max_bytes)
        if nccl is not None and _entries_in(nccl) > 0:
            got.dump = nccl
    if got.dump is None and got.dump_error.startswith("ConnectionError"):
        # Nobody listens: the stacks request would only say the same.
        got.stacks_error = got.dump_error
    else:
        stacks, got.stacks_error = _post(session, f"{address}/handler/{STACKS_HANDLER}", timeout,
                                         max_bytes)
        if stacks is not None:
            got.stacks = stacks.decode("utf-8", "replace")
    got.seconds = time.monotonic() - started
    return got


def _write_atomically(path: str, data: bytes) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def stacks_text(ranks: List[RankFetch], stacks_urls: List[str]) -> str:
    """The debug server's stacks snapshot format (torch/distributed/debug: StacksHandler.dump)."""
    parts: List[str] = []
    failed = [r for r in ranks if r.stacks is None]
    if failed:
        parts.append(f"PARTIAL DATA: {len(ranks) - len(failed)}/{len(ranks)} workers responded")
        for r in failed:
            why = " ".join((r.stacks_error or "no answer").split())
            parts.append(f"  Rank {r.rank}: {why}")
        parts.append("")
    for r, url in zip(ranks, stacks_urls):
        parts.append(f"=== Rank {r.rank}: {url} ===")
        if r.stacks is not None:
            parts.append(r.stacks.rstrip("\n"))
            parts.append("")
        else:
            code = "408" if r.stacks_error.startswith("Timeout") else "503"
            parts.append(f"Error: {code}")
    return "\n".join(parts) + "\n"


def fetch(master: str, *, out: str, world_size: Optional[int] = None, timeout: float = 10.0,
          max_bytes: int = DEFAULT_MAX_BYTES, host_map: Optional[Dict[str, str]] = None,
          progress: Optional[Callable[[int, int], None]] = None) -> FetchResult:
    """Fetches every rank's flight recorder and stacks into `out` (created if missing)."""
    import requests

    host, port = parse_master(master)
    if world_size is not None and not (isinstance(world_size, int) and 0 < world_size):
        raise LiveError(f"live: --world-size {world_size!r} must be a positive integer")
    if not (isinstance(timeout, (int, float)) and 0 < timeout <= 3600):
        raise LiveError(f"live: --timeout {timeout!r} must be in (0, 3600] seconds")
    started = time.monotonic()
    store = _open_store(host, port, timeout)
    n = world_size if world_size is not None else find_world_size(store)
    if n == 0:
        raise LiveError(
            f"live: no rank registered a debug server in the store at {host}:{port} (key "
            f"'{STORE_PREFIX}/rank0' is missing): call torch.distributed.debug."
            "start_debug_server() in every rank after init_process_group")
    keys = [f"rank{r}" for r in range(n)]
    missing = [k for k in keys if not _has(store, k)] if world_size is not None else []
    urls: List[Optional[str]] = []
    for key in keys:
        if key in missing:
            urls.append(None)
            continue
        raw = store.get(key)
        urls.append(raw[:4096].decode("utf-8", "replace").strip())
    mapping = host_map or {}
    os.makedirs(out, exist_ok=True)
    result = FetchResult(master=master, world_size=n, out=out)
    fetched: Dict[int, RankFetch] = {}
    stacks_urls: List[str] = []
    jobs = {}
    with requests.Session() as session, concurrent.futures.ThreadPoolExecutor(
            max_workers=max(1, min(64, n))) as pool:
        for rank, url in enumerate(urls):
            stacks_urls.append(f"{url}/handler/{STACKS_HANDLER}?" if url else f"rank{rank}")
            if url is None:
                fetched[rank] = RankFetch(rank, "", dump_error="not registered in the store",
                                          stacks_error="not registered in the store")
                continue
            try:
                address = _reachable(url, host, mapping)
            except ValueError as e:
                fetched[rank] = RankFetch(rank, url, dump_error=str(e), stacks_error=str(e))
                continue
            jobs[pool.submit(_fetch_rank, session, rank, address, timeout, max_bytes)] = rank
        done = 0
        for future in concurrent.futures.as_completed(jobs):
            got = future.result()
            fetched[got.rank] = got
            done += 1
            if progress is not None:
                progress(done, len(jobs))
    result.ranks = [fetched[r] for r in range(n)]
    for got in result.ranks:
        if got.dump is not None:
            _write_atomically(os.path.join(out, f"rank_{got.rank}.json"), got.dump)
    name = f"stacks_{time.strftime('%Y%m%d_%H%M%S')}.txt"
    result.stacks_file = os.path.join(out, name)
    _write_atomically(result.stacks_file, stacks_text(result.ranks, stacks_urls).encode())
    result.seconds = time.monotonic() - started
    return result


def live(master: str, *, world_size: Optional[int] = None, timeout: float = 10.0,
         save: Optional[str] = None, host_map: Optional[Dict[str, str]] = None,
         max_bytes: int = DEFAULT_MAX_BYTES):
    """Diagnoses a job that is still running (or hanging) from PyTorch's debug server.

    master: the job's MASTER_ADDR:MASTER_PORT (its TCPStore), e.g. "node0:29500". Every rank
    must have called torch.distributed.debug.start_debug_server(). Needs PyTorch and requests in
    this Python. Fetches every rank's flight recorder and Python stacks (timeout seconds per
    request; responses over max_bytes are refused), saves them in `save` (a folder; default: a
    temporary one kept as long as the report) as rank_<N>.json and stacks_<time>.txt, and returns
    fr_analyze.analyze() of that folder: the verdict, with Report.live_stacks (every rank's main
    thread, grouped by identical stacks). A worker that does not answer is named there, never an
    error. host_map: {"worker host name": "address reachable from here"}; a name that does not
    resolve is replaced by the store's host.
    Raises LiveError when the store cannot be reached or no rank registered a debug server.
    """
    from fr_analyze._trace import load

    keep = None
    if save is None:
        keep = tempfile.TemporaryDirectory(prefix="fr-analyze-live-")
        save = keep.name
    fetch(master, out=save, world_size=world_size, timeout=timeout, max_bytes=max_bytes,
          host_map=host_map)
    report = load(save).analyze()
    if keep is not None:
        report._live_dir = keep  # the files the report names live as long as it does
    return report


def _main(argv: Optional[List[str]] = None) -> int:
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
                       host_map=parse_host_map(args.host_map), progress=progress)
    except LiveError as e:
        if tty:
            print(file=sys.stderr)
        print(f"fr-analyze: {e}", file=sys.stderr)
        return 2
    if tty:
        print(file=sys.stderr)
    if not args.quiet:
        silent = result.silent
        print(f"live: {result.world_size} ranks registered at {result.master}; "
              f"{len(result.answered)} answered in {result.seconds:.1f} s"
              + (f"; no answer from rank(s) {','.join(map(str, silent))}" if silent else ""),
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(_main())
