"""Uploads, from the request's bytes to a folder that `fr-analyze analyze` reads: multipart bodies
parsed as they stream in and written straight to disk, archives (.tar, .tar.gz/.tgz, .tar.zst,
.zip) unpacked member by member, and every limit checked before the bytes that would break it
are kept.

Nothing uploaded is executed or interpreted beyond its names and bytes. A path that would leave
the upload's folder (absolute, `..`, a drive), a link, a device or a FIFO refuses the whole upload
with the member named: a job's archive holds none of those, so one is a mistake or an attack.
"""

from __future__ import annotations

import bz2
import dataclasses
import gzip
import json
import lzma
import os
import pathlib
import queue
import shutil
import stat
import tarfile
import threading
import time
import zipfile
import zlib
from typing import BinaryIO, Callable, Dict, Iterable, List, Optional, Tuple

import zstandard

try:  # ISA-L's inflate (the console extra installs it): 2-3x zlib's on a job's .tar.gz
    from isal import igzip as _isal_gzip
    from isal.isal_zlib import error as _IsalError
except ImportError:  # a platform without its wheel: the standard library's gzip
    _isal_gzip = None

    class _IsalError(Exception):
        """Never raised: stands in for isal's error in the except clause below."""

ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.zst", ".tar.zstd", ".zip")


@dataclasses.dataclass
class Limits:
    """What one upload may hold. The defaults fit a 4096-rank job: a dump and a log per rank and
    a log per 8-GPU host (8,704 files), about 1.1 GB of pickles uncompressed."""

    max_request_bytes: int = 8 << 30
    max_files: int = 2 * 4096 + 512
    max_unpacked_bytes: int = 16 << 30
    # Unpacked bytes per archive byte, checked once an archive has unpacked 64 MiB: dumps and
    # logs compress 5-20x; a bomb compresses thousands of times.
    max_ratio: float = 200.0
    max_path_length: int = 1024
    # Seconds the server waits for the next piece of a request body before answering 408.
    idle_seconds: float = 60.0


class UploadError(Exception):
    """A bad upload: `status` is the HTTP answer (400 bad input, 413 over a limit, 408 too slow),
    `file` names the file or member at fault."""

    def __init__(self, status: int, message: str, file: str = ""):
        super().__init__(message)
        self.status = status
        self.message = message
        self.file = file

    def to_dict(self) -> dict:
        body = {"error": self.message}
        if self.file:
            body["file"] = self.file
        return body


