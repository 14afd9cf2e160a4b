"""``dw answer`` refusals write nothing: every stored byte is compared before and after.

docs/explanation/answers.md: run_not_found, not_suspended, not_waiting_here, wrong_run,
already_settled
(even for an identical value), expired (only the lazy ``timed_out`` is written), closed
and invalid_payload. Deleted and reused run ids can never be answered by the old run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from support.answers import (
    NO,
    NOBODY,
    YES,
    MakeEngine,
    applied,
    gate_workflow,
    snapshot,
    two_wait_workflow,
)

from dw_testing.kit.clock import FakeClock
from dw_testing.kit.gates import GatedStore
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.records.decoding import Found
from reference_engine.records.outcome import decode_outcome
from reference_engine.refusals import Refusal
from reference_engine.stores.memory import MemoryStore


def refused_without_writes(store: Any, act: Callable[[], object], kind: str, *,
                           claims_may_change: bool = False) -> Refusal:
    """Run ``act``; it must refuse ``kind`` and leave every key's bytes as they were.

    ``claims_may_change``: a refused *resume* took and released the run claim, which is
    its lease bookkeeping, not the run; every other byte must still be identical.
    """
    def kept(found: dict[str, bytes]) -> dict[str, bytes]:
        if not claims_may_change:
            return found
        return {k: v for k, v in found.items() if not k.startswith(keys.claims_root())}

    before = snapshot(store)
    with pytest.raises(Refusal) as refused:
        act()
    assert refused.value.kind == kind, refused.value.message
    assert kept(snapshot(store)) == kept(before)
    return refused.value


def test_a_run_that_does_not_exist_is_run_not_found(engine: Engine, store: MemoryStore) -> None:
    view = engine.run(gate_workflow())
    wait_id = view.waits[0].wait_id
    refusal = refused_without_writes(store, lambda: engine.answer("no-such-run", wait_id, YES),
                                     "run_not_found")
    assert "dw runs" in refusal.message


def test_a_running_run_is_not_suspended(store: MemoryStore, make_engine: MakeEngine) -> None:
    gated = GatedStore(store)
    kinds: list[str] = []

    def answer_while_running() -> None:
        [wait_key] = store.list(keys.waits_root())
        [run_id] = {k.split("/")[1] for k in store.list(keys.runs_root())}
        refusal = refused_without_writes(
            store, lambda: make_engine(store).answer(run_id, wait_key.split("/")[-1], YES),
            "not_suspended")
        kinds.append(refusal.kind)

    gated.at("put_if_absent", point="after_commit", key=keys.wait_key("*"),
             do=answer_while_running)
    make_engine(gated).run(gate_workflow())
    gated.assert_all_gates_used()
    assert kinds == ["not_suspended"]


@pytest.mark.parametrize("ending", ["cancelled", "succeeded"])
def test_an_ended_run_is_not_suspended(engine: Engine, store: MemoryStore, ending: str) -> None:
    view = engine.run(gate_workflow())
    wait_id = view.waits[0].wait_id
    if ending == "cancelled":
        engine.cancel(view.run_id)
    else:
        engine.answer(view.run_id, wait_id, YES)
        assert engine.resume(view.run_id).status == "succeeded"
    refusal = refused_without_writes(store, lambda: engine.answer(view.run_id, wait_id, NO),
                                     "not_suspended")
    assert ending in refusal.message


def test_a_wait_the_run_is_not_at_is_not_waiting_here(engine: Engine,
                                                      store: MemoryStore) -> None:
    view = engine.run(gate_workflow())
    refused_without_writes(store, lambda: engine.answer(view.run_id, NOBODY, YES),
                           "not_waiting_here")


def test_a_wait_of_another_run_is_wrong_run(engine: Engine, store: MemoryStore) -> None:
    one = engine.run(gate_workflow())
    two = engine.run(gate_workflow())
    refusal = refused_without_writes(
        store, lambda: engine.answer(one.run_id, two.waits[0].wait_id, YES), "wrong_run")
    assert two.run_id in refusal.message  # it names the run that does own the wait
    engine.answer(two.run_id, two.waits[0].wait_id, YES)  # the owner still can
    refused_without_writes(store, lambda: engine.answer(one.run_id, two.waits[0].wait_id, YES),
                           "wrong_run")


@pytest.mark.parametrize("second", [YES, NO], ids=["identical", "different"])
def test_a_second_answer_is_already_settled(engine: Engine, store: MemoryStore,
                                            second: str) -> None:
    view = engine.run(gate_workflow())
    wait_id = view.waits[0].wait_id
    first = engine.answer(view.run_id, wait_id, YES)
    refusal = refused_without_writes(store, lambda: engine.answer(view.run_id, wait_id, second),
                                     "already_settled")
    assert first.receipt.id in refusal.message
    refused_without_writes(store, lambda: engine.signal(wait_id, second), "already_settled")


def test_a_consumed_answer_is_already_settled(engine: Engine, store: MemoryStore) -> None:
    view = engine.run(two_wait_workflow())
    first_wait = view.waits[0].wait_id
    receipt = engine.answer(view.run_id, first_wait, YES).receipt.id
    again = engine.resume(view.run_id)
    assert again.status == "suspended" and again.waits[0].wait_id != first_wait
    refusal = refused_without_writes(store, lambda: engine.answer(view.run_id, first_wait, YES),
                                     "already_settled")
    assert receipt in refusal.message


def test_a_late_answer_is_expired_and_only_the_lazy_timeout_and_its_hint_are_written(
    engine: Engine, store: MemoryStore, clock: FakeClock
) -> None:
    view = engine.run(gate_workflow(timeout=60))
    wait_id = view.waits[0].wait_id
    clock.advance(61)
    before = snapshot(store)
    with pytest.raises(Refusal) as refused:
        engine.answer(view.run_id, wait_id, YES)
    assert refused.value.kind == "expired"
    assert f"dw resume {view.run_id}" in refused.value.message
    after = snapshot(store)
    added = {k: v for k, v in after.items() if k not in before}
    assert {k: v for k, v in after.items() if k in before} == before
    assert sorted(added) == sorted([keys.outcome_key(wait_id),
                                    keys.ready_key(view.run_id, wait_id)])
    decoded = decode_outcome(added[keys.outcome_key(wait_id)], wait_id)
    assert isinstance(decoded, Found) and decoded.record.kind == "timed_out"
    refused_without_writes(store, lambda: engine.answer(view.run_id, wait_id, YES), "expired")


def test_an_answer_racing_a_cancel_is_closed_and_leaves_nothing(
    store: MemoryStore, make_engine: MakeEngine
) -> None:
    owner = make_engine(store)
    view = owner.run(gate_workflow())
    wait_id = view.waits[0].wait_id
    gated = GatedStore(store)
    after_cancel: list[dict[str, bytes]] = []

    def cancel() -> None:
        owner.cancel(view.run_id)
        after_cancel.append(snapshot(store))

    # The answer passed its checks against a suspended run; the cancel ends the run
    # before the answer's create lands.
    gated.at("put_if_absent", point="before", key=keys.outcome_key(wait_id), do=cancel)
    with pytest.raises(Refusal) as refused:
        make_engine(gated).answer(view.run_id, wait_id, YES)
    gated.assert_all_gates_used()
    assert refused.value.kind == "closed"
    assert snapshot(store) == after_cancel[0]
    assert store.list(keys.outcomes_root()) == store.list(keys.waits_root()) == []


BAD_PAYLOADS = {
    "wrong_type": '{"approved": "Zebra-Quartz-917"}',
    "missing_required": '{"approve": true}',
    "not_json": "{approved: yes",
    "nan": '{"approved": NaN}',
    "duplicate_key": '{"approved": true, "approved": false}',
    "proto_key": '{"approved": true, "__proto__": {}}',
    "too_deep": '{"approved": true, "x": ' + "[" * 20 + "]" * 20 + "}",
    "too_big": json.dumps({"approved": True, "pad": "Zebra" * 4000}),
    "not_an_object": "[true]",
}


@pytest.mark.parametrize("payload", list(BAD_PAYLOADS.values()), ids=list(BAD_PAYLOADS))
def test_a_payload_that_breaks_the_schema_is_invalid_payload(
    engine: Engine, store: MemoryStore, payload: str
) -> None:
    view = engine.run(gate_workflow())
    wait_id = view.waits[0].wait_id
    refusal = refused_without_writes(
        store, lambda: engine.answer(view.run_id, wait_id, payload), "invalid_payload")
    assert "Zebra" not in refusal.message and "Zebra" not in json.dumps(refusal.details)
    assert refusal.details["path"].startswith("$") and refusal.details["rule"]
    engine.answer(view.run_id, wait_id, YES)  # the wait stayed open


def test_a_wait_id_that_is_no_uuid_is_unknown(engine: Engine, store: MemoryStore) -> None:
    view = engine.run(gate_workflow())
    refused_without_writes(store, lambda: engine.answer(view.run_id, "approval", YES), "unknown")


# --- deleted and reused run ids ---------------------------------------------------------

def test_a_deleted_run_is_run_not_found(engine: Engine, store: MemoryStore) -> None:
    view = engine.run(gate_workflow(), run_id="reused")
    wait_id = view.waits[0].wait_id
    engine.answer(view.run_id, wait_id, YES)
    engine.delete("reused")
    assert snapshot(store) == {}
    refused_without_writes(store, lambda: engine.answer("reused", wait_id, YES), "run_not_found")
    refused_without_writes(store, lambda: engine.resume("reused"), "run_not_found")


def test_a_reused_run_id_cannot_be_answered_by_anything_of_the_old_run(
    engine: Engine, store: MemoryStore
) -> None:
    old = engine.run(gate_workflow(), run_id="reused")
    old_wait = old.waits[0].wait_id
    engine.answer("reused", old_wait, YES)
    leftovers = {k: v for k, v in snapshot(store).items()
                 if k in (keys.wait_key(old_wait), keys.outcome_key(old_wait))}
    assert len(leftovers) == 2
    engine.delete("reused")
    new = engine.run(gate_workflow(), run_id="reused")
    new_wait = new.waits[0].wait_id
    assert new_wait != old_wait  # a new nonce: new wait ids

    refused_without_writes(store, lambda: engine.answer("reused", old_wait, YES),
                           "not_waiting_here")
    refused_without_writes(store, lambda: engine.signal(old_wait, YES), "unknown")
    # Even the old run's records, left behind as by a crashed delete, authorise nothing.
    for key, data in leftovers.items():
        store.put(key, data)
    refused_without_writes(store, lambda: engine.answer("reused", old_wait, YES),
                           "not_waiting_here")
    refused_without_writes(store, lambda: engine.resume("reused"), "open_wait",
                           claims_may_change=True)
    assert engine.serve_once() == []
    # The old outcome copied under the new wait's key is not this wait's: never applied.
    old_outcome = leftovers[keys.outcome_key(old_wait)]
    store.put(keys.outcome_key(new_wait), old_outcome)
    assert engine.resume("reused").status == "failed"
    shown = engine.show("reused")
    assert applied(shown) == []
    assert shown["steps"]["approval"]["error"] == "wait_unreadable"
    assert store.get(keys.outcome_key(new_wait)) == old_outcome  # never destroyed


def test_an_old_answer_in_flight_across_delete_and_reuse_touches_nothing_new(
    store: MemoryStore, make_engine: MakeEngine
) -> None:
    owner = make_engine(store)
    old_wait = owner.run(gate_workflow(), run_id="reused").waits[0].wait_id
    gated = GatedStore(store)
    fresh: list[dict[str, bytes]] = []

    def delete_and_reuse() -> None:
        owner.delete("reused")
        owner.run(gate_workflow(), run_id="reused")
        fresh.append(snapshot(store))

    gated.at("put_if_absent", point="before", key=keys.outcome_key(old_wait),
             do=delete_and_reuse)
    with pytest.raises(Refusal) as refused:
        make_engine(gated).answer("reused", old_wait, YES)
    gated.assert_all_gates_used()
    assert refused.value.kind == "closed"
    assert snapshot(store) == fresh[0]  # the old answer removed its own outcome
    new_wait = owner.show("reused")["steps"]["approval"]["wait"]["id"]
    owner.answer("reused", new_wait, NO)
    assert owner.resume("reused").status == "succeeded"
    assert [e["waitId"] for e in applied(owner.show("reused"))] == [new_wait]
