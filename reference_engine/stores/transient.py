"""The engine's retries of a transient store failure (contract C-ENGINE-1, C-LOST-1).

A ``TransientStoreError`` says the backend could not decide the call now; the call may be
retried. Reads and lists are retried as they are: a retry is the look. A ``put`` or a
``delete`` is retried too: both end in one state whatever an earlier attempt did. The create
is not retried here: :func:`reference_engine.records.io.create_then_read` looks (reads the
key back) before it retries, and decides by identity, never by the boolean.

Every other error (``StoreError``, a backend's own exception) is of unknown effect and is not
retried (C-ERR-2): the call stops there and its caller sees it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from reference_engine.errors import TransientStoreError

ATTEMPTS = 4
BACKOFF_S = 0.05  # then doubled per attempt: 50, 100, 200 ms

T = TypeVar("T")


class TransientRetries:
    """``store`` with each of get, list, put and delete retried on ``TransientStoreError``;
    everything else (``put_if_absent``, ``close``, a name) is the store's own."""

    def __init__(self, store: Any, sleeper: Callable[[float], object]) -> None:
        self.inner = store
        self._sleep = sleeper

    def _retried(self, call: Callable[[], T]) -> T:
        for attempt in range(1, ATTEMPTS + 1):
            try:
                return call()
            except TransientStoreError:
                if attempt == ATTEMPTS:
                    raise
                self._sleep(BACKOFF_S * 2 ** (attempt - 1))
        raise AssertionError("unreachable")  # pragma: no cover

    def get(self, key: str) -> bytes | None:
        found: bytes | None = self._retried(lambda: self.inner.get(key))
        return found

    def list(self, prefix: str) -> list[str]:
        listed: list[str] = self._retried(lambda: self.inner.list(prefix))
        return listed

    def put(self, key: str, data: bytes) -> None:
        self._retried(lambda: self.inner.put(key, data))

    def delete(self, key: str) -> None:
        self._retried(lambda: self.inner.delete(key))

    def __getattr__(self, name: str) -> Any:
        # put_if_absent only if the store has it (supports_create), close, name, ...
        return getattr(self.inner, name)


def with_transient_retries(store: Any, sleeper: Callable[[float], object]) -> Any:
    """``store`` wrapped once (a store already wrapped is returned as it is)."""
    return store if isinstance(store, TransientRetries) else TransientRetries(store, sleeper)
