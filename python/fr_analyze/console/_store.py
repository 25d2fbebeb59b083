"""The console's memory: analyses in a database (SQLite under --data by default, PostgreSQL with
--db) and their inputs as content-addressed, zstd-compressed blobs on disk.

Writes are atomic at the grain a reader sees: a blob is written to a temporary name and renamed,
and an analysis with its inputs, culprits and hosts is one transaction. An upload's inputs are
hashed and compressed into blobs after its row is saved (the answer does not wait for it; the
row names them UNHASHED until their hashes are recorded); until then the upload's folder
(uploads/<id>/files) holds them, and a server killed in between finishes the job when it starts
again (finish_storing). A server killed at any point leaves stored analyses
whole and at worst a blob no row names (removed by retention).
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import os
import pathlib
import shutil
import tempfile
import threading
import time
from typing import Callable, Dict, Iterable, List, Optional

import sqlalchemy as sa
import zstandard

from fr_analyze.console import _schema as schema

MIGRATIONS = pathlib.Path(__file__).resolve().parent / "migrations"


# The hash of an input saved before its content was hashed: an upload's row is saved (and
# answered) first; its inputs are hashed as they are stored, after the answer (set_input_hashes).
UNHASHED = ""


@dataclasses.dataclass
class InputFile:
    """One uploaded file: its path inside the upload, content hash (UNHASHED until the upload's
    inputs are stored), size, and why it was set aside before analysis ("" when analysed)."""

    path: str
    sha256: str
    size: int
    skipped: str = ""


@dataclasses.dataclass
class HostRole:
    host: str
    role: str  # initiated | victim
    kind: str = ""
    gpu: str = ""


@dataclasses.dataclass
class Analysis:
    id: str
    created_ms: int
    name: str = ""
    label: str = ""
    status: str = "done"
    error: str = ""
    failure_class: str = ""
    root_kind: str = ""
    confidence: str = ""
    culprit_text: str = ""
    hosts_text: str = ""
    host_count: int = 0
    input_bytes: int = 0
    seconds: float = 0.0
    fr_version: str = ""
    report: str = ""
    culprit_ranks: List[int] = dataclasses.field(default_factory=list)
    hosts: List[HostRole] = dataclasses.field(default_factory=list)
    inputs: List[InputFile] = dataclasses.field(default_factory=list)

    def summary(self) -> Dict[str, object]:
        """The fields of a history row (the API's list and the history page)."""
        return {
            "id": self.id, "created": iso_time(self.created_ms), "name": self.name,
            "label": self.label, "status": self.status, "error": self.error,
            "failure_class": self.failure_class, "root_cause_kind": self.root_kind,
            "confidence": self.confidence, "culprit_ranks": self.culprit_text,
            "hosts": self.hosts_text,
        }


def iso_time(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000.0))


def database_url(db: Optional[str], data: pathlib.Path) -> str:
    """--db as given (postgresql://... is driven by psycopg 3), else a SQLite file under --data."""
    if not db:
        return f"sqlite:///{data / 'console.sqlite3'}"
    if db.startswith("postgresql://") or db.startswith("postgres://"):
        return "postgresql+psycopg://" + db.split("://", 1)[1]
    return db


class BlobStore:
    """Files by the SHA-256 of their content, zstd-compressed: blobs/ab/abcdef....zst."""

    def __init__(self, root: pathlib.Path):
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)

    def path(self, sha256: str) -> pathlib.Path:
        return self.root / sha256[:2] / f"{sha256}.zst"

    def put(self, source: pathlib.Path, claim: Optional[Callable[[str], None]] = None,
            sha256: Optional[str] = None) -> tuple[str, int, int]:
        """Stores `source`; returns (sha256, size, stored size). A blob already present is not
        written again (the same dump uploaded twice costs its bytes once). `claim` is told the
        hash before the blob is looked for, so that nothing removes it from then on. `sha256`:
        the hash, when it is known already (the file is then not hashed again)."""
        sha = sha256 or file_sha256(source)
        if claim is not None:
            claim(sha)
        size = source.stat().st_size
        target = self.path(sha)
        if target.exists():
            return sha, size, target.stat().st_size
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=".part-")
        try:
            with os.fdopen(fd, "wb") as out, open(source, "rb") as f:
                zstandard.ZstdCompressor(level=3).copy_stream(f, out)
            os.replace(temporary, target)
        except BaseException:
            os.unlink(temporary)
            raise
        return sha, size, target.stat().st_size

    def restore(self, sha256: str, destination: pathlib.Path,
                mtime_ns: Optional[int] = None) -> None:
        """Writes the blob's content to `destination`, dated `mtime_ns` when given."""
        destination.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path(sha256), "rb") as f, open(destination, "wb") as out:
            zstandard.ZstdDecompressor().copy_stream(f, out, read_size=1 << 20,
                                                     write_size=1 << 20)
        if mtime_ns is not None:
            os.utime(destination, ns=(mtime_ns, mtime_ns))