def safe_relative_path(name: str, limits: Limits, what: str = "file",
                       file: Optional[str] = None) -> pathlib.PurePosixPath:
    """The path an uploaded name is stored at inside the upload's folder; refuses names that
    would leave it. Browsers send a folder's files as `folder/sub/name`; Windows tools may send
    backslashes. `file` is how the answer names the culprit (default: the name)."""
    file = name if file is None else file
    if not name or len(name) > limits.max_path_length or "\x00" in name:
        raise UploadError(400, f"{what} name {name[:80]!r} is empty, too long or holds NUL", file)
    cleaned = name.replace("\\", "/")
    if cleaned.startswith("/") or (len(cleaned) > 1 and cleaned[1] == ":"):
        raise UploadError(400, f"{what} {name!r} has an absolute path", file)
    parts = [p for p in cleaned.split("/") if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        raise UploadError(400, f"{what} {name!r} leaves the upload's folder", file)
    if any(any(ord(ch) < 32 for ch in p) for p in parts):
        raise UploadError(400, f"{what} {name!r} holds control characters", file)
    # A file system takes 255 bytes per name (NAME_MAX): past it, creating the file would fail
    # with an OSError, not a refusal (found by the fuzzer; 85 characters of CJK are enough).
    if any(len(os.fsencode(p)) > 255 for p in parts):
        raise UploadError(400, f"{what} {name[:80]!r} holds a name longer than 255 bytes", file)
    return pathlib.PurePosixPath(*parts)


class HeldPipe:
    """The write end of a worker's pipe of held members (EarlyReads.read_held's frames): an
    upload's archive members that are dumps by their names alone are sent there as they are
    unpacked, and written to disk only after the answer (write_held). Members are sent whole,
    one at a time (`send`, from the unpacking threads); blocking writes, so a worker that decodes
    slower than the archive unpacks holds the unpacking back instead of growing a buffer. A
    worker gone (killed, over its memory) makes the sending stop quietly: its analysis fails
    and says why, and the members are still written from the archive."""

    def __init__(self, fd: int):
        self._fd: Optional[int] = fd
        self._lock = threading.Lock()
        self.broken = False

    def send(self, path: str, size: int, mtime_ns: int, blocks) -> None:
        """Sends one member: `path` relative to the upload's files, `size` bytes that `blocks`
        (an iterable of bytes) yields in order, read and counted by the caller's checks."""
        name = path.encode("utf-8", "surrogateescape")
        head = (len(name).to_bytes(4, "little") + name + size.to_bytes(8, "little")
                + max(mtime_ns, 0).to_bytes(8, "little"))
        with self._lock:
            try:
                self._write(head)
                sent = 0
                for block in blocks:
                    sent += len(block)
                    if sent > size:
                        break
                    self._write(block)
                if sent != size:  # a zip's header may lie about a member's size
                    raise UploadError(400, f"member {path!r} holds other than the {size} bytes "
                                      "its archive's header says", path)
            except BaseException:
                # The member was cut short (the upload refused): the worker sees the pipe end
                # inside it, and is stopped anyway.
                self.close_locked()
                raise

    def _write(self, data) -> None:
        if self.broken or self._fd is None:
            return
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view):]
        except OSError:  # EPIPE: the worker is gone
            self.broken = True

    def close_locked(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def close(self) -> None:
        """The end of the held members (the worker then loads), or of the worker. Waits for a
        member being sent: close only once the unpacking ended, or its worker is killed."""
        with self._lock:
            self.close_locked()


class UploadFile:
    """A new file of the upload, written once from start to end; created (O_EXCL, O_NOFOLLOW)
    by open(), or by its first write or its close. On close, the folder learns its size. (Its
    SHA-256 is taken after the answer, as its bytes go to the blob store: the answer's report
    does not need it.)"""

    def __init__(self, folder: "UploadFolder", relative: pathlib.PurePosixPath,
                 twice: UploadError):
        self._folder = folder
        self._relative = relative
        self._twice = twice  # what a name already taken on disk is refused with
        self._file: Optional[BinaryIO] = None
        self._size = 0
        # An archive member's own modification time (ns), given to the file once it is
        # written, as `tar -x` does: what dates the dumps when they carry no time themselves.
        self.mtime_ns: Optional[int] = None

    def open(self) -> None:
        # O_EXCL and O_NOFOLLOW: never through a link, never over something already there (a
        # file or a folder of the same name).
        try:
            fd = os.open(self._folder.root / self._relative,
                         os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except (FileExistsError, IsADirectoryError):
            raise self._twice from None
        # A large buffer: a multipart body arrives in pieces of a few KB; archive members are
        # copied in 1 MiB blocks, which pass straight through.
        self._file = os.fdopen(fd, "wb", buffering=256 << 10)

    @property
    def opened(self) -> bool:
        return self._file is not None

    def write(self, data) -> int:
        if self._file is None:
            self.open()
        self._size += len(data)
        return self._file.write(data)

    def flush(self) -> int:
        """Hands what was written to the kernel (a reader of the file sees it); returns the
        size written so far."""
        if self._file is not None:
            self._file.flush()
        return self._size

    def close(self) -> None:
        if self._file is None:
            self.open()  # an empty file
        if self._file.closed:
            return
        self._file.close()
        if self.mtime_ns is not None:
            os.utime(self._folder.root / self._relative, ns=(self.mtime_ns, self.mtime_ns),
                     follow_symlinks=False)
        self._folder.sizes[self._relative] = self._size
        if self._folder.on_file_complete is not None:
            self._folder.on_file_complete(self._folder.root / self._relative)

    @property
    def closed(self) -> bool:
        return self._file is not None and self._file.closed

    def __enter__(self) -> "UploadFile":
        return self

    def __exit__(self, *_) -> None:
        self.close()


class UploadFolder:
    """The folder one upload is written into, with the running counts its limits need and the
    size of every file written into it."""

    def __init__(self, root: pathlib.Path, limits: Limits):
        self.root = root
        self.limits = limits
        self.files: List[pathlib.PurePosixPath] = []
        self.sizes: Dict[pathlib.PurePosixPath, int] = {}  # relative path -> size, once closed
        self.unpacked_bytes = 0
        self._folders: set = set()  # folders (relative) this upload made
        self._names: set = set()  # files (relative) this upload made
        # Called with each file's path once it is written and closed, from whichever thread
        # wrote it (an archive's members are written by a thread of their own): the analysis
        # worker reads them while the rest arrives (_analysis.EarlyWorker).
        self.on_file_complete: Optional[Callable[[pathlib.Path], None]] = None
        # Where a tar archive's members that are dumps by their names alone go instead of the
        # disk (a HeldPipe: the analysis worker's), or None. They are written after the answer
        # (write_held), from the archive, which is kept for that (HELD_FOLDER, HELD_MANIFEST).
        self.holder = None
        self.held: List[HeldMember] = []
        self._kept_archives: List[dict] = []
        # An archive is unpacked in a thread while the request's other parts still arrive.
        self._lock = threading.RLock()
        root.mkdir(parents=True, exist_ok=False)

    def new_file(self, name: str, what: str = "file", file: Optional[str] = None,
                 opened: bool = True) -> tuple[pathlib.PurePosixPath, UploadFile]:
        """Makes the file `name` (checked) in the folder, and creates it unless `opened` is
        False (then its first write or its close does: an archive's member, created in the
        thread that writes it); `file` names it in refusals."""
        with self._lock:
            return self._new_file(name, what, file, opened)

    def hold(self, name: str, file: str, member: "HeldMember",
             blocks: Callable[[], Iterable[bytes]]) -> bool:
        """Sends the archive member `member`, to be the file `name` (checked as new_file's;
        `file` names it in refusals), to the holder instead of the disk when it is a dump by its
        name alone and small enough; `blocks()` gives its bytes, counted against the limits.
        Its folder is made, the file itself only after the answer (write_held). Returns whether
        it was held; if not, the caller writes it."""
        from fr_analyze import _core

        if (self.holder is None or member.size > HELD_MAX_MEMBER_BYTES
                or not _core.is_dump_by_name(name)):
            return False
        with self._lock:
            relative = self._claim(name, "archive member", file)
            self.sizes[relative] = member.size
        member.path = relative.as_posix()
        self.held.append(member)
        self.holder.send(member.path, member.size, member.mtime_ns, blocks())
        return True

    def _new_file(self, name: str, what: str, file: Optional[str],
                  opened: bool) -> tuple[pathlib.PurePosixPath, UploadFile]:
        relative = self._claim(name, what, file)
        twice = UploadError(400, f"{what} {name!r} appears twice in the upload",
                            name if file is None else file)
        target = UploadFile(self, relative, twice)
        if opened:
            target.open()
        return relative, target

    def _claim(self, name: str, what: str, file: Optional[str]) -> pathlib.PurePosixPath:
        file = name if file is None else file
        relative = safe_relative_path(name, self.limits, what, file)
        if len(self.files) >= self.limits.max_files:
            raise UploadError(413, f"more than {self.limits.max_files} files in one upload "
                              "(--max-files)", file)
        twice = UploadError(400, f"{what} {name!r} appears twice in the upload", file)
        # Two entries with the same name, or a file where a folder must go (or the reverse):
        # the upload is ambiguous, and which copy won would be silent. The folder is new, so
        # what is in it is what this upload put there; O_EXCL when the file is created is the
        # last word.
        if (relative in self._names or relative in self._folders
                or any(parent in self._names for parent in relative.parents)):
            raise twice
        if relative.parent not in self._folders:
            (self.root / relative).parent.mkdir(parents=True, exist_ok=True)
            self._folders.update(relative.parents)
        self.files.append(relative)
        self._names.add(relative)
        return relative

    def archive_done(self, archive: pathlib.Path, name: str) -> None:
        """`archive` (in the folder, sent as `name`) is unpacked: removed, or kept outside the
        folder's files when members of it are held (write_held reads them from it)."""
        relative = archive.relative_to(self.root).as_posix()
        members = [m for m in self.held if m.archive == relative]
        if members:
            kept = self.root.parent / HELD_FOLDER
            kept.mkdir(exist_ok=True)
            target = kept / f"{len(self._kept_archives)}.archive"
            os.replace(archive, target)
            self._kept_archives.append({
                "archive": f"{HELD_FOLDER}/{target.name}", "name": name,
                "members": [[m.member, m.path, m.size, m.mtime_ns] for m in members]})
        else:
            archive.unlink()
        self.forget(archive)

    def write_held_manifest(self) -> None:
        """Notes, beside the folder, which members are held and in which kept archive: what
        write_held reads, after the answer or at the next start of a server killed before."""
        if not self._kept_archives:
            return
        manifest = self.root.parent / HELD_MANIFEST
        temporary = manifest.with_name(manifest.name + ".part")
        temporary.write_text(json.dumps({"archives": self._kept_archives}))
        os.replace(temporary, manifest)

    def forget(self, path: pathlib.Path) -> None:
        """`path` (an unpacked archive) was removed: it is no file of the upload any more."""
        self.sizes.pop(pathlib.PurePosixPath(path.relative_to(self.root).as_posix()), None)

    def listing(self) -> List[Tuple[str, int]]:
        """(relative path, size) of every file in the folder, in path order."""
        return [(relative.as_posix(), self.sizes[relative]) for relative in sorted(self.sizes)]

    def count_unpacked(self, n: int, name: str) -> None:
        with self._lock:
            self.unpacked_bytes += n
        if self.unpacked_bytes > self.limits.max_unpacked_bytes:
            raise UploadError(413, f"the upload unpacks to more than "
                              f"{self.limits.max_unpacked_bytes} bytes (--max-unpacked-bytes)",
                              name)


def is_archive(name: str) -> bool:
    lower = name.lower()
    return lower.endswith(ARCHIVE_SUFFIXES)


def unpack_archive(folder: UploadFolder, archive: pathlib.Path, name: str,
                   source: Optional["ArchiveFollower"] = None) -> None:
    """Unpacks `archive` (named `name` in the upload) into the upload's folder, under a folder
    named after it, then removes the archive: the analysis reads its members. With `source`
    (a tar archive still arriving), its bytes are read from there as they are written, and the
    archive is left for the caller to remove once its part has ended."""
    stem = name.replace("\\", "/").rsplit("/", 1)[-1]
    for suffix in ARCHIVE_SUFFIXES:
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)] or "archive"
            break
    prefix = str(safe_relative_path(name, folder.limits).parent / stem)
    prefix = "" if prefix in (".", "") else prefix + "/"
    size = None if source is not None else max(archive.stat().st_size, 1)
    start = folder.unpacked_bytes

    def check_ratio(member: str) -> None:
        unpacked = folder.unpacked_bytes - start
        # Still arriving: the archive's bytes read so far (what the members unpacked so far
        # came from; the other parts' bytes count in unpacked_bytes too, as they always did).
        packed = size if source is None else max(source.tell(), 1)
        if unpacked > (64 << 20) and unpacked / packed > folder.limits.max_ratio:
            raise UploadError(413, f"archive {name!r} unpacks to over {folder.limits.max_ratio:g}"
                              " times its size (a decompression bomb?)", f"{name}:{member}")

    try:
        if name.lower().endswith(".zip"):
            _unpack_zip(folder, archive, name, prefix, check_ratio)
        else:
            _unpack_tar(folder, archive, name, prefix, check_ratio, source)
    except UploadError:
        raise
    except (tarfile.TarError, zipfile.BadZipFile, zstandard.ZstdError, zlib.error, _IsalError,
            lzma.LZMAError, EOFError, OSError, ValueError, RuntimeError,
            NotImplementedError) as error:
        # zlib.error: damaged deflate data in a zip; _IsalError: in a .tar.gz; LZMAError:
        # damaged xz data; RuntimeError: an encrypted zip member; NotImplementedError: a
        # compression method zipfile lacks.
        raise UploadError(400, f"archive {name!r} is truncated or unreadable: {error}", name)
    if source is None:
        folder.archive_done(archive, name)


