"""A tiny key-value server for the guide's provider example: ``myserver --port N --in-memory``.

HTTP on loopback. ``PUT`` with ``If-None-Match: *`` is the write-once create (412 when the
key exists); a lock makes every call atomic. Keys are URL-quoted path segments.
"""

from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

RECORDS: dict[str, bytes] = {}
LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def _reply(self, status: int, body: bytes = b"") -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _key(self) -> str:
        return unquote(urlsplit(self.path).path.removeprefix("/o/"))

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if parts.path == "/health":
            self._reply(200, b"ok")
        elif parts.path == "/list":
            prefix = parse_qs(parts.query).get("prefix", [""])[0]
            with LOCK:
                keys = sorted(k for k in RECORDS if k.startswith(prefix))
            self._reply(200, json.dumps(keys).encode())
        else:
            with LOCK:
                value = RECORDS.get(self._key())
            self._reply(404) if value is None else self._reply(200, value)

    def do_PUT(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        key = self._key()
        with LOCK:
            if self.headers.get("If-None-Match") == "*" and key in RECORDS:
                created = False
            else:
                RECORDS[key] = body
                created = True
        self._reply(204 if created else 412)

    def do_DELETE(self) -> None:
        with LOCK:
            RECORDS.pop(self._key(), None)
        self._reply(204)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--in-memory", action="store_true")
    args = parser.parse_args()
    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
