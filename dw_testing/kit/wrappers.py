"""``StoreWrapper``: the base of every store wrapper in the kit.

A wrapper passes each call of the store surface to ``inner`` through one method,
:meth:`StoreWrapper._call`, which subclasses override to gate, break, record or count calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from reference_engine.stores.contract import close_store

T = TypeVar("T")


class StoreWrapper:
    """Passes every call to ``inner`` through :meth:`_call`.

    ``put_if_absent`` exists only when ``inner`` has it, so ``supports_create`` answers for
    the wrapper as it would for ``inner``. What ``inner`` returns is passed on untouched, so
    a store returning a non-bool from its create is seen by the suite. ``close()`` always
    reaches ``inner``.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        if callable(getattr(inner, "put_if_absent", None)):
            self.put_if_absent = self._put_if_absent

    def _call(self, op: str, key: str, run: Callable[[], T]) -> T:
        """Run one call of ``op`` on ``key`` (a prefix for ``list``); override to intercept."""
        return run()

    def put(self, key: str, data: bytes) -> None:
        self._call("put", key, lambda: self.inner.put(key, data))

    def _put_if_absent(self, key: str, data: bytes) -> bool:
        created: bool = self._call("put_if_absent", key,
                                   lambda: self.inner.put_if_absent(key, data))
        return created

    def get(self, key: str) -> bytes | None:
        value: bytes | None = self._call("get", key, lambda: self.inner.get(key))
        return value

    def delete(self, key: str) -> None:
        self._call("delete", key, lambda: self.inner.delete(key))

    def list(self, prefix: str) -> list[str]:
        keys: list[str] = self._call("list", prefix, lambda: self.inner.list(prefix))
        return keys

    def close(self) -> None:
        close_store(self.inner)
