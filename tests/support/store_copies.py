"""A private copy of a memory store: crash tests replay one history on many fresh copies."""

from __future__ import annotations

from reference_engine.stores.memory import MemoryStore


def memory_copy(store: MemoryStore) -> MemoryStore:
    """A new private ``MemoryStore`` holding every key of ``store`` with the same bytes."""
    fresh = MemoryStore()
    for key in store.list(""):
        data = store.get(key)
        assert data is not None, f"{key} was listed but vanished while the store was copied"
        fresh.put(key, data)
    return fresh
