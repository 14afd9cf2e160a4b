"""``PrefixedStore``: one test's private corner of a shared store."""

from __future__ import annotations

from typing import Any

from reference_engine.stores.keys import validate_key, validate_prefix


class PrefixedStore:
    """Maps ``key`` to ``prefix/key`` on ``inner``; keys are validated before the prefix."""

    def __init__(self, inner: Any, prefix: str) -> None:
        self.inner = inner
        self.prefix = validate_prefix(prefix)
        if self.prefix == "":
            raise ValueError("PrefixedStore needs a non-empty prefix, like 'dwc-s1-gw0/3'")
        if callable(getattr(inner, "put_if_absent", None)):
            self.put_if_absent = self._put_if_absent

    def _full(self, key: str, op: str) -> str:
        return f"{self.prefix}/{validate_key(key, op=op)}"

    def put(self, key: str, data: bytes) -> None:
        self.inner.put(self._full(key, "put"), data)

    def _put_if_absent(self, key: str, data: bytes) -> bool:
        # Passed on untouched, so a store returning a non-bool is seen by the suite.
        created: bool = self.inner.put_if_absent(self._full(key, "put_if_absent"), data)
        return created

    def get(self, key: str) -> bytes | None:
        result: bytes | None = self.inner.get(self._full(key, "get"))
        return result

    def delete(self, key: str) -> None:
        self.inner.delete(self._full(key, "delete"))

    def list(self, prefix: str) -> list[str]:
        normalised = validate_prefix(prefix)
        inner_prefix = self.prefix if normalised == "" else f"{self.prefix}/{normalised}"
        cut = len(self.prefix) + 1
        return [k[cut:] for k in self.inner.list(inner_prefix)]

    def clear(self) -> None:
        """Delete every key under the prefix (teardown)."""
        for key in self.inner.list(self.prefix):
            self.inner.delete(key)

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()