class ArchiveFollower:
    """Unpacks a tar archive (.tar, .tar.gz, .tar.zst, ...) in a thread while its part of the
    request still arrives: the part is written to its file as always, and the thread reads that
    file up to what was written, waiting for more. Unpacking then overlaps receiving instead of
    following it. (A zip's index is at its end: a zip is unpacked once it is whole.)

    The event loop only notes what it wrote (`wrote`, `end`, `abort`): it never waits on the
    thread, which waits on it. `join` (in a worker thread) waits for the end and raises the
    unpacking's error; `error` is the error so far, to stop reading a request early."""

    def __init__(self, folder: UploadFolder, relative: pathlib.PurePosixPath, name: str):
        self.name = name
        self._path = folder.root / relative
        self._cond = threading.Condition()
        self._written = 0
        self._ended = False
        self._aborted = False
        self._position = 0
        self._file: Optional[BinaryIO] = None
        self.error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._run, args=(folder, name),
                                        name="fr-unpack-follower", daemon=True)
        self._thread.start()

    # The event loop's side.
    def wrote(self, total: int) -> None:
        with self._cond:
            self._written = total
            self._cond.notify()

    def end(self) -> None:
        with self._cond:
            self._ended = True
            self._cond.notify()

    def abort(self) -> None:
        with self._cond:
            self._aborted = True
            self._cond.notify()

    def join(self) -> None:
        self._thread.join()
        if self.error is not None:
            raise self.error

    # The unpacking thread's side: a file-like source for _open_tar_stream.
    def _run(self, folder: UploadFolder, name: str) -> None:
        try:
            unpack_archive(folder, self._path, name, source=self)
        except BaseException as error:  # raised by join, in the request's task
            self.error = error
        finally:
            if self._file is not None:
                self._file.close()

    def read(self, size: int = -1) -> bytes:
        with self._cond:
            while (self._position >= self._written and not self._ended
                   and not self._aborted):
                self._cond.wait()
            if self._aborted:
                raise UploadError(400, "the upload was cut off")
            available = self._written - self._position
        if available <= 0:
            return b""
        if self._file is None:
            self._file = open(self._path, "rb")
        self._file.seek(self._position)
        data = self._file.read(available if size is None or size < 0 else min(size, available))
        self._position += len(data)
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def readable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        # Only back to what was read (_open_tar_stream reads the magic, then starts over).
        if whence != os.SEEK_SET or offset < 0 or offset > self._position:
            raise OSError("the archive is still arriving: it can only be read once, in order")
        self._position = offset
        return offset

    def tell(self) -> int:
        return self._position

    def close(self) -> None:
        """A decompressor closing its source: the thread closes the file when it is done."""


