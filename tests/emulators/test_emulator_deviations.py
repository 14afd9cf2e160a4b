"""Emulator bugs, shown by their probes on the emulators the providers start
(docs/how-to/s3-gcs-emulators.md).

Each built-in emulator deviation names a probe; the provider runs it on its server and the
entry applies when the probe shows the bug. These tests keep the registry honest on whatever
emulator versions pip installed today: an entry whose probe no longer shows its bug, or whose
version bound disagrees with what the probe saw, fails here with the fix.

Our S3 store never copies objects, so no conformance test can meet moto's ``copy_object``
bug; the copy test below shows it on the raw ``moto`` provider, excused by its entry only
while the probe shows the bug.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dw_testing.emulators import PROVIDERS
from dw_testing.emulators.moto import serve_moto
from dw_testing.emulators.probes import BUGS
from dw_testing.kit.spec import StoreSpec
from dw_testing.plugin.deviations import KNOWN_DEVIATIONS

PROBED_STORES = sorted({d.store for d in KNOWN_DEVIATIONS if d.probe is not None})


@pytest.fixture(scope="module")
def probed() -> Iterator[dict[str, StoreSpec]]:
    """Each store with probed deviations, its provider entered once for the module."""
    import contextlib

    with contextlib.ExitStack() as stack:
        yield {name: stack.enter_context(PROVIDERS[name]()) for name in PROBED_STORES}


def test_every_probed_deviation_agrees_with_its_probe(probed: dict[str, StoreSpec]) -> None:
    disagreements = []
    for deviation in KNOWN_DEVIATIONS:
        if deviation.probe is None:
            continue
        assert deviation.probe in BUGS, f"{deviation.probe!r} is no probe of emulators.probes"
        shown = deviation.probe in probed[deviation.store].emulator_bugs
        if shown != deviation.version_matches():
            disagreements.append(
                f"{deviation.store} {deviation.test}: probe {deviation.probe} "
                f"{'shows' if shown else 'no longer shows'} the bug, but the entry "
                f"{'excludes' if shown else 'covers'} the installed {deviation.package} "
                f"({deviation.versions or 'any version'}); "
                + ("set versions to the first fixed release" if not shown and not
                   deviation.versions else "update the entry's versions bound"))
    assert not disagreements, "\n".join(disagreements)


def test_the_probes_tell_a_serialized_moto_from_a_racing_one() -> None:
    """The race probe flips with the server: the one lock of ``serialized`` removes it."""
    with serve_moto("serialized") as calm, serve_moto("gated") as racing:
        assert BUGS["moto-put-race"].probe(racing) is True
        assert BUGS["moto-put-race"].probe(calm) is False


def test_a_conditional_copy_onto_an_existing_key_is_refused(
    probed: dict[str, StoreSpec], request: pytest.FixtureRequest,
) -> None:
    """S3 answers ``CopyObject`` with ``If-None-Match: *`` onto an existing key with 412."""
    raw_moto = probed["moto"]
    for deviation in KNOWN_DEVIATIONS:
        if "copy_object" in deviation.test and deviation.probe in raw_moto.emulator_bugs:
            request.node.add_marker(pytest.mark.xfail(strict=True,
                                                      reason=deviation.xfail_reason()))
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
            f"moto: a conditional copy onto an existing key "
            f"{'was refused' if refused else 'succeeded'} and left {len(body)} bytes")
    finally:
        for key in ("copy-demo/existing", "copy-demo/source"):
            client.delete_object(Bucket=bucket, Key=key)
        handle.close()
