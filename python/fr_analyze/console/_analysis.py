"""Runs one analysis for the console: the worker process under its limits, the inputs into the
blob store (at the same time), and the finished row into the database in one transaction.

What the row says of hosts comes from the report alone: the initiating hosts are the root
cause's hosts and the culprit ranks' hosts; every other host the report names was a victim.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import pathlib
import resource
import shutil
import signal
import subprocess
import sys
import time
import uuid
from typing import Dict, List, Optional

from fr_analyze.console._store import Analysis, HostRole, InputFile, Store


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


async def run_worker(files: pathlib.Path, output: pathlib.Path, paste: bool,
                     limits: WorkerLimits) -> Optional[str]:
    """Runs the worker on the upload's folder; returns None when it wrote its outputs, else why
    it failed (what the analysis page and the API show)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [package_parent()] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    # glibc reserves 64 MiB of address space per thread's arena: under RLIMIT_AS that counts as
    # used, so the limit would hit on a many-core machine before the memory is.
    env.setdefault("MALLOC_ARENA_MAX", "2")
    argv = [sys.executable, "-m", "fr_analyze.console._worker", worker_source(files, paste),
            str(output.resolve())]
    if paste:
        argv.append("--paste")
    parent = os.getpid()
    try:
        process = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE, env=env, cwd=str(files),
            preexec_fn=lambda: _limit_worker(limits.memory_bytes, parent))
    except (OSError, subprocess.SubprocessError) as error:  # no process (fork failed, EAGAIN)
        return f"the analysis process could not start: {error}"
    try:
        _, stderr = await asyncio.wait_for(process.communicate(), timeout=limits.seconds)
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
    return None


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def store_inputs(store: Store, root: pathlib.Path, skipped: Dict[str, str],
                 held: Optional[List[str]] = None) -> tuple[List[InputFile], List[tuple]]:
    """Every file of the upload into the blob store (in path order). With `held`, each blob is
    kept from retention (its hash added to `held`) until the caller's store.release(held)."""
    inputs, blobs = [], []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        relative = path.relative_to(root).as_posix()
        if held is None:
            sha, size, stored = store.blobs.put(path)
        else:
            sha, size, stored = store.put_blob(path, held)
        inputs.append(InputFile(relative, sha, size, skipped.get(relative, "")))
        blobs.append((sha, size, stored))
    return inputs, blobs


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
                  limits: WorkerLimits, semaphore: asyncio.Semaphore,
                  skipped: Optional[Dict[str, str]] = None,
                  created_ms: Optional[int] = None) -> Analysis:
    """Analyses the files under `upload` (or the one pasted log in it), stores inputs and the
    row, removes the upload folder; returns the stored analysis."""
    import fr_analyze

    output = upload.parent / (upload.name + ".out")
    analysis = Analysis(id=running.id, created_ms=created_ms or int(time.time() * 1000),
                        name=running.name, label=running.label,
                        fr_version=fr_analyze.__version__)
    started = time.monotonic()
    held: List[str] = []  # blobs kept from retention until the row naming them is saved
    try:
        running.stage = "waiting for a worker"
        async with semaphore:
            running.stage = "analysing"
            # The inputs are stored while the worker reads them: two cores, two jobs.
            storing = asyncio.to_thread(store_inputs, store, upload / "files", skipped or {},
                                        held)
            failure, (inputs, blobs) = await asyncio.gather(
                run_worker(upload / "files", output, paste, limits), storing)
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
        await asyncio.to_thread(store.save, analysis, blobs)
        # After the row: a server killed in between leaves a row without its HTML report (the
        # page then offers the JSON), never files no row names.
        await asyncio.to_thread(_keep_outputs, store, analysis.id,
                                output if failure is None else None)
        return analysis
    finally:
        store.release(held)
        shutil.rmtree(output, ignore_errors=True)
        shutil.rmtree(upload, ignore_errors=True)


def outputs_dir(store: Store, analysis_id: str) -> pathlib.Path:
    return store.outputs_dir(analysis_id)


def _keep_outputs(store: Store, analysis_id: str, output: Optional[pathlib.Path]) -> None:
    """The HTML, protobuf and Perfetto outputs beside the database (the JSON is in the row);
    with no output (the analysis failed), those of an earlier run go: they would contradict it."""
    target = outputs_dir(store, analysis_id)
    if output is None:
        shutil.rmtree(target, ignore_errors=True)
        return
    staging = target.with_name(target.name + ".new")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name in ("report.html", "report.pb", "timeline.perfetto-trace"):
        if (output / name).exists():
            shutil.move(str(output / name), staging / name)
    shutil.rmtree(target, ignore_errors=True)
    os.replace(staging, target)
