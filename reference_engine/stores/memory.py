"""The in-process store: thread-safe, handles on one ``memory://name`` share records."""

from __future__ import annotations

import threading
from bisect import bisect_left, insort
from urllib.parse import SplitResult

from reference_engine.stores.keys import is_under, validate_key, validate_prefix

_SPACES: dict[str, tuple[dict[str, bytes], list[str], threading.Lock]] = {}
# The key just after every key under a prefix: '/' (0x2F) is followed by '0' (0x30).
_PAST_SEPARATOR = chr(ord("/") + 1)
_SPACES_LOCK = threading.Lock()


class MemoryStore:
    """A dict behind one lock. ``MemoryStore()`` is private; ``MemoryStore("x")`` is shared.

    The keys are also kept sorted, so ``list`` costs what it returns (a binary search
    for the prefix) rather than a walk over every key in the store.
    """

    def __init__(self, name: str | None = None) -> None:
        self.name = name
        if name is None:
            self._records: dict[str, bytes] = {}
            self._keys: list[str] = []
            self._lock = threading.Lock()
        else:
            with _SPACES_LOCK:
                self._records, self._keys, self._lock = _SPACES.setdefault(
                    name, ({}, [], threading.Lock()))

    def _store(self, key: str, data: bytes) -> None:
        if key not in self._records:
            insort(self._keys, key)
        self._records[key] = bytes(data)

    def put(self, key: str, data: bytes) -> None:
        validate_key(key, op="put")
        with self._lock:
            self._store(key, data)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        validate_key(key, op="put_if_absent")
        with self._lock:
            if key in self._records:
                return False
            self._store(key, data)
            return True

    def get(self, key: str) -> bytes | None:
        validate_key(key, op="get")
        with self._lock:
            return self._records.get(key)

    def delete(self, key: str) -> None:
        validate_key(key, op="delete")
        with self._lock:
            if self._records.pop(key, None) is not None:
                del self._keys[bisect_left(self._keys, key)]

    def list(self, prefix: str) -> list[str]:
        normalised = validate_prefix(prefix)
        with self._lock:
            if normalised == "":
                return list(self._keys)
            low = bisect_left(self._keys, normalised + "/")
            high = bisect_left(self._keys, normalised + _PAST_SEPARATOR, low)
            return [k for k in self._keys[low:high] if is_under(k, normalised)]

    def close(self) -> None:
        """Nothing to release; records outlive handles, as on a server."""


def from_uri(parsed: SplitResult) -> MemoryStore:
    """``memory://`` is a fresh private space; ``memory://name`` is shared by name."""
    name = (parsed.netloc + parsed.path).strip("/")
    return MemoryStore(name or None)
