"""Runs one analysis for the console: the worker process under its limits, then the finished row
into the database in one transaction. The upload's inputs are hashed and compressed into the blob
store after the answer (hash_staged_inputs, store_staged_inputs). The HTML report and
the Perfetto timeline are made on their first download from the stored inputs (make_outputs), in
a worker under the same limits, and kept.

What the row says of hosts comes from the report alone: the initiating hosts are the root
cause's hosts and the culprit ranks' hosts; every other host the report names was a victim.
"""

from __future__ import annotations

import asyncio
import dataclasses
import fcntl
import json
import os
import pathlib
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from typing import List, Optional, Sequence

from fr_analyze.console._store import (UNHASHED, Analysis, HostRole, InputFile, Store,
                                       file_sha256)
from fr_analyze.console._uploads import HeldPipe, is_archive


@dataclasses.dataclass
class WorkerLimits:
    seconds: float = 600.0
    memory_bytes: int = 8 << 30
    concurrent: int = 2


@dataclasses.dataclass
class Running:
    """An analysis in flight (kept in memory only: a row is written when it ends)."""

    id: str
    name: str
    label: str
    started: float
    stage: str = "reading the upload"
    done: Optional[asyncio.Event] = None


def new_id() -> str:
    return uuid.uuid4().hex[:16]


def package_parent() -> str:
    import fr_analyze

    return str(pathlib.Path(fr_analyze.__file__).resolve().parent.parent)


