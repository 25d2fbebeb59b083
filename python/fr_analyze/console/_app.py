"""The console's web application (Starlette): the pages, the JSON API behind them, and the checks
every request passes (token, cross-site POSTs, size and time limits).

Requests only read and write files and rows; every analysis runs in a worker process
(_analysis.py), so a large or crafted upload never holds the event loop. An upload is answered
once its row is saved: its inputs are hashed and compressed into the blob store after the
answer, and its HTML report and Perfetto timeline are made on their first download, then kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hmac
import json
import math
import pathlib
import secrets
import re
import shutil
import sys
import time
import urllib.parse
from typing import Dict, List, Optional, Tuple

import jinja2
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import (FileResponse, HTMLResponse, JSONResponse, RedirectResponse,
                                 Response)
from starlette.routing import Route

from fr_analyze.console import _analysis, _locks, _worker
from fr_analyze.console._store import UNHASHED, Analysis, InputFile, Store, iso_time
from fr_analyze.console._uploads import (Limits, MultipartWriter, UploadError, UploadFolder,
                                         HELD_MANIFEST, is_archive, unpack_archive,
                                         write_held)

TEMPLATES = pathlib.Path(__file__).resolve().parent / "templates"
PAGE_SIZE = 50
CSRF_COOKIE = "fr_csrf"
TOKEN_COOKIE = "fr_token"
KINDS = ["xid", "host_oom", "cuda_oom", "host_kill", "transport_error", "python_exception",
         "cuda_error", "segfault", "collective_timeout", "init_failure", "non_finite", "none",
         "unknown"]
CLASSES = ["missing_participant", "gpu_stall", "op_mismatch", "size_mismatch", "dtype_mismatch",
           "p2p_unmatched", "stuck_collective", "insufficient_evidence", "none"]


@dataclasses.dataclass
class Settings:
    data: pathlib.Path
    db: Optional[str] = None
    token: Optional[str] = None
    keep_days: Optional[float] = None
    max_bytes: Optional[int] = None
    limits: Limits = dataclasses.field(default_factory=Limits)
    worker: _analysis.WorkerLimits = dataclasses.field(default_factory=_analysis.WorkerLimits)


# What the next action is for a host that keeps starting failures, by the kind it starts.
NEXT_ACTION = {
    "xid": "reset or replace the GPU named by its Xid lines (PCI bus id), then drain the node "
           "until it passes a burn-in",
    "cuda_error": "reset or replace the GPU; run the vendor's diagnostics (dcgmi diag) on it",
    "transport_error": "check the node's NIC, cable and switch port (link flaps, IB errors)",
    "host_oom": "drain the node and check its memory (DIMM errors) and what else runs on it",
    "host_kill": "drain the node: something outside the job keeps killing its processes",
    "segfault": "drain the node and check its driver, memory and kernel logs",
    "init_failure": "check the node's network configuration (interfaces, IB, firewall)",
}
DEFAULT_ACTION = "drain the node and look at its hardware and system logs"


class ConsoleApp:
    """The server's state: store, limits, analyses in flight."""

    def __init__(self, settings: Settings, sweep_uploads: bool = True):
        self.settings = settings
        self.store = Store(settings.data, settings.db)
        self.store.migrate()
        self.uploads = settings.data / "uploads"
        if sweep_uploads:
            # (Not from `serve --reanalyze`, which may run beside a server using them.)
            self.recover_uploads()
        self.uploads.mkdir(parents=True, exist_ok=True)
        self.workers = _analysis.Workers(settings.worker, self.uploads)
        self.early_slot = _analysis.EarlyWorker.Slot()
        self.running: Dict[str, _analysis.Running] = {}
        self.semaphore: Optional[asyncio.Semaphore] = None
        self.tasks: set = set()
        # Analyses answered whose inputs are still being compressed into the blob store: what
        # reads the stored inputs (a re-run, making an output) waits for them.
        self.storing: Dict[str, asyncio.Task] = {}
        # Those of them whose inputs' hashes are not recorded yet (set once they are): what
        # shows the inputs' hashes (the API's analysis) waits for them.
        self.hashing: Dict[str, asyncio.Event] = {}
        # Those of them whose held archive members are not yet written into the upload's folder
        # (set once they are): what reads the folder (a download made from it) waits for them.
        self.writing_held: Dict[str, asyncio.Event] = {}
        # Outputs being made, by (analysis, name): a second download waits for the first's.
        self.making: Dict[Tuple[str, str], asyncio.Task] = {}
        # Per analysis still storing its inputs: the tasks that make outputs from its upload's
        # folder (the inputs as uploaded), which the storing waits for before removing it.
        self.upload_readers: Dict[str, set] = {}
        # Analyses whose upload's folder is being removed: no new reader may start on it.
        self.upload_leaving: set = set()
        # Outputs just made from an upload's folder, by (analysis, name), until their first
        # download says so (a Server-Timing entry): what the benchmark and the tests read.
        self.made_from_upload: set = set()
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                                 autoescape=True, undefined=jinja2.StrictUndefined)
        env.filters["pct"] = lambda v: f"{100 * v:.0f}%"
        self.templates = env

    # --- plumbing -------------------------------------------------------------------------
    def recover_uploads(self) -> None:
        """What a server that stopped (killed, crashed) left in uploads/. A folder named after
        a saved analysis holds inputs that were answered for but not yet all compressed into
        the blob store: they are stored now, before any request is served. Every other folder
        is an upload that never got its row (nothing refers to it): removed."""
        if not self.uploads.is_dir():
            return
        for entry in sorted(self.uploads.iterdir()):
            if (_ANALYSIS_ID.fullmatch(entry.name) and entry.is_dir()
                    and (entry / "files").is_dir()):
                try:
                    write_held(entry)
                except Exception as error:  # noqa: BLE001 (said; then what is lost is said)
                    print(f"fr-analyze serve: analysis {entry.name}: its held archive members "
                          f"could not be written ({error})", file=sys.stderr, flush=True)
                lost = self.store.finish_storing(entry.name, entry / "files")
                for path in lost:
                    print(f"fr-analyze serve: analysis {entry.name}: input {path!r} was lost "
                          "before it was stored", file=sys.stderr, flush=True)
            rerun = _RERUN_FOLDER.fullmatch(entry.name)
            if rerun and _locks.is_held(_locks.lock_path(self.settings.data, rerun.group(1))):
                # `serve --reanalyze`, running beside this server, works in it now.
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)

    async def inputs_hashed(self, analysis_id: str) -> None:
        """Returns once the analysis's inputs have their SHA-256 recorded."""
        hashed = self.hashing.get(analysis_id)
        if hashed is not None:
            await hashed.wait()

    async def inputs_stored(self, analysis_id: str) -> None:
        """Returns once the analysis's inputs are all in the blob store."""
        task = self.storing.get(analysis_id)
        if task is not None:
            await asyncio.shield(task)

    def sem(self) -> asyncio.Semaphore:
        if self.semaphore is None:
            self.semaphore = asyncio.Semaphore(self.settings.worker.concurrent)
        return self.semaphore

    def page(self, request: Request, name: str, status: int = 200, **context) -> HTMLResponse:
        csrf = request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(24)
        nonce = secrets.token_urlsafe(12)
        html = self.templates.get_template(name).render(csrf=csrf, nonce=nonce, **context)
        response = HTMLResponse(html, status_code=status)
        response.headers["Content-Security-Policy"] = (
            f"default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
            f"script-src 'nonce-{nonce}'; connect-src 'self'; frame-src 'self'; "
            "form-action 'self'; base-uri 'none'; frame-ancestors 'self'")
        if CSRF_COOKIE not in request.cookies:
            response.set_cookie(CSRF_COOKIE, csrf, httponly=True, samesite="strict")
        return response

    def error(self, request: Request, status: int, message: str, file: str = "") -> Response:
        if wants_json(request):
            body = {"error": message}
            if file:
                body["file"] = file
            return JSONResponse(body, status_code=status)
        return self.page(request, "error.html", status=status, http_status=status, message=message,
                         file=file)

    # --- reading an upload ----------------------------------------------------------------
    async def body_chunks(self, request: Request):
        """The request body, piece by piece: 408 when the client stops sending, 413 past the
        size limit (the declared length is checked before a byte is read). These refusals end
        the request: nothing more of its body is read."""
        limits = self.settings.limits
        request.state.body_ended = False
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limits.max_request_bytes:
            request.state.body_ended = True
            raise UploadError(413, f"the request is {declared} bytes, more than "
                              f"{limits.max_request_bytes} (--max-request-bytes)")
        received = 0
        while True:
            try:
                message = await asyncio.wait_for(request.receive(),
                                                 timeout=limits.idle_seconds)
            except asyncio.TimeoutError:
                request.state.body_ended = True
                raise UploadError(408, f"the upload stalled: nothing arrived for "
                                  f"{limits.idle_seconds:g} s")
            if message.get("type") != "http.request":  # http.disconnect: the client went away
                request.state.body_ended = True
                raise UploadError(400, "the upload was cut off: the client disconnected")
            chunk = message.get("body", b"")
            more = message.get("more_body", False)
            request.state.body_ended = not more
            received += len(chunk)
            if received > limits.max_request_bytes:
                request.state.body_ended = True
                raise UploadError(413, f"the request is over {limits.max_request_bytes} bytes "
                                  "(--max-request-bytes)")
            if chunk:
                yield chunk
            if not more:
                return

    async def drain(self, request: Request, limit: int = 64 << 20) -> None:
        """Reads and drops what is left of a refused request's body (up to `limit` bytes), so
        that the client, still sending, reads the refusal: a server that answers and closes
        with a body unread resets the connection, and the client sees that instead."""
        ended = getattr(request.state, "body_ended", None)
        if ended is None:  # refused before a byte of the body was read (type, boundary)
            declared = request.headers.get("content-length", "")
            ended = (declared == "0" or (not declared and
                                         "transfer-encoding" not in request.headers)
                     or (declared.isdigit() and int(declared) > limit))
        if ended:
            return
        dropped = 0
        while dropped <= limit:
            try:
                message = await asyncio.wait_for(request.receive(),
                                                 timeout=self.settings.limits.idle_seconds)
            except Exception:  # silent for the idle time, or gone: the answer goes anyway
                return
            if message.get("type") != "http.request":
                return
            dropped += len(message.get("body", b""))
            if not message.get("more_body", False):
                return

    async def read_upload(self, request: Request, analysis_id: str,
                          early: Optional[_analysis.EarlyWorker] = None):
        """Writes the request's evidence to uploads/<id>/files, telling `early` (when given)
        of each file as it is written; returns (folder, is paste, fields, inputs: every file
        kept, with its size; hashed later)."""
        upload = self.uploads / analysis_id
        upload.mkdir()
        folder = UploadFolder(upload / "files", self.settings.limits)
        if early is not None:
            folder.on_file_complete = early.file_complete
            # A tar's dumps go to the worker's memory; written to disk after the answer.
            folder.holder = early.held
        content_type = request.headers.get("content-type", "")
        fields: Dict[str, str] = {}
        paste = False
        if content_type.startswith("multipart/form-data"):
            boundary = _boundary(content_type)
            writer = MultipartWriter(folder, boundary)
            try:
                try:
                    async for chunk in self.body_chunks(request):
                        writer.feed(chunk)
                    writer.finish()
                finally:
                    writer.close()
                mark_stage(request.scope, "body")
                # Tar archives were unpacked as they arrived (ArchiveFollower); a zip is
                # unpacked below, once it is whole.
                await asyncio.to_thread(writer.join_followers)
            except BaseException as error:
                # An archive found unreadable after its last piece arrived is the reason the
                # upload then stalled or ended badly: that is the answer, not the stall.
                failed = writer.follower_error()
                # Nothing may still write into the folder that is about to be removed.
                await asyncio.to_thread(writer.abandon_followers)
                if isinstance(error, UploadError) and failed is not None:
                    raise failed from None
                raise
            fields = {k: v.decode("utf-8", "replace") for k, v in writer.fields.items()}
            if fields.get("csrf") is not None:
                fields.pop("csrf")
            followed = {path for path, _ in writer.followers}
            archives = [(path, sent) for path, sent in writer.uploaded
                        if is_archive(sent) and path not in followed]
            for path, sent in archives:
                await asyncio.to_thread(unpack_archive, folder, folder.root / path, sent)
            folder.write_held_manifest()
            mark_stage(request.scope, "unpack")
            log = fields.get("log", "")
            if not writer.uploaded and log.strip():
                _, out = folder.new_file("pasted.log")
                with out:
                    out.write(log.encode())
                paste = True
            elif log.strip():
                _, out = folder.new_file("pasted.log")
                with out:
                    out.write(log.encode())
        elif content_type.startswith("text/plain") or not content_type:
            _, out = folder.new_file("pasted.log")
            visible = False
            with out:
                async for chunk in self.body_chunks(request):
                    folder.count_unpacked(len(chunk), "pasted.log")
                    out.write(chunk)
                    visible = visible or bool(chunk.strip())
            if not visible:
                raise UploadError(400, "the pasted log is empty")
            paste = True
        else:
            raise UploadError(415, f"send text/plain (a pasted log) or multipart/form-data "
                              f"(files), not {content_type.split(';')[0]!r}")
        if not folder.sizes:
            raise UploadError(400, "the upload holds no file and no pasted log")
        # Hashed after the answer, with their compression into the blob store (UNHASHED).
        inputs = [InputFile(path, UNHASHED, size) for path, size in folder.listing()]
        return upload, paste, fields, inputs

    async def start_analysis(self, request: Request, wait: bool):
        """Reads the upload and starts its analysis; returns (Running, task)."""
        analysis_id = _analysis.new_id()
        # A job's files (not a pasted log) are read by the analysis worker as they arrive.
        early = None
        if request.headers.get("content-type", "").startswith("multipart/form-data"):
            early = await _analysis.EarlyWorker.take(self.workers, self.early_slot)
        try:
            upload, paste, fields, inputs = await self.read_upload(request, analysis_id, early)
        except BaseException as error:
            if early is not None:
                early.release()
            shutil.rmtree(self.uploads / analysis_id, ignore_errors=True)
            if isinstance(error, UploadError):
                await self.drain(request)
            raise
        name = (fields.get("name") or request.query_params.get("name") or "")[:200]
        label = (fields.get("label") or request.query_params.get("label") or "")[:200]
        running = _analysis.Running(analysis_id, name, label, time.time(),
                                    done=asyncio.Event())
        self.running[analysis_id] = running
        task = self.keep_task(self._analyse(running, upload, paste, inputs, staged=True,
                                            early=early,
                                            mark=lambda name: mark_stage(request.scope, name)))
        return running, task

    def keep_task(self, coroutine) -> asyncio.Task:
        """A task that outlives the request that started it (held until it ends)."""
        task = asyncio.create_task(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    async def _analyse(self, running: _analysis.Running, upload: pathlib.Path, paste: bool,
                       inputs: List[InputFile], staged: bool,
                       created_ms: Optional[int] = None,
                       early: Optional[_analysis.EarlyWorker] = None,
                       mark=None) -> Analysis:
        """`staged`: the upload's folder is the only copy of the inputs (a new upload), to be
        stored once the row is saved; else (a re-run) they are stored already. `mark`: as
        analyse's."""
        try:
            analysis = await _analysis.analyse(self.store, running, upload, paste, inputs,
                                               self.workers, self.sem(), created_ms=created_ms,
                                               early=early, mark=mark)
        except BaseException:
            shutil.rmtree(upload, ignore_errors=True)
            raise
        finally:
            self.running.pop(running.id, None)
            running.done.set()
        if staged:
            self.hashing[analysis.id] = asyncio.Event()
            self.writing_held[analysis.id] = asyncio.Event()
            self.storing[analysis.id] = self.keep_task(self._store_inputs(analysis, upload))
        else:
            await asyncio.to_thread(shutil.rmtree, upload, True)
            await self.retain()
        return analysis

    async def _store_inputs(self, analysis: Analysis, upload: pathlib.Path) -> None:
        """After the answer: the upload's files hashed, then into the blob store, then the
        folder goes and retention runs (it counts the new blobs). On failure the folder stays,
        and the next start of the server stores it (recover_uploads)."""
        try:
            try:
                try:
                    # The members the worker read from memory: on disk now, as uploaded.
                    await asyncio.to_thread(write_held, upload)
                finally:
                    self.writing_held.pop(analysis.id).set()
                await asyncio.to_thread(_analysis.hash_staged_inputs, self.store, analysis,
                                        upload / "files")
            finally:
                self.hashing.pop(analysis.id).set()
            await asyncio.to_thread(_analysis.store_staged_inputs, self.store, analysis,
                                    upload / "files")
            # Downloads being made from the folder finish first. No await between the last
            # check and the mark below, so none can start in between.
            while self.upload_readers.get(analysis.id):
                await asyncio.gather(*self.upload_readers[analysis.id], return_exceptions=True)
            self.upload_leaving.add(analysis.id)
            try:
                await asyncio.to_thread(shutil.rmtree, upload, True)
            finally:
                self.upload_leaving.discard(analysis.id)
        except Exception as error:  # disk full, database gone: said, and retried at start
            print(f"fr-analyze serve: analysis {analysis.id}: storing its inputs failed "
                  f"({error}); the next start of the server stores them", file=sys.stderr,
                  flush=True)
            return
        finally:
            self.storing.pop(analysis.id, None)
        await self.retain()

    async def retain(self) -> None:
        if self.settings.keep_days is not None or self.settings.max_bytes is not None:
            await asyncio.to_thread(self.store.retain, self.settings.keep_days,
                                    self.settings.max_bytes)

    async def rerun(self, analysis_id: str) -> Optional[Analysis]:
        """Analyses a stored analysis's inputs again with this fr-analyze, in place."""
        await self.inputs_stored(analysis_id)
        old = await asyncio.to_thread(self.store.get, analysis_id)
        if old is None:
            return None
        if not old.inputs:
            raise UploadError(409, "this analysis was posted as a finished report: it has no "
                              "inputs to analyse again")
        # One re-run of an analysis at a time, across processes: this server's button, the
        # API, and `serve --reanalyze` beside it (_locks.Busy when another holds it).
        with _locks.hold(_locks.lock_path(self.settings.data, analysis_id),
                         f"a re-run of analysis {analysis_id}"):
            upload = self.uploads / f"{analysis_id}-rerun-{secrets.token_hex(4)}"
            try:
                await asyncio.to_thread(_analysis.restore_inputs, self.store, old,
                                        upload / "files")
            except FileNotFoundError:
                shutil.rmtree(upload, ignore_errors=True)
                raise UploadError(500, "the analysis's stored inputs are incomplete: it cannot "
                                  "run again") from None
            running = _analysis.Running(analysis_id, old.name, old.label, time.time(),
                                        done=asyncio.Event())
            return await self._analyse(running, upload, _analysis.is_paste(old), old.inputs,
                                       staged=False, created_ms=old.created_ms)

    async def output(self, analysis: Analysis, name: str) -> Tuple[Optional[pathlib.Path], str]:
        """The file of an output of a stored analysis (report.pb, report.html, the timeline),
        made from its stored inputs on the first request and kept: (path, "") or (None, why
        not). Requests for one output while it is being made wait for that one making."""
        path = _analysis.outputs_dir(self.store, analysis.id) / name
        if path.exists():
            return path, ""
        if not can_make(analysis, name):
            return None, "no such download"
        key = (analysis.id, name)
        task = self.making.get(key)
        if task is None:
            task = self.keep_task(self._make_output(analysis, name))
            self.making[key] = task
            task.add_done_callback(lambda _: self.making.pop(key, None))
        # Shielded: a client that goes away does not stop what the next one will want.
        failure = await asyncio.shield(task)
        if failure is not None:
            return None, failure
        if not path.exists():  # the worker wrote none: a job with no dumps has no timeline
            return None, "no such download"
        return path, ""

    async def _make_output(self, analysis: Analysis, name: str) -> Optional[str]:
        upload_files = self.uploads / analysis.id / "files"
        if (analysis.id in self.storing and analysis.id not in self.upload_leaving
                and upload_files.is_dir()):
            # Right after the answer the inputs are still being compressed into the blob store,
            # and their upload's folder is still there: made from it, the first download waits
            # for the analysis alone, not for the storing and a restore. The storing removes the
            # folder only once this is done (see _store_inputs).
            readers = self.upload_readers.setdefault(analysis.id, set())
            me = asyncio.current_task()
            readers.add(me)
            try:
                held = self.writing_held.get(analysis.id)
                if held is not None:
                    await held.wait()
                if (upload_files.parent / HELD_MANIFEST).exists():
                    # Writing the held members failed (the server's log says why): the folder
                    # lacks them, and an output made from it would be of the other files only.
                    return ("the upload's dumps could not be written to disk yet; the next "
                            "start of the server writes and stores them")
                failure = await self._make_output_from(analysis, name, upload_files)
                if failure is None and len(self.made_from_upload) < 1000:
                    self.made_from_upload.add((analysis.id, name))
                return failure
            finally:
                readers.discard(me)
                if not readers:
                    self.upload_readers.pop(analysis.id, None)
        if analysis.id in self.storing:
            await self.inputs_stored(analysis.id)
            # Read again: the inputs' hashes are recorded now.
            analysis = await asyncio.to_thread(self.store.get, analysis.id) or analysis
        return await self._make_output_from(analysis, name, None)

    async def _make_output_from(self, analysis: Analysis, name: str,
                                inputs: Optional[pathlib.Path]) -> Optional[str]:
        """`inputs`: the upload's folder to read, or None to restore the stored inputs."""
        names = [name]
        kept = _analysis.outputs_dir(self.store, analysis.id)
        if name == "report.html" and not (kept / "report.pb").exists():
            # Made with it at almost no cost. One kept already stays: it was written with the
            # analysis itself, from the files as uploaded (their own times).
            names.append("report.pb")
        work = self.uploads / f"{analysis.id}-outputs-{secrets.token_hex(4)}"
        return await _analysis.make_outputs(self.store, analysis, names, work, self.workers,
                                            self.sem(), inputs=inputs)


_ANALYSIS_ID = re.compile(r"[0-9a-f]{16}")
_RERUN_FOLDER = re.compile(r"([0-9a-f]{16})-rerun-[0-9a-f]+")


def can_make(analysis: Analysis, name: str) -> bool:
    """Whether an output can be made for this analysis: it is done and has inputs (a posted
    report has none), and for the timeline, dumps were read."""
    if analysis.status != "done" or not analysis.inputs or name not in _worker.LATER:
        return False
    if name == "timeline.perfetto-trace":
        report = json.loads(analysis.report) if analysis.report else {}
        return bool(report.get("inputs", {}).get("ranks_loaded"))
    return True


# Where a request's handlers note when each stage of its work ended (the ASGI scope: it is the
# request's own, and outlives the handler's task into the answer's headers).
STAGES_KEY = "fr_analyze.stages"

# What each stage's Server-Timing entry measures, from the end of the one before it.
STAGE_DESCRIPTIONS = {
    "body": "the request's body received and written",
    "unpack": "the archives unpacked, past the body",
    "worker": "the analysis worker: the dumps left to read, the analysis, the report",
    "save": "the row saved",
}


def mark_stage(scope: dict, name: str) -> None:
    scope.setdefault(STAGES_KEY, []).append((name, time.perf_counter()))


def server_timing(elapsed_ms: float, started: float, stages: list) -> str:
    """The Server-Timing header: `app` (the whole request, first: what clients that read one
    number take), then each stage noted by the handlers, as long as it took."""
    entries = [f"app;dur={elapsed_ms:.1f}"]
    previous = started
    for name, at in stages:
        entries.append(f'{name};dur={1000 * (at - previous):.1f};'
                       f'desc="{STAGE_DESCRIPTIONS.get(name, name)}"')
        previous = at
    return ", ".join(entries)


def wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api/")


def _boundary(content_type: str) -> bytes:
    for piece in content_type.split(";")[1:]:
        key, _, value = piece.strip().partition("=")
        if key.lower() == "boundary" and value:
            return value.strip('"').encode("latin-1")
    raise UploadError(400, "multipart/form-data without a boundary")


def build_app(settings: Settings) -> Starlette:
    console = ConsoleApp(settings)

    def same_origin(request: Request) -> bool:
        """Cross-site POSTs are refused: a browser names where a request came from (Origin,
        Sec-Fetch-Site); command-line clients send neither."""
        site = request.headers.get("sec-fetch-site")
        if site not in (None, "same-origin", "none"):
            return False
        origin = request.headers.get("origin")
        if origin is None:
            return True
        # A page sent with no-referrer makes a browser's own form post say "Origin: null";
        # Sec-Fetch-Site still says it came from this site.
        if origin == "null" and site == "same-origin":
            return True
        parsed = urllib.parse.urlsplit(origin)
        return parsed.netloc == request.headers.get("host", "")

    def csrf_ok(request: Request, fields_token: Optional[str]) -> bool:
        cookie = request.cookies.get(CSRF_COOKIE)
        return bool(cookie and fields_token and hmac.compare_digest(cookie, fields_token))

    async def refuse(request: Request) -> Optional[Response]:
        """The answer for a request that may not go on (no token, cross-site POST), or None."""
        token = settings.token
        if token:
            given = request.headers.get("authorization", "")
            given = given[7:] if given.lower().startswith("bearer ") else ""
            given = given or request.cookies.get(TOKEN_COOKIE, "")
            query = request.query_params.get("token", "")
            if query and hmac.compare_digest(query.encode(), token.encode()):
                # A link with ?token=: remember it in a cookie and drop it from the address.
                response = RedirectResponse(str(request.url.remove_query_params("token")), 303)
                response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict")
                return response
            if not (given and hmac.compare_digest(given.encode(), token.encode())):
                if wants_json(request):
                    return JSONResponse({"error": "this console needs its token "
                                         "(Authorization: Bearer ...)"}, status_code=401)
                return HTMLResponse("<!DOCTYPE html><title>fr-analyze console</title><p>This "
                                    "console needs its token: open it with ?token=...</p>",
                                    status_code=401)
        if request.method == "POST" and not same_origin(request):
            return JSONResponse({"error": "cross-site request refused"}, status_code=403)
        return None

    class Guard:
        """Pure ASGI (the body streams through untouched): the checks above, then the headers
        every answer carries, with the server time it took (Server-Timing)."""

        def __init__(self, app):
            self.app = app

        async def __call__(self, scope, receive, send):
            if scope["type"] != "http":
                return await self.app(scope, receive, send)
            answer = await refuse(Request(scope))
            if answer is not None:
                return await answer(scope, receive, send)
            started = time.perf_counter()
            stages = scope.setdefault(STAGES_KEY, [])

            async def send_with_headers(message):
                if message["type"] == "http.response.start":
                    elapsed = 1000 * (time.perf_counter() - started)
                    headers = list(message.get("headers", []))
                    names = {k.lower() for k, _ in headers}
                    headers.append((b"server-timing",
                                    server_timing(elapsed, started, stages).encode()))
                    headers.append((b"x-content-type-options", b"nosniff"))
                    for name, value in ((b"x-frame-options", b"SAMEORIGIN"),
                                        (b"referrer-policy", b"no-referrer")):
                        if name not in names:
                            headers.append((name, value))
                    message = {**message, "headers": headers}
                await send(message)

            await self.app(scope, receive, send_with_headers)

    # --- pages ----------------------------------------------------------------------------
    async def index(request: Request):
        return console.page(request, "index.html", limits=settings.limits)

    async def submit(request: Request):
        """The page's form: a paste or files; answers with the analysis page (303)."""
        # The CSRF token travels in the query string as well as the form, so that it is checked
        # before the body is read (a cross-site upload never reaches the disk).
        if not csrf_ok(request, request.query_params.get("csrf")):
            return console.error(request, 403, "the form's token is missing or stale: reload "
                                 "the page and send again")
        try:
            running, _ = await console.start_analysis(request, wait=False)
        except UploadError as error:
            return console.error(request, error.status, error.message, error.file)
        return RedirectResponse(f"/analyses/{running.id}", status_code=303)

    async def analysis_page(request: Request):
        analysis_id = request.path_params["id"]
        running = console.running.get(analysis_id)
        if running is not None:
            return console.page(request, "running.html", running=running,
                                elapsed=time.time() - running.started)
        analysis = await asyncio.to_thread(console.store.get, analysis_id)
        if analysis is None:
            return console.error(request, 404, f"no analysis {analysis_id!r}")
        report = json.loads(analysis.report) if analysis.report else {}
        outputs = _analysis.outputs_dir(console.store, analysis_id)
        # What can be downloaded: kept already, or made on the first download.
        return console.page(request, "analysis.html", a=analysis, report=report,
                            created=iso_time(analysis.created_ms),
                            has=lambda name: (outputs / name).exists() or can_make(analysis,
                                                                                     name),
                            skipped=report.get("inputs", {}).get("files_skipped", []),
                            rejected=report.get("inputs", {}).get("files_rejected", []))

    async def download(request: Request):
        analysis_id, name = request.path_params["id"], request.path_params["name"]
        if name == "report.json":
            analysis = await asyncio.to_thread(console.store.get, analysis_id)
            if analysis is None or not analysis.report:
                return console.error(request, 404, "no such report")
            return Response(analysis.report, media_type="application/json", headers={
                "Content-Disposition": f'attachment; filename="{analysis_id}.json"'})
        kinds = {"report.html": "text/html", "report.pb": "application/octet-stream",
                 "timeline.perfetto-trace": "application/octet-stream"}
        if name not in kinds:
            return console.error(request, 404, "no such download")
        path = _analysis.outputs_dir(console.store, analysis_id) / name
        if not path.exists():
            analysis = await asyncio.to_thread(console.store.get, analysis_id)
            if analysis is None:
                return console.error(request, 404, "no such download")
            path, why = await console.output(analysis, name)
            if path is None:
                status = 404 if why == "no such download" else 500
                return console.error(request, status, why if status == 404 else
                                     f"the {name} could not be made: {why}")
        headers = {}
        if (analysis_id, name) in console.made_from_upload:
            console.made_from_upload.discard((analysis_id, name))
            headers["Server-Timing"] = 'inputs;desc="the upload\'s folder"'
        if name == "report.html":
            # The report is shown in a frame of the analysis page: no scripts, no network.
            headers["Content-Security-Policy"] = ("default-src 'none'; style-src 'unsafe-inline';"
                                                  " img-src data:; sandbox")
        else:
            headers["Content-Disposition"] = f'attachment; filename="{analysis_id}-{name}"'
        return FileResponse(path, media_type=kinds[name], headers=headers)

    async def rerun_form(request: Request):
        form_token = request.query_params.get("csrf")
        if not csrf_ok(request, form_token):
            return console.error(request, 403, "the form's token is missing or stale")
        return await _rerun(request)

    async def _rerun(request: Request):
        try:
            analysis = await console.rerun(request.path_params["id"])
        except UploadError as error:
            return console.error(request, error.status, error.message)
        except _locks.Busy as busy:
            return console.error(request, 409, f"this analysis is being analysed again by "
                                 f"{busy.holder}: try again when it is done")
        if analysis is None:
            return console.error(request, 404, "no such analysis")
        if wants_json(request):
            return JSONResponse(api_analysis(analysis))
        return RedirectResponse(f"/analyses/{analysis.id}", status_code=303)

    def filters(request: Request) -> dict:
        q = request.query_params
        rank = q.get("rank", "")
        return {
            "kind": q.get("kind", ""), "failure_class": q.get("class", ""),
            "host": q.get("host", ""), "label": q.get("label", ""),
            "rank": int(rank) if rank.isdigit() else None,
            "since_ms": _time_ms(q.get("since", "")), "until_ms": _time_ms(q.get("until", "")),
        }

    async def history_page(request: Request):
        page_number = max(1, _int(request.query_params.get("page"), 1))
        chosen = filters(request)
        rows, total = await asyncio.to_thread(
            console.store.history, limit=PAGE_SIZE, offset=(page_number - 1) * PAGE_SIZE,
            **chosen)
        pages = max(1, math.ceil(total / PAGE_SIZE))
        query = {k: v for k, v in request.query_params.items() if k != "page" and v}
        return console.page(request, "history.html", rows=rows, total=total, page=page_number,
                            pages=pages, q=request.query_params, kinds=KINDS, classes=CLASSES,
                            running=list(console.running.values()),
                            link=lambda n: "?" + urllib.parse.urlencode({**query, "page": n}))

    async def fleet_page(request: Request):
        hosts = await asyncio.to_thread(console.store.fleet)
        days = await asyncio.to_thread(console.store.failures_by_day)
        return console.page(request, "fleet.html", hosts=hosts[:500],
                            offenders=repeat_offenders(hosts), plot=plot_svg(days),
                            total_hosts=len(hosts))

    # --- API ------------------------------------------------------------------------------
    async def api_post(request: Request):
        content_type = request.headers.get("content-type", "")
        if content_type.startswith("application/json"):
            return await api_post_report(request)
        try:
            running, task = await console.start_analysis(request, wait=True)
        except UploadError as error:
            return JSONResponse(error.to_dict(), status_code=error.status)
        analysis = await asyncio.shield(task)
        if analysis.status == "failed":
            return JSONResponse({"id": analysis.id, "error": analysis.error},
                                status_code=422)
        return Response(api_created(analysis), status_code=201,
                        media_type="application/json",
                        headers={"Location": f"/api/analyses/{analysis.id}"})

    async def api_post_report(request: Request):
        """A finished report (`fr-analyze analyze --format json`) recorded without inputs."""
        body = bytearray()
        try:
            async for chunk in console.body_chunks(request):
                body += chunk
                if len(body) > 256 << 20:
                    raise UploadError(413, "a report over 256 MiB")
            report = json.loads(body)
            if not isinstance(report, dict) or not isinstance(report.get("verdict"), dict):
                raise UploadError(400, "the JSON body is not an fr-analyze report (no verdict)")
        except UploadError as error:
            await console.drain(request)
            return JSONResponse(error.to_dict(), status_code=error.status)
        except (ValueError, UnicodeDecodeError) as error:
            return JSONResponse({"error": f"the body is not JSON: {error}"}, status_code=400)
        import fr_analyze

        analysis = Analysis(id=_analysis.new_id(), created_ms=int(time.time() * 1000),
                            name=request.query_params.get("name", "")[:200],
                            label=request.query_params.get("label", "")[:200],
                            fr_version=fr_analyze.__version__,
                            report=json.dumps(report, indent=2) + "\n")
        _analysis.summarize(analysis, report)
        await asyncio.to_thread(console.store.save, analysis, [])
        return Response(api_created(analysis), status_code=201, media_type="application/json",
                        headers={"Location": f"/api/analyses/{analysis.id}"})

    async def api_get(request: Request):
        await console.inputs_hashed(request.path_params["id"])
        analysis = await asyncio.to_thread(console.store.get, request.path_params["id"])
        if analysis is None:
            running = console.running.get(request.path_params["id"])
            if running is not None:
                return JSONResponse({"id": running.id, "status": "running",
                                     "stage": running.stage}, status_code=202)
            return JSONResponse({"error": "no such analysis"}, status_code=404)
        return JSONResponse(api_analysis(analysis))

    async def api_list(request: Request):
        q = request.query_params
        limit = min(max(_int(q.get("limit"), PAGE_SIZE), 1), 1000)
        offset = max(_int(q.get("offset"), 0), 0)
        rows, total = await asyncio.to_thread(console.store.history, limit=limit, offset=offset,
                                              **filters(request))
        return JSONResponse({"total": total, "analyses": [r.summary() for r in rows]})

    async def api_fleet(request: Request):
        hosts = await asyncio.to_thread(console.store.fleet)
        return JSONResponse({"hosts": hosts, "repeat_offenders": repeat_offenders(hosts)})

    routes = [
        Route("/", index),
        Route("/analyses", submit, methods=["POST"]),
        Route("/analyses", history_page),
        Route("/analyses/{id}", analysis_page),
        Route("/analyses/{id}/rerun", rerun_form, methods=["POST"]),
        Route("/analyses/{id}/{name}", download),
        Route("/fleet", fleet_page),
        Route("/api/analyses", api_post, methods=["POST"]),
        Route("/api/analyses", api_list),
        Route("/api/analyses/{id}", api_get),
        Route("/api/analyses/{id}/rerun", _rerun, methods=["POST"]),
        Route("/api/fleet", api_fleet),
    ]
    @contextlib.asynccontextmanager
    async def lifespan(_app):
        console.workers.prepare()  # the first upload finds a worker started
        yield
        # A clean stop first finishes storing the inputs of analyses already answered for (a
        # kill leaves that to the next start: recover_uploads).
        pending = list(console.storing.values())
        if pending:
            await asyncio.wait(pending, timeout=120)
        console.workers.close()

    app = Starlette(routes=routes, middleware=[Middleware(Guard)], lifespan=lifespan)
    app.state.console = console
    return app


def api_analysis(analysis: Analysis) -> dict:
    return {
        "id": analysis.id, "created": iso_time(analysis.created_ms), "name": analysis.name,
        "label": analysis.label, "status": analysis.status, "error": analysis.error,
        "report": json.loads(analysis.report) if analysis.report else None,
        "inputs": [{"path": i.path, "size": i.size, "sha256": i.sha256, "skipped": i.skipped}
                   for i in analysis.inputs],
    }


def api_created(analysis: Analysis) -> str:
    # The report exactly as --format json wrote it, byte for byte, inside the answer.
    return '{"id": %s, "report": %s}' % (json.dumps(analysis.id), analysis.report.rstrip())


# The chance, over the whole fleet, that some host of it looks like a repeat offender by luck
# alone: a host is listed only when its count would come by chance less often than this, once
# multiplied by the number of hosts looked at (Bonferroni).
OFFENDER_FALSE_ALARM = 0.05


def chance_of_at_least(count: int, jobs: int, share: float) -> float:
    """P(X >= count) for X ~ Binomial(jobs, share): how often a host that ran in `jobs` failed
    jobs, with `share` the mean of its fair shares (1 / hosts of each job), would initiate
    `count` of them by chance. For jobs of unequal sizes the binomial of the mean share spreads
    wider than the true sum of unequal chances, so the chance is overstated, never understated:
    a host is listed a little later, never wrongly sooner."""
    if count <= 0:
        return 1.0
    if count > jobs or share <= 0.0:
        return 0.0
    if share >= 1.0:
        return 1.0
    log_p, log_q = math.log(share), math.log1p(-share)
    total = 0.0
    for k in range(count, jobs + 1):
        log_term = (math.lgamma(jobs + 1) - math.lgamma(k + 1) - math.lgamma(jobs - k + 1)
                    + k * log_p + (jobs - k) * log_q)
        term = math.exp(log_term)
        total += term
        if term < total * 1e-12:  # the tail's terms only shrink past the mode
            break
    return min(1.0, total)


def repeat_offenders(hosts: list) -> list:
    """Hosts that initiate far more failures than their share of the failed jobs they ran in:
    at least 2 initiated, and a count that chance would give some host of the fleet less than
    OFFENDER_FALSE_ALARM of the time (the binomial tail of its own count, times the number of
    hosts looked at)."""
    offenders = []
    looked_at = sum(1 for h in hosts if h["jobs"] > 0)
    for h in hosts:
        initiated, expected, jobs = h["initiated"], h["expected"], h["jobs"]
        if initiated < 2 or jobs <= 0:
            continue
        chance = min(1.0, looked_at * chance_of_at_least(initiated, jobs, expected / jobs))
        if chance < OFFENDER_FALSE_ALARM:
            kind = max(h["by_kind"].items(), key=lambda kv: kv[1])[0] if h["by_kind"] else ""
            action = NEXT_ACTION.get(kind, DEFAULT_ACTION)
            gpus = sorted(h["gpus"].items(), key=lambda kv: -kv[1])
            if gpus and kind in ("xid", "cuda_error"):
                action = action.replace("named by its Xid lines (PCI bus id)",
                                        f"at PCI {gpus[0][0]}")
            offenders.append({"host": h["host"], "initiated": initiated, "expected": expected,
                              "jobs": h["jobs"], "kind": kind, "gpus": dict(gpus),
                              "chance": float(f"{chance:.3g}"), "next_action": action})
    return offenders


def plot_svg(days: list) -> str:
    """Failures per day as an inline SVG bar chart (server-drawn: the page needs no script)."""
    if not days:
        return ""
    width, height, pad = 720, 160, 24
    peak = max(n for _, n in days)
    bar = max(1.0, (width - 2 * pad) / len(days))
    bars = []
    for i, (day, n) in enumerate(days):
        h = (height - 2 * pad) * n / peak
        x = pad + i * bar
        bars.append(f'<rect x="{x:.1f}" y="{height - pad - h:.1f}" width="{max(bar - 1, 1):.1f}"'
                    f' height="{h:.1f}" fill="#b3261e"><title>{day}: {n} failures</title></rect>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" '
            f'height="{height}" aria-label="failures per day">'
            f'<text x="{pad}" y="14" font-size="12">{peak} failures/day at most</text>'
            f'<text x="{pad}" y="{height - 6}" font-size="11">{days[0][0]}</text>'
            f'<text x="{width - pad}" y="{height - 6}" font-size="11" text-anchor="end">'
            f'{days[-1][0]}</text>' + "".join(bars) + "</svg>")


def _int(value: Optional[str], default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _time_ms(value: str) -> Optional[int]:
    """2026-12-01 or 2026-12-01T10:00[:00][Z] (UTC) or epoch seconds."""
    value = value.strip()
    if not value:
        return None
    if value.replace(".", "", 1).isdigit():
        return int(float(value) * 1000)
    import datetime

    try:
        parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    return int(parsed.timestamp() * 1000)