class _MemberWriter:
    """Creates the members' files and writes their blocks in a second thread while the next
    blocks are decompressed: inflating and the kernel's work for a file (a new inode, new
    page-cache pages: slow on a virtual machine) both release the GIL, so they overlap on two
    cores. Names and limits are checked before a member or a block is handed over; at most
    MAX_QUEUED blocks (1 MiB each) wait, so a large member is never held in memory. The first
    error writing stops the writing and is raised by the next call; leaving the `with` block
    waits until every file handed over is closed."""

    MAX_QUEUED = 8

    def __init__(self):
        self._queue: queue.Queue = queue.Queue(self.MAX_QUEUED)
        self._error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._run, name="fr-unpack-writer", daemon=True)
        self._thread.start()

    def write(self, target: UploadFile, block: bytes) -> None:
        self._raise_error()
        self._queue.put((target, block))

    def close(self, target: UploadFile) -> None:
        self._queue.put((target, None))

    def __enter__(self) -> "_MemberWriter":
        return self

    def __exit__(self, kind, *_) -> None:
        self._queue.put(None)
        self._thread.join()
        if kind is None:  # else the unpacking's own error is the one raised
            self._raise_error()

    def _raise_error(self) -> None:
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            target, block = item
            try:
                if block is not None:
                    if self._error is None:
                        target.write(block)
                elif self._error is None or target.opened:
                    target.close()
            except BaseException as error:  # disk full: said by the unpacking thread
                self._error = self._error or error


