"""Legacy v1 runs, the sweep, the scheduler pass, and typed answers
(docs/explanation/answers.md)."""

from __future__ import annotations

import json
from importlib import resources

import pytest
from support.engine_flows import NO, YES, MakeEngine, approval_workflow, plain_workflow

from dw_testing.kit.clock import FakeClock
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.records.run_store import revision_numbers
from reference_engine.refusals import Refusal
from reference_engine.stores.memory import MemoryStore


def _plant_legacy(store: MemoryStore) -> tuple[str, str]:
    data = resources.files("reference_engine").joinpath("fixtures/legacy_v1_run.json")
    raw = data.read_bytes()
    record = json.loads(raw)
    store.put(keys.revision_key(record["runId"], 1), raw)
    return record["runId"], record["steps"]["approval"]["wait"]["id"]


def test_a_legacy_run_accepts_a_signal_rebuilds_its_registration_and_resumes(
    engine: Engine, store: MemoryStore
) -> None:
    run_id, wait_id = _plant_legacy(store)
    assert store.list(keys.waits_root()) == []
    delivery = engine.signal(wait_id, YES)
    assert delivery.run_id == run_id and delivery.awaiting_resume
    assert store.list(keys.waits_root()) == [keys.wait_key(wait_id)]
    assert engine.resume(run_id).status == "succeeded"
    shown = engine.show(run_id)
    assert shown["steps"]["approval"]["output"]["signal"]["id"] == delivery.receipt.id
    assert shown["steps"]["deploy"]["status"] == "succeeded"
    assert store.list(keys.waits_root()) == store.list(keys.outcomes_root()) == []


def test_a_legacy_run_times_out_lazily(engine: Engine, store: MemoryStore,
                                       clock: FakeClock) -> None:
    run_id, _wait_id = _plant_legacy(store)
    clock.advance(2 * 24 * 3600)
    engine.resume(run_id)
    assert engine.show(run_id)["steps"]["approval"]["error"] == "wait_timeout"


def test_sweep_removes_orphans_after_a_day_and_prunes_ended_runs(
    engine: Engine, store: MemoryStore, clock: FakeClock
) -> None:
    view = engine.run(approval_workflow(timeout=60))
    wait_id = view.waits[0].wait_id
    engine.signal(wait_id, YES)
    for n in revision_numbers(store, view.run_id):  # the run vanishes, its records stay
        store.delete(keys.revision_key(view.run_id, n))
    assert engine.sweep()["registrations"] == 0  # not before deadline + 24 h
    clock.advance(60 + 24 * 3600 + 1)
    counts = engine.sweep()
    assert counts["registrations"] == 1 and counts["outcomes"] == 1
    assert store.list(keys.waits_root()) == store.list(keys.outcomes_root()) == []
    done = engine.run(plain_workflow())
    assert len(revision_numbers(store, done.run_id)) > 3
    counts = engine.sweep()
    assert len(revision_numbers(store, done.run_id)) == 3
    assert store.list(keys.claims_prefix(done.run_id)) == []
    assert counts["claims"] >= 1


def test_the_sweep_keeps_records_of_live_runs(engine: Engine, store: MemoryStore,
                                              clock: FakeClock) -> None:
    view = engine.run(approval_workflow(timeout=60))
    clock.advance(3 * 24 * 3600)
    engine.open_waits()  # settles the timeout
    engine.sweep()
    assert store.list(keys.waits_root()) == [keys.wait_key(view.waits[0].wait_id)]
    assert len(revision_numbers(store, view.run_id)) > 3


def test_serve_once_resumes_only_runs_whose_waits_all_have_outcomes(
    engine: Engine, store: MemoryStore, make_engine: MakeEngine
) -> None:
    ready = engine.run(approval_workflow())
    waiting = engine.run(approval_workflow())
    engine.signal(ready.waits[0].wait_id, YES)
    assert engine.serve_once() == [ready.run_id]
    assert engine.show(ready.run_id)["status"] == "succeeded"
    assert engine.show(waiting.run_id)["status"] == "suspended"
    assert engine.serve_once() == []


