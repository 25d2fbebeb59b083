"""Hostile and broken uploads, hostile origins and runaway analyses against a real `fr-analyze
serve`: each is refused with a clear 4xx JSON answer naming the file at fault, stores nothing,
leaves no folder behind, and the server keeps answering everyone else.

The archives are real files built here (tarfile, zipfile, zstandard); the bombs are streamed, a
few GB of zeros in a few MB on disk.
"""

import http.client
import io
import os
import pathlib
import socket
import stat
import struct
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
import zlib

import pytest
import requests
import zstandard

sys.path.insert(0, os.path.dirname(__file__))
from console_fixtures import eventually, slow_job, start_server, worker_processes  # noqa: E402,F401,E501

TIMEOUT = 60
IDLE_SECONDS = 2


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A console with the limits lowered so that each one is reached fast: 2 s of silence,
    64 MiB requests, 32 MiB unpacked (the file count keeps its default, 8704)."""
    data = tmp_path_factory.mktemp("hostile") / "data"
    with start_server(data, "--upload-idle-seconds", str(IDLE_SECONDS),
                      "--max-request-bytes", "64M", "--max-unpacked-bytes", "32M") as running:
        yield running


@pytest.fixture(scope="module")
def job_folder(cli, tmp_path_factory):
    """An 8-rank job (rank 5 hangs) to wrap in good and broken archives."""
    directory = tmp_path_factory.mktemp("job") / "job"
    subprocess.run([cli, "simulate", str(directory), "--fault", "stuck_before_op",
                    "--fault-rank", "5"], check=True, capture_output=True, timeout=TIMEOUT)
    return directory


def history_total(server):
    answer = requests.get(server.url + "/api/analyses", params={"limit": 1}, timeout=TIMEOUT)
    assert answer.status_code == 200, answer.text
    return answer.json()["total"]


def leftovers(server):
    """What a refused upload could leave: folders under uploads/, blobs in the store."""
    uploads = sorted(p.name for p in (server.data / "uploads").iterdir())
    blobs = sorted(p.name for p in (server.data / "blobs").glob("*/*"))
    return uploads, blobs


def expect_refused(server, send, status, *named):
    """Runs `send` (which returns a requests.Response), expects a JSON `status` answer whose
    error or file names each of `named`, then checks nothing was stored or left behind and that
    the server still answers."""
    # Uploads answered earlier are stored after their answers: first let them be.
    eventually(lambda: leftovers(server)[0] == [], "the earlier uploads' inputs are stored")
    total, left = history_total(server), leftovers(server)
    answer = send()
    assert answer.status_code == status, answer.text[:500]
    assert answer.headers["content-type"].startswith("application/json")
    body = answer.json()
    said = body["error"] + " " + body.get("file", "")
    for name in named:
        assert name in said, body
    assert history_total(server) == total
    assert leftovers(server) == ([], left[1])
    return body


def post_file(server, name, data):
    return lambda: requests.post(server.url + "/api/analyses", files=[("files", (name, data))],
                                 timeout=TIMEOUT)


# --- archives ----------------------------------------------------------------------------------
def tar_with(*members, compression="gz"):
    """A tar.gz holding a plain log, then the given (TarInfo, data) members."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=f"w:{compression}") as tar:
        ok = b"[rank0]: hello\n"
        info = tarfile.TarInfo("job/rank0.log")
        info.size = len(ok)
        tar.addfile(info, io.BytesIO(ok))
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def member(name, kind=tarfile.REGTYPE, linkname=""):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    if kind in (tarfile.CHRTYPE, tarfile.BLKTYPE):
        info.devmajor, info.devminor = 1, 3
    return info


