"""Ordered races between signal, timeout, cancel, the owner's saves and a second handle.

Every interleaving is scripted with GatedStore gates and hooks, events and FakeClock;
nothing sleeps (docs/reference/kit.md).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.engine_flows import YES, MakeEngine, approval_workflow

from dw_testing.kit.clock import FakeClock
from dw_testing.kit.gates import Gate, GatedStore, Spawned
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.records.outcome import decode_outcome
from reference_engine.records.run_store import revision_numbers
from reference_engine.refusals import Refusal
from reference_engine.stores.fs import FsStore
from reference_engine.stores.memory import MemoryStore

OUTCOMES = f"{keys.outcomes_root()}*"
WAITS = f"{keys.waits_root()}*"


def _outcome_kind(store: Any, wait_id: str) -> str | None:
    decoded = decode_outcome(store.get(keys.outcome_key(wait_id)), wait_id)
    return getattr(getattr(decoded, "record", None), "kind", None)


def test_signal_during_the_drain_survives_every_later_owner_save(
    store: MemoryStore, clock: FakeClock, make_engine: MakeEngine
) -> None:
    """The sibling job's sleep runs only once the wait step is saved waiting; it signals."""
    waiting = threading.Event()
    delivered: list[Any] = []
    revs_at_signal: list[int] = []
    run_id = "drain"
    other = make_engine(store)

    def progress(message: str) -> None:
        if "waiting for a signal" in message:
            waiting.set()

    def sleeper(_seconds: float) -> None:
        assert waiting.wait(10), "the wait step never reached waiting_signal"
        [wait_key] = store.list(keys.waits_root())
        delivered.append(other.signal(wait_key.rsplit("/", 1)[1], YES))
        revs_at_signal.append(revision_numbers(store, run_id)[-1])

    sibling = {"name": "soak", "sleep": 1}
    owner = make_engine(store, progress=progress, sleeper=sleeper)
    view = owner.run(approval_workflow(sibling=sibling), run_id=run_id)
    assert view.status == "suspended"
    assert revision_numbers(store, run_id)[-1] > revs_at_signal[0]  # the owner saved on
    assert _outcome_kind(store, view.waits[0].wait_id) == "accepted"
    assert owner.resume(run_id).status == "succeeded"
    output = owner.show(run_id)["steps"]["approval"]["output"]
    assert output["signal"]["id"] == delivered[0].receipt.id


def test_signal_from_a_second_handle_is_applied(tmp_path: Path, make_engine: MakeEngine) -> None:
    first = make_engine(FsStore(tmp_path, fsync=False))
    second = make_engine(FsStore(tmp_path, fsync=False))
    view = first.run(approval_workflow())
    second.signal(view.waits[0].wait_id, YES)
    assert first.resume(view.run_id).status == "succeeded"
    assert first.show(view.run_id)["steps"]["deploy"]["status"] == "succeeded"


@dataclass(frozen=True)
class HeldSignal:
    """A second handle's signal held at its outcome create while the timeout passed."""

    engine: Engine
    run_id: str
    wait_id: str
    gate: Gate
    signal: Spawned[Any]


def _signal_held_past_the_timeout(store: MemoryStore, clock: FakeClock,
                                  make_engine: MakeEngine, point: str) -> HeldSignal:
    """A run waits (60 s timeout); a signal from a second handle reaches ``point`` of its
    outcome create and is held there while the clock moves 120 s on."""
    engine = make_engine(store)
    view = engine.run(approval_workflow(timeout=60))
    wait_id = view.waits[0].wait_id
    gated = GatedStore(store)
    gate = gated.pause("put_if_absent", point=point, key=OUTCOMES)
    signal = gated.spawn(lambda: make_engine(gated).signal(wait_id, YES))
    gate.wait_reached()
    clock.advance(120)
    return HeldSignal(engine, view.run_id, wait_id, gate, signal)


def test_signal_created_first_beats_a_later_timeout(
    store: MemoryStore, clock: FakeClock, make_engine: MakeEngine
) -> None:
    held = _signal_held_past_the_timeout(store, clock, make_engine, "after_commit")
    engine = held.engine
    assert [w.expired for w in engine.open_waits()] == []  # the signal's create is stored
    held.gate.release()
    assert held.signal.result().wait_id == held.wait_id
    assert _outcome_kind(store, held.wait_id) == "accepted"
    assert engine.resume(held.run_id).status == "succeeded"


