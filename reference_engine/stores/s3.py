"""The S3 store on boto3: ``s3://bucket/prefix?endpoint_url=...&region=...``.

Records live at ``<prefix>/_control/<key>`` in the bucket. The create is ``PutObject``
with ``IfNoneMatch='*'``: 412 PreconditionFailed means a record exists (``False``);
409 ConditionalRequestConflict means a competing create was in flight and nothing is
decided, so it is retried with backoff and then raised as a TransientStoreError, never
reported as ``False``. botocore retries 5xx, throttling and timeouts itself.

Credentials come from the normal boto3 chain (or ``client_kwargs``) and never appear in
a message: errors carry the S3 error code and HTTP status only.
"""

from __future__ import annotations

import builtins
import random
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import SplitResult

from reference_engine.errors import StoreError, StoreUnavailable, TransientStoreError
from reference_engine.stores.bucket_uri import parse_bucket_uri
from reference_engine.stores.keys import (
    key_problem,
    validate_object_key,
    validate_prefix,
)

CONTROL_SEGMENT = "_control"
# S3 object keys and GCS object names are at most 1024 bytes of UTF-8.
CONFLICT_RETRIES = 6
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
_URI_OPTIONS = frozenset({"endpoint_url", "region", "addressing_style"})
_SESSION_LOCK = threading.Lock()
_SESSION: Any = None


def _error_parts(exc: Any) -> tuple[str, int]:
    """(S3 error code, HTTP status) of a botocore ClientError."""
    response = getattr(exc, "response", {}) or {}
    code = str(response.get("Error", {}).get("Code", ""))
    status = int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    return code, status


