"""Built-in stores and ``open_store``. One module per backend."""

from reference_engine.stores.contract import ControlPlaneStore, CreatingStore, supports_create
from reference_engine.stores.registry import open_store

__all__ = ["ControlPlaneStore", "CreatingStore", "open_store", "supports_create"]
