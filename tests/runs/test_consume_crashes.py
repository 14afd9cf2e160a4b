"""The atomic consume (docs/explanation/answers.md): one revision, and crashes around it
(FaultyStore).

The consume revision holds the step's output, its receipt and exactly one
``answer_applied`` event; later steps see the value only once it is saved. A crash
poisons the resuming handle (nothing more is written, as in a killed process); a fresh
engine on the same records then resumes, taking over the dead claim on the fake clock.
"""

from __future__ import annotations

from typing import Any

import pytest
from support import answer_steps
from support.answers import AnsweredRun, MakeEngine, answered_run, applied
from support.store_copies import memory_copy

from dw_testing.kit.faults import FaultyStore, SimulatedCrash, StoreCall
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.records.decoding import Found
from reference_engine.records.run import decode_run
from reference_engine.records.run_store import newest_revision
from reference_engine.stores.memory import MemoryStore

RUN = "consume"


@pytest.fixture
def answered(engine: Engine) -> AnsweredRun:
    return answered_run(engine, RUN)


def _revision(store: MemoryStore, n: int) -> Any:
    decoded = decode_run(store.get(keys.revision_key(RUN, n)), RUN, n)
    assert isinstance(decoded, Found)
    return decoded.record


def test_the_consume_is_one_revision_saved_before_any_later_step(
    engine: Engine, store: MemoryStore, answered: AnsweredRun
) -> None:
    wait_id, receipt, suspended_at = answered.wait_id, answered.receipt, answered.suspended_at
    assert engine.resume(RUN).status == "succeeded"
    before, consume = _revision(store, suspended_at), _revision(store, suspended_at + 1)
    step = consume.steps["approval"]
    assert step.status == "succeeded"
    assert step.output["payload"] == {"approved": True}
    assert step.output["signal"]["id"] == receipt
    new_events = consume.journal[len(before.journal):]
    assert [e["type"] for e in new_events] == ["answer_applied"]
    assert new_events[0]["waitId"] == wait_id and new_events[0]["receiptId"] == receipt
    assert "use" not in consume.steps  # no later step ran before this revision
    [seen] = answer_steps.SEEN
    assert seen["payload"] == {"approved": True}
    assert seen["saved"]["approval"] == "succeeded" and len(seen["saved"]["applied"]) == 1
    assert seen["saved"]["rev"] >= suspended_at + 1
    assert len(applied(engine.show(RUN))) == 1


def _crash_the_resume(where: str, store: MemoryStore, make_engine: MakeEngine,
                      answered: AnsweredRun) -> Engine:
    """Resume on a handle that crashes ``where``; a fresh engine (a new process) on the
    same records, to recover with."""
    faulty = FaultyStore(store)
    outcome_key = keys.outcome_key(answered.wait_id)
    if where == "before_the_consume_save":
        faulty.crash("put_if_absent", key=answered.consume_key, point="before")
    elif where == "at_the_outcome_read":
        faulty.crash("get", key=outcome_key, point="after_commit")
    elif where == "right_after_the_outcome_read":  # the next store call, of any kind
        copy = memory_copy(store)
        answer_steps.STORE[:] = [copy]
        dry = FaultyStore(copy)
        make_engine(dry).resume(RUN)
        answer_steps.reset()
        answer_steps.STORE[:] = [store]
        read = dry.calls.index(StoreCall("get", outcome_key))
        faulty.crash(None, after_calls=read + 1, point="before")
    elif where == "the_consume_create_lands_unseen":
        faulty.crash("put_if_absent", key=answered.consume_key, point="after_commit")
    else:  # the run finished; its holder dies on the release of the claim
        assert where == "before_the_claim_is_released", where
        faulty.crash("put", key=f"{keys.claims_prefix(RUN)}*", after_calls=0, point="before")
    with pytest.raises(SimulatedCrash):
        make_engine(faulty).resume(RUN)
    assert faulty.crashed
    return make_engine(store)


def _assert_applied_once(engine: Engine, store: MemoryStore, receipt: str) -> None:
    shown = engine.show(RUN)
    assert shown["status"] == "succeeded"
    [event] = applied(shown)
    assert event["receiptId"] == receipt  # the delivered answer, no replacement
    assert shown["steps"]["approval"]["output"]["signal"]["id"] == receipt
    assert shown["steps"]["use"]["output"] == {"seen": {"approved": True}}
    assert store.list(keys.waits_root()) == store.list(keys.outcomes_root()) == []
    for seen in answer_steps.SEEN:  # every execution of the later step saw a saved consume
        assert seen["saved"]["approval"] == "succeeded" and len(seen["saved"]["applied"]) == 1


@pytest.mark.parametrize("where", ["before_the_consume_save", "at_the_outcome_read",
                                   "right_after_the_outcome_read"])
def test_a_crash_before_the_save_leaves_the_answer_applicable_once(
    store: MemoryStore, make_engine: MakeEngine, answered: AnsweredRun, where: str
) -> None:
    recovery = _crash_the_resume(where, store, make_engine, answered)
    # Nothing of the consume landed: the answer is still pending and applicable.
    assert store.get(answered.consume_key) is None
    assert newest_revision(store, RUN).n == answered.suspended_at
    assert store.get(keys.outcome_key(answered.wait_id)) is not None
    assert answer_steps.SEEN == []  # the value reached no step
    assert recovery.resume(RUN).status == "succeeded"
    _assert_applied_once(recovery, store, answered.receipt)
    assert len(answer_steps.SEEN) == 1


@pytest.mark.parametrize("where", ["the_consume_create_lands_unseen",
                                   "before_the_claim_is_released"])
def test_a_crash_after_the_save_replays_without_a_second_event(
    store: MemoryStore, make_engine: MakeEngine, answered: AnsweredRun, where: str
) -> None:
    recovery = _crash_the_resume(where, store, make_engine, answered)
    assert store.get(answered.consume_key) is not None
    consumed = _revision(store, answered.suspended_at + 1)
    assert [e["receiptId"] for e in consumed.journal if e["type"] == "answer_applied"] \
        == [answered.receipt]
    view = recovery.resume(RUN)  # replays from the record; takes over the dead claim
    assert view.status == "succeeded" and view.waits == ()
    _assert_applied_once(recovery, store, answered.receipt)
    again = recovery.resume(RUN)  # and again: a no-op
    assert again.status == "succeeded"
    assert len(applied(recovery.show(RUN))) == 1
