"""Property: whatever the order of signal, timeout, cancel and resume, a wait has one outcome.

Invariants after every step: the outcome never changes once created (until the run end
deletes it), only one signal is told it won, the winner's receipt reaches the run
record, and a bad payload is never stored.
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.engine_flows import YES, approval_workflow

from dw_testing.kit.clock import FakeClock
from dw_testing.kit.together import run_together
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.refusals import Refusal
from reference_engine.stores.memory import MemoryStore

BAD = '{"approved": "maybe-SECRETVALUE"}'


Act = Callable[[Engine, FakeClock, str, str], object]
# What each action does to the run ``run_id`` and its wait ``wait_id``. A signal or an
# answer that returns was told it won: it gives its receipt id, the only ``str`` result.
ACTS: dict[str, Act] = {
    "signal": lambda engine, _clock, _run_id, wait_id: engine.signal(wait_id, YES).receipt.id,
    "answer": lambda engine, _clock, run_id, wait_id: engine.answer(
        run_id, wait_id, YES).receipt.id,
    "bad_signal": lambda engine, _clock, _run_id, wait_id: engine.signal(wait_id, BAD),
    "advance": lambda _engine, clock, _run_id, _wait_id: clock.advance(40),
    "look": lambda engine, _clock, _run_id, _wait_id: engine.open_waits(),
    "cancel": lambda engine, _clock, run_id, _wait_id: engine.cancel(run_id),
    "resume": lambda engine, _clock, run_id, _wait_id: engine.resume(run_id),
}
ACTIONS = tuple(ACTS)


def _apply(engine: Engine, clock: FakeClock, action: str, run_id: str,
           wait_id: str) -> str | None:
    """Run one action; returns a receipt id when a delivery was told it won."""
    try:
        done = ACTS[action](engine, clock, run_id, wait_id)
    except Refusal:
        return None
    return done if isinstance(done, str) else None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(ACTIONS), min_size=1, max_size=8))
def test_one_outcome_per_wait_in_any_order(actions: list[str]) -> None:
    clock = FakeClock()
    store = MemoryStore()
    engine = Engine(store, clock, sleeper=clock.advance)
    view = engine.run(approval_workflow(timeout=60))
    run_id, wait_id = view.run_id, view.waits[0].wait_id
    first: bytes | None = None
    winners: list[str] = []
    for action in actions:
        won = _apply(engine, clock, action, run_id, wait_id)
        if won:
            winners.append(won)
        stored = store.get(keys.outcome_key(wait_id))
        if stored is not None:
            assert first is None or stored == first, "an outcome changed after it was created"
            first = stored
        assert all(b"SECRETVALUE" not in (store.get(k) or b"") for k in store.list(""))
    assert len(winners) <= 1
    shown = engine.show(run_id)
    if winners and shown["status"] in ("succeeded", "cancelled"):
        assert shown["steps"]["approval"]["output"]["signal"]["id"] == winners[0]
    applied = [e for e in shown["journal"] if e["type"] == "answer_applied"]
    assert len(applied) <= 1


def _concurrent_round() -> None:
    clock = FakeClock()
    store = MemoryStore()
    view = Engine(store, clock, sleeper=clock.advance).run(approval_workflow(timeout=60))
    run_id, wait_id = view.run_id, view.waits[0].wait_id
    clock.advance(30)
    actions = ("signal", "signal", "cancel", "look")
    engines = [Engine(store, clock, sleeper=clock.advance, claim_patience=False)
               for _ in actions]
    results = run_together([lambda e=e, a=a: _apply(e, clock, a, run_id, wait_id)
                            for e, a in zip(engines, actions, strict=True)])
    winners = [r for r in results if r]
    assert len(winners) <= 1
    shown = Engine(store, clock).show(run_id)
    if shown["status"] == "cancelled" and winners:
        # a winner landed before the cancel settled, so the cancel kept its receipt
        assert shown["steps"]["approval"]["output"]["signal"]["id"] == winners[0]


def test_concurrent_signals_timeout_and_cancel_leave_one_outcome() -> None:
    for _round in range(15):
        _concurrent_round()
