"""``PrefixedStore``: one test's private corner of a shared store."""

from __future__ import annotations

from typing import Any

from dw_testing.kit.wrappers import StoreWrapper
from reference_engine.stores.keys import validate_key, validate_prefix


class PrefixedStore(StoreWrapper):
    """Maps ``key`` to ``prefix/key`` on ``inner``; keys are validated before the prefix."""

    def __init__(self, inner: Any, prefix: str) -> None:
        super().__init__(inner)
        self.prefix = validate_prefix(prefix)
        if self.prefix == "":
            raise ValueError("PrefixedStore needs a non-empty prefix, like 'dwc-s1-gw0/3'")

    def _full(self, key: str, op: str) -> str:
        return f"{self.prefix}/{validate_key(key, op=op)}"

    def put(self, key: str, data: bytes) -> None:
        super().put(self._full(key, "put"), data)

    def _put_if_absent(self, key: str, data: bytes) -> bool:
        return super()._put_if_absent(self._full(key, "put_if_absent"), data)

    def get(self, key: str) -> bytes | None:
        return super().get(self._full(key, "get"))

    def delete(self, key: str) -> None:
        super().delete(self._full(key, "delete"))

    def list(self, prefix: str) -> list[str]:
        # The caller's prefix goes on as written, trailing "/" included: a store is judged
        # on the very call the test made (list("a/") stays "<prefix>/a/", never "<prefix>/a").
        validate_prefix(prefix)
        cut = len(self.prefix) + 1
        return [k[cut:] for k in super().list(f"{self.prefix}/{prefix}")]

    def clear(self) -> None:
        """Delete every key under the prefix (teardown)."""
        for key in self.inner.list(f"{self.prefix}/"):
            self.inner.delete(key)