def file_sha256(path: pathlib.Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class Store:
    """The database and the blobs behind the console."""

    def __init__(self, data: pathlib.Path, db: Optional[str] = None):
        self.data = data
        data.mkdir(parents=True, exist_ok=True)
        self.url = database_url(db, data)
        self.blobs = BlobStore(data / "blobs")
        self.engine = sa.create_engine(self.url, future=True, pool_pre_ping=True)
        if self.engine.dialect.name == "sqlite":
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
        # Blobs being written or read outside a transaction (an answered upload's inputs being
        # stored, inputs restored to make an output): never collected. The lock also makes a
        # collection one step for them: a blob is claimed before or after it.
        self._lock = threading.Lock()
        self._pending: collections.Counter = collections.Counter()

    def put_blob(self, source: pathlib.Path, held: List[str],
                 sha256: Optional[str] = None) -> tuple[str, int, int]:
        """BlobStore.put for an analysis in flight: the blob is held (its hash added to `held`)
        until release(held), once the analysis's row and blob rows are saved."""
        def claim(sha: str) -> None:
            self.hold([sha], held)

        return self.blobs.put(source, claim=claim, sha256=sha256)

    def hold(self, shas: Iterable[str], held: List[str]) -> None:
        """Keeps these blobs (and any blob being written) from collection until
        release(held): for work that writes or reads them outside a row's protection."""
        with self._lock:
            for sha in shas:
                self._pending[sha] += 1
                held.append(sha)

    def release(self, shas: Iterable[str]) -> None:
        """The analysis that put these blobs is saved (or gone): they may be collected."""
        with self._lock:
            for sha in shas:
                self._pending[sha] -= 1
                if self._pending[sha] <= 0:
                    del self._pending[sha]

    def outputs_dir(self, analysis_id: str) -> pathlib.Path:
        """The HTML, protobuf and Perfetto outputs of an analysis (its JSON is in its row)."""
        return self.data / "outputs" / analysis_id[:2] / analysis_id

    def migrate(self) -> None:
        """Brings the schema to the newest revision (Alembic, on this connection)."""
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        with self.engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")

    def save(self, analysis: Analysis, stored_blobs: Iterable[tuple[str, int, int]] = ()) -> None:
        """Writes the analysis with everything that belongs to it, in one transaction."""
        columns = {c.name for c in schema.analyses.c}
        row = {f.name: getattr(analysis, f.name) for f in dataclasses.fields(Analysis)
               if f.name in columns}
        with self.engine.begin() as c:
            c.execute(sa.delete(schema.inputs).where(schema.inputs.c.analysis_id == analysis.id))
            c.execute(sa.delete(schema.culprits).where(
                schema.culprits.c.analysis_id == analysis.id))
            c.execute(sa.delete(schema.analysis_hosts).where(
                schema.analysis_hosts.c.analysis_id == analysis.id))
            c.execute(sa.delete(schema.analyses).where(schema.analyses.c.id == analysis.id))
            c.execute(sa.insert(schema.analyses), [row])
            self._add_blob_rows(c, stored_blobs)
            if analysis.inputs:
                c.execute(sa.insert(schema.inputs), [
                    {"analysis_id": analysis.id, "path": i.path, "sha256": i.sha256,
                     "size": i.size, "skipped": i.skipped} for i in analysis.inputs])
            if analysis.culprit_ranks:
                c.execute(sa.insert(schema.culprits), [
                    {"analysis_id": analysis.id, "rank": r} for r in analysis.culprit_ranks])
            if analysis.hosts:
                c.execute(sa.insert(schema.analysis_hosts), [
                    {"analysis_id": analysis.id, "host": h.host, "gpu": h.gpu, "role": h.role,
                     "kind": h.kind, "created_ms": analysis.created_ms} for h in analysis.hosts])

    def set_input_hashes(self, analysis_id: str, hashes: Dict[str, str]) -> None:
        """Records the SHA-256 of inputs saved UNHASHED, by path, in one transaction."""
        i = schema.inputs
        if not hashes:
            return
        with self.engine.begin() as c:
            c.execute(sa.update(i).where(i.c.analysis_id == analysis_id).where(
                i.c.path == sa.bindparam("input_path")).values(sha256=sa.bindparam("sha")),
                [{"input_path": path, "sha": sha} for path, sha in hashes.items()])

    def add_blobs(self, stored_blobs: Iterable[tuple[str, int, int]]) -> None:
        """Records blobs written for an analysis already saved (its inputs name them)."""
        with self.engine.begin() as c:
            self._add_blob_rows(c, stored_blobs)

    def _add_blob_rows(self, c, stored_blobs: Iterable[tuple[str, int, int]]) -> None:
        rows = {sha: {"sha256": sha, "size": size, "stored_size": stored}
                for sha, size, stored in stored_blobs}
        if rows:
            # Two analyses of the same file may save at once: the second row is no error.
            c.execute(self._insert_blob(), list(rows.values()))

    def finish_storing(self, analysis_id: str, files: pathlib.Path) -> List[str]:
        """After a restart: hashes and stores the inputs of a saved analysis whose upload was
        still being stored when the server stopped, from the upload's folder `files`. A file
        hashed already is checked against its recorded hash first. Returns the paths that could
        not be stored (gone or changed: that input is lost)."""
        analysis = self.get(analysis_id)
        if analysis is None:
            return []
        hashes = {}
        for item in analysis.inputs:
            source = files / item.path
            if item.sha256 == UNHASHED and source.is_file():
                item.sha256 = hashes[item.path] = file_sha256(source)
        self.set_input_hashes(analysis_id, hashes)
        held: List[str] = []
        lost, stored = [], []
        try:
            for item in analysis.inputs:
                if item.sha256 != UNHASHED and self.blobs.path(item.sha256).exists():
                    stored.append((item.sha256, item.size,
                                   self.blobs.path(item.sha256).stat().st_size))
                    continue
                source = files / item.path
                if (item.sha256 == UNHASHED or not source.is_file()
                        or (item.path not in hashes and file_sha256(source) != item.sha256)):
                    lost.append(item.path)
                    continue
                stored.append(self.put_blob(source, held, sha256=item.sha256))
            self.add_blobs(stored)
        finally:
            self.release(held)
        return lost

    def _insert_blob(self):
        dialect = self.engine.dialect.name
        if dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        elif dialect == "sqlite":
            from sqlalchemy.dialects.sqlite import insert
        else:
            raise ValueError(f"the console stores on SQLite or PostgreSQL, not {dialect}")
        return insert(schema.blobs).on_conflict_do_nothing(index_elements=["sha256"])

    def get(self, analysis_id: str) -> Optional[Analysis]:
        with self.engine.connect() as c:
            row = c.execute(sa.select(schema.analyses).where(
                schema.analyses.c.id == analysis_id)).mappings().first()
            if row is None:
                return None
            analysis = Analysis(**dict(row))
            analysis.inputs = [
                InputFile(r.path, r.sha256, r.size, r.skipped)
                for r in c.execute(sa.select(schema.inputs).where(
                    schema.inputs.c.analysis_id == analysis_id).order_by(schema.inputs.c.id))]
            analysis.culprit_ranks = [r.rank for r in c.execute(sa.select(
                schema.culprits.c.rank).where(schema.culprits.c.analysis_id == analysis_id))]
            analysis.hosts = [HostRole(r.host, r.role, r.kind, r.gpu) for r in c.execute(
                sa.select(schema.analysis_hosts).where(
                    schema.analysis_hosts.c.analysis_id == analysis_id))]
            return analysis

    def exists(self, analysis_id: str) -> bool:
        with self.engine.connect() as c:
            return c.execute(sa.select(schema.analyses.c.id).where(
                schema.analyses.c.id == analysis_id)).first() is not None

    def history(self, *, kind: str = "", failure_class: str = "", host: str = "",
                rank: Optional[int] = None, label: str = "", since_ms: Optional[int] = None,
                until_ms: Optional[int] = None, limit: int = 50,
                offset: int = 0) -> tuple[List[Analysis], int]:
        """Analyses newest first that pass every filter given, and how many pass in all."""
        a = schema.analyses
        columns = [c for c in a.c if c.name != "report"]  # the history never needs the report
        conditions = []
        if kind:
            conditions.append(a.c.root_kind == kind)
        if failure_class:
            conditions.append(a.c.failure_class == failure_class)
        if label:
            conditions.append(a.c.label == label)
        if since_ms is not None:
            conditions.append(a.c.created_ms >= since_ms)
        if until_ms is not None:
            conditions.append(a.c.created_ms < until_ms)
        if host:
            conditions.append(a.c.id.in_(sa.select(schema.analysis_hosts.c.analysis_id).where(
                schema.analysis_hosts.c.host == host)))
        if rank is not None:
            conditions.append(a.c.id.in_(sa.select(schema.culprits.c.analysis_id).where(
                schema.culprits.c.rank == rank)))
        where = sa.and_(sa.true(), *conditions)
        with self.engine.connect() as c:
            total = c.execute(sa.select(sa.func.count()).select_from(a).where(where)).scalar_one()
            rows = c.execute(sa.select(*columns).where(where).order_by(
                a.c.created_ms.desc(), a.c.id).limit(limit).offset(offset)).mappings().all()
        return [Analysis(**dict(r)) for r in rows], int(total)

    @staticmethod
    def fleet_query():
        """The fleet's one query: host rows of failed jobs grouped by host, GPU, role and kind
        (read from the index ix_analysis_hosts_fleet alone, in its order)."""
        h, a = schema.analysis_hosts, schema.analyses
        return sa.select(
            h.c.host, h.c.gpu, h.c.role, h.c.kind, sa.func.count().label("n"),
            sa.func.sum(1.0 / sa.func.nullif(a.c.host_count, 0)).label("share"),
            sa.func.max(h.c.created_ms).label("last_ms"),
        ).select_from(h.join(a, a.c.id == h.c.analysis_id)).where(
            # Hosts of a job that did not fail ("healthy") took part in no failure.
            h.c.role.in_(["initiated", "victim"])).group_by(
            h.c.host, h.c.gpu, h.c.role, h.c.kind)

    def fleet(self) -> List[Dict[str, object]]:
        """Per host (and per GPU where known): failures initiated, failures suffered as a
        victim, by root-cause kind, in how many failed jobs, and the share expected by chance."""
        hosts: Dict[str, Dict[str, object]] = {}
        with self.engine.connect() as c:
            rows = c.execute(self.fleet_query()).all()
        for row in rows:
            entry = hosts.setdefault(row.host, {
                "host": row.host, "initiated": 0, "victim": 0, "by_kind": {}, "jobs": 0,
                "expected": 0.0, "gpus": {}, "last": 0})
            n = int(row.n)
            entry["jobs"] += n
            entry["expected"] += float(row.share or 0.0)
            entry["last"] = max(entry["last"], int(row.last_ms))
            if row.role == "initiated":
                entry["initiated"] += n
                by_kind = entry["by_kind"]
                by_kind[row.kind] = by_kind.get(row.kind, 0) + n
                if row.gpu:
                    gpus = entry["gpus"]
                    gpus[row.gpu] = gpus.get(row.gpu, 0) + n
            else:
                entry["victim"] += n
        for entry in hosts.values():
            entry["last"] = iso_time(entry["last"]) if entry["last"] else ""
            entry["expected"] = round(entry["expected"], 2)
        return sorted(hosts.values(), key=lambda e: (-e["initiated"], -e["jobs"], e["host"]))

    def failures_by_day(self) -> List[tuple[str, int]]:
        """Failed analyses per UTC day, oldest first (the fleet page's plot)."""
        a = schema.analyses
        # Integer division: true division then a cast rounds on PostgreSQL (an afternoon
        # would count for the next day).
        day = a.c.created_ms // 86400000
        with self.engine.connect() as c:
            rows = c.execute(sa.select(day.label("day"), sa.func.count()).where(
                a.c.failure_class.notin_(["", "none"])).group_by(day).order_by(day)).all()
        return [(time.strftime("%Y-%m-%d", time.gmtime(int(d) * 86400)), int(n)) for d, n in rows]

    def all_ids(self) -> List[str]:
        with self.engine.connect() as c:
            return [r[0] for r in c.execute(sa.select(schema.analyses.c.id).order_by(
                schema.analyses.c.created_ms))]

    def retain(self, keep_days: Optional[float], max_bytes: Optional[int]) -> int:
        """Deletes the oldest analyses older than keep_days, then while the stored blobs exceed
        max_bytes; then every blob no analysis names. Returns how many analyses went."""
        a = schema.analyses
        removed: List[str] = []
        with self.engine.connect() as c:
            ordered = c.execute(sa.select(a.c.id, a.c.created_ms).order_by(
                a.c.created_ms)).all()
        now_ms = int(time.time() * 1000)
        if keep_days is not None:
            cutoff = now_ms - int(keep_days * 86400000)
            removed += [r.id for r in ordered if r.created_ms < cutoff]
        if max_bytes is not None:
            remaining = [r.id for r in ordered if r.id not in set(removed)]
            total = self.stored_bytes()
            # The newest analysis stays whatever its size: it is the one just made, whose
            # answer the user holds (removing it would turn its link into a 404 at once).
            while len(remaining) > 1 and total > max_bytes:
                victim = remaining.pop(0)
                removed.append(victim)
                total -= self._bytes_only_in(victim, set(removed))
        for chunk_start in range(0, len(removed), 500):
            chunk = removed[chunk_start:chunk_start + 500]
            with self.engine.begin() as c:
                for table in (schema.inputs, schema.culprits, schema.analysis_hosts):
                    c.execute(sa.delete(table).where(table.c.analysis_id.in_(chunk)))
                c.execute(sa.delete(a).where(a.c.id.in_(chunk)))
            for analysis_id in chunk:
                shutil.rmtree(self.outputs_dir(analysis_id), ignore_errors=True)
        self.collect_blobs()
        return len(removed)

    def stored_bytes(self) -> int:
        with self.engine.connect() as c:
            return int(c.execute(sa.select(sa.func.coalesce(sa.func.sum(
                schema.blobs.c.stored_size), 0))).scalar_one())

    def _bytes_only_in(self, analysis_id: str, removed: set) -> int:
        """Stored bytes that deleting these analyses frees (blobs no other analysis names)."""
        i, b = schema.inputs, schema.blobs
        with self.engine.connect() as c:
            shas = {r[0] for r in c.execute(sa.select(i.c.sha256).where(
                i.c.analysis_id == analysis_id))}
            freed = 0
            for sha in shas:
                others = c.execute(sa.select(i.c.analysis_id).where(
                    i.c.sha256 == sha).where(i.c.analysis_id.notin_(list(removed)))).first()
                if others is None:
                    freed += int(c.execute(sa.select(b.c.stored_size).where(
                        b.c.sha256 == sha)).scalar() or 0)
        return freed

    def collect_blobs(self) -> None:
        """Removes blobs that no input names, rows and files (and files left by a crash), but
        never one an analysis in flight has stored and not yet saved its row for."""
        i, b = schema.inputs, schema.blobs
        with self._lock:
            with self.engine.begin() as c:
                named = {r[0] for r in c.execute(sa.select(i.c.sha256).distinct())}
                rows = {r[0] for r in c.execute(sa.select(b.c.sha256))}
                orphans = sorted(rows - named - set(self._pending))
                for start in range(0, len(orphans), 500):
                    c.execute(sa.delete(b).where(b.c.sha256.in_(orphans[start:start + 500])))
            for path in self.blobs.root.glob("*/*"):
                if path.name.startswith(".part-"):
                    # A blob being written belongs to an analysis in flight, which has claimed
                    # it: with none in flight, it was left by a crash.
                    if not self._pending:
                        path.unlink(missing_ok=True)
                    continue
                sha = path.name.split(".", 1)[0]
                if sha not in named and sha not in self._pending:
                    path.unlink(missing_ok=True)


def _sqlite_pragmas(connection, _record) -> None:
    # WAL: the pages read while an analysis is written; a busy timeout rather than an error when
    # two writers meet; foreign keys so that the schema's cascades hold as on PostgreSQL.
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()
