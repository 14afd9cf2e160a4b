"""Emulator bugs our stores avoid, demonstrated on the emulator itself
(docs/how-to/s3-gcs-emulators.md).

Our S3 store never copies objects, so no conformance test can meet moto's ``copy_object``
bug; this test shows it on the raw ``moto`` provider, under the registered known deviation
(``xfail(strict=True)`` while the pinned moto is installed, so a fixed moto shows up).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dw_testing.emulators import moto_raw
from dw_testing.kit.spec import StoreSpec
from dw_testing.plugin.deviations import KNOWN_DEVIATIONS

# The registry's copy_object entry waits for a suite test, which our S3 store (it never
# copies) cannot have; this test applies it by hand while its moto version is installed.
COPY_OBJECT = [pytest.mark.xfail(strict=True, reason=d.xfail_reason())
               for d in KNOWN_DEVIATIONS
               if d.store == "moto" and "copy_object" in d.test and d.version_matches()]


@pytest.fixture(scope="module")
def raw_moto() -> Iterator[StoreSpec]:
    with moto_raw() as spec:
        yield spec


@pytest.mark.parametrize("store", [pytest.param("moto", marks=COPY_OBJECT)])
def test_a_conditional_copy_onto_an_existing_key_is_refused(
    raw_moto: StoreSpec, store: str,
) -> None:
    """S3 answers ``CopyObject`` with ``If-None-Match: *`` onto an existing key with 412."""
    handle = raw_moto.factory()
    client, bucket = handle._client, handle.bucket
    try:
        client.put_object(Bucket=bucket, Key="copy-demo/existing", Body=b"first")
        client.put_object(Bucket=bucket, Key="copy-demo/source", Body=b"second")
        refused = False
        try:
            client.copy_object(Bucket=bucket, Key="copy-demo/existing", IfNoneMatch="*",
                               CopySource={"Bucket": bucket, "Key": "copy-demo/source"})
        except client.exceptions.ClientError as exc:
            refused = exc.response["ResponseMetadata"]["HTTPStatusCode"] == 412
        body = client.get_object(Bucket=bucket, Key="copy-demo/existing")["Body"].read()
        assert (refused, body) == (True, b"first"), (
            f"{store}: a conditional copy onto an existing key "
            f"{'was refused' if refused else 'succeeded'} and left {body!r}")
    finally:
        for key in ("copy-demo/existing", "copy-demo/source"):
            client.delete_object(Bucket=bucket, Key=key)
        handle.close()
