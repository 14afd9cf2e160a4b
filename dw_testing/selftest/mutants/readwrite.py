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

    # The records are the correct store's; the cache lies over them. The backing's lock is
    # reentrant, so each step holds it across the cache and the correct store's call.
    def put(self, key: str, data: bytes) -> None:
        name = self.checked_key(key, "put")
        with self.backing.lock:
            self.backing.unsynced[name] = bytes(data)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        with self.backing.lock:
            if self.checked_key(key, "put_if_absent") in self.backing.unsynced:
                return False
            return super().put_if_absent(key, data)

    def get(self, key: str) -> bytes | None:
        with self.backing.lock:
            cached = self.backing.unsynced.get(self.checked_key(key, "get"))
            return super().get(key) if cached is None else cached

    def delete(self, key: str) -> None:
        with self.backing.lock:
            self.backing.unsynced.pop(self.checked_key(key, "delete"), None)
            super().delete(key)

    def list(self, prefix: str) -> list[str]:
        with self.backing.lock:
            base = self.checked_prefix(prefix)
            cached = {k for k in self.backing.unsynced if is_under(k, base)}
            return sorted(cached.union(super().list(prefix)))

    def close(self) -> None:
        with self.backing.lock:
            self.backing.unsynced.clear()


class EvictsOldRecords(CorrectStore):
    """A cache with a capacity: past 64 records, each write evicts the oldest-written one.

    Nothing deletes the evicted record, yet it reads ``None`` (C-LAST-1), as a store on a
    cache API with an eviction policy or a default expiry loses records nobody deleted.
    """

    CAPACITY = 64

    def put(self, key: str, data: bytes) -> None:
        with self.backing.lock:
            super().put(key, data)
            self._evict(key)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        with self.backing.lock:
            created = super().put_if_absent(key, data)
            if created:
                self._evict(key)
            return created

    def _evict(self, written: str) -> None:
        records = self.backing.records
        # Dicts keep insertion order: move the written key last, drop from the front.
        records[written] = records.pop(written)
        while len(records) > self.CAPACITY:
            del records[next(iter(records))]


class TrimsLineEnds(CorrectStore):
    """Values are stored as text lines: a trailing CR or LF is dropped, as a backend that
    reads values back line by line does. Only a value whose last byte is a line end shows it
    (C-VAL-1)."""

    def put(self, key: str, data: bytes) -> None:
        super().put(key, bytes(data).rstrip(b"\r\n"))

    def put_if_absent(self, key: str, data: bytes) -> bool:
        return super().put_if_absent(key, bytes(data).rstrip(b"\r\n"))


class DropsLeadingFF(CorrectStore):
    """A value's leading 0xFF byte is dropped, as a layer that reads bytes through a signed
    char and takes the first -1 for a marker does. Only a value whose first byte is 0xFF
    shows it (C-VAL-1)."""

    def put(self, key: str, data: bytes) -> None:
        super().put(key, _drop_leading_ff(bytes(data)))

    def put_if_absent(self, key: str, data: bytes) -> bool:
        return super().put_if_absent(key, _drop_leading_ff(bytes(data)))


def _drop_leading_ff(data: bytes) -> bytes:
    return data[1:] if data[:1] == b"\xff" else data
