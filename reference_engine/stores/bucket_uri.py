"""Parsing ``scheme://bucket/prefix?option=…`` for the object stores (S3, GCS)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from urllib.parse import SplitResult, unquote

from reference_engine.errors import StoreUnavailable
from reference_engine.stores.deadlines import parse_deadline
from reference_engine.stores.uri_options import uri_options


@dataclass(frozen=True)
class BucketUri:
    bucket: str
    prefix: str
    options: dict[str, str]

    def option(self, name: str) -> str | None:
        return self.options.get(name)

    def deadline(self, service: str) -> float:
        """``deadline=`` in seconds: how long one call may take, retries included."""
        return parse_deadline(self.option("deadline"), service)


def parse_bucket_uri(parsed: SplitResult, *, service: str, known: Collection[str],
                     credentials_hint: str) -> BucketUri:
    """Bucket, prefix and the last value of each option; refuses unknown options and any
    credentials in the URI, naming ``credentials_hint`` as what to use instead."""
    options = uri_options(
        parsed, store=f"{service} store", known=known,
        advice=f"known: {', '.join(sorted(known))}. Credentials never go in the URI: use "
        f"{credentials_hint}")
    if parsed.username or parsed.password:
        raise StoreUnavailable(
            f"{service} store URI carries user info; never put credentials in a URI, use "
            f"{credentials_hint}",
            op="open",
        )
    bucket = parsed.hostname or ""
    if not bucket:
        raise StoreUnavailable(
            f"{service} store URI needs a bucket: {parsed.scheme}://bucket/prefix", op="open")
    return BucketUri(bucket, unquote(parsed.path), options)