def _member_path(folder: UploadFolder, name: str, prefix: str, member: str,
                 is_dir: bool = False) -> str:
    """Where a member goes (under the archive's folder), once its own name is checked: an
    absolute or `..` name is refused as such, not made harmless by the prefix and kept."""
    if is_dir and member.rstrip("/") in (".", ""):
        if member.startswith("/"):
            raise UploadError(400, f"archive {name!r} member {member!r} has an absolute path",
                              f"{name}:{member}")
        return prefix  # `tar -C job -czf job.tgz .` starts with the folder itself, "./"
    safe_relative_path(member, folder.limits, f"archive {name!r} member", f"{name}:{member}")
    return prefix + member


class _ForwardStream:
    """A decompressing stream as tarfile's seeking mode ("r:") reads it, in one pass: whole
    reads, tell(), and seeks forward only (by reading and dropping). With it the members' data
    is read straight from the decompressor in 1 MiB blocks; tarfile's stream mode ("r|") reads
    in 10 KB pieces and joins and slices them, which cost more than the decompression itself."""

    # The most tarfile reads at once for a header and its extensions (pax records, GNU long
    # names: a few KB in real archives): past it, the archive is refused, not held in memory.
    MAX_HEADER_READ = 16 << 20

    def __init__(self, stream: BinaryIO):
        self._stream = stream
        self._position = 0

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0 or size > self.MAX_HEADER_READ:
            raise tarfile.ReadError(f"a header of {size} bytes")
        return self._read(size)

    def _read(self, size: int) -> bytes:
        pieces = []
        while size > 0:
            # A zstd reader may stop short at a frame's end: read until the size or the end.
            piece = self._stream.read(size)
            if not piece:
                break
            pieces.append(piece)
            size -= len(piece)
        data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        self._position += len(data)
        return data

    def read_block(self, size: int) -> bytes:
        """Member data, at most 1 MiB at a time (the caller's loop bounds the total)."""
        return self._read(min(size, 1 << 20))

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if whence == os.SEEK_CUR:
            offset += self._position
        elif whence != os.SEEK_SET:
            raise OSError("an archive stream has no known end to seek from")
        if offset < self._position:
            raise tarfile.ReadError("the archive would be read backwards")
        while self._position < offset and self.read_block(offset - self._position):
            pass
        return self._position


def _open_tar_stream(raw: BinaryIO, name: str) -> BinaryIO:
    """The archive's tar bytes, decompressed as they are read."""
    if name.lower().endswith((".zst", ".zstd")):
        # pzstd and concatenated files: many frames.
        return zstandard.ZstdDecompressor().stream_reader(raw, read_size=1 << 20,
                                                          read_across_frames=True)
    magic = raw.read(6)
    raw.seek(0)
    if magic.startswith(b"\x1f\x8b"):
        # gzip's own reader: tarfile's reads one gzip member only, and bgzip or
        # `cat a.gz b.gz` write several. ISA-L's reads them the same way, faster: a 512-rank
        # job's 181 MB in 0.10 s against 0.24-0.30 s, the largest part of unpacking it.
        opener = _isal_gzip.IGzipFile if _isal_gzip is not None else gzip.GzipFile
        return opener(fileobj=raw, mode="rb")
    if magic.startswith(b"BZh"):
        return bz2.BZ2File(raw, mode="rb")
    if magic.startswith(b"\xfd7zXZ\x00"):
        return lzma.LZMAFile(raw, mode="rb")
    return raw


def _unpack_tar(folder: UploadFolder, archive: pathlib.Path, name: str, prefix: str,
                check_ratio: Callable[[str], None],
                source: Optional[ArchiveFollower] = None) -> None:
    relative = archive.relative_to(folder.root).as_posix()
    with _MemberWriter() as writer:
        if source is not None:
            _read_tar(folder, source, name, prefix, check_ratio, writer, relative)
        else:
            with open(archive, "rb") as raw:
                _read_tar(folder, raw, name, prefix, check_ratio, writer, relative)


