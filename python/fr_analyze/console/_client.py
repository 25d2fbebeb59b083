"""fr_analyze.Console: record into a running console from Python (and `fr-analyze analyze DIR
--post URL`): a job's folder or files are uploaded for the console to analyse and keep; a Report
or a pasted log's text is sent as it is.

    console = fr_analyze.Console("http://console:8080", token=None)
    answer = console.post("/checkpoints/job42/fr", name="job42", label="cluster-a")
    answer["id"], answer["report"]["verdict"]["culprit_ranks"]
"""

from __future__ import annotations

import http.client
import json
import os
import pathlib
import secrets
import urllib.parse
from typing import Any, Iterator, List, Optional, Tuple

from fr_analyze.errors import Error


class ConsoleError(Error):
    """The console refused the upload (the message is its answer) or cannot be reached."""


class Console:
    def __init__(self, url: str, *, token: Optional[str] = None, timeout: float = 3600.0):
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"url: expected http(s)://host:port, got {url!r}")
        self.url = url.rstrip("/")
        self._parsed = parsed
        self.token = token
        self.timeout = timeout

    def post(self, what: Any, *, name: str = "", label: str = "") -> dict:
        """Records `what` (a folder, a file, a list of files, a fr_analyze.Report, or a pasted
        log's text as str) and returns the console's answer: {"id", "report"}."""
        query = urllib.parse.urlencode({k: v for k, v in (("name", name), ("label", label)) if v})
        path = "/api/analyses" + (f"?{query}" if query else "")
        if hasattr(what, "to_json") and callable(what.to_json):
            return self._request(path, what.to_json().encode(), "application/json")
        if isinstance(what, str) and not os.path.exists(what) and "\n" in what:
            return self._request(path, what.encode(), "text/plain; charset=utf-8")
        files = _files_of(what)
        if not files:
            raise ConsoleError(f"nothing to upload in {what!r}")
        boundary = "fr-analyze-" + secrets.token_hex(16)
        return self._request(path, _multipart(files, boundary),
                             f"multipart/form-data; boundary={boundary}")

    def get(self, analysis_id: str) -> dict:
        return self._request(f"/api/analyses/{urllib.parse.quote(analysis_id)}", None, None)

    def _request(self, path: str, body: Any, content_type: Optional[str]) -> dict:
        p = self._parsed
        cls = http.client.HTTPSConnection if p.scheme == "https" else http.client.HTTPConnection
        connection = cls(p.hostname, p.port, timeout=self.timeout)
        headers = {}
        if content_type:
            headers["Content-Type"] = content_type
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            if isinstance(body, (bytes, type(None))):
                connection.request("POST" if body is not None else "GET",
                                   (p.path.rstrip("/") or "") + path, body=body, headers=headers)
            else:  # a generator of pieces: the upload is streamed, never held whole
                headers["Transfer-Encoding"] = "chunked"
                connection.request("POST", (p.path.rstrip("/") or "") + path, body=body,
                                   headers=headers, encode_chunked=True)
            response = connection.getresponse()
            data = response.read()
        except OSError as error:
            raise ConsoleError(f"cannot reach the console at {self.url}: {error}") from None
        finally:
            connection.close()
        try:
            answer = json.loads(data)
        except ValueError:
            answer = {"error": data[:200].decode("utf-8", "replace")}
        if response.status >= 400:
            raise ConsoleError(f"the console answered {response.status}: "
                               f"{answer.get('error', answer)}"
                               + (f" ({answer['file']})" if answer.get("file") else ""))
        return answer


def _files_of(what: Any) -> List[Tuple[pathlib.Path, str]]:
    """(file, name sent) pairs: a folder's files with paths relative to its parent."""
    items = what if isinstance(what, (list, tuple)) else [what]
    files = []
    for item in items:
        path = pathlib.Path(os.fspath(item))
        if path.is_dir():
            for f in sorted(path.rglob("*")):
                if f.is_file() and not f.is_symlink():
                    files.append((f, f.relative_to(path.parent).as_posix()))
        elif path.is_file():
            files.append((path, path.name))
        else:
            raise ConsoleError(f"{path}: no such file or folder")
    return files


def _multipart(files: List[Tuple[pathlib.Path, str]], boundary: str) -> Iterator[bytes]:
    for path, name in files:
        quoted = name.replace("\\", "\\\\").replace('"', '\\"')
        yield (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; "
               f"filename=\"{quoted}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
               ).encode()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                yield block
        yield b"\r\n"
    yield f"--{boundary}--\r\n".encode()
