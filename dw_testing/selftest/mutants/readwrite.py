"""Store mutants whose reads, writes or handles are broken (docs/unkillable.md)."""

from __future__ import annotations

from dw_testing.selftest.mutants.base import Backing, CorrectStore, widen_race_window
from reference_engine.stores.keys import is_under

CHUNK = 64 * 1024
TRUNCATE_AT = 64 * 1024


class UnsharedHandles(CorrectStore):
    """Each handle keeps its own records: the provider gives every handle a new backing."""


class StaleCacheAfterCreate(CorrectStore):
    """Each handle caches what it read, misses included, and trusts the cache.

    Its own writes refresh its cache, so one handle looks right; a second handle's
    create or put stays invisible to a handle that read the key before.
    """

    def __init__(self, backing: Backing) -> None:
        super().__init__(backing)
        self.cache: dict[str, bytes | None] = {}

    def get(self, key: str) -> bytes | None:
        name = self.checked_key(key, "get")
        if name not in self.cache:
            self.cache[name] = super().get(key)
        return self.cache[name]

    def put(self, key: str, data: bytes) -> None:
        super().put(key, data)
        self.cache[self.checked_key(key, "put")] = bytes(data)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        created = super().put_if_absent(key, data)
        if created:
            self.cache[self.checked_key(key, "put_if_absent")] = bytes(data)
        return created

    def delete(self, key: str) -> None:
        super().delete(key)
        self.cache[self.checked_key(key, "delete")] = None


class TornPut(CorrectStore):
    """``put`` overwrites the old record in place, chunk by chunk: a reader sees a mix."""

    def put(self, key: str, data: bytes) -> None:
        name = self.checked_key(key, "put")
        payload = bytes(data)
        with self.backing.lock:
            old = self.backing.records.get(name, b"")
        for end in range(CHUNK, len(payload), CHUNK):
            with self.backing.lock:
                self.backing.records[name] = payload[:end] + old[end:]
            widen_race_window()
        with self.backing.lock:
            self.backing.records[name] = payload


class EmptyValueAsNone(CorrectStore):
    """``get`` of an empty record returns ``None``, as if the key were missing."""

    def get(self, key: str) -> bytes | None:
        return super().get(key) or None


class TruncatesLargeValues(CorrectStore):
    """Values over 64 KiB are cut to their first 64 KiB on every write."""

    def put(self, key: str, data: bytes) -> None:
        super().put(key, bytes(data)[:TRUNCATE_AT])

    def put_if_absent(self, key: str, data: bytes) -> bool:
        return super().put_if_absent(key, bytes(data)[:TRUNCATE_AT])


class LosesWriteOnReopen(CorrectStore):
    """``put`` lands in a write-back cache every handle reads, never flushed to the records.

    Closing a handle drops the cache, as a crash drops unsynced pages: after a reopen
    the last plain ``put`` of a key is gone. Creates and deletes are durable.
    """

    def put(self, key: str, data: bytes) -> None:
        name = self.checked_key(key, "put")
        with self.backing.lock:
            self.backing.unsynced[name] = bytes(data)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        name = self.checked_key(key, "put_if_absent")
        with self.backing.lock:
            if name in self.backing.unsynced or name in self.backing.records:
                return False
            self.backing.records[name] = bytes(data)
            return True

    def get(self, key: str) -> bytes | None:
        name = self.checked_key(key, "get")
        with self.backing.lock:
            if name in self.backing.unsynced:
                return self.backing.unsynced[name]
            return self.backing.records.get(name)

    def delete(self, key: str) -> None:
        name = self.checked_key(key, "delete")
        with self.backing.lock:
            self.backing.unsynced.pop(name, None)
            self.backing.records.pop(name, None)

    def list(self, prefix: str) -> list[str]:
        normalised = self.checked_prefix(prefix)
        with self.backing.lock:
            keys = set(self.backing.records) | set(self.backing.unsynced)
            return sorted(k for k in keys if is_under(k, normalised))

    def close(self) -> None:
        with self.backing.lock:
            self.backing.unsynced.clear()