def _read_tar(folder: UploadFolder, raw: BinaryIO, name: str, prefix: str,
              check_ratio: Callable[[str], None], writer: _MemberWriter,
              archive: str) -> None:
    stream = _ForwardStream(_open_tar_stream(raw, name))
    # One pass, members in order: nothing seeks back or lists the whole archive first.
    with tarfile.open(fileobj=stream, mode="r:") as tar:
        for member in tar:
            where = f"{name}:{member.name}"
            path = _member_path(folder, name, prefix, member.name, member.isdir())
            if member.isdir():
                continue
            if not member.isfile() or member.issparse():
                what = ("a symbolic link" if member.issym() else "a hard link"
                        if member.islnk() else "a sparse file" if member.isfile()
                        else "a device or FIFO")
                raise UploadError(400, f"archive {name!r} member {member.name!r} is {what}"
                                  "; only plain files are accepted", where)
            mtime_ns = _member_mtime_ns(member.mtime)

            def blocks():
                for block in _member_blocks(stream, member):
                    folder.count_unpacked(len(block), where)
                    check_ratio(member.name)
                    yield block

            if folder.hold(path, where, HeldMember(archive, member.name, "", member.size,
                                                   mtime_ns), blocks):
                continue
            _, target = folder.new_file(path, "archive member", where, opened=False)
            target.mtime_ns = mtime_ns
            try:
                for block in blocks():
                    writer.write(target, block)
            finally:
                writer.close(target)


def _member_blocks(stream: "_ForwardStream", member: tarfile.TarInfo):
    """A tar member's bytes, in the stream's blocks (at most 1 MiB each)."""
    stream.seek(member.offset_data)
    left = member.size
    while left > 0:
        block = stream.read_block(left)
        if not block:
            raise tarfile.ReadError(f"unexpected end of data in {member.name!r}")
        left -= len(block)
        yield block


def _member_mtime_ns(mtime: float) -> int:
    """A tar member's time in ns; a member without one (0: `tar --mtime=@0`, reproducible
    archives) gets the time it is unpacked, as a file written now would."""
    if mtime and mtime > 0:
        return int(round(mtime * 1e9))
    return time.time_ns()


@dataclasses.dataclass
class HeldMember:
    """A tar member sent to the analysis worker instead of written (UploadFolder.holder)."""

    archive: str  # the archive, relative to the upload's files
    member: str  # its name in the archive
    path: str  # where it goes, relative to the upload's files
    size: int
    mtime_ns: int


# The largest member held in memory: a larger dump (a rare 100k-entry buffer with stacks) is
# written before the answer as other files are, and the worker maps it from disk.
HELD_MAX_MEMBER_BYTES = 64 << 20

# Beside an upload's files: the archives members of which are held, and which members.
HELD_FOLDER = "held"
HELD_MANIFEST = "held.json"


def write_held(upload: pathlib.Path) -> None:
    """Writes the held members of the upload in `upload` (its folder: files/, held/,
    held.json) into its files, from the kept archives, with their own times, then removes the
    archives: after the answer, or at the start of a server killed before it was done. Each file
    appears whole (written aside, then renamed). Does nothing when nothing is held. Raises
    OSError, or UploadError when an archive no longer holds what it held."""
    manifest = upload / HELD_MANIFEST
    if not manifest.exists():
        return
    files = upload / "files"

    def place(path: str, size: int, mtime_ns: int, blocks, member: str, archive: str) -> None:
        temporary = upload / HELD_FOLDER / "member.part"
        written = 0
        with open(temporary, "wb") as out:
            for block in blocks:
                written += len(block)
                out.write(block)
        if written != size:
            raise UploadError(500, f"archive {archive!r} member {member!r} changed size", member)
        os.utime(temporary, ns=(mtime_ns, mtime_ns))
        os.replace(temporary, files / path)

    for entry in json.loads(manifest.read_text())["archives"]:
        name = entry["name"]
        wanted = {member: (path, size, mtime_ns)
                  for member, path, size, mtime_ns in entry["members"]}
        if name.lower().endswith(".zip"):
            with zipfile.ZipFile(upload / entry["archive"]) as zf:
                for member, (path, size, mtime_ns) in list(wanted.items()):
                    with zf.open(member) as source:
                        place(path, size, mtime_ns, iter(lambda: source.read(1 << 20), b""),
                              member, name)
                    del wanted[member]
        else:
            with open(upload / entry["archive"], "rb") as raw:
                stream = _ForwardStream(_open_tar_stream(raw, name))
                with tarfile.open(fileobj=stream, mode="r:") as tar:
                    for member in tar:
                        if member.name not in wanted or not member.isfile():
                            continue
                        path, size, mtime_ns = wanted.pop(member.name)
                        place(path, size, mtime_ns, _member_blocks(stream, member), member.name,
                              name)
        if wanted:
            raise UploadError(500, f"archive {name!r} lacks members it held: "
                              + ", ".join(sorted(wanted)[:3]), name)
    manifest.unlink()
    shutil.rmtree(upload / HELD_FOLDER, ignore_errors=True)


def _unpack_zip(folder: UploadFolder, archive: pathlib.Path, name: str, prefix: str,
                check_ratio: Callable[[str], None]) -> None:
    with _MemberWriter() as writer:
        _read_zip(folder, archive, name, prefix, check_ratio, writer)


