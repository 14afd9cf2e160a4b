"""The S3 store on boto3: ``s3://bucket/prefix?endpoint_url=...&region=...``.

Records live at ``<prefix>/_control/<key>`` in the bucket. The create is ``PutObject``
with ``IfNoneMatch='*'``: 412 PreconditionFailed means a record exists (``False``);
409 ConditionalRequestConflict means a competing create was in flight and nothing is
decided, so it is retried with backoff and then raised as a TransientStoreError, never
reported as ``False``. botocore retries 5xx, throttling and timeouts itself.

Every call has a deadline (``deadline=`` in the URI, default 20 s): each attempt may take
at most half of it to answer, and no attempt starts that could not end within it, so a
dead or blackholed endpoint meets one clear ``TransientStoreError`` instead of botocore's
minutes of retries.

Credentials come from the normal boto3 chain (or ``client_kwargs``) and never appear in
a message: errors carry the S3 error code and HTTP status only.
"""

from __future__ import annotations

import builtins
import random
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import SplitResult

from reference_engine.errors import StoreError, StoreUnavailable, TransientStoreError
from reference_engine.stores.bucket_store import BucketStore, Failure, failure_of_status
from reference_engine.stores.bucket_uri import parse_bucket_uri
from reference_engine.stores.deadlines import (
    DEFAULT_DEADLINE_S,
    CallDeadlines,
    DeadlinePassed,
    attempt_connect_s,
    attempt_read_s,
    checked_deadline,
)

CONFLICT_RETRIES = 6
READ_ATTEMPTS = 3
CONFLICT_BACKOFF_S = 0.05
_PRECONDITION_FAILED = frozenset({"PreconditionFailed", "412"})
_CONFLICT = frozenset({"ConditionalRequestConflict", "OperationAborted", "409"})
_MISSING_KEY = frozenset({"NoSuchKey", "404", "NotFound"})
_AUTH_CODES = frozenset({
    "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken",
    "InvalidToken", "TokenRefreshRequired", "AllAccessDisabled", "403",
})
_THROTTLE_CODES = frozenset({"SlowDown", "Throttling", "ThrottlingException", "RequestTimeout",
                             "RequestTimeTooSkewed", "InternalError", "ServiceUnavailable"})
_URI_OPTIONS = frozenset({"endpoint_url", "region", "addressing_style", "deadline"})
_SESSION_LOCK = threading.Lock()
_SESSION: Any = None


def _error_parts(exc: Any) -> tuple[str, int]:
    """(S3 error code, HTTP status) of a botocore ClientError."""
    response = getattr(exc, "response", {}) or {}
    code = str(response.get("Error", {}).get("Code", ""))
    status = int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    return code, status


