"""Two hosts, one bucket: emulator buckets started once per session, and hosts that call ``dw``.

Each host is a separate working directory with its own claim-looks directory (the engine's
only host-local state), so nothing but the bucket connects two hosts' ``dw`` processes.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from hosts import Bucket, Host

from dw_testing.emulators import PROVIDERS
from dw_testing.kit.clock import FakeClock
from dw_testing.kit.spec import StoreSpec

# SeaweedFS (a real object store, the slow extra) joins under -m slow only.
EMULATORS = ("moto-serialized", "fake-gcs", pytest.param("seaweedfs", marks=pytest.mark.slow))


@pytest.fixture(scope="session", params=EMULATORS)
def bucket(request: pytest.FixtureRequest) -> Iterator[StoreSpec]:
    """A shared bucket on a loopback emulator, started by its provider for the session."""
    provider = PROVIDERS.get(request.param)
    if request.param == "seaweedfs":
        from dw_testing.emulators.seaweedfs import seaweedfs, weed_binary

        try:
            weed_binary()
        except RuntimeError as missing:
            pytest.skip(str(missing))
        provider = seaweedfs
    assert provider is not None, f"no provider named {request.param}"
    with provider() as spec:
        yield spec


@pytest.fixture
def store_uri(bucket: StoreSpec) -> str:
    """The bucket's URI on a fresh prefix of its own, so every test starts from nothing."""
    assert bucket.uri, f"provider {bucket.name} gives no URI; a dw process cannot open it"
    parts = urlsplit(bucket.uri)
    return parts._replace(path=f"/multihost-{uuid.uuid4().hex[:12]}").geturl()


@pytest.fixture
def clock(tmp_path: Path) -> FakeClock:
    """The hosts' shared time (their clocks agree); every ``dw`` call reads it via DW_CLOCK."""
    return FakeClock(mirror_to=tmp_path / "clock")


@pytest.fixture
def host_a(tmp_path: Path, store_uri: str, clock: FakeClock) -> Host:
    return Host.at(tmp_path / "host-a", store_uri, clock)


@pytest.fixture
def host_b(tmp_path: Path, store_uri: str, clock: FakeClock) -> Host:
    return Host.at(tmp_path / "host-b", store_uri, clock)


@pytest.fixture
def shared(store_uri: str, clock: FakeClock) -> Bucket:
    """What the bucket holds, read by the test itself (not by either host)."""
    return Bucket(store_uri, clock)
