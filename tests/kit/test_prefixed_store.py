"""PrefixedStore gives each test a private corner of a shared store."""

from __future__ import annotations

import pytest

from dw_testing.kit.doubles import NoCreateStore
from dw_testing.kit.prefixed import PrefixedStore
from reference_engine.errors import InvalidKey
from reference_engine.stores.contract import supports_create
from reference_engine.stores.memory import MemoryStore


@pytest.fixture
def shared() -> MemoryStore:
    return MemoryStore()


def test_keys_land_under_the_prefix(shared: MemoryStore) -> None:
    store = PrefixedStore(shared, "dwc-s-gw0/1")
    store.put("runs/r1", b"a")
    assert store.put_if_absent("waits/w1", b"b") is True
    assert store.put_if_absent("waits/w1", b"c") is False
    assert shared.list("") == ["dwc-s-gw0/1/runs/r1", "dwc-s-gw0/1/waits/w1"]
    assert store.get("runs/r1") == b"a"
    store.delete("runs/r1")
    assert store.get("runs/r1") is None


def test_two_prefixes_do_not_see_each_other(shared: MemoryStore) -> None:
    one = PrefixedStore(shared, "t/1")
    two = PrefixedStore(shared, "t/10")       # a string prefix of one's prefix + "0"
    one.put("k", b"1")
    two.put("k", b"10")
    assert one.get("k") == b"1" and two.get("k") == b"10"
    assert one.list("") == ["k"] and two.list("") == ["k"]
    one.clear()
    assert one.list("") == [] and two.list("") == ["k"]


def test_list_strips_the_prefix_and_matches_whole_segments(shared: MemoryStore) -> None:
    store = PrefixedStore(shared, "p/")        # a trailing slash is normalised away
    for key in ("r/list/a", "r/list/nested/b", "r/listing", "r/list"):
        store.put(key, b"")
    expected = ["r/list/a", "r/list/nested/b"]
    assert store.list("r/list") == expected
    assert store.list("r/list/") == expected
    assert store.list("") == ["r/list", "r/list/a", "r/list/nested/b", "r/listing"]


class RecordingStore(MemoryStore):
    """Checks nothing and records every key it is handed."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def put(self, key: str, data: bytes) -> None:
        self.seen.append(key)

    def get(self, key: str) -> bytes | None:
        self.seen.append(key)
        return None


@pytest.mark.parametrize("key", ["", "/abs", "../escape", "a//b", "a/./b", "a\\b", "a\x00b"])
def test_bad_keys_are_refused_before_any_io(key: str) -> None:
    inner = RecordingStore()
    store = PrefixedStore(inner, "p")
    with pytest.raises(InvalidKey):
        store.put(key, b"x")
    with pytest.raises(InvalidKey):
        store.get(key)
    assert inner.seen == []


@pytest.mark.parametrize("prefix", ["", "/", "/abs", "a//b", "../up"])
def test_bad_prefixes_are_refused(shared: MemoryStore, prefix: str) -> None:
    with pytest.raises(ValueError):
        PrefixedStore(shared, prefix)


def test_put_if_absent_is_offered_only_when_inner_has_it(shared: MemoryStore) -> None:
    assert supports_create(PrefixedStore(shared, "p"))
    assert not supports_create(PrefixedStore(NoCreateStore(), "p"))


def test_close_reaches_the_inner_store() -> None:
    class Closable(MemoryStore):
        closed = False

        def close(self) -> None:
            self.closed = True

    inner = Closable()
    PrefixedStore(inner, "p").close()
    assert inner.closed


def test_create_results_pass_through_untouched() -> None:
    class SloppyStore(MemoryStore):
        def put_if_absent(self, key: str, data: bytes) -> bool:
            return None  # type: ignore[return-value]  # a broken store the suite must see

    assert PrefixedStore(SloppyStore(), "p").put_if_absent("k", b"") is None
