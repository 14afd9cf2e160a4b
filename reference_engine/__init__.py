"""The reference engine: durable workflow waits on one write-once primitive."""

from reference_engine.errors import InvalidKey, StoreError, StoreUnavailable, TransientStoreError
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
