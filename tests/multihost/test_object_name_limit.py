"""Real S3 and GCS cap an object's name at 1024 bytes, and a store's root counts against it.

The emulators do not enforce the limit, so the stores check it themselves, before any I/O.
These handles' client records whether it was reached.
"""

from __future__ import annotations

from typing import Any

import pytest

from reference_engine.errors import InvalidKey, StoreError
from reference_engine.stores.gcs import GcsStore
from reference_engine.stores.s3 import S3Store

PREFIX = "team-a/dw"  # the object root is "team-a/dw/_control/": 19 bytes
ROOT_BYTES = len(f"{PREFIX}/_control/")


class Backend:
    """A client or filesystem that records being reached and then fails the call."""

    def __init__(self) -> None:
        self.reached: list[str] = []

    def __getattr__(self, name: str) -> Any:
        self.reached.append(name)
        raise RuntimeError("no backend in this test")


@pytest.fixture(params=["s3", "gcs"])
def backend_and_store(request: pytest.FixtureRequest) -> tuple[Backend, Any]:
    backend = Backend()
    if request.param == "s3":
        return backend, S3Store("bucket", PREFIX, client=backend)
    return backend, GcsStore("bucket", PREFIX, filesystem=backend)


def _key(total_bytes: int) -> str:
    """A valid key (150-byte segments and a last one of 1..151) of ``total_bytes`` bytes."""
    full = (total_bytes - 1) // 151
    key = ("k" * 150 + "/") * full + "k" * (total_bytes - 151 * full)
    assert len(key.encode()) == total_bytes
    return key


@pytest.mark.parametrize("op", ["put_if_absent", "put", "get", "delete"])
def test_a_key_whose_object_name_passes_1024_bytes_is_refused_before_any_io(
    backend_and_store: tuple[Backend, Any], op: str,
) -> None:
    backend, store = backend_and_store
    key = _key(1024 - ROOT_BYTES + 1)
    args: tuple[Any, ...] = (key, b"x") if op.startswith("put") else (key,)
    with pytest.raises(InvalidKey) as refused:
        getattr(store, op)(*args)
    assert backend.reached == []
    message = str(refused.value)
    assert "1024" in message and "shorter prefix" in message
    assert key not in message  # a refused key is named by its length only


def test_a_key_whose_object_name_is_exactly_1024_bytes_reaches_the_backend(
    backend_and_store: tuple[Backend, Any],
) -> None:
    backend, store = backend_and_store
    with pytest.raises(StoreError) as failed:
        store.get(_key(1024 - ROOT_BYTES))
    assert not isinstance(failed.value, InvalidKey)
    assert backend.reached, "a key that fits was refused without asking the backend"