def _read_zip(folder: UploadFolder, archive: pathlib.Path, name: str, prefix: str,
              check_ratio: Callable[[str], None], writer: _MemberWriter) -> None:
    archive_relative = archive.relative_to(folder.root).as_posix()
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
        if len(infos) > folder.limits.max_files:
            raise UploadError(413, f"archive {name!r} holds {len(infos)} members, more than "
                              f"{folder.limits.max_files} (--max-files)", name)
        for info in infos:
            where = f"{name}:{info.filename}"
            if not info.filename:  # zipfile's is_dir() fails on it (found by the fuzzer)
                raise UploadError(400, f"archive {name!r} has a member without a name", name)
            path = _member_path(folder, name, prefix, info.filename, info.is_dir())
            if info.is_dir():
                continue
            # Unix zips keep the mode in the high half of external_attr; many tools (Python's
            # zipfile among them) write permissions without a file type: that is a plain file.
            kind = stat.S_IFMT(info.external_attr >> 16)
            if kind not in (0, stat.S_IFREG):
                what = "a symbolic link" if kind == stat.S_IFLNK else "a device, FIFO or socket"
                raise UploadError(400, f"archive {name!r} member {info.filename!r} is {what}; "
                                  "only plain files are accepted", where)
            mtime_ns = _zip_mtime_ns(info)
            def blocks():
                with zf.open(info) as source:
                    yield from _counted_blocks(folder, source, where, info.filename,
                                               check_ratio)

            if folder.hold(path, where, HeldMember(archive_relative, info.filename, "",
                                                   info.file_size, mtime_ns), blocks):
                continue
            _, target = folder.new_file(path, "archive member", where, opened=False)
            target.mtime_ns = mtime_ns
            try:
                with zf.open(info) as source:
                    for block in _counted_blocks(folder, source, where, info.filename,
                                                 check_ratio):
                        writer.write(target, block)
            finally:
                writer.close(target)


def _counted_blocks(folder: UploadFolder, source: BinaryIO, where: str, member: str,
                    check_ratio: Callable[[str], None]):
    """A zip member's bytes in 1 MiB blocks, each counted against the upload's limits."""
    while True:
        block = source.read(1 << 20)
        if not block:
            return
        folder.count_unpacked(len(block), where)
        check_ratio(member)
        yield block


def _zip_mtime_ns(info: zipfile.ZipInfo) -> int:
    """A zip member's time in ns, as unzip restores it: the UTC time of its extended-timestamp
    field (0x5455, which Info-ZIP's zip writes), else its DOS time read as this machine's local
    time (what the zip tool wrote from); a member with neither (the DOS epoch) gets the time it
    is unpacked."""
    extra = info.extra
    at = 0
    while at + 4 <= len(extra):
        tag = int.from_bytes(extra[at:at + 2], "little")
        length = int.from_bytes(extra[at + 2:at + 4], "little")
        body = extra[at + 4:at + 4 + length]
        if tag == 0x5455 and len(body) >= 5 and body[0] & 1:
            return int.from_bytes(body[1:5], "little", signed=True) * 1_000_000_000
        at += 4 + length
    if info.date_time <= (1980, 1, 1, 0, 0, 0):
        return time.time_ns()
    try:
        return int(time.mktime(info.date_time + (0, 0, -1))) * 1_000_000_000
    except (OverflowError, ValueError):
        return time.time_ns()


