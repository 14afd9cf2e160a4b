"""The GCS store on gcsfs: ``gs://bucket/prefix?endpoint=...``.

Records live at ``<prefix>/_control/<key>`` in the bucket. Every write is one JSON-API
**multipart** upload (metadata + bytes in a single request), whatever the size: the create
adds ``ifGenerationMatch=0`` and a 412 means a record exists (``False``). gcsfs itself
switches to a resumable upload for large data and for ``open("xb")``, and fake-gcs-server
ignores the precondition on resumable and media uploads, so this store never uses them.
Reads are one ``alt=media`` GET, so a reader never stitches ranges of two generations.

Every call has a deadline (``deadline=`` in the URI, default 20 s) that covers gcsfs's own
retry loop: past it the call is cancelled and raises one ``TransientStoreError``.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import secrets
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import SplitResult, quote, urlsplit

from reference_engine.errors import StoreError, StoreUnavailable
from reference_engine.stores.bucket_store import BucketStore, Failure, failure_of_status
from reference_engine.stores.bucket_uri import parse_bucket_uri
from reference_engine.stores.deadlines import DEFAULT_DEADLINE_S, checked_deadline

_URI_OPTIONS = frozenset({"endpoint", "token", "project", "deadline"})


def _filesystem_class() -> Any:
    """gcsfs's plain JSON-API filesystem.

    ``gcsfs.GCSFileSystem`` is by default an extended class that probes every bucket for
    zonal storage over gRPC; against an emulator each probe stalls a call for 60 s. The
    environment switch only works before gcsfs is first imported, so the plain class from
    ``gcsfs.core`` is used directly as well.
    """
    os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
    try:
        from gcsfs.core import GCSFileSystem  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        raise StoreUnavailable(
            "the GCS store needs gcsfs: pip install 'dw-testing[gcs]'", op="open"
        ) from None
    return GCSFileSystem


ENDPOINT_PROBE_S = 3.0


def check_endpoint(endpoint: str, *, probe_s: float = ENDPOINT_PROBE_S) -> None:
    """Refuse, at open, an ``endpoint=`` that is not an http(s) URL or that nothing
    answers on: gcsfs would otherwise retry each call for about half a minute first."""
    parsed = urlsplit(endpoint)
    try:
        port = parsed.port
    except ValueError:
        port = -1
    if parsed.scheme not in ("http", "https") or not parsed.hostname or port == -1:
        raise StoreUnavailable(
            "GCS endpoint= must be an http(s) URL with a host, e.g. "
            "endpoint=http://127.0.0.1:4443", op="open")
    where = (parsed.hostname, port or (443 if parsed.scheme == "https" else 80))
    try:
        socket.create_connection(where, timeout=probe_s).close()
    except OSError as exc:
        raise StoreUnavailable(
            f"cannot reach the GCS endpoint {parsed.scheme}://{where[0]}:{where[1]} "
            f"({exc.strerror or type(exc).__name__}); start the server or fix endpoint=",
            op="open") from None


def _status_of(exc: BaseException) -> int:
    code = getattr(exc, "code", None)
    if isinstance(code, int):
        return code
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) else 0


def multipart_body(name: str, data: bytes) -> tuple[bytes, str]:
    """A multipart/related upload body and its content type; the boundary is not in ``data``."""
    boundary = secrets.token_hex(16)
    while boundary.encode() in data:
        boundary = secrets.token_hex(16)
    metadata = json.dumps({
        "name": name,
        # GCS checks the hash, so a truncated upload can never become a record.
        "md5Hash": base64.b64encode(hashlib.md5(data).digest()).decode(),
    })
    head = (
        f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{metadata}\r\n"
        f"--{boundary}\r\nContent-Type: application/octet-stream\r\n\r\n"
    ).encode()
    body = head + data + f"\r\n--{boundary}--\r\n".encode()
    return body, f'multipart/related; boundary="{boundary}"'


class GcsStore(BucketStore):
    """One bucket prefix as a ControlPlaneStore; a gcsfs filesystem per handle.

    ``token`` is what gcsfs takes (``anon`` by default against an ``endpoint``), ``project``
    the billing project; ``filesystem`` stands in for the gcsfs filesystem made here.
    """

    service = "GCS"
    scheme = "gs"
    access_control = "the bucket's IAM"

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        endpoint: str | None = None,
        token: Any = None,
        project: str | None = None,
        filesystem: Any = None,
        deadline: float = DEFAULT_DEADLINE_S,
    ) -> None:
        super().__init__(bucket, prefix)
        self.endpoint = endpoint
        self.deadline = checked_deadline(deadline, self.service)
        if filesystem is None:
            kwargs: dict[str, Any] = {
                # Each handle is its own client with no cached listings (C-HANDLE-1).
                "skip_instance_cache": True,
                "use_listings_cache": False,
                "token": token if token is not None else ("anon" if endpoint else None),
            }
            if endpoint:
                check_endpoint(endpoint)
                kwargs["endpoint_url"] = endpoint
            if project:
                kwargs["project"] = project
            filesystem = _filesystem_class()(**kwargs)
        self._fs = filesystem

    def __repr__(self) -> str:
        where = f" at {self.endpoint}" if self.endpoint else ""
        return f"GcsStore(gs://{self.bucket}/{self.prefix}{where})"

    def object_path(self, key: str) -> str:
        """``bucket/object`` of a validated key, as gcsfs spells paths."""
        return f"{self.bucket}/{self._root}{key}"

    def _call(self, *args: Any, **kwargs: Any) -> Any:
        """``fs.call`` bounded by the deadline, gcsfs's retries included: fsspec cancels it
        past the deadline and raises ``FSTimeoutError``."""
        return self._fs.call(*args, timeout=self.deadline, **kwargs)

    # -- error mapping -------------------------------------------------------------------------

    def _mapped(self, exc: BaseException, op: str, key: str) -> StoreError:
        """A store error naming op, key and the HTTP status; never a token or a payload."""
        if type(exc).__name__ == "FSTimeoutError":
            return self._past_deadline(op, key)
        status = _status_of(exc)
        name = type(exc).__name__
        detail = name + (f", HTTP {status}" if status else "")
        if isinstance(exc, FileNotFoundError):
            # get and delete answer a missing object themselves; what is missing here is the bucket
            failure = Failure.NO_BUCKET
        elif isinstance(exc, PermissionError) or (
            isinstance(exc, OSError) and "Forbidden" in str(exc)
        ):
            failure = Failure.DENIED
        elif isinstance(exc, (TimeoutError, ConnectionError)) or "ClientConnector" in name or (
            "Timeout" in name
        ):
            failure = Failure.TRANSIENT
        else:
            failure = failure_of_status(status)
        return self._failed(failure, op, key, detail)

    # -- uploads -------------------------------------------------------------------------------

    def _multipart_upload(self, name: str, data: bytes, *, create: bool) -> None:
        """One multipart request; ``create`` adds ``ifGenerationMatch=0`` (412: FileExistsError)."""
        body, content_type = multipart_body(name, bytes(data))
        url = f"{self._fs._location}/upload/storage/v1/b/{quote(self.bucket, safe='')}/o"
        params: dict[str, str] = {"uploadType": "multipart"}
        if create:
            params["ifGenerationMatch"] = "0"
        self._call(
            "POST", url, headers={"Content-Type": content_type}, data=body, json_out=True,
            **params,
        )

    # -- the contract --------------------------------------------------------------------------

    def put_if_absent(self, key: str, data: bytes) -> bool:
        name = self._object_name(key, "put_if_absent")
        try:
            self._multipart_upload(name, data, create=True)
        except FileExistsError:
            return False
        except Exception as exc:
            raise self._mapped(exc, "put_if_absent", key) from None
        return True

    def put(self, key: str, data: bytes) -> None:
        name = self._object_name(key, "put")
        try:
            self._multipart_upload(name, data, create=False)
        except Exception as exc:
            raise self._mapped(exc, "put", key) from None

    def get(self, key: str) -> bytes | None:
        name = self._object_name(key, "get")
        try:
            _, contents = self._call("GET", "b/{}/o/{}", self.bucket, name, alt="media")
        except FileNotFoundError:
            return None
        except Exception as exc:
            raise self._mapped(exc, "get", key) from None
        return bytes(contents)

    def delete(self, key: str) -> None:
        name = self._object_name(key, "delete")
        try:
            self._call("DELETE", "b/{}/o/{}", self.bucket, name)
        except FileNotFoundError:
            return
        except Exception as exc:
            raise self._mapped(exc, "delete", key) from None

    def _names_under(self, search: str) -> Iterator[str]:
        page_token: str | None = None
        while True:
            page = self._call(
                "GET", "b/{}/o", self.bucket, prefix=search, pageToken=page_token,
                maxResults=self.list_page_size, fields="items(name),nextPageToken",
                json_out=True,
            )
            for item in page.get("items", ()):
                yield item["name"]
            page_token = page.get("nextPageToken")
            if not page_token:
                return

    def close(self) -> None:
        """Close this handle's HTTP session (each handle has its own client)."""
        session = getattr(self._fs, "_session", None)
        close_session = getattr(self._fs, "close_session", None)
        if session is None or not callable(close_session):
            return
        with contextlib.suppress(Exception):  # closing is best effort, as at interpreter exit
            close_session(self._fs.loop, session)
        self._fs._session = None


def from_uri(parsed: SplitResult) -> GcsStore:
    """``gs://bucket/prefix?endpoint=URL&token=anon|google_default|cloud|PATH&project=P
    &deadline=SECONDS``."""
    uri = parse_bucket_uri(parsed, service="GCS", known=_URI_OPTIONS,
                           credentials_hint="token=google_default or a service-account file path")
    return GcsStore(uri.bucket, uri.prefix, endpoint=uri.option("endpoint"),
                    token=uri.option("token"), project=uri.option("project"),
                    deadline=uri.deadline("GCS"))
