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


def _limit_worker(memory_bytes: int) -> None:
    # In the child, before exec: its own session (so the whole group can be killed) and an
    # address-space limit that turns a runaway allocation into a MemoryError there.
    os.setsid()
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


async def run_worker(source: pathlib.Path, output: pathlib.Path, paste: bool,
                     limits: WorkerLimits) -> Optional[str]:
    """Runs the worker; returns None when it wrote its outputs, else why it failed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [package_parent()] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    argv = [sys.executable, "-m", "fr_analyze.console._worker", str(source), str(output)]
    if paste:
        argv.append("--paste")
    process = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE, env=env, cwd=str(output.parent),
        preexec_fn=lambda: _limit_worker(limits.memory_bytes))
    try:
        _, stderr = await asyncio.wait_for(process.communicate(), timeout=limits.seconds)
    except asyncio.TimeoutError:
        _kill_group(process.pid)
        await process.wait()
        return f"the analysis ran past its time limit ({limits.seconds:g} s) and was stopped"
    except asyncio.CancelledError:
        _kill_group(process.pid)
        raise
    if process.returncode != 0:
        tail = stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        if process.returncode < 0:
            name = signal.Signals(-process.returncode).name
            return f"the analysis process was killed ({name})"
        if any("MemoryError" in line or "bad_alloc" in line for line in tail):
            return (f"the analysis ran out of its memory limit ({limits.memory_bytes >> 20} MiB)"
                    " and was stopped")
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


def store_inputs(store: Store, root: pathlib.Path,
                 skipped: Dict[str, str]) -> tuple[List[InputFile], List[tuple]]:
    """Every file of the upload into the blob store (in path order)."""
    inputs, blobs = [], []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        relative = path.relative_to(root).as_posix()
        sha, size, stored = store.blobs.put(path)
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
    try:
        running.stage = "waiting for a worker"
        async with semaphore:
            running.stage = "analysing"
            # The inputs are stored while the worker reads them: two cores, two jobs.
            storing = asyncio.to_thread(store_inputs, store, upload / "files", skipped or {})
            failure, (inputs, blobs) = await asyncio.gather(
                run_worker(upload / "files" if not paste else upload / "files" / "pasted.log",
                           output, paste, limits), storing)
        analysis.inputs = inputs
        analysis.input_bytes = sum(i.size for i in inputs)
        analysis.seconds = round(time.monotonic() - started, 3)
        if failure is not None:
            analysis.status, analysis.error = "failed", failure
        else:
            text = (output / "report.json").read_text()
            analysis.report = text
            summarize(analysis, json.loads(text))
            _keep_outputs(store, analysis.id, output)
        running.stage = "saving"
        await asyncio.to_thread(store.save, analysis, blobs)
        return analysis
    finally:
        shutil.rmtree(output, ignore_errors=True)
        shutil.rmtree(upload, ignore_errors=True)


def outputs_dir(store: Store, analysis_id: str) -> pathlib.Path:
    return store.data / "outputs" / analysis_id[:2] / analysis_id


def _keep_outputs(store: Store, analysis_id: str, output: pathlib.Path) -> None:
    """The HTML, protobuf and Perfetto outputs beside the database (the JSON is in the row)."""
    target = outputs_dir(store, analysis_id)
    staging = target.with_name(target.name + ".new")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name in ("report.html", "report.pb", "timeline.json"):
        if (output / name).exists():
            shutil.move(str(output / name), staging / name)
    shutil.rmtree(target, ignore_errors=True)
    os.replace(staging, target)
