"""Store mutants whose ``delete`` is broken (docs/unkillable.md)."""

from __future__ import annotations

from dw_testing.selftest.mutants.base import CorrectStore
from reference_engine.errors import StoreError


class DeleteBlocksRecreate(CorrectStore):
    """``delete`` leaves a tombstone that makes every later create of the key answer False."""

    def delete(self, key: str) -> None:
        super().delete(key)
        with self.backing.lock:
            self.backing.marked["tombstones"].add(self.checked_key(key, "delete"))

    def put_if_absent(self, key: str, data: bytes) -> bool:
        name = self.checked_key(key, "put_if_absent")
        with self.backing.lock:
            if name in self.backing.marked["tombstones"]:
                return False
        return super().put_if_absent(key, data)


class DeleteMissingRaises(CorrectStore):
    """``delete`` of a key that does not exist raises instead of doing nothing."""

    def delete(self, key: str) -> None:
        name = self.checked_key(key, "delete")
        with self.backing.lock:
            if name not in self.backing.records:
                raise StoreError(f"cannot delete key {key!r}: it does not exist",
                                 op="delete", key=key)
            del self.backing.records[name]