def _parent_death_signal():
    """prctl(PR_SET_PDEATHSIG, SIGKILL) for the worker to call between fork and exec, looked up
    here in the server (nothing may be imported or allocated in the child), or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(1, signal.SIGKILL, 0, 0, 0)  # 1: PR_SET_PDEATHSIG


_PDEATHSIG = _parent_death_signal()


def _limit_worker(memory_bytes: int, parent: int) -> None:
    # In the child, before exec: its own session (so the whole group can be killed), death with
    # the server (a server killed with -9 leaves no analysis running for nobody), no core file,
    # and an address-space limit, last, that turns a runaway allocation into an error there.
    os.setsid()
    if _PDEATHSIG is not None:
        _PDEATHSIG()
    if os.getppid() != parent:  # the server died before the line above
        os._exit(1)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))


# What a process that hit its address-space limit prints, wherever the allocation failed: Python
# (MemoryError), C++ (std::bad_alloc, uncaught: SIGABRT), the dynamic loader or an import
# ("failed to map segment"), glibc ("cannot allocate memory"), a thread's stack ("Resource
# temporarily unavailable", EAGAIN from pthread_create).
MEMORY_SIGNS = ("MemoryError", "bad_alloc", "failed to map segment", "annot allocate memory",
                "Resource temporarily unavailable", "out of memory")


def worker_source(files: pathlib.Path, paste: bool) -> str:
    """What the worker is asked to read, relative to the upload's folder: the one folder the
    upload holds (a dropped or unpacked job: the report then names job/...), or all of it."""
    if paste:
        return "pasted.log"
    entries = list(files.iterdir())
    if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink():
        return entries[0].name
    return "."


class Workers:
    """Starts the analysis workers of one console. Each runs one job, read from its stdin
    (_worker.wait_for_job), under the limits. One is kept started ahead of need, Python and
    fr_analyze already imported (0.05 s and about 40 MB), so that an analysis does not wait for
    an interpreter to start."""

    def __init__(self, limits: WorkerLimits, home: pathlib.Path):
        self.limits = limits
        self.home = home  # the uploads folder: the workers' folder until they get a job
        self._spare: Optional[asyncio.Task] = None

    async def _start(self) -> asyncio.subprocess.Process:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [package_parent()] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        # glibc reserves 64 MiB of address space per thread's arena: under RLIMIT_AS that
        # counts as used, so the limit would hit on a many-core machine before the memory is.
        env.setdefault("MALLOC_ARENA_MAX", "2")
        # A pipe for the archive members an upload holds in memory (HeldPipe): its read end
        # is the worker's, its write end stays here until the job is handed over.
        held_read, held_write = os.pipe()
        try:
            # 1 MiB (the unprivileged most) instead of 64 KiB: a member's blocks then pass in
            # one write each, not in sixteen turns of the writer and the reader.
            fcntl.fcntl(held_write, fcntl.F_SETPIPE_SZ, 1 << 20)
        except (OSError, AttributeError):
            pass
        # The folder on the command line says whose worker it is (ps, and the tests).
        argv = [sys.executable, "-m", "fr_analyze.console._worker", "--wait", str(self.home),
                "--held-fd", str(held_read)]
        parent, memory = os.getpid(), self.limits.memory_bytes
        try:
            process = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE, env=env, cwd=str(self.home),
                pass_fds=(held_read,), preexec_fn=lambda: _limit_worker(memory, parent))
        except BaseException:
            os.close(held_write)
            raise
        finally:
            os.close(held_read)
        process.held = HeldPipe(held_write)
        return process

    def prepare(self) -> None:
        """Starts the spare worker, unless one is started or starting."""
        if self._spare is None:
            self._spare = asyncio.ensure_future(self._start())

    async def take(self) -> asyncio.subprocess.Process:
        """A started worker waiting for its job (the spare when it is alive), and a new spare
        behind it. Raises OSError or SubprocessError when no process can start."""
        spare, self._spare = self._spare, None
        process = None
        if spare is not None:
            try:
                process = await spare
            except (OSError, subprocess.SubprocessError):
                process = None
            if process is not None and process.returncode is not None:
                process = None  # it died waiting (killed from outside)
        if process is None:
            process = await self._start()
        self.prepare()
        return process

    def close(self) -> None:
        """Stops the spare (the server is stopping)."""
        spare, self._spare = self._spare, None
        if spare is None:
            return
        if spare.done() and not spare.cancelled() and spare.exception() is None:
            _kill_group(spare.result().pid)
            spare.result().held.close()
        else:
            spare.cancel()


class EarlyWorker:
    """The worker of an upload that is still arriving. Taken when the upload begins, it is told
    each file of the upload as soon as the file is written and closed ({"file": PATH} lines,
    _worker.py) and reads it then, at the lowest CPU priority, while the rest is received and
    unpacked; its job comes once the upload is whole (run_worker's `process`). One at a time per console (`Slot`), so that the memory of the dumps it holds
    adds at most one worker's to what the analysis semaphore allows."""

    class Slot:
        """Whether a console's one early worker is in use."""

        def __init__(self):
            self.taken = False

    def __init__(self, process: asyncio.subprocess.Process, slot: "EarlyWorker.Slot"):
        self.process = process
        self._slot = slot
        self._loop = asyncio.get_running_loop()
        # Lines not yet sent. The event loop is woken once per batch, not per file: each
        # wake-up takes the GIL from the threads that unpack.
        self._lock = threading.Lock()
        self._pending: List[bytes] = []
        # The worker reads held members from its pipe from now on (HeldPipe).
        self.held: HeldPipe = process.held
        if process.stdin is not None:
            process.stdin.write(b'{"held": true}\n')

    @classmethod
    async def take(cls, workers: "Workers", slot: "EarlyWorker.Slot") -> Optional["EarlyWorker"]:
        """A worker for an upload beginning now, or None when another upload has the slot or
        no process can start (the analysis then takes its worker once the upload is whole)."""
        if slot.taken:
            return None
        slot.taken = True
        try:
            return cls(await workers.take(), slot)
        except (OSError, subprocess.SubprocessError):
            slot.taken = False
            return None

    def file_complete(self, path: pathlib.Path) -> None:
        """A file of the upload is written (UploadFolder.on_file_complete): from any thread."""
        if is_archive(path.name):  # unpacked into files of its own, then removed
            return
        line = (json.dumps({"file": os.path.abspath(path)}) + "\n").encode()
        with self._lock:
            self._pending.append(line)
            if len(self._pending) > 1:
                return  # a send is scheduled already and takes this line too
        try:
            self._loop.call_soon_threadsafe(self._send)
        except RuntimeError:  # the loop is closed: the server is stopping
            pass

    def _send(self) -> None:
        with self._lock:
            lines, self._pending = self._pending, []
        stdin = self.process.stdin
        if self.process.returncode is None and stdin is not None and not stdin.is_closing():
            stdin.write(b"".join(lines))

    def release(self) -> None:
        """Frees the slot once the worker's analysis ended, or its upload was refused: a worker
        still running then (it never got its job) is stopped, its group killed (asyncio reaps
        it)."""
        if self.process.returncode is None:
            _kill_group(self.process.pid)
        self.held.close()
        self._slot.taken = False


async def run_worker(workers: Workers, files: pathlib.Path, output: pathlib.Path, paste: bool,
                     outputs: Optional[Sequence[str]] = None,
                     process: Optional[asyncio.subprocess.Process] = None) -> Optional[str]:
    """Runs a worker on the upload's folder; returns None when it wrote its outputs, else why
    it failed (what the analysis page and the API show). `outputs`: the outputs to make
    instead of an upload's report (_worker.LATER). `process`: a worker taken already (an
    EarlyWorker's), else one is taken. The time limit counts from the job's handing over."""
    limits = workers.limits
    try:
        process = process or await workers.take()
    except (OSError, subprocess.SubprocessError) as error:  # no process (fork failed, EAGAIN)
        return f"the analysis process could not start: {error}"
    # No member is held any more: the worker's held files end here (EOF), before its job.
    process.held.close()
    job = {"folder": str(files.resolve()), "source": worker_source(files, paste),
           "output": str(output.resolve()), "paste": paste, "outputs": list(outputs or [])}
    try:
        _, stderr = await asyncio.wait_for(
            process.communicate((json.dumps(job) + "\n").encode()), timeout=limits.seconds)
    except asyncio.TimeoutError:
        _kill_group(process.pid)
        await process.wait()
        return (f"the analysis ran past its time limit ({limits.seconds:g} s, "
                "--analysis-seconds) and was stopped")
    except asyncio.CancelledError:
        _kill_group(process.pid)
        raise
    if process.returncode != 0:
        text = stderr.decode("utf-8", "replace")
        tail = [line.strip() for line in text.strip().splitlines()[-3:]]
        if any(sign in text for sign in MEMORY_SIGNS):
            return (f"the analysis ran out of its memory limit ({limits.memory_bytes >> 20} MiB,"
                    " --analysis-memory) and was stopped")
        if process.returncode < 0:
            try:
                name = signal.Signals(-process.returncode).name
            except ValueError:
                name = f"signal {-process.returncode}"
            return f"the analysis process was killed ({name})"
        return "the analysis process failed: " + (" / ".join(tail) or
                                                   f"exit status {process.returncode}")
    error_file = output / "error.json"
    if error_file.exists():
        return json.loads(error_file.read_text())["error"]
    if not outputs and not (output / "report.json").exists():
        # A worker whose stdin closed before its job came exits quietly without a report.
        return "the analysis process ended without a report"
    return None


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def hash_staged_inputs(store: Store, analysis: Analysis, files: pathlib.Path) -> None:
    """Takes the SHA-256 of the inputs of a saved analysis that were saved UNHASHED, from its
    upload's folder, and records them (in `analysis` too). What the answer does not wait for; a
    server killed before the end does it when it starts (Store.finish_storing)."""
    hashes = {}
    for item in analysis.inputs:
        if item.sha256 == UNHASHED:
            item.sha256 = hashes[item.path] = file_sha256(files / item.path)
    store.set_input_hashes(analysis.id, hashes)


def store_staged_inputs(store: Store, analysis: Analysis, files: pathlib.Path) -> None:
    """Compresses the inputs of a saved analysis from its upload's folder into the blob store
    (hashed already: hash_staged_inputs), then records the blobs. What the answer does not
    wait for; a server killed before the end finishes it when it starts (Store.finish_storing)."""
    held: List[str] = []  # every blob being written is kept from collection until recorded
    try:
        blobs = [store.put_blob(files / item.path, held, sha256=item.sha256)
                 for item in analysis.inputs]
        store.add_blobs(blobs)
    finally:
        store.release(held)


def is_paste(analysis: Analysis) -> bool:
    """Whether the analysis read one pasted log (analysed as such, not as a job's folder)."""
    return [i.path for i in analysis.inputs] == ["pasted.log"]


def restore_inputs(store: Store, analysis: Analysis, files: pathlib.Path) -> None:
    """Writes a stored analysis's inputs back under `files` as they were uploaded. When the
    analysis dated the dumps by their files' times, the files get that time again, so that what
    is made from them (a re-run, the HTML report) says the same dump time as the stored report.
    Raises FileNotFoundError when a blob is gone."""
    mtime_ns = None
    if analysis.report:
        read = json.loads(analysis.report).get("inputs", {})
        if (read.get("dump_time_source") == "file modification time"
                and int(read.get("dump_time_ns", 0) or 0) > 0):
            mtime_ns = int(read["dump_time_ns"])
    for item in analysis.inputs:
        store.blobs.restore(item.sha256, files / item.path, mtime_ns)


def summarize(analysis: Analysis, report: dict) -> None:
    """Fills the row's columns from the report: class, kind, culprits and the hosts' roles."""
    verdict = report.get("verdict", {})
    cause = verdict.get("root_cause", {}) or {}
    analysis.failure_class = verdict.get("failure_class", "")
    analysis.root_kind = cause.get("kind", "")
    analysis.confidence = verdict.get("confidence", "")
    culprits = set(int(r) for r in verdict.get("culprit_ranks", []))
    culprits |= set(int(r) for r in cause.get("ranks", []))
    analysis.culprit_ranks = sorted(culprits)
    analysis.culprit_text = _ranges(analysis.culprit_ranks)

    hosts: List[str] = []
    initiating: List[str] = []

    def seen(host: str, initiated: bool = False) -> None:
        if not host:
            return
        if host not in hosts:
            hosts.append(host)
        if initiated and host not in initiating:
            initiating.append(host)

    for host in cause.get("hosts", []):
        seen(host, True)
    for rank in report.get("ranks", []):
        seen(rank.get("host", ""), rank.get("role") == "culprit")
    for log in report.get("log_files", []):
        seen(log.get("host", ""))
    for clock in report.get("timeline", {}).get("hosts", []):
        seen(clock.get("host", ""))
    for line in cause.get("evidence", []):
        seen(line.get("host", ""))
    failed = analysis.failure_class not in ("", "none")
    gpu = (cause.get("detail", {}) or {}).get("bus_id", "")
    kind = analysis.root_kind or analysis.failure_class
    analysis.hosts = []
    for host in hosts:
        if not failed:
            role = "healthy"
        else:
            role = "initiated" if host in initiating else "victim"
        analysis.hosts.append(HostRole(host, role, kind if role == "initiated" else "",
                                       gpu if role == "initiated" else ""))
    analysis.host_count = len(hosts)
    analysis.hosts_text = ", ".join(initiating) if initiating else ""


def _ranges(ranks: List[int]) -> str:
    """3,5-7: what a person reads (the history's culprit column)."""
    pieces, start = [], None
    for i, rank in enumerate(ranks):
        if start is None:
            start = rank
        if i + 1 == len(ranks) or ranks[i + 1] != rank + 1:
            pieces.append(str(start) if start == rank else f"{start}-{rank}")
            start = None
    return ",".join(pieces)


async def analyse(store: Store, running: Running, upload: pathlib.Path, paste: bool,
                  inputs: List[InputFile], workers: Workers, semaphore: asyncio.Semaphore,
                  created_ms: Optional[int] = None,
                  early: Optional[EarlyWorker] = None, mark=None) -> Analysis:
    """Analyses the files under `upload`/files (or the one pasted log in it) and saves the row
    with `inputs` (their bytes are the caller's to store, or stored already); returns it. The
    upload's folder stays: the caller removes it, once its inputs are stored. `early`: the
    worker that read the files as they arrived; it runs the analysis, and is released here.
    `mark(stage)`, when given, is called as the worker ends ("worker") and the row is saved
    ("save"): the answer's Server-Timing."""
    try:
        return await _analyse(store, running, upload, paste, inputs, workers, semaphore,
                              created_ms, early, mark or (lambda _: None))
    finally:
        if early is not None:
            early.release()


async def _analyse(store: Store, running: Running, upload: pathlib.Path, paste: bool,
                   inputs: List[InputFile], workers: Workers, semaphore: asyncio.Semaphore,
                   created_ms: Optional[int], early: Optional[EarlyWorker],
                   mark) -> Analysis:
    import fr_analyze

    output = upload.parent / (upload.name + ".out")
    analysis = Analysis(id=running.id, created_ms=created_ms or int(time.time() * 1000),
                        name=running.name, label=running.label,
                        fr_version=fr_analyze.__version__)
    started = time.monotonic()
    try:
        running.stage = "waiting for a worker"
        async with semaphore:
            running.stage = "analysing"
            failure = await run_worker(workers, upload / "files", output, paste,
                                       process=early.process if early else None)
        mark("worker")
        analysis.inputs = inputs
        analysis.input_bytes = sum(i.size for i in inputs)
        analysis.seconds = round(time.monotonic() - started, 3)
        if failure is not None:
            analysis.status, analysis.error = "failed", failure
        else:
            text = (output / "report.json").read_text()
            analysis.report = text
            summarize(analysis, json.loads(text))
        running.stage = "saving"
        await asyncio.to_thread(_save, store, analysis, output if failure is None else None)
        mark("save")
        return analysis
    finally:
        shutil.rmtree(output, ignore_errors=True)


def outputs_dir(store: Store, analysis_id: str) -> pathlib.Path:
    return store.outputs_dir(analysis_id)


def _save(store: Store, analysis: Analysis, output: Optional[pathlib.Path]) -> None:
    """The row, then its outputs beside the database. Outputs of an earlier run (a re-run's
    analysis) go: they would contradict it, and are made again from the inputs when asked
    for. A server killed between the row and the outputs leaves a row without its report.pb,
    which is then made on its first download, like the HTML and the timeline."""
    store.save(analysis)
    target = outputs_dir(store, analysis.id)
    shutil.rmtree(target, ignore_errors=True)
    if output is not None and (output / "report.pb").exists():
        place_output(output / "report.pb", target / "report.pb")


def place_output(source: pathlib.Path, target: pathlib.Path) -> None:
    """Moves a finished output into the analysis's outputs folder in one rename (a reader sees
    it whole or not at all)."""
    for attempt in range(3):
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(source, target)
            return
        except FileNotFoundError:
            # The folder went between the two calls (a re-run clearing its outputs): again.
            if attempt == 2 or not source.exists():
                raise


async def make_outputs(store: Store, analysis: Analysis, names: Sequence[str],
                       work: pathlib.Path, workers: Workers,
                       semaphore: asyncio.Semaphore,
                       inputs: Optional[pathlib.Path] = None) -> Optional[str]:
    """Makes the outputs `names` of a stored analysis (_worker.LATER) from its stored inputs,
    in a worker under the same limits as an analysis, and keeps them in its outputs folder.
    `work` is a new folder for the restored inputs; `inputs`, when given, is a folder that
    holds them already (the upload's, before the storing removes it), read in place. Returns
    None, or why they could not be made."""
    files, output = work / "files", work.with_name(work.name + ".out")
    held: List[str] = []
    try:
        if inputs is not None:
            files = inputs
        else:
            # The blobs are read outside any transaction: retention must not collect them now.
            store.hold([i.sha256 for i in analysis.inputs], held)
            try:
                await asyncio.to_thread(restore_inputs, store, analysis, files)
            except FileNotFoundError:
                return "the analysis's stored inputs are gone (removed by retention?)"
        async with semaphore:
            failure = await run_worker(workers, files, output, is_paste(analysis),
                                       outputs=names)
        if failure is not None:
            return failure
        target = outputs_dir(store, analysis.id)

        def keep():
            for name in names:
                if (output / name).exists():
                    place_output(output / name, target / name)

        await asyncio.to_thread(keep)
        if not await asyncio.to_thread(store.exists, analysis.id):
            # Retention removed the analysis meanwhile: its outputs would be nobody's.
            await asyncio.to_thread(shutil.rmtree, target, True)
            return "the analysis was removed (retention) while its outputs were made"
        return None
    finally:
        store.release(held)
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(output, ignore_errors=True)
