"""Every wrapper of the kit passes ``list`` the prefix exactly as its caller gave it.

A store that lists by the raw string (as swamp's do) is right for ``list("a/")`` and may be
wrong for ``list("a")``: a wrapper that dropped the trailing ``/`` would judge it on a call
the test never made. The store below records what reaches it, and matches the raw string,
so a dropped ``/`` shows both in what it saw and in what it answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dw_testing.history.recorder import HistoryRecorder
from dw_testing.kit.faults import FaultyStore
from dw_testing.kit.gates import GatedStore
from dw_testing.kit.prefixed import PrefixedStore
from dw_testing.kit.wrappers import StoreWrapper
from reference_engine.stores.async_adapter import adapt_if_async
from reference_engine.stores.keys import validate_key, validate_prefix

PREFIXES = ("", "a/", "a/b/", "a", "a/b")
KEYS = ("a/x", "a/b/y", "ab/z", "a-b/w")


class RawListStore:
    """Matches ``key.startswith(prefix)`` and records every prefix it is handed."""

    def __init__(self) -> None:
        self.records: dict[str, bytes] = {}
        self.seen: list[str] = []

    def put(self, key: str, data: bytes) -> None:
        self.records[validate_key(key, op="put")] = data

    def get(self, key: str) -> bytes | None:
        return self.records.get(key)

    def delete(self, key: str) -> None:
        self.records.pop(key, None)

    def list(self, prefix: str) -> list[str]:
        validate_prefix(prefix)
        self.seen.append(prefix)
        return sorted(k for k in self.records if k.startswith(prefix))


class AsyncRawListStore:
    def __init__(self, inner: RawListStore) -> None:
        self.inner = inner

    async def put(self, key: str, data: bytes) -> None:
        self.inner.put(key, data)

    async def get(self, key: str) -> bytes | None:
        return self.inner.get(key)

    async def delete(self, key: str) -> None:
        self.inner.delete(key)

    async def list(self, prefix: str) -> list[str]:
        return self.inner.list(prefix)


WRAPPERS: dict[str, Callable[[RawListStore], Any]] = {
    "StoreWrapper": StoreWrapper,
    "FaultyStore": FaultyStore,
    "GatedStore": GatedStore,
    "HistoryRecorder": lambda inner: HistoryRecorder(inner, process_id="p1"),
    "async adapter": lambda inner: adapt_if_async(AsyncRawListStore(inner)),
}


@pytest.mark.parametrize("wrap", WRAPPERS.values(), ids=list(WRAPPERS))
def test_a_wrapper_passes_the_prefix_on_as_written(wrap: Callable[[RawListStore], Any]) -> None:
    inner = RawListStore()
    for key in KEYS:
        inner.put(key, b"v")
    wrapper = wrap(inner)
    try:
        answers = {prefix: wrapper.list(prefix) for prefix in PREFIXES}
    finally:
        close = getattr(wrapper, "close", None)
        if callable(close):
            close()
    assert inner.seen == list(PREFIXES)
    assert answers["a/"] == ["a/b/y", "a/x"], "list('a/') must not reach the store as 'a'"
    assert answers["a"] == ["a-b/w", "a/b/y", "a/x", "ab/z"]


def test_a_faulty_stores_list_fault_matches_the_prefix_as_written() -> None:
    faulty = FaultyStore(RawListStore())
    slash = faulty.inject("list", "transient-once", key="a/")
    with pytest.raises(Exception, match="transiently"):
        faulty.list("a/")
    assert slash.hit_key == "a/"
    assert [call.key for call in faulty.calls] == ["a/"]


def test_a_gates_key_pattern_matches_the_prefix_as_written() -> None:
    gated = GatedStore(RawListStore())
    hits: list[str] = []
    gated.at("list", point="before", key="a/", do=lambda: hits.append("a/"))
    gated.at("list", point="after_commit", key="a", do=lambda: hits.append("a"))
    gated.list("a")
    gated.list("a/")
    assert hits == ["a", "a/"]
    gated.assert_all_gates_used()


def test_the_prefixed_store_adds_its_prefix_and_keeps_the_callers_slash() -> None:
    inner = RawListStore()
    store = PrefixedStore(inner, "dwc-s-gw0/3")
    PrefixedStore(inner, "dwc-s-gw0/30").put("a/x", b"another test's")
    for key in KEYS:
        store.put(key, b"v")
    assert store.list("") == sorted(KEYS), "'' must reach the store as '<prefix>/'"
    assert store.list("a/") == ["a/b/y", "a/x"]
    assert store.list("a") == ["a-b/w", "a/b/y", "a/x", "ab/z"]  # the raw store's answer
    assert inner.seen == ["dwc-s-gw0/3/", "dwc-s-gw0/3/a/", "dwc-s-gw0/3/a"]
