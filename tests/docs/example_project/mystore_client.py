"""MyStore: the guide's store, a client of the example server (one connection per call)."""

from __future__ import annotations

import http.client
import json
from urllib.parse import quote

from reference_engine.errors import StoreError
from reference_engine.stores.keys import validate_key, validate_prefix


class MyStore:
    def __init__(self, endpoint: str, bucket: str) -> None:
        self.host = endpoint.removeprefix("http://")
        self.bucket = bucket

    def _call(self, method: str, path: str, body: bytes | None = None,
              headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        connection = http.client.HTTPConnection(self.host, timeout=30)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, response.read()
        except OSError as exc:
            raise StoreError(f"{method} failed: {type(exc).__name__}", op=method) from None
        finally:
            connection.close()

    def _path(self, key: str) -> str:
        return "/o/" + quote(f"{self.bucket}/{key}", safe="/")

    def put(self, key: str, data: bytes) -> None:
        self._call("PUT", self._path(validate_key(key, op="put")), bytes(data))

    def put_if_absent(self, key: str, data: bytes) -> bool:
        status, _ = self._call("PUT", self._path(validate_key(key, op="put_if_absent")),
                               bytes(data), {"If-None-Match": "*"})
        return status == 204

    def get(self, key: str) -> bytes | None:
        status, body = self._call("GET", self._path(validate_key(key, op="get")))
        return body if status == 200 else None

    def delete(self, key: str) -> None:
        self._call("DELETE", self._path(validate_key(key, op="delete")))

    def list(self, prefix: str) -> list[str]:
        normalised = validate_prefix(prefix)
        under = f"{self.bucket}/{normalised + '/' if normalised else ''}"
        _, body = self._call("GET", "/list?prefix=" + quote(under, safe=""))
        return [k.removeprefix(f"{self.bucket}/") for k in json.loads(body)]
