"""Fuzz target for the console's upload surface (python/fr_analyze/console/_uploads.py): a
multipart body, a .tar, .tar.gz, .tar.zst or .zip archive, or a file name, chosen by the input's
first byte. Each must either be accepted or refused with UploadError; anything else raised is a
bug, and so is any file written outside the upload's folder, a link in it, more files than the
limit, or more bytes than the unpacked-size limit. Every other input holds a tar's dumps as the
console does for its analysis worker (sent through a real pipe, written after the answer by
write_held): an accepted upload must then have every held member written whole, no more.

    python fuzz/console_uploads_fuzzer.py -max_total_time=30 CORPUS_DIR   # atheris (libFuzzer)
    python fuzz/console_uploads_fuzzer.py --replay tests/data/fuzz/console  # every seed, once

tests/python/test_console_fuzz_corpus.py replays the seed corpus in the test suite; .ci/run
fuzzes for 8 s.
"""

import logging
import os
import pathlib
import shutil
import sys
import tempfile
import threading

from fr_analyze.console._uploads import (HeldPipe, Limits, MultipartWriter, UploadError,
                                         UploadFolder, safe_relative_path, unpack_archive,
                                         write_held)

LIMITS = Limits(max_request_bytes=8 << 20, max_files=64, max_unpacked_bytes=8 << 20,
                max_ratio=200.0, max_path_length=256)
BOUNDARY = b"fuzzboundary"
# python-multipart logs every malformed body it meets; the fuzzer meets thousands a second.
logging.getLogger("python_multipart").setLevel(logging.CRITICAL)
logging.getLogger("multipart").setLevel(logging.CRITICAL)
ARCHIVE_NAMES = ["job.tar", "job.tar.gz", "job.tar.zst", "job.zip"]


def check_folder(root: pathlib.Path) -> None:
    """What an accepted (or refused) upload may have left: plain files and folders under root,
    within the limits."""
    real_root = os.path.realpath(root)
    files = 0
    total = 0
    for directory, folders, names in os.walk(root):
        for name in folders + names:
            path = os.path.join(directory, name)
            if os.path.islink(path):
                raise AssertionError(f"a link was written: {path}")
            if not os.path.realpath(path).startswith(real_root + os.sep):
                raise AssertionError(f"written outside the upload: {path}")
        for name in names:
            path = os.path.join(directory, name)
            if not os.path.isfile(path):
                raise AssertionError(f"not a plain file: {path}")
            files += 1
            total += os.path.getsize(path)
    if files > LIMITS.max_files + 1:  # + the archive itself, removed once unpacked
        raise AssertionError(f"{files} files written, limit {LIMITS.max_files}")
    if total > LIMITS.max_unpacked_bytes + (8 << 20):
        raise AssertionError(f"{total} bytes written, limit {LIMITS.max_unpacked_bytes}")


def one_input(data: bytes) -> None:
    if not data:
        return
    surface, body = data[0] % 6, data[1:]
    if surface == 5:
        name = body.decode("utf-8", "replace")
        try:
            relative = safe_relative_path(name, LIMITS)
        except UploadError:
            return
        text = str(relative)
        if text.startswith("/") or ".." in relative.parts or not relative.parts:
            raise AssertionError(f"{name!r} became {text!r}")
        return
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="fr-fuzz-"))
    drain = None
    try:
        folder = UploadFolder(scratch / "files", LIMITS)
        if len(body) % 2:
            drain = HeldDrain()
            folder.holder = drain.pipe
        try:
            if surface == 0:
                writer = MultipartWriter(folder, BOUNDARY)
                try:
                    try:
                        # Pieces of varying size, as a network delivers them.
                        step = 1 + (len(body) % 97)
                        for start in range(0, len(body), step):
                            writer.feed(body[start:start + step])
                        writer.finish()
                    finally:
                        writer.close()
                    # Tar parts unpack while they arrive, as the console reads them.
                    writer.join_followers()
                except BaseException:
                    writer.abandon_followers()
                    raise
            else:
                name = ARCHIVE_NAMES[surface - 1]
                relative, out = folder.new_file(name)
                with out:
                    out.write(body)
                unpack_archive(folder, folder.root / relative, name)
            if drain is not None:
                drain.finish()
                folder.write_held_manifest()
                write_held(scratch)
                for member in folder.held:
                    written = folder.root / member.path
                    if written.stat().st_size != member.size:
                        raise AssertionError(f"held member {member.path} written short")
                    if written.stat().st_mtime_ns != member.mtime_ns:
                        raise AssertionError(f"held member {member.path} lost its time")
                if sorted(p.name for p in scratch.iterdir()) != ["files"]:
                    raise AssertionError(f"write_held left {sorted(scratch.iterdir())}")
        except UploadError:
            pass
        check_folder(folder.root)
    finally:
        if drain is not None:
            drain.finish()
        shutil.rmtree(scratch, ignore_errors=True)


class HeldDrain:
    """A real pipe, as the console's to its worker, read to the end by a thread."""

    def __init__(self):
        read_end, write_end = os.pipe()
        self.pipe = HeldPipe(write_end)
        self._read_end = read_end
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self):
        while os.read(self._read_end, 1 << 16):
            pass

    def finish(self):
        self.pipe.close()
        if self._thread.is_alive():
            self._thread.join()
        if self._read_end is not None:
            os.close(self._read_end)
            self._read_end = None


def replay(corpus: str) -> int:
    seeds = sorted(pathlib.Path(corpus).iterdir())
    for seed in seeds:
        one_input(seed.read_bytes())
    print(f"replayed {len(seeds)} seeds from {corpus}")
    return 0


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--replay":
        return replay(sys.argv[2])
    import atheris

    # Coverage for Python code comes from instrumenting its bytecode: without this the fuzzer
    # mutates blind ("no interesting inputs were found"), its corpus never growing past one
    # input. Everything already imported is instrumented: _uploads, tarfile, zipfile, gzip,
    # python-multipart.
    atheris.instrument_all()
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main())
