"""The reference engine: durable workflow waits on one write-once primitive."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_engine.errors import InvalidKey, StoreError, StoreUnavailable, TransientStoreError

if TYPE_CHECKING:
    from reference_engine.stores.contract import ControlPlaneStore
    from reference_engine.stores.registry import open_store

__all__ = [
    "ControlPlaneStore",
    "InvalidKey",
    "StoreError",
    "StoreUnavailable",
    "TransientStoreError",
    "open_store",
]


def __getattr__(name: str) -> Any:
    # Loaded on first use, so `dw --help` does not pay for the store registry.
    if name == "open_store":
        from reference_engine.stores.registry import open_store

        return open_store
    if name == "ControlPlaneStore":
        from reference_engine.stores.contract import ControlPlaneStore

        return ControlPlaneStore
    raise AttributeError(f"module 'reference_engine' has no attribute {name!r}")