class S3Store:
    """One bucket prefix as a ControlPlaneStore; a boto3 client per handle (thread-safe)."""

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
    ) -> None:
        if not bucket:
            raise StoreUnavailable("S3 store needs a bucket: s3://bucket/prefix", op="open")
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.endpoint_url = endpoint_url
        self._root = f"{self.prefix}/{CONTROL_SEGMENT}/" if self.prefix else f"{CONTROL_SEGMENT}/"
        self.conflict_retries = max(1, conflict_retries)
        self.conflict_backoff = conflict_backoff
        self.list_page_size = 1000
        self._client = client if client is not None else self._make_client(
            endpoint_url, region, addressing_style, max_attempts, dict(client_kwargs or {})
        )
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
            connect_timeout=10,
            read_timeout=60,
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

    def _checked(self, key: str, op: str) -> str:
        return validate_object_key(key, self._root, op=op, service="S3")

    # -- error mapping -------------------------------------------------------------------------

    def _mapped(self, exc: Exception, op: str, key: str) -> StoreError:
        """A store error naming op, key and the S3 code; no server text, no credentials."""
        where = f"S3 store s3://{self.bucket}/{self.prefix}"
        exceptions = self._botocore_exceptions
        if exceptions is not None and isinstance(exc, exceptions.NoCredentialsError):
            return StoreUnavailable(
                f"{where}: {op} of key {key!r} failed: no AWS credentials found; configure the "
                "standard chain (environment, ~/.aws, instance role)",
                op=op, key=key,
            )
        if exceptions is not None and isinstance(
            exc, (exceptions.EndpointConnectionError, exceptions.ConnectionError,
                  exceptions.ReadTimeoutError, exceptions.ConnectTimeoutError)
        ):
            return TransientStoreError(
                f"{where}: {op} of key {key!r} failed: {type(exc).__name__} after retries; "
                "check the endpoint is reachable, then retry",
                op=op, key=key,
            )
        code, status = _error_parts(exc)
        detail = f"{code or type(exc).__name__}" + (f", HTTP {status}" if status else "")
        message = f"{where}: {op} of key {key!r} failed ({detail})"
        if code == "NoSuchBucket":
            return StoreUnavailable(
                message + f"; create bucket {self.bucket!r} or fix the URI", op=op, key=key
            )
        if code in _AUTH_CODES or status in (401, 403):
            return StoreUnavailable(
                message + "; check the credentials and the bucket policy", op=op, key=key
            )
        if code in _THROTTLE_CODES or code in _CONFLICT or status >= 500 or status in (409, 429):
            return TransientStoreError(message + "; retry the call", op=op, key=key)
        return StoreError(message, op=op, key=key)

    def _is_client_error(self, exc: Exception) -> bool:
        exceptions = self._botocore_exceptions
        return exceptions is not None and isinstance(exc, exceptions.ClientError)

    # -- the contract --------------------------------------------------------------------------

    def put_if_absent(self, key: str, data: bytes) -> bool:
        self._checked(key, "put_if_absent")
        body = bytes(data)
        for attempt in range(self.conflict_retries):
            try:
                self._client.put_object(
                    Bucket=self.bucket, Key=self._root + key, Body=body, IfNoneMatch="*"
                )
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
            f"S3 store s3://{self.bucket}/{self.prefix}: put_if_absent of key {key!r} kept "
            f"meeting a competing create (409 ConditionalRequestConflict, {self.conflict_retries} "
            "tries); nothing is decided, retry the call",
            op="put_if_absent", key=key,
        )

    def put(self, key: str, data: bytes) -> None:
        self._checked(key, "put")
        try:
            self._client.put_object(Bucket=self.bucket, Key=self._root + key, Body=bytes(data))
        except Exception as exc:
            raise self._mapped(exc, "put", key) from None

    def get(self, key: str) -> bytes | None:
        self._checked(key, "get")
        try:
            response = self._client.get_object(Bucket=self.bucket, Key=self._root + key)
            body: bytes = response["Body"].read()
        except Exception as exc:
            if self._is_client_error(exc):
                code, status = _error_parts(exc)
                if code in _MISSING_KEY or (status == 404 and code != "NoSuchBucket"):
                    return None
            raise self._mapped(exc, "get", key) from None
        return body

    def delete(self, key: str) -> None:
        self._checked(key, "delete")
        try:
            self._client.delete_object(Bucket=self.bucket, Key=self._root + key)
        except Exception as exc:
            if self._is_client_error(exc) and _error_parts(exc)[0] in _MISSING_KEY:
                return
            raise self._mapped(exc, "delete", key) from None

    def list(self, prefix: str) -> builtins.list[str]:
        normalised = validate_prefix(prefix)
        search = self._root + (normalised + "/" if normalised else "")
        cut = len(self._root)
        keys: set[str] = set()
        try:
            paginator = self._client.get_paginator("list_objects_v2")
            pages = paginator.paginate(
                Bucket=self.bucket, Prefix=search,
                PaginationConfig={"PageSize": self.list_page_size},
            )
            for page in pages:
                for item in page.get("Contents", ()):
                    key = item["Key"][cut:]
                    # Skip objects no valid key maps to, e.g. console "folder/" markers.
                    if key_problem(key) is None:
                        keys.add(key)
        except Exception as exc:
            raise self._mapped(exc, "list", normalised) from None
        return sorted(keys)

    def close(self) -> None:
        """Close the client's connection pool."""
        close = getattr(self._client, "close", None)
        if callable(close):
            close()


def _botocore_exceptions() -> Any:
    try:
        import botocore.exceptions  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        return None
    return botocore.exceptions


def from_uri(parsed: SplitResult) -> S3Store:
    """``s3://bucket/prefix?endpoint_url=URL&region=REGION&addressing_style=path|virtual``."""
    uri = parse_bucket_uri(
        parsed, service="S3", known=_URI_OPTIONS,
        credentials_hint="the standard AWS chain (environment, ~/.aws, instance role)")
    return S3Store(uri.bucket, uri.prefix, endpoint_url=uri.option("endpoint_url"),
                   region=uri.option("region"), addressing_style=uri.option("addressing_style"))