TAR_CASES = {
    "dot-dot": ((member("job/../../evil.log"), b"x"), "job/../../evil.log"),
    "absolute": ((member("/etc/cron.d/evil"), b"x"), "/etc/cron.d/evil"),
    "symlink": ((member("job/passwd", tarfile.SYMTYPE, "/etc/passwd"), None), "job/passwd"),
    "hardlink": ((member("job/hard", tarfile.LNKTYPE, "/etc/shadow"), None), "job/hard"),
    "device": ((member("job/mem", tarfile.CHRTYPE), None), "job/mem"),
    "fifo": ((member("job/pipe", tarfile.FIFOTYPE), None), "job/pipe"),
}


@pytest.mark.parametrize("case", TAR_CASES)
def test_a_tar_member_that_is_no_plain_file_inside_refuses_the_upload(server, case):
    entry, name = TAR_CASES[case]
    body = expect_refused(server, post_file(server, "job.tar.gz", tar_with(entry)), 400,
                          "job.tar.gz", name)
    assert body["file"] == f"job.tar.gz:{name}"


def zip_with(name, data=b"x", mode=None):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("job/rank0.log", b"[rank0]: hello\n")
        info = zipfile.ZipInfo(name)
        if mode is not None:
            info.create_system = 3  # Unix: the mode is in the high bits of external_attr
            info.external_attr = mode << 16
        z.writestr(info, data)
    return buffer.getvalue()


ZIP_CASES = {
    "dot-dot": ("../../evil.log", None),
    "absolute": ("/tmp/evil.log", None),
    "symlink": ("job/passwd", stat.S_IFLNK | 0o777),
    "device": ("job/mem", stat.S_IFCHR | 0o666),
}


@pytest.mark.parametrize("case", ZIP_CASES)
def test_a_zip_entry_that_leaves_the_folder_or_is_a_link_refuses_the_upload(server, case):
    name, mode = ZIP_CASES[case]
    data = b"/etc/passwd" if mode else b"x"
    body = expect_refused(server, post_file(server, "job.zip", zip_with(name, data, mode)), 400,
                          "job.zip", name)
    assert body["file"] == f"job.zip:{name}"


@pytest.mark.parametrize("names", [("job/a.log", "job/a.log"), ("job/a", "job/a/b.log"),
                                   ("job/a/b.log", "job/a")], ids=["same", "file-then-folder",
                                                                   "folder-then-file"])
def test_a_path_given_twice_refuses_the_upload(server, names):
    """Two files at one path, or a file where a folder must go: which one the analysis read
    would be silent, so the upload is refused, as files and as archive members alike."""
    first, second = names
    files = [("files", (first, b"[rank0]: one\n")), ("files", (second, b"[rank0]: two\n"))]
    expect_refused(server, lambda: requests.post(server.url + "/api/analyses", files=files,
                                                 timeout=TIMEOUT), 400, "appears twice", second)
    archive = tar_with((tarfile.TarInfo(first), b"one\n"), (tarfile.TarInfo(second), b"two\n"))
    expect_refused(server, post_file(server, "job.tar.gz", archive), 400, "appears twice",
                   f"job.tar.gz:{second}")


def test_a_file_name_that_leaves_the_folder_refuses_the_upload(server):
    expect_refused(server, post_file(server, "../../etc/evil.log", b"x"), 400,
                   "../../etc/evil.log")


def test_names_no_file_system_takes_refuse_the_upload(server):
    # Found by the fuzzer once it measured coverage: each was a server error, not a refusal.
    # A name of 100 CJK characters is 300 bytes, over the 255 a file system takes.
    long_name = "job/" + "\u65e5" * 100 + ".log"
    expect_refused(server, post_file(server, long_name, b"x"), 400, "longer than 255 bytes")
    # A zip member with an empty name (zipfile's own is_dir() fails on it).
    expect_refused(server, post_file(server, "empty.zip", zip_with_an_empty_name()), 400,
                   "empty.zip", "without a name")


