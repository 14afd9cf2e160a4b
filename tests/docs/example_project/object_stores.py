"""MyS3Store and MyGcsStore of the emulators how-to: the built-in stores, behind the
constructors the page's providers call."""

from __future__ import annotations

from collections.abc import Mapping

from reference_engine.stores.gcs import GcsStore
from reference_engine.stores.s3 import S3Store


class MyS3Store(S3Store):
    def __init__(self, bucket: str, *, endpoint_url: str, credentials: Mapping[str, str]) -> None:
        super().__init__(bucket, "docs", endpoint_url=endpoint_url, region="us-east-1",
                         client_kwargs=credentials)


class MyGcsStore(GcsStore):
    def __init__(self, bucket: str, *, endpoint: str) -> None:
        super().__init__(bucket, "docs", endpoint=endpoint)
