"""The store error hierarchy. Every message names the operation and the key, never a secret."""

from __future__ import annotations


class StoreError(Exception):
    """A store operation failed. ``op`` and ``key`` say which call, on which key."""

    def __init__(self, message: str, *, op: str = "", key: str = "") -> None:
        super().__init__(message)
        self.op = op
        self.key = key


class TransientStoreError(StoreError):
    """The backend could not decide the call now; retrying may succeed (e.g. S3 409)."""


class InvalidKey(StoreError, ValueError):
    """The key breaks the key rules of C-KEY-1; refused before any I/O."""


class StoreUnavailable(StoreError):
    """The store cannot be opened or reached: unknown scheme, missing path, no hard links."""


class MixedSyncAsyncStore(StoreUnavailable):
    """Some of a store's methods are ``async def`` and some are not; it cannot be driven."""


class EventLoopBlocked(StoreError):
    """An async store ran a blocking call on its event loop while one of its calls was due."""
