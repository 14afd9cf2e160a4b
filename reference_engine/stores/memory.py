"""The in-process store: thread-safe, handles on one ``memory://name`` share records."""

from __future__ import annotations

import threading
from urllib.parse import SplitResult

from reference_engine.stores.keys import is_under, validate_key, validate_prefix

_SPACES: dict[str, tuple[dict[str, bytes], threading.Lock]] = {}
_SPACES_LOCK = threading.Lock()


class MemoryStore:
    """A dict behind one lock. ``MemoryStore()`` is private; ``MemoryStore("x")`` is shared."""

    def __init__(self, name: str | None = None) -> None:
        self.name = name
        if name is None:
            self._records: dict[str, bytes] = {}
            self._lock = threading.Lock()
        else:
            with _SPACES_LOCK:
                self._records, self._lock = _SPACES.setdefault(name, ({}, threading.Lock()))

    def put(self, key: str, data: bytes) -> None:
        validate_key(key, op="put")
        with self._lock:
            self._records[key] = bytes(data)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        validate_key(key, op="put_if_absent")
        with self._lock:
            if key in self._records:
                return False
            self._records[key] = bytes(data)
            return True

    def get(self, key: str) -> bytes | None:
        validate_key(key, op="get")
        with self._lock:
            return self._records.get(key)

    def delete(self, key: str) -> None:
        validate_key(key, op="delete")
        with self._lock:
            self._records.pop(key, None)

    def list(self, prefix: str) -> list[str]:
        normalised = validate_prefix(prefix)
        with self._lock:
            return sorted(k for k in self._records if is_under(k, normalised))

    def close(self) -> None:
        """Nothing to release; records outlive handles, as on a server."""


def from_uri(parsed: SplitResult) -> MemoryStore:
    """``memory://`` is a fresh private space; ``memory://name`` is shared by name."""
    name = (parsed.netloc + parsed.path).strip("/")
    return MemoryStore(name or None)
