"""Loopback emulators as store providers (docs/how-to/test-a-store-on-a-server.md,
docs/how-to/s3-gcs-emulators.md).

Each provider is a zero-argument callable returning a context manager that starts its
server on a free 127.0.0.1 port, yields a :class:`~dw_testing.kit.spec.StoreSpec`, and stops
the server on exit. The emulators' packages (moto, gcsfs, the fake-gcs-server wheel) are
imported only when a provider is entered, so this package imports without the extras.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from types import MappingProxyType

from dw_testing.emulators.fake_gcs import fake_gcs, gcs_open_xb_example
from dw_testing.emulators.moto import moto_raw, moto_serialized
from dw_testing.kit.spec import StoreSpec

Provider = Callable[[], AbstractContextManager[StoreSpec]]

# Store name (as used with --dw-store) -> provider.
PROVIDERS: Mapping[str, Provider] = MappingProxyType({
    "moto-serialized": moto_serialized,
    "moto": moto_raw,
    "fake-gcs": fake_gcs,
    "gcs-open-xb-example": gcs_open_xb_example,
})

__all__ = ["PROVIDERS", "Provider", "fake_gcs", "gcs_open_xb_example", "moto_raw",
           "moto_serialized"]
