"""``StoreWrapper``: the base every kit wrapper builds on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from dw_testing.kit.doubles import NoCreateStore
from dw_testing.kit.wrappers import StoreWrapper
from reference_engine.stores.contract import supports_create
from reference_engine.stores.memory import MemoryStore

T = TypeVar("T")


class ClosedFlag(MemoryStore):
    """Remembers that it was closed."""

    closed = False

    def close(self) -> None:
        super().close()
        self.closed = True


class Counting(StoreWrapper):
    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.seen: list[tuple[str, str]] = []

    def _call(self, op: str, key: str, run: Callable[[], T]) -> T:
        self.seen.append((op, key))
        return run()


class NonBoolCreate(MemoryStore):
    def put_if_absent(self, key: str, data: bytes) -> Any:
        return "yes"


def test_every_call_passes_through_call_with_its_op_and_key() -> None:
    store = Counting(MemoryStore("wrappers-calls"))
    store.put("a", b"1")
    assert store.put_if_absent("a", b"2") is False
    assert store.get("a") == b"1"
    assert store.list("") == ["a"]
    store.delete("a")
    assert store.seen == [("put", "a"), ("put_if_absent", "a"), ("get", "a"), ("list", ""),
                          ("delete", "a")]


def test_the_create_exists_only_when_the_inner_store_has_it() -> None:
    assert supports_create(StoreWrapper(MemoryStore("wrappers-create")))
    assert not supports_create(StoreWrapper(NoCreateStore()))


def test_what_the_inner_create_returns_is_passed_on_untouched() -> None:
    assert StoreWrapper(NonBoolCreate("wrappers-nonbool")).put_if_absent("k", b"") == "yes"


def test_close_reaches_the_inner_store() -> None:
    inner = ClosedFlag("wrappers-close")
    StoreWrapper(inner).close()
    assert inner.closed