class S3Store(BucketStore):
    """One bucket prefix as a ControlPlaneStore; a boto3 client per handle (thread-safe).

    ``client`` stands in for the boto3 client (``client_kwargs`` go to the one made here);
    ``max_attempts`` bounds botocore's own retries, ``conflict_retries`` and
    ``conflict_backoff`` those of a create that meets a competing one.
    """

    service = "S3"
    scheme = "s3"
    access_control = "the bucket policy"

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        addressing_style: str | None = None,
        client: Any = None,
        client_kwargs: Mapping[str, Any] | None = None,
        max_attempts: int = 5,
        conflict_retries: int = CONFLICT_RETRIES,
        conflict_backoff: float = CONFLICT_BACKOFF_S,
        deadline: float = DEFAULT_DEADLINE_S,
    ) -> None:
        super().__init__(bucket, prefix)
        self.endpoint_url = endpoint_url
        self.conflict_retries = max(1, conflict_retries)
        self.conflict_backoff = conflict_backoff
        self.deadline = checked_deadline(deadline, self.service)
        self._calls = CallDeadlines(self.deadline)
        if client is None:
            client = self._make_client(endpoint_url, region, addressing_style, max_attempts,
                                       dict(client_kwargs or {}), self.deadline)
            client.meta.events.register("before-send.s3", self._before_attempt)
        self._client = client
        self._botocore_exceptions = _botocore_exceptions()

    def __repr__(self) -> str:
        where = f" at {self.endpoint_url}" if self.endpoint_url else ""
        return f"S3Store(s3://{self.bucket}/{self.prefix}{where})"

    @staticmethod
    def _make_client(
        endpoint_url: str | None,
        region: str | None,
        addressing_style: str | None,
        max_attempts: int,
        client_kwargs: dict[str, Any],
        deadline: float = DEFAULT_DEADLINE_S,
    ) -> Any:
        try:
            import botocore.session  # type: ignore[import-untyped, unused-ignore]
            from botocore.config import Config  # type: ignore[import-untyped, unused-ignore]
        except ImportError:
            raise StoreUnavailable(
                "the S3 store needs boto3: pip install 'dw-testing[s3]'", op="open"
            ) from None
        style = addressing_style or ("path" if endpoint_url else "auto")
        config = Config(
            retries={"mode": "standard", "total_max_attempts": max_attempts},
            connect_timeout=attempt_connect_s(deadline),
            read_timeout=attempt_read_s(deadline),
            s3={"addressing_style": style},
            max_pool_connections=32,
        )
        global _SESSION
        # One session for every handle: it caches the service model, so a new client costs
        # ~10 ms instead of ~130 ms. Creating clients from one session is not thread-safe,
        # hence the lock; the clients themselves are.
        with _SESSION_LOCK:
            if _SESSION is None:
                _SESSION = botocore.session.Session()
            return _SESSION.create_client(
                "s3", endpoint_url=endpoint_url, region_name=region, config=config,
                **client_kwargs,
            )

    # -- deadlines -----------------------------------------------------------------------------

    def _before_attempt(self, **_: Any) -> None:
        """botocore's ``before-send``: refuse an attempt that could not end by the deadline."""
        if self._calls.remaining() < attempt_connect_s(self.deadline) + attempt_read_s(
                self.deadline):
            raise DeadlinePassed

    # -- error mapping -------------------------------------------------------------------------

    def _mapped(self, exc: BaseException, op: str, key: str) -> StoreError:
        """A store error naming op, key and the S3 code; no server text, no credentials."""
        if isinstance(exc, DeadlinePassed):
            return self._past_deadline(op, key)
        exceptions = self._botocore_exceptions
        if exceptions is not None and isinstance(exc, exceptions.NoCredentialsError):
            return self._failed(
                Failure.DENIED, op, key, "no AWS credentials found",
                "configure the standard chain (environment, ~/.aws, instance role)")
        if exceptions is not None and isinstance(
            exc, (exceptions.EndpointConnectionError, exceptions.ConnectionError,
                  exceptions.HTTPClientError, *_transport_errors())
        ):
            # HTTPClientError: a connection reset or closed mid-call, or a read timeout.
            return self._failed(Failure.TRANSIENT, op, key, type(exc).__name__,
                                "check the endpoint is reachable, then retry the call")
        code, status = _error_parts(exc)
        detail = f"{code or type(exc).__name__}" + (f", HTTP {status}" if status else "")
        if code == "NoSuchBucket":
            failure = Failure.NO_BUCKET
        elif code in _AUTH_CODES:
            failure = Failure.DENIED
        elif code in _THROTTLE_CODES or code in _CONFLICT:
            failure = Failure.TRANSIENT
        else:
            failure = failure_of_status(status)
        return self._failed(failure, op, key, detail)

    def _is_client_error(self, exc: Exception) -> bool:
        exceptions = self._botocore_exceptions
        return exceptions is not None and isinstance(exc, exceptions.ClientError)

    # -- the contract --------------------------------------------------------------------------

    def put_if_absent(self, key: str, data: bytes) -> bool:
        name = self._object_name(key, "put_if_absent")
        body = bytes(data)
        with self._calls.started():
            return self._create(key, name, body)

    def _create(self, key: str, name: str, body: bytes) -> bool:
        for attempt in range(self.conflict_retries):
            try:
                self._client.put_object(Bucket=self.bucket, Key=name, Body=body, IfNoneMatch="*")
                return True
            except Exception as exc:
                if not self._is_client_error(exc):
                    raise self._mapped(exc, "put_if_absent", key) from None
                code, status = _error_parts(exc)
                if code in _PRECONDITION_FAILED or status == 412:
                    return False
                if not (code in _CONFLICT or status == 409):
                    raise self._mapped(exc, "put_if_absent", key) from None
            # 409: another create was in flight and nothing is decided; retry, don't guess.
            if attempt + 1 < self.conflict_retries:
                time.sleep(self.conflict_backoff * (2**attempt) * (0.5 + random.random()))
        raise TransientStoreError(
            f"{self.where}: put_if_absent of key {key!r} kept meeting a competing create "
            f"(409 ConditionalRequestConflict, {self.conflict_retries} tries); nothing is "
            "decided, retry the call",
            op="put_if_absent", key=key,
        )

    def put(self, key: str, data: bytes) -> None:
        name = self._object_name(key, "put")
        try:
            with self._calls.started():
                self._client.put_object(Bucket=self.bucket, Key=name, Body=bytes(data))
        except Exception as exc:
            raise self._mapped(exc, "put", key) from None

    def get(self, key: str) -> bytes | None:
        name = self._object_name(key, "get")
        with self._calls.started():
            for attempt in range(READ_ATTEMPTS):
                try:
                    response = self._client.get_object(Bucket=self.bucket, Key=name)
                    body: bytes = response["Body"].read()
                except Exception as exc:
                    if self._is_client_error(exc):
                        code, status = _error_parts(exc)
                        if code in _MISSING_KEY or (status == 404 and code != "NoSuchBucket"):
                            return None
                    failure = self._mapped(exc, "get", key)
                    # botocore retries the request, not the reading of its body: a reply cut
                    # short is read again (a get changes nothing), within the deadline.
                    if (isinstance(failure, TransientStoreError) and attempt + 1 < READ_ATTEMPTS
                            and not isinstance(exc, DeadlinePassed)):
                        continue
                    raise failure from None
                return body
        raise AssertionError("unreachable: the last attempt returns or raises")

    def delete(self, key: str) -> None:
        name = self._object_name(key, "delete")
        try:
            with self._calls.started():
                self._client.delete_object(Bucket=self.bucket, Key=name)
        except Exception as exc:
            if self._is_client_error(exc) and _error_parts(exc)[0] in _MISSING_KEY:
                return
            raise self._mapped(exc, "delete", key) from None

    def list(self, prefix: str) -> builtins.list[str]:
        with self._calls.started():
            return super().list(prefix)

    def _names_under(self, search: str) -> Iterator[str]:
        paginator = self._client.get_paginator("list_objects_v2")
        pages = paginator.paginate(
            Bucket=self.bucket, Prefix=search, PaginationConfig={"PageSize": self.list_page_size}
        )
        for page in pages:
            for item in page.get("Contents", ()):
                yield item["Key"]

    def close(self) -> None:
        """Close the client's connection pool."""
        close = getattr(self._client, "close", None)
        if callable(close):
            close()


def _transport_errors() -> tuple[type[BaseException], ...]:
    """What a reply cut short raises from under botocore (urllib3, http.client)."""
    import http.client

    try:
        import urllib3.exceptions
    except ImportError:
        return (http.client.HTTPException,)
    return (http.client.HTTPException, urllib3.exceptions.HTTPError)


def _botocore_exceptions() -> Any:
    try:
        import botocore.exceptions  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        return None
    return botocore.exceptions


def from_uri(parsed: SplitResult) -> S3Store:
    """``s3://bucket/prefix?endpoint_url=URL&region=REGION&addressing_style=path|virtual
    &deadline=SECONDS``."""
    uri = parse_bucket_uri(
        parsed, service="S3", known=_URI_OPTIONS,
        credentials_hint="the standard AWS chain (environment, ~/.aws, instance role)")
    return S3Store(uri.bucket, uri.prefix, endpoint_url=uri.option("endpoint_url"),
                   region=uri.option("region"), addressing_style=uri.option("addressing_style"),
                   deadline=uri.deadline("S3"))
