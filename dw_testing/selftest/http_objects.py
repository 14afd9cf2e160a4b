"""A tiny HTTP object server, and the provider that serves ``examples/typescript/http_store.ts``
over it: the parity store of issue 35 that talks to an object API the way cloud stores do.

The server keeps objects in memory behind one lock, so every call is atomic:

- ``HEAD /``: 200 (the store's credentials check on a handle's first call);
- ``GET /o/<key>``: the object, or 404; ``PUT /o/<key>``: 200, or with ``If-None-Match: *``
  412 when the object exists; ``DELETE /o/<key>``: 204;
- ``GET /list?prefix=<p>``: a JSON list of every key starting with ``p``.

The provider starts the server on a free port and declares a ``NetworkRoute``, so under
``--dw-network`` each handle reaches the server through the suite's fault proxy:

    --dw-store=dw_testing.selftest.http_objects:http_store
"""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from dw_testing.kit.spec import NetworkRoute, StoreSpec
from reference_engine.stores.registry import open_store

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "typescript" / "http_store.ts"


class Objects:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.data: dict[str, bytes] = {}


class ObjectHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as an SDK's connection pool uses it
    objects: Objects

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _reply(self, status: int, body: bytes = b"", kind: str = "application/octet-stream"
               ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def _key(self) -> str | None:
        path = urlsplit(self.path).path
        return unquote(path[len("/o/"):]) if path.startswith("/o/") else None

    def do_HEAD(self) -> None:
        self._reply(200)

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if parts.path == "/list":
            prefix = parse_qs(parts.query, keep_blank_values=True).get("prefix", [""])[0]
            with self.objects.lock:
                found = sorted(k for k in self.objects.data if k.startswith(prefix))
            self._reply(200, json.dumps(found).encode(), "application/json")
            return
        key = self._key()
        with self.objects.lock:
            body = None if key is None else self.objects.data.get(key)
        self._reply(404) if body is None else self._reply(200, body)

    def do_PUT(self) -> None:
        key = self._key()
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if key is None:
            self._reply(400)
            return
        with self.objects.lock:
            if self.headers.get("If-None-Match") == "*" and key in self.objects.data:
                status = 412
            else:
                self.objects.data[key] = body
                status = 200
        self._reply(status)

    def do_DELETE(self) -> None:
        key = self._key()
        with self.objects.lock:
            if key is not None:
                self.objects.data.pop(key, None)
        self._reply(204)


@contextlib.contextmanager
def object_server() -> Iterator[str]:
    """A running server on a free local port: its URL."""
    handler = type("Handler", (ObjectHandler,), {"objects": Objects()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def exec_reference(endpoint: str) -> str:
    deno = shutil.which("deno") or "deno"
    return "exec:" + shlex.join([deno, "run", "-A", str(SCRIPT), endpoint])


@contextlib.contextmanager
def http_store() -> Iterator[StoreSpec]:
    """The TypeScript HTTP object store over a fresh server, with its network route."""
    with object_server() as url:
        yield StoreSpec(factory=lambda: open_store(exec_reference(url)),
                        name="http-ts", capabilities={"cross_handle": True},
                        network=NetworkRoute(url, lambda via: open_store(exec_reference(via))))
