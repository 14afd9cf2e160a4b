"""The spare pool: spares only for a command opened again, each spare used once, all ended."""

from __future__ import annotations

import itertools
import shlex
import sys
import threading

import pytest

from reference_engine.errors import StoreUnavailable
from reference_engine.stores.exec.client import ExecStore
from reference_engine.stores.exec.spares import SparePool, spares_from_env
from reference_engine.stores.registry import open_store


class FakeChild:
    def __init__(self, number: int) -> None:
        self.number = number
        self.killed = False

    def kill(self) -> None:
        self.killed = True


class Starter:
    """Counts starts; can be made to fail."""

    def __init__(self) -> None:
        self.numbers = itertools.count(1)
        self.started: list[FakeChild] = []
        self.lock = threading.Lock()
        self.fail = False

    def __call__(self) -> FakeChild:
        with self.lock:
            if self.fail:
                raise StoreUnavailable("cannot start")
            child = FakeChild(next(self.numbers))
            self.started.append(child)
            return child


def test_a_command_opened_once_starts_no_spare() -> None:
    pool: SparePool[FakeChild] = SparePool()
    start = Starter()
    assert pool.take("cmd", start, spares=2).number == 1
    pool.drain()
    assert len(start.started) == 1


def test_from_the_second_open_on_spares_are_handed_out_once_each() -> None:
    pool: SparePool[FakeChild] = SparePool()
    start = Starter()
    taken = [pool.take("cmd", start, spares=2) for _ in range(5)]
    assert len({id(child) for child in taken}) == 5, "no child is handed out twice"
    pool.drain()
    spares = [child for child in start.started if child not in taken]
    assert len(spares) == 2 and all(child.killed for child in spares), "drain ends the spares"
    assert not any(child.killed for child in taken), "handed-out children are not the pool's"


def test_keys_do_not_share_spares() -> None:
    pool: SparePool[FakeChild] = SparePool()
    first, second = Starter(), Starter()
    for _ in range(3):
        pool.take("a", first, spares=1)
    pool.take("b", second, spares=1)
    pool.drain()
    assert len(second.started) == 1, "one open of b: no spare, and none of a's"


def test_zero_spares_starts_on_demand_only() -> None:
    pool: SparePool[FakeChild] = SparePool()
    start = Starter()
    for _ in range(4):
        pool.take("cmd", start, spares=0)
    assert len(start.started) == 4


def test_a_spare_that_failed_to_start_is_replaced_by_a_start_on_demand() -> None:
    pool: SparePool[FakeChild] = SparePool()
    start = Starter()
    in_background: list[bool] = []

    def start_but_not_as_a_spare() -> FakeChild:
        as_spare = threading.current_thread().name == "dw-exec-spare"
        in_background.append(as_spare)
        if as_spare:
            raise StoreUnavailable("spares cannot start")
        return start()

    pool.take("cmd", start_but_not_as_a_spare, spares=1)
    pool.take("cmd", start_but_not_as_a_spare, spares=1)  # queues a spare that will fail
    third = pool.take("cmd", start_but_not_as_a_spare, spares=1)
    pool.drain()
    assert third.number == 3, "the failed spare was replaced by a child started now"
    assert in_background.count(True) == 2, "each take from the second on queued a spare"


@pytest.mark.parametrize("value", ["-1", "two", "1.5"])
def test_a_bad_spares_setting_is_refused(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("DW_EXEC_SPARES", value)
    with pytest.raises(StoreUnavailable, match="DW_EXEC_SPARES must be a whole number"):
        spares_from_env()


def test_handles_from_spares_are_separate_children() -> None:
    reference = "exec:" + shlex.join(
        [sys.executable, "-m", "reference_engine.stores.exec.child", "memory://"])
    handles = [open_store(reference) for _ in range(4)]
    try:
        assert all(isinstance(h, ExecStore) for h in handles)
        assert len({h.pid for h in handles if isinstance(h, ExecStore)}) == 4
        handles[0].put("k", b"only in the first")
        assert [h.get("k") for h in handles] == [b"only in the first", None, None, None]
    finally:
        for handle in handles:
            handle.close()  # type: ignore[attr-defined]
