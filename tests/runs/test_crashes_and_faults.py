"""Crash points after every store call of run, resume, cancel and signal, and lying stores.

A crash poisons the actor's handle (FaultyStore), so nothing can write after it. Each
point is then recovered by a fresh engine on a fresh handle, which must neither lose
nor duplicate an outcome and must leave no wait records behind once the run ends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from support.engine_flows import YES, approval_workflow
from support.store_copies import memory_copy

from dw_testing.kit.clock import FakeClock
from dw_testing.kit.faults import FaultyStore, SimulatedCrash
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.refusals import Refusal
from reference_engine.stores.memory import MemoryStore

RUN = "crash-run"


def _engine(store: Any, clock: FakeClock) -> Engine:
    return Engine(store, clock, sleeper=clock.advance, lease_ttl_ms=30_000)


def _count_calls(make_store: Callable[[], MemoryStore], action: Callable[[Engine], Any],
                 clock: FakeClock) -> int:
    faulty = FaultyStore(make_store())
    action(_engine(faulty, clock))
    return faulty.call_count


def _suspended(clock: FakeClock) -> tuple[MemoryStore, str]:
    store = MemoryStore()
    view = _engine(store, clock).run(approval_workflow(), run_id=RUN)
    return store, view.waits[0].wait_id


def _finish(store: MemoryStore, clock: FakeClock) -> dict[str, Any]:
    """Drive the run to its end from whatever state the crash left."""
    engine = _engine(store, clock)
    if not engine.runs():
        engine.run(approval_workflow(), run_id=RUN)
    for _ in range(3):
        try:
            view = engine.resume(RUN)
        except Refusal as refusal:
            assert refusal.kind == "open_wait", refusal.message
            view = None
        if view is not None and view.status != "suspended":
            break
        [wait_key] = store.list(keys.waits_root())
        try:
            engine.signal(wait_key.rsplit("/", 1)[1], YES)
        except Refusal as refusal:
            assert refusal.kind == "already_settled", refusal.message
    return engine.show(RUN)


def _assert_applied_once(shown: dict[str, Any], store: MemoryStore) -> None:
    assert shown["status"] == "succeeded"
    assert shown["steps"]["approval"]["output"]["payload"] == {"approved": True}
    applied = [e for e in shown["journal"] if e["type"] == "answer_applied"]
    assert len(applied) == 1, applied
    assert store.list(keys.waits_root()) == store.list(keys.outcomes_root()) == []


def _explore(setup: Callable[[FakeClock], MemoryStore], action: Callable[[Engine], Any],
             recover: Callable[[MemoryStore, FakeClock], None]) -> int:
    base_clock = FakeClock()
    base = setup(base_clock)
    total = _count_calls(lambda: memory_copy(base), action, FakeClock(base_clock.now()))
    for n in range(1, total + 1):
        for point in ("before", "after_commit"):  # the call never lands / lands unseen
            clock = FakeClock(base_clock.now())
            store = memory_copy(base)
            faulty = FaultyStore(store)
            faulty.crash(None, after_calls=n - 1, point=point)
            with pytest.raises(SimulatedCrash):
                action(_engine(faulty, clock))
            recover(store, clock)
    return total


def test_crash_after_every_store_call_of_run() -> None:
    def recover(store: MemoryStore, clock: FakeClock) -> None:
        _assert_applied_once(_finish(store, clock), store)

    total = _explore(lambda _clock: MemoryStore(),
                     lambda e: e.run(approval_workflow(), run_id=RUN), recover)
    assert total > 10


def test_crash_after_every_store_call_of_resume() -> None:
    def setup(clock: FakeClock) -> MemoryStore:
        store, wait_id = _suspended(clock)
        _engine(store, clock).signal(wait_id, YES)
        return store

    def recover(store: MemoryStore, clock: FakeClock) -> None:
        _assert_applied_once(_finish(store, clock), store)

    assert _explore(setup, lambda e: e.resume(RUN), recover) > 5


def test_crash_after_every_store_call_of_cancel() -> None:
    receipt: list[str] = []

    def setup(clock: FakeClock) -> MemoryStore:
        store, wait_id = _suspended(clock)
        receipt.append(_engine(store, clock).signal(wait_id, YES).receipt.id)
        return store

    def recover(store: MemoryStore, clock: FakeClock) -> None:
        engine = _engine(store, clock)
        assert engine.cancel(RUN).status == "cancelled"
        shown = engine.show(RUN)
        assert shown["steps"]["approval"]["output"]["signal"]["id"] == receipt[0]
        assert store.list(keys.waits_root()) == store.list(keys.outcomes_root()) == []

    assert _explore(setup, lambda e: e.cancel(RUN), recover) > 5


def test_crash_after_every_store_call_of_signal() -> None:
    wait_ids: list[str] = []

    def setup(clock: FakeClock) -> MemoryStore:
        store, wait_id = _suspended(clock)
        wait_ids.append(wait_id)
        return store

    def recover(store: MemoryStore, clock: FakeClock) -> None:
        _assert_applied_once(_finish(store, clock), store)

    assert _explore(setup, lambda e: e.signal(wait_ids[0], YES), recover) >= 3


@pytest.mark.parametrize("fault", ["false-to-winner", "drop-response-after-commit",
                                   "conflict-409-once", "transient-once"])
@pytest.mark.parametrize("family", ["outcomes", "claims", "runs", "waits"])
def test_the_engine_is_right_when_the_store_misreports_the_winner(
    fault: str, family: str, clock: FakeClock
) -> None:
    pattern = {"outcomes": keys.outcome_key("*"), "claims": f"{keys.claims_prefix('*')}*",
               "runs": keys.revision_key(RUN, 2).rsplit("/", 1)[0] + "/*",
               "waits": keys.wait_key("*")}[family]
    store = MemoryStore()
    faulty = FaultyStore(store)
    faulty.inject("put_if_absent", fault, key=pattern)
    engine = _engine(faulty, clock)
    view = engine.run(approval_workflow(), run_id=RUN)
    assert view.status == "suspended"
    delivery = engine.signal(view.waits[0].wait_id, YES)
    assert engine.resume(RUN).status == "succeeded"
    faulty.assert_all_hit()
    shown = engine.show(RUN)
    assert shown["steps"]["approval"]["output"]["signal"]["id"] == delivery.receipt.id
    _assert_applied_once(shown, store)


def test_a_lost_timeout_create_is_still_recognised(clock: FakeClock) -> None:
    store, _wait_id = _suspended(clock)
    faulty = FaultyStore(store)
    faulty.inject("put_if_absent", "false-to-winner", key=keys.outcome_key("*"))
    clock.advance(4000)
    [overdue] = _engine(faulty, clock).open_waits()
    assert overdue.expired
    faulty.assert_all_hit()
