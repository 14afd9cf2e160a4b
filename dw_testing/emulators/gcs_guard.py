"""A guard in front of fake-gcs-server that honours ``ifGenerationMatch=0`` on every upload.

fake-gcs-server v1.54.0 honours a create's precondition only on multipart uploads: a simple
media upload or a resumable upload overwrites an existing object (fsouza/fake-gcs-server
#994). A GCS store that creates that way, as swamp's does, would be failed for the
emulator's bug. The guard answers every write one at a time (so a check and the write
behind it are atomic) and refuses, with GCS's own 412, a create whose object exists: a
media upload at once, a resumable upload when its session starts and again when its last
chunk arrives. Everything else passes through unchanged, the ``Location`` of a resumable
session rewritten to point back at the guard.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import socket
import threading
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, urlsplit

TIMEOUT_S = 30.0
_UPLOAD_PATH = re.compile(r"^/upload/storage/v1/b/(?P<bucket>[^/]+)/o/?$")
_COMPLETES = re.compile(r"bytes (?:\*|(?P<first>\d+)-(?P<last>\d+))/(?P<total>\d+)$")
_WRITES = {"POST", "PUT", "PATCH", "DELETE"}
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "host", "content-length"}
_PRECONDITION_FAILED = json.dumps({"error": {
    "code": 412, "message": "conditionNotMet: the object exists (ifGenerationMatch=0)",
    "errors": [{"reason": "conditionNotMet", "message": "Precondition Failed"}]}}).encode()


class _Guard:
    """The state behind the handler: the upstream, the one lock, open resumable sessions."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        assert parts.hostname is not None and parts.port is not None
        self.host, self.port = parts.hostname, parts.port
        self.lock = threading.Lock()
        self.sessions: dict[str, tuple[str, str]] = {}  # upload_id -> (bucket, object name)
        self.refused = 0
        self._connections = threading.local()

    def exists(self, bucket: str, name: str) -> bool:
        status, _, _ = self.send("GET", f"/storage/v1/b/{bucket}/o/{quote(name, safe='')}",
                                 {}, b"")
        return status == 200

    def send(self, method: str, path: str, headers: Mapping[str, str],
             body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        """One request upstream on this thread's kept-alive connection (a new one if the
        emulator closed it)."""
        for attempt in range(2):
            connection = getattr(self._connections, "upstream", None)
            if connection is None:
                connection = http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT_S)
                self._connections.upstream = connection
            try:
                connection.request(method, path, body=body or None, headers=dict(headers))
                answer = connection.getresponse()
                return answer.status, answer.getheaders(), answer.read()
            except (http.client.HTTPException, ConnectionError):
                connection.close()
                self._connections.upstream = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def refuses(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> bool:
        """Whether this request is a create whose object already exists."""
        parts = urlsplit(path)
        upload = _UPLOAD_PATH.match(parts.path)
        if method not in ("POST", "PUT") or upload is None:
            return False
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        bucket = upload.group("bucket")
        if "upload_id" in query:  # a chunk of a resumable session
            session = self.sessions.get(query["upload_id"])
            if session is None or not _completes(headers.get("Content-Range", "")):
                return False
            del self.sessions[query["upload_id"]]
            return self.exists(*session)
        if query.get("ifGenerationMatch") != "0" or query.get("uploadType") not in (
                "media", "resumable"):
            return False  # multipart: the emulator honours the precondition itself
        name = query.get("name") or _name_in(body)
        return bool(name) and self.exists(bucket, name)

    def remember_session(self, path: str, body: bytes,
                         answer_headers: list[tuple[str, str]]) -> None:
        parts = urlsplit(path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        upload = _UPLOAD_PATH.match(parts.path)
        if (upload is None or query.get("uploadType") != "resumable"
                or query.get("ifGenerationMatch") != "0" or "upload_id" in query):
            return
        location = dict((k.lower(), v) for k, v in answer_headers).get("location", "")
        upload_id = parse_qs(urlsplit(location).query).get("upload_id", [""])[-1]
        name = query.get("name") or _name_in(body)
        if upload_id and name:
            self.sessions[upload_id] = (upload.group("bucket"), name)


def _completes(content_range: str) -> bool:
    """A chunk that finishes its upload: a known total it reaches, or no range at all."""
    if not content_range:
        return True
    found = _COMPLETES.match(content_range.strip())
    if found is None:
        return False
    return found.group("last") is None or int(found.group("last")) + 1 == int(
        found.group("total"))


def _name_in(body: bytes) -> str:
    try:
        metadata = json.loads(body or b"{}")
    except ValueError:
        return ""
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else ""


def _handler(guard: _Guard, own_url: str, upstream: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            return  # no line per request

        def setup(self) -> None:
            super().setup()
            # Headers and body leave in two writes: without this, Nagle's algorithm and the
            # client's delayed ACK hold every answer back about 40 ms.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def _forward(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            # Writes one at a time, so a create's check and its write are atomic among them;
            # reads need no lock and go straight through.
            lock = guard.lock if self.command in _WRITES else contextlib.nullcontext()
            with lock:
                if guard.refuses(self.command, self.path, headers, body):
                    guard.refused += 1
                    status, answer_headers, answer = (
                        412, [("Content-Type", "application/json")], _PRECONDITION_FAILED)
                else:
                    status, answer_headers, answer = guard.send(
                        self.command, self.path, headers, body)
                    guard.remember_session(self.path, body, answer_headers)
            self.send_response(status)
            for name, value in answer_headers:
                if name.lower() in _HOP_BY_HOP:
                    continue
                if name.lower() == "location":
                    value = value.replace(upstream, own_url)
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(answer)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _forward

    return Handler


@contextlib.contextmanager
def guarded(upstream: str) -> Iterator[str]:
    """A guard on a free loopback port in front of the fake-gcs-server at ``upstream``;
    yields the guard's URL, which stores use in place of the emulator's."""
    guard = _Guard(upstream)
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    own_url = f"http://127.0.0.1:{server.server_port}"
    server.RequestHandlerClass = _handler(guard, own_url, upstream)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="fake-gcs-guard", daemon=True)
    thread.start()
    try:
        yield own_url
    finally:
        server.shutdown()
        server.server_close()
        thread.join(TIMEOUT_S)