def test_timeout_created_first_beats_a_parked_signal(
    store: MemoryStore, clock: FakeClock, make_engine: MakeEngine
) -> None:
    held = _signal_held_past_the_timeout(store, clock, make_engine, "before")
    engine = held.engine
    [overdue] = engine.open_waits()
    assert overdue.expired
    held.gate.release()
    with pytest.raises(Refusal) as refused:
        held.signal.result()
    assert refused.value.kind == "expired"  # answered from the stored timeout
    assert _outcome_kind(store, held.wait_id) == "timed_out"
    engine.resume(held.run_id)
    assert engine.show(held.run_id)["steps"]["approval"]["error"] == "wait_timeout"


def test_signal_that_won_before_a_cancel_keeps_its_receipt(engine: Engine,
                                                           store: MemoryStore) -> None:
    view = engine.run(approval_workflow())
    delivery = engine.signal(view.waits[0].wait_id, YES)
    assert engine.cancel(view.run_id).status == "cancelled"
    step = engine.show(view.run_id)["steps"]["approval"]
    assert step["output"]["signal"]["id"] == delivery.receipt.id
    assert step["error"] == "cancelled"
    assert store.list(keys.waits_root()) == store.list(keys.outcomes_root()) == []
    with pytest.raises(Refusal) as refused:
        engine.signal(view.waits[0].wait_id, YES)
    assert refused.value.kind == "closed"


def test_cancel_first_then_signal_is_closed(engine: Engine) -> None:
    view = engine.run(approval_workflow())
    engine.cancel(view.run_id)
    with pytest.raises(Refusal) as refused:
        engine.signal(view.waits[0].wait_id, YES)
    assert refused.value.kind == "closed"
    assert engine.cancel(view.run_id).status == "cancelled"  # idempotent


@pytest.mark.parametrize(("point", "kept"), [
    ("after_commit", {"approved": True}),  # the signal's create landed: the cancel keeps it
    ("before", None),  # the signal passed its checks; its create never lands
], ids=["signal_created_then_the_run_ended", "run_ended_between_checks_and_create"])
def test_a_cancel_inside_a_signals_create_answers_closed_and_leaves_nothing(
    store: MemoryStore, make_engine: MakeEngine, point: str, kept: Any
) -> None:
    """At ``point`` of the signal's outcome create the cancel runs the whole lifetime; the
    signal re-reads and is refused ``closed``."""
    engine = make_engine(store)
    view = engine.run(approval_workflow())
    gated = GatedStore(store)
    hook = gated.at("put_if_absent", point=point, key=OUTCOMES,
                    do=lambda: engine.cancel(view.run_id))
    with pytest.raises(Refusal) as refused:
        make_engine(gated).signal(view.waits[0].wait_id, YES)
    assert refused.value.kind == "closed"
    assert hook.result() is not None
    assert store.list(keys.waits_root()) == store.list(keys.outcomes_root()) == []
    shown = engine.show(view.run_id)
    assert shown["status"] == "cancelled"
    approval = shown["steps"]["approval"]
    assert approval["error"] == "cancelled"
    assert (approval["output"]["payload"] if approval["output"] else None) == kept


def test_a_signal_in_the_window_between_register_and_waiting_save_is_not_lost(
    store: MemoryStore, make_engine: MakeEngine
) -> None:
    """Registered, then signalled before the step is saved waiting: resume still applies it."""
    engine = make_engine(store)
    signals: list[Any] = []

    def signal_now() -> None:
        [wait_key] = store.list(keys.waits_root())
        signals.append(make_engine(store).signal(wait_key.rsplit("/", 1)[1], YES))

    gated = GatedStore(store)
    gated.at("put_if_absent", point="after_commit", key=WAITS, do=signal_now)
    view = make_engine(gated).run(approval_workflow())
    assert view.status == "suspended"
    assert signals and engine.resume(view.run_id).status == "succeeded"


def test_a_wait_registered_but_never_saved_is_closed_when_the_run_is_cancelled(
    store: MemoryStore, make_engine: MakeEngine
) -> None:
    """Crash between register and the waiting save, then cancel: no signal may win later."""
    from dw_testing.kit.faults import FaultyStore, SimulatedCrash

    faulty = FaultyStore(store)
    faulty.crash("put_if_absent", key=WAITS, point="after_commit")
    with pytest.raises(SimulatedCrash):
        make_engine(faulty).run(approval_workflow(), run_id="orphan")
    [wait_key] = store.list(keys.waits_root())
    engine = make_engine(store)
    assert engine.cancel("orphan").status == "cancelled"
    with pytest.raises(Refusal) as refused:
        engine.signal(wait_key.rsplit("/", 1)[1], YES)
    assert refused.value.kind == "closed"
    assert store.list(keys.waits_root()) == store.list(keys.outcomes_root()) == []
    assert engine.show("orphan")["steps"]["approval"]["error"] == "cancelled"
