"""The reference engine: durable workflow waits on one write-once primitive."""

from __future__ import annotations

import importlib
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

# Loaded on first use, so `dw --help` does not pay for the store registry.
_LOADED_ON_USE = {
    "ControlPlaneStore": "reference_engine.stores.contract",
    "open_store": "reference_engine.stores.registry",
}


def __getattr__(name: str) -> Any:
    module = _LOADED_ON_USE.get(name)
    if module is None:
        raise AttributeError(f"module 'reference_engine' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
