"""Small stores for tests of code that sits on a store (wrappers, engines, refusals)."""

from __future__ import annotations

from reference_engine.stores.memory import MemoryStore


class NoCreateStore:
    """A correct store without ``put_if_absent``: what a store that cannot create looks like.

    Wrappers must not grow a create over it, and the engine must refuse to hold waits on it.
    """

    name = "no-create"

    def __init__(self, space: str = "") -> None:
        self._records = MemoryStore(space) if space else MemoryStore()

    def put(self, key: str, data: bytes) -> None:
        self._records.put(key, data)

    def get(self, key: str) -> bytes | None:
        return self._records.get(key)

    def delete(self, key: str) -> None:
        self._records.delete(key)

    def list(self, prefix: str) -> list[str]:
        return self._records.list(prefix)