class MultipartWriter:
    """Feeds a multipart/form-data body, as it arrives, to python-multipart's parser and writes
    each `files` part to the upload folder; small text fields are kept in memory (bounded)."""

    FIELD_LIMIT = 1 << 20  # a pasted log in the form's text box may be this long, no longer
    # Bounds on what is held in memory for the other parts: every text field together (the
    # form has a handful), how many there are, and one part's headers.
    FIELDS_LIMIT = FIELD_LIMIT + (64 << 10)
    MAX_FIELDS = 64
    HEADERS_LIMIT = 16 << 10

    def __init__(self, folder: UploadFolder, boundary: bytes):
        try:
            import python_multipart as multipart
        except ImportError:  # python-multipart before 0.0.13
            import multipart

        self.folder = folder
        self.fields: dict[str, bytearray] = {}
        self.uploaded: List[tuple[pathlib.PurePosixPath, str]] = []  # (stored path, name sent)
        self._headers: dict[str, bytes] = {}
        self._header_name = b""
        self._header_bytes = 0
        self._field_bytes = 0
        self._field: Optional[str] = None
        self._file: Optional[UploadFile] = None
        self._error: Optional[UploadError] = None
        # Tar archives unpacked while they arrive, in the order their parts began; the current
        # part's, while it is written.
        self.followers: List[tuple[pathlib.PurePosixPath, ArchiveFollower]] = []
        self._follower: Optional[ArchiveFollower] = None
        callbacks = {
            "on_part_begin": self._part_begin,
            "on_header_field": self._header_field,
            "on_header_value": self._header_value,
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_finished,
            "on_part_data": self._part_data,
            "on_part_end": self._part_end,
        }
        self._parser = multipart.MultipartParser(boundary, callbacks)

    def feed(self, chunk: bytes) -> None:
        try:
            self._parser.write(chunk)
        except ValueError as error:  # python-multipart's MultipartParseError (a ValueError)
            raise UploadError(400, f"the multipart body is malformed: {error}") from None
        if self._error is not None:
            raise self._error
        if self._follower is not None:
            self._follower.wrote(self._file.flush())
            # An archive that cannot be unpacked refuses the upload now, not once it is whole.
            if isinstance(self._follower.error, UploadError):
                raise self._follower.error

    def finish(self) -> None:
        try:
            self._parser.finalize()
        except ValueError as error:
            raise UploadError(400, f"the multipart body is malformed: {error}") from None
        if self._error is not None:
            raise self._error
        if self._file is not None or self._field is not None:
            raise UploadError(400, "the request body ends inside a part (truncated upload)")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._follower is not None:
            # Closed inside its part: the upload was refused or cut off.
            self._follower.abort()
            self._follower = None

    def join_followers(self) -> None:
        """Once the body has ended: waits for each archive unpacked while it arrived, then
        removes it (its members are the inputs); raises the first unpacking error. Blocks: run
        it in a worker thread."""
        for path, follower in self.followers:
            follower.join()
            self.folder.archive_done(self.folder.root / path, follower.name)

    def follower_error(self) -> Optional[UploadError]:
        """The first archive found unreadable (or over a limit) so far, or None."""
        for _, follower in self.followers:
            if isinstance(follower.error, UploadError):
                return follower.error
        return None

    def abandon_followers(self) -> None:
        """The upload is refused: stops every archive still unpacking and waits until none
        writes into the folder any more (its errors are the refusal's). Blocks."""
        for _, follower in self.followers:
            follower.abort()
        for _, follower in self.followers:
            try:
                follower.join()
            except BaseException:  # noqa: BLE001 (the refusal is what the caller raises)
                pass

    # python-multipart's callbacks: (data, start, end) slices of its buffer.
    def _part_begin(self) -> None:
        self._headers = {}
        self._header_bytes = 0

    def _headers_too_long(self, n: int) -> bool:
        self._header_bytes += n
        if self._header_bytes > self.HEADERS_LIMIT and self._error is None:
            self._error = UploadError(413, f"a part's headers are over {self.HEADERS_LIMIT} "
                                      "bytes")
        return self._error is not None

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        if not self._headers_too_long(end - start):
            self._header_name += data[start:end]

    def _header_value(self, data: bytes, start: int, end: int) -> None:
        if self._headers_too_long(end - start):
            return
        key = self._header_name.lower().decode("latin-1")
        self._headers[key] = self._headers.get(key, b"") + data[start:end]

    def _header_end(self) -> None:
        self._header_name = b""

    def _headers_finished(self) -> None:
        if self._error is not None:
            return
        disposition = self._headers.get("content-disposition", b"").decode("utf-8", "replace")
        params = _disposition_params(disposition)
        field = params.get("name", "")
        filename = params.get("filename")
        try:
            if filename is not None and field == "files":
                if filename == "":
                    self._field = "_ignored_empty_file"  # a file input left empty by a browser
                    return
                path, self._file = self.folder.new_file(filename)
                self.uploaded.append((path, filename))
                self._field = None
                if is_archive(filename) and not filename.lower().endswith(".zip"):
                    self._follower = ArchiveFollower(self.folder, path, filename)
                    self.followers.append((path, self._follower))
            else:
                if field not in self.fields and len(self.fields) >= self.MAX_FIELDS:
                    raise UploadError(413, f"more than {self.MAX_FIELDS} form fields", field)
                self._field = field
                self.fields.setdefault(field, bytearray())
        except UploadError as error:
            self._error = error

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        if self._error is not None:
            return
        n = end - start
        if self._file is not None:
            self._file.write(data[start:end])
            try:
                self.folder.count_unpacked(n, str(self.uploaded[-1][1]))
            except UploadError as error:
                self._error = error
        elif self._field is not None:
            buffer = self.fields.setdefault(self._field, bytearray())
            if len(buffer) + n > self.FIELD_LIMIT:
                self._error = UploadError(413, f"form field {self._field!r} is over "
                                          f"{self.FIELD_LIMIT} bytes; upload the log as a file",
                                          self._field)
                return
            self._field_bytes += n
            if self._field_bytes > self.FIELDS_LIMIT:
                self._error = UploadError(413, f"the form's fields are over "
                                          f"{self.FIELDS_LIMIT} bytes in all; upload files",
                                          self._field)
                return
            buffer += data[start:end]

    def _part_end(self) -> None:
        follower, self._follower = self._follower, None
        if follower is not None:
            follower.wrote(self._file.flush())
        self.close()
        if follower is not None:
            follower.end()
        self._field = None


def _disposition_params(value: str) -> dict:
    """The parameters of a Content-Disposition header (name, filename), quotes removed."""
    params = {}
    for piece in value.split(";")[1:]:
        if "=" not in piece:
            continue
        key, _, raw = piece.strip().partition("=")
        raw = raw.strip()
        if len(raw) >= 2 and raw[0] == raw[-1] == '"':
            raw = raw[1:-1].replace('\\"', '"')
        params[key.lower()] = raw
    return params
