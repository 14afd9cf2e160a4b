"""The ControlPlaneStore protocol: five methods, one of them optional."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class ControlPlaneStore(Protocol):
    """A key-value control plane. ``put_if_absent`` is optional: see :func:`supports_create`."""

    def put(self, key: str, data: bytes) -> None:
        """Create or replace ``key`` atomically."""

    def get(self, key: str) -> bytes | None:
        """The whole record, or ``None`` when the key is absent."""

    def delete(self, key: str) -> None:
        """Remove ``key``; a missing key is no error."""

    def list(self, prefix: str) -> list[str]:
        """Full keys strictly under ``prefix`` by whole segments, sorted by code point."""


@runtime_checkable
class CreatingStore(ControlPlaneStore, Protocol):
    """A store that also offers the write-once create."""

    def put_if_absent(self, key: str, data: bytes) -> bool:
        """``True`` only to the call that created the record; ``False`` if any record exists."""


def supports_create(store: object) -> bool:
    """Whether ``store`` offers ``put_if_absent``."""
    return callable(getattr(store, "put_if_absent", None))


def close_store(store: object) -> None:
    """Call the store's optional ``close()``."""
    close = getattr(store, "close", None)
    if callable(close):
        close()