def test_competing_schedulers_apply_an_answer_once(
    store: MemoryStore, make_engine: MakeEngine
) -> None:
    from dw_testing.kit.gates import GatedStore

    engine = make_engine(store)
    view = engine.run(approval_workflow())
    engine.signal(view.waits[0].wait_id, YES)
    gated = GatedStore(store)
    second = make_engine(store, claim_patience=False)
    passes: list[list[str]] = []
    gated.at("put_if_absent", point="after_commit", key=f"{keys.claims_prefix('*')}*",
             do=lambda: passes.append(second.serve_once()))
    first = make_engine(gated, claim_patience=False).serve_once()
    assert first == [view.run_id] and passes == [[]]  # the second saw busy and skipped
    shown = engine.show(view.run_id)
    assert len([e for e in shown["journal"] if e["type"] == "answer_applied"]) == 1


def test_answer_delivers_to_the_named_run(engine: Engine) -> None:
    view = engine.run(approval_workflow())
    delivery = engine.answer(view.run_id, view.waits[0].wait_id, NO, submitted_by="bo")
    assert delivery.to_json()["receipt"]["submittedBy"] == "bo"
    assert engine.resume(view.run_id).status == "succeeded"
    assert engine.show(view.run_id)["jobs"]["ship"] == "skipped"


def test_answer_refusals_write_nothing(engine: Engine, store: MemoryStore) -> None:
    one = engine.run(approval_workflow())
    two = engine.run(approval_workflow())
    wait_one, wait_two = one.waits[0].wait_id, two.waits[0].wait_id
    before = {k: store.get(k) for k in store.list("")}
    cases = [
        ("missing-run", wait_one, "run_not_found"),
        (one.run_id, wait_two, "wrong_run"),
        (one.run_id, "00000000-0000-4000-8000-000000000000", "not_waiting_here"),
        (one.run_id, wait_one, None),
    ]
    for run_id, wait_id, kind in cases[:3]:
        with pytest.raises(Refusal) as refused:
            engine.answer(run_id, wait_id, YES)
        assert refused.value.kind == kind
    assert {k: store.get(k) for k in store.list("")} == before
    first = engine.answer(one.run_id, wait_one, YES)
    with pytest.raises(Refusal) as refused:
        engine.answer(one.run_id, wait_one, YES)  # even the identical value
    assert refused.value.kind == "already_settled"
    assert first.receipt.id in refused.value.message
    engine.resume(one.run_id)
    with pytest.raises(Refusal) as refused:
        engine.answer(one.run_id, wait_one, YES)
    assert refused.value.kind == "not_suspended"
    engine.cancel(two.run_id)
    with pytest.raises(Refusal) as refused:
        engine.answer(two.run_id, wait_two, YES)
    assert refused.value.kind == "not_suspended"
    engine.delete(two.run_id)
    with pytest.raises(Refusal) as refused:
        engine.answer(two.run_id, wait_two, YES)
    assert refused.value.kind == "run_not_found"


def test_answer_to_a_running_run_is_not_suspended(store: MemoryStore,
                                                  make_engine: MakeEngine) -> None:
    from dw_testing.kit.gates import GatedStore

    gated = GatedStore(store)
    refusals: list[Refusal] = []

    def answer_now() -> None:
        [wait_key] = store.list(keys.waits_root())
        run_id = store.list(keys.runs_root())[0].split("/")[1]
        try:
            make_engine(store).answer(run_id, wait_key.rsplit("/", 1)[1], YES)
        except Refusal as refusal:
            refusals.append(refusal)

    gated.at("put_if_absent", point="after_commit", key=keys.wait_key("*"), do=answer_now)
    make_engine(gated).run(approval_workflow())
    assert [r.kind for r in refusals] == ["not_suspended"]