def zip_with_an_empty_name(data=b"step 1\n"):
    """One stored member whose name is empty, as zipfile cannot write it: local header, data,
    central directory, end record."""
    crc = zlib.crc32(data)
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0, crc, len(data), len(data),
                        0, 0)
    central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 0, 0, 0, crc, len(data),
                          len(data), 0, 0, 0, 0, 0, 0, 0)
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central),
                      len(local) + len(data), 0)
    return local + data + central + end


def test_a_truncated_archive_is_refused_by_name(server, job_folder):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(job_folder, arcname="job")
    whole = buffer.getvalue()
    expect_refused(server, post_file(server, "cut.tar.gz", whole[: len(whole) // 2]), 400,
                   "cut.tar.gz", "truncated")
    # Whole, but with its deflate data damaged past the gzip header: the inflater's own error
    # (ISA-L's where installed, zlib's otherwise) is a refusal naming the archive.
    damaged = bytearray(whole)
    damaged[30:4000] = bytes(range(256)) * 15 + bytes(range(130))
    expect_refused(server, post_file(server, "damaged.tar.gz", bytes(damaged)), 400,
                   "damaged.tar.gz", "unreadable")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(job_folder.iterdir()):
            z.write(f, f"job/{f.name}")
    whole = buffer.getvalue()
    expect_refused(server, post_file(server, "cut.zip", whole[: len(whole) // 2]), 400,
                   "cut.zip", "truncated")
    # A zip whose directory is whole but whose data is damaged.
    damaged = bytearray(whole)
    damaged[200:4000] = bytes(3800)
    expect_refused(server, post_file(server, "damaged.zip", bytes(damaged)), 400, "damaged.zip")


# --- bombs -------------------------------------------------------------------------------------
ZEROS = 2 << 30  # the bombs' content: 2 GiB of zeros in one member


def tar_header(size):
    info = tarfile.TarInfo("job/zeros.log")
    info.size = size
    return info.tobuf(format=tarfile.GNU_FORMAT)


def tar_end(size):
    return bytes(-size % 512) + bytes(1024)


def gzip_bomb(path):
    """A .tar.gz of ZEROS bytes of zeros, streamed out: deflate output after a full flush is
    the same for the same input, so one 16 MiB block's output is written again and again."""
    block = bytes(16 << 20)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    crc = 0
    with open(path, "wb") as out:
        out.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff")  # gzip header, no name
        header = tar_header(ZEROS)
        out.write(deflate.compress(header) + deflate.flush(zlib.Z_FULL_FLUSH))
        crc = zlib.crc32(header, crc)
        compressed = deflate.compress(block) + deflate.flush(zlib.Z_FULL_FLUSH)
        for _ in range(ZEROS // len(block)):
            out.write(compressed)
            crc = zlib.crc32(block, crc)
        end = tar_end(ZEROS)
        out.write(deflate.compress(end) + deflate.flush(zlib.Z_FINISH))
        crc = zlib.crc32(end, crc)
        total = len(header) + ZEROS + len(end)
        out.write(crc.to_bytes(4, "little") + (total & 0xFFFFFFFF).to_bytes(4, "little"))
    return path


def zstd_bomb(path):
    """A .tar.zst of ZEROS bytes of zeros, compressed as it is streamed out."""
    block = bytes(64 << 20)
    with open(path, "wb") as out:
        writer = zstandard.ZstdCompressor(level=1).stream_writer(out, closefd=False)
        writer.write(tar_header(ZEROS))
        for _ in range(ZEROS // len(block)):
            writer.write(block)
        writer.write(tar_end(ZEROS))
        writer.close()
    return path


@pytest.fixture(scope="module")
def bombs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bombs")
    made = {"bomb.tar.gz": gzip_bomb(folder / "bomb.tar.gz"),
            "bomb.tar.zst": zstd_bomb(folder / "bomb.tar.zst")}
    for path in made.values():
        assert path.stat().st_size < 4 << 20  # small on disk
    # They are real archives: the stream holds a member of ZEROS bytes.
    with tarfile.open(made["bomb.tar.gz"], "r|gz") as tar:
        assert next(iter(tar)).size == ZEROS
    return made


@pytest.mark.parametrize("name", ["bomb.tar.gz", "bomb.tar.zst"])
def test_a_decompression_bomb_stops_at_the_unpacked_limit(server, bombs, name):
    started = time.monotonic()
    expect_refused(server, post_file(server, name, bombs[name].read_bytes()), 413,
                   name, "job/zeros.log", "--max-unpacked-bytes")
    assert time.monotonic() - started < 20  # stopped near 32 MiB, not after 2 GiB


def test_a_decompression_bomb_stops_at_the_ratio_limit(bombs, tmp_path):
    # The default limits (16 GiB unpacked): what stops the bomb is its ratio, checked once an
    # archive has unpacked 64 MiB.
    with start_server(tmp_path / "data") as server:
        body = expect_refused(server, post_file(server, "bomb.tar.zst",
                                                bombs["bomb.tar.zst"].read_bytes()),
                              413, "bomb.tar.zst", "job/zeros.log")
        assert "times its size" in body["error"]
        assert not list((tmp_path / "data" / "uploads").iterdir())


# --- requests too big, too many, too slow -----------------------------------------------------
def test_ten_thousand_files_in_one_request_are_refused(server):
    files = [("files", (f"many/f{i:05}.log", b"x")) for i in range(10_000)]
    body = expect_refused(server, lambda: requests.post(server.url + "/api/analyses",
                                                        files=files, timeout=TIMEOUT),
                          413, "--max-files", "8704")
    assert body["file"] == "many/f08704.log"  # the first file over the limit


def raw_request(server, head: bytes, body: bytes = b"", timeout=30):
    """Sends `head` and `body` on a socket of its own; returns (socket, port) left open."""
    port = int(server.url.rsplit(":", 1)[1])
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.sendall(head + body)
    return sock


def read_answer(sock):
    """The whole HTTP answer on the socket: its head and its Content-Length of body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def test_a_stalled_upload_gets_408_and_others_are_served_meanwhile(server):
    total = history_total(server)
    started = time.monotonic()
    sock = raw_request(server, b"POST /api/analyses HTTP/1.1\r\nHost: x\r\n"
                       b"Content-Type: text/plain\r\nContent-Length: 100000\r\n\r\n",
                       b"[rank0]: a log that never ends\n")
    try:
        # While it waits for the rest, everyone else is answered: before the stalled request
        # is given up on.
        for path in ("/api/fleet", "/api/analyses", "/"):
            assert requests.get(server.url + path, timeout=TIMEOUT).status_code == 200
        assert time.monotonic() - started < IDLE_SECONDS
        answer = read_answer(sock)
    finally:
        sock.close()
    elapsed = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"stalled" in answer
    assert IDLE_SECONDS - 0.5 <= elapsed < IDLE_SECONDS + 10
    assert history_total(server) == total
    assert leftovers(server)[0] == []


def archive_part_request(name: str, declared: int) -> bytes:
    """The head of a multipart POST whose one `files` part, named `name`, is `declared` bytes
    long (what follows the part's own head)."""
    part = (b"--b0undary\r\nContent-Disposition: form-data; name=\"files\"; filename=\""
            + name.encode() + b"\"\r\n\r\n")
    tail = b"\r\n--b0undary--\r\n"
    return (b"POST /api/analyses HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: multipart/form-data; boundary=b0undary\r\n"
            b"Content-Length: " + str(len(part) + declared + len(tail)).encode()
            + b"\r\n\r\n" + part)


def test_an_unreadable_tar_archive_is_refused_before_the_rest_of_it_arrives(server):
    # A tar archive is unpacked as it arrives: one whose first block is no tar header is
    # refused by name while 47 of its 48 MiB are still to come (the client then stops sending),
    # not left to wait for them (408).
    total = history_total(server)
    started = time.monotonic()
    sock = raw_request(server, archive_part_request("job/run.tar", 48 << 20),
                       bytes(range(256)) * 4096)
    try:
        answer = read_answer(sock)
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 400"), answer[:300]
    assert b"job/run.tar" in answer and b"unreadable" in answer, answer[:500]
    assert time.monotonic() - started < IDLE_SECONDS + 10
    assert history_total(server) == total
    eventually(lambda: leftovers(server)[0] == [], "the refused upload's folder is removed")
    # The worker that read the upload's files as they arrived is stopped with it: what is left
    # is the one started ahead of the next upload.
    eventually(lambda: len(worker_processes(server.data)) == 1,
               "the refused upload's worker is stopped")


def test_a_tar_archive_that_stops_arriving_gets_408_and_leaves_nothing(server, job_folder):
    # Its unpacking waits for bytes that never come: the 408 stops it, and nothing it unpacked
    # so far is kept.
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(job_folder, arcname="job")
    whole = buffer.getvalue()
    total = history_total(server)
    sock = raw_request(server, archive_part_request("job.tar.gz", len(whole)),
                       whole[: len(whole) // 2])
    try:
        answer = read_answer(sock)
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 408"), answer[:300]
    assert history_total(server) == total
    eventually(lambda: leftovers(server)[0] == [], "the stalled upload's folder is removed")
    assert requests.get(server.url + "/api/analyses", timeout=TIMEOUT).status_code == 200


def test_a_request_over_the_size_limit_is_refused_before_its_body(server):
    sock = raw_request(server, b"POST /api/analyses HTTP/1.1\r\nHost: x\r\n"
                       b"Content-Type: text/plain\r\nContent-Length: 107374182400\r\n\r\n")
    try:
        started = time.monotonic()
        answer = read_answer(sock)  # no byte of the body was sent: the answer comes anyway
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert time.monotonic() - started < IDLE_SECONDS  # not a 408 after waiting for the body
    assert leftovers(server)[0] == []
    # Sent without a length (chunked), it is cut off when it passes the limit.
    def pieces():
        for _ in range(65):
            yield bytes(1 << 20)

    connection = http.client.HTTPConnection("127.0.0.1", int(server.url.rsplit(":", 1)[1]),
                                            timeout=TIMEOUT)
    try:
        connection.request("POST", "/api/analyses", body=pieces(), encode_chunked=True,
                           headers={"Content-Type": "text/plain"})
        status = connection.getresponse().status
    except (BrokenPipeError, ConnectionResetError):
        status = None  # the server closed on the excess: also a refusal
    finally:
        connection.close()
    assert status in (413, None)
    assert history_total(server) >= 0 and leftovers(server)[0] == []


def peak_memory_kib(pid):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_form_fields_cannot_fill_the_servers_memory(tmp_path):
    # Text fields are held in memory (a file part goes to disk): 48 fields of 1 MiB each, each
    # under the one-field limit, must not all be held.
    with start_server(tmp_path / "data") as server:
        pid = server.console_pid()
        before = peak_memory_kib(pid)
        fields = [(f"note{i}", (None, "x" * (1 << 20))) for i in range(48)]
        body = expect_refused(server, lambda: requests.post(
            server.url + "/api/analyses", files=fields, timeout=TIMEOUT), 413, "form")
        assert "fields" in body["error"]
        assert peak_memory_kib(pid) - before < 24 << 10


def test_an_empty_paste_is_refused(server):
    for text in (b"", b"\n  \n"):
        expect_refused(server, lambda: requests.post(
            server.url + "/api/analyses", data=text, timeout=TIMEOUT,
            headers={"Content-Type": "text/plain"}), 400, "empty")


# --- origins, forms and tokens -----------------------------------------------------------------
LOG = b"[rank5]: RuntimeError: CUDA error: an illegal memory access was encountered\n"


def test_cross_site_posts_are_refused(server):
    for headers in ({"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"},
                    {"Origin": "null"}):
        expect_refused(server, lambda: requests.post(
            server.url + "/api/analyses", data=LOG, timeout=TIMEOUT,
            headers={"Content-Type": "text/plain", **headers}), 403, "cross-site")
    # From the console's own page (its origin), the same post is taken.
    same = requests.post(server.url + "/api/analyses", data=LOG, timeout=TIMEOUT,
                         headers={"Content-Type": "text/plain", "Origin": server.url,
                                  "Sec-Fetch-Site": "same-origin"})
    assert same.status_code == 201, same.text


def test_the_page_form_needs_its_csrf_cookie_and_token(server):
    session = requests.Session()
    assert session.get(server.url + "/", timeout=TIMEOUT).status_code == 200
    token = session.cookies.get("fr_csrf")
    assert token
    form = {"log": (None, LOG.decode())}
    total = history_total(server)
    # No token in the address, a wrong one, or a token without the cookie: refused.
    for url, cookies in ((server.url + "/analyses", None),
                         (server.url + "/analyses?csrf=wrong", None),
                         (server.url + f"/analyses?csrf={token}", {})):
        jar = session.cookies if cookies is None else cookies
        answer = requests.post(url, files=form, cookies=jar, timeout=TIMEOUT,
                               allow_redirects=False)
        assert answer.status_code == 403, (url, answer.text[:300])
    assert history_total(server) == total
    answer = session.post(server.url + f"/analyses?csrf={token}", files=form, timeout=TIMEOUT,
                          allow_redirects=False)
    assert answer.status_code == 303, answer.text[:300]
    assert answer.headers["Location"].startswith("/analyses/")
    page = session.get(server.url + answer.headers["Location"], timeout=TIMEOUT)
    assert page.status_code == 200


def test_a_console_with_a_token_answers_nobody_without_it(cli, job_folder, tmp_path):
    with start_server(tmp_path / "data", "--token", "s3cret") as server:
        for path in ("/", "/api/analyses", "/api/fleet", "/fleet"):
            answer = requests.get(server.url + path, timeout=TIMEOUT, allow_redirects=False)
            assert answer.status_code == 401, path
        wrong = requests.get(server.url + "/api/analyses", timeout=TIMEOUT,
                             headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        posted = requests.post(server.url + "/api/analyses", data=LOG, timeout=TIMEOUT,
                               headers={"Content-Type": "text/plain"})
        assert posted.status_code == 401
        bearer = {"Authorization": "Bearer s3cret"}
        assert requests.get(server.url + "/api/analyses", headers=bearer,
                            timeout=TIMEOUT).status_code == 200
        posted = requests.post(server.url + "/api/analyses", data=LOG, timeout=TIMEOUT,
                               headers={"Content-Type": "text/plain", **bearer})
        assert posted.status_code == 201, posted.text
        # A link with ?token= sets a cookie and drops the token from the address.
        session = requests.Session()
        answer = session.get(server.url + "/fleet?token=s3cret", timeout=TIMEOUT,
                             allow_redirects=False)
        assert answer.status_code == 303 and "token" not in answer.headers["Location"]
        assert session.cookies.get("fr_token") == "s3cret"
        assert session.get(server.url + "/fleet", timeout=TIMEOUT).status_code == 200
        assert session.get(server.url + f"/analyses/{posted.json()['id']}",
                           timeout=TIMEOUT).status_code == 200

        # The clients carry it: fr_analyze.Console(token=), `analyze --post` from the
        # environment; without it they say what the console answered.
        import fr_analyze

        text = LOG.decode() + "[rank5]: exiting\n"
        recorded = fr_analyze.Console(server.url, token="s3cret").post(text)
        assert recorded["report"]["verdict"]
        with pytest.raises(fr_analyze.ConsoleError, match="401"):
            fr_analyze.Console(server.url).post(text)
        env = {**os.environ, "FR_ANALYZE_PYTHON": sys.executable}
        proc = subprocess.run([cli, "analyze", str(job_folder), "--post", server.url],
                              capture_output=True, text=True, timeout=TIMEOUT,
                              env={**env, "FR_ANALYZE_CONSOLE_TOKEN": "s3cret"})
        assert proc.returncode == 1 and "recorded as" in proc.stderr, proc.stderr
        proc = subprocess.run([cli, "analyze", str(job_folder), "--post", server.url],
                              capture_output=True, text=True, timeout=TIMEOUT, env=env)
        assert proc.returncode == 2 and "401" in proc.stderr, proc.stderr


# --- runaway analyses --------------------------------------------------------------------------
def folder_files(folder):
    folder = pathlib.Path(folder)
    return [("files", (f"{folder.name}/{p.name}", p.read_bytes()))
            for p in sorted(folder.iterdir())]


def check_failed_with(server, answer, reason):
    assert answer.status_code == 422, answer.text[:500]
    body = answer.json()
    assert reason in body["error"], body
    stored = requests.get(server.url + f"/api/analyses/{body['id']}", timeout=TIMEOUT).json()
    assert stored["status"] == "failed" and stored["error"] == body["error"]
    assert stored["report"] is None and stored["inputs"]  # kept, to run again with more room
    page = requests.get(server.url + f"/analyses/{body['id']}", timeout=TIMEOUT)
    assert page.status_code == 200 and reason in page.text
    assert requests.get(server.url + "/api/fleet", timeout=TIMEOUT).status_code == 200


def test_an_analysis_past_its_time_limit_is_stopped_and_marked_failed(slow_job, tmp_path):
    # 10 ms: less than any machine takes to read 512 dumps (the analysis takes a few tenths of
    # a second here; its worker was started, Python imported, before the upload came).
    with start_server(tmp_path / "data", "--analysis-seconds", "0.01") as server:
        started = time.monotonic()
        answer = requests.post(server.url + "/api/analyses", files=folder_files(slow_job),
                               timeout=TIMEOUT)
        check_failed_with(server, answer, "time limit (0.01 s, --analysis-seconds)")
        assert time.monotonic() - started < 30


def test_an_analysis_past_its_memory_limit_is_stopped_and_marked_failed(slow_job, tmp_path):
    with start_server(tmp_path / "data", "--analysis-memory", "48M") as server:
        answer = requests.post(server.url + "/api/analyses", files=folder_files(slow_job),
                               timeout=TIMEOUT)
        check_failed_with(server, answer, "memory limit (48 MiB, --analysis-memory)")


def test_concurrent_uploads_and_retention_keep_every_input(job_folder, tmp_path):
    """Retention runs after each analysis while others are in flight: it must never take the
    blobs an analysis has stored but not yet recorded, nor trip over two rows for one blob."""
    with start_server(tmp_path / "data", "--max-bytes", "1", "--workers", "2") as server:
        answers = []

        def post():
            answers.append(requests.post(server.url + "/api/analyses",
                                         files=folder_files(job_folder), timeout=TIMEOUT))

        threads = [threading.Thread(target=post) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert [a.status_code for a in answers] == [201] * 6, [a.text[:200] for a in answers]
        # Retention follows the storing of each upload's inputs, after its answer: under a
        # 1-byte limit it ends with the newest analysis alone.
        eventually(lambda: requests.get(server.url + "/api/analyses",
                                        timeout=TIMEOUT).json()["total"] == 1,
                   "retention keeps the newest analysis alone")
        # What retention kept is whole: its inputs analyse again.
        listing = requests.get(server.url + "/api/analyses", timeout=TIMEOUT).json()
        for row in listing["analyses"]:
            rerun = requests.post(server.url + f"/api/analyses/{row['id']}/rerun",
                                  timeout=TIMEOUT)
            assert rerun.status_code == 200, rerun.text[:300]
            assert rerun.json()["report"]["verdict"]["culprit_ranks"] == [5]
