"""Cancellation at every point of a resume (seed 004; docs/explanation/engine.md,
docs/explanation/answers.md).

Three points: while the resume acquires the claim, while it claims the answer (between
reading the outcome and saving the consume), and during resumed execution. At each, a
cancel under the resume's live claim is refused ``busy``; a cancel that wins first (the
claim was free, or the paused holder's lease went stale on the fake clock) makes the
resume refuse, and the run ends as a run's lifetime says: the answer that won keeps its
receipt in the run record, and no wait record is left behind.
"""

from __future__ import annotations

from typing import Any

import pytest
from support import answer_steps
from support.answers import AnsweredRun, MakeEngine, answered_run, applied, snapshot

from dw_testing.kit.gates import GatedStore
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.refusals import Refusal
from reference_engine.stores.memory import MemoryStore

RUN = "cancel-me"


@pytest.fixture
def answered(engine: Engine) -> AnsweredRun:
    return answered_run(engine, RUN)


def _point(where: str, answered: AnsweredRun) -> dict[str, Any]:
    """The store call of the resume at which the cancel runs."""
    if where == "acquiring_the_claim":
        return {"op": "put_if_absent", "key": f"{keys.claims_prefix(RUN)}*"}
    if where == "claiming_the_answer":
        return {"op": "get", "key": keys.outcome_key(answered.wait_id)}
    # during execution: the save after the consume (job approve marked succeeded)
    return {"op": "put_if_absent", "key": keys.revision_key(RUN, answered.suspended_at + 2)}


def _assert_cancelled_by_the_lifetime(engine: Engine, store: MemoryStore, receipt: str,
                                      *, consumed: bool) -> None:
    shown = engine.show(RUN)
    assert shown["status"] == "cancelled"
    approval = shown["steps"]["approval"]
    assert approval["output"]["signal"]["id"] == receipt  # the answer that won is kept
    assert approval["output"]["payload"] == {"approved": True}
    assert len(applied(shown)) == (1 if consumed else 0)
    assert approval["status"] == ("succeeded" if consumed else "failed")
    if not consumed:
        assert approval["error"] == "cancelled"
    assert store.list(keys.waits_root()) == store.list(keys.outcomes_root()) == []
    for seen in answer_steps.SEEN:  # any execution that ran saw a saved consume
        assert seen["saved"]["approval"] == "succeeded"
    with pytest.raises(Refusal) as refused:
        engine.resume(RUN)
    assert refused.value.kind == "not_suspended"
    assert engine.cancel(RUN).status == "cancelled"  # idempotent


POINTS = ["acquiring_the_claim", "claiming_the_answer", "during_execution"]


@pytest.mark.parametrize("where", POINTS)
def test_a_cancel_under_the_live_claim_is_busy_and_the_resume_finishes(
    store: MemoryStore, make_engine: MakeEngine, answered: AnsweredRun, where: str
) -> None:
    point = _point(where, answered)
    canceller = make_engine(store, claim_patience=False)  # a live lease: busy at once
    refusals: list[Refusal] = []

    def cancel() -> None:
        before = snapshot(store)
        try:
            canceller.cancel(RUN)
        except Refusal as refusal:
            refusals.append(refusal)
        assert snapshot(store) == before  # a refused cancel wrote nothing

    gated = GatedStore(store)
    gated.at(point["op"], point="after_commit", key=point["key"], do=cancel)
    view = make_engine(gated).resume(RUN)
    gated.assert_all_gates_used()
    assert [r.kind for r in refusals] == ["busy"]
    assert view.status == "succeeded"
    shown = make_engine(store).show(RUN)
    assert [e["receiptId"] for e in applied(shown)] == [answered.receipt]
    assert store.list(keys.waits_root()) == store.list(keys.outcomes_root()) == []
    with pytest.raises(Refusal) as late:
        canceller.cancel(RUN)
    assert late.value.kind == "not_suspended"  # a succeeded run cannot be cancelled


@pytest.mark.parametrize("where", POINTS)
def test_a_cancel_that_wins_first_makes_the_resume_refuse(
    store: MemoryStore, make_engine: MakeEngine, answered: AnsweredRun, where: str
) -> None:
    point = _point(where, answered)
    # At acquisition the claim is free, so the cancel simply takes it first ("before"
    # the resume's create). Later the resume holds it; this patient canceller waits on
    # the fake clock until the paused holder's lease is stale, and takes the run over.
    canceller = make_engine(store)
    after_cancel: list[dict[str, bytes]] = []

    def cancel() -> None:
        assert canceller.cancel(RUN).status == "cancelled"
        after_cancel.append(snapshot(store))

    gated = GatedStore(store)
    at = "before" if where == "acquiring_the_claim" else "after_commit"
    gated.at(point["op"], point=at, key=point["key"], do=cancel)
    with pytest.raises(Refusal) as refused:
        make_engine(gated).resume(RUN)
    gated.assert_all_gates_used()
    assert refused.value.kind == "busy"
    assert snapshot(store) == after_cancel[0]  # the loser wrote nothing after the cancel
    _assert_cancelled_by_the_lifetime(make_engine(store), store, answered.receipt,
                                      consumed=where == "during_execution")


def test_a_cancel_that_finished_first_makes_the_resume_not_suspended(
    store: MemoryStore, make_engine: MakeEngine, answered: AnsweredRun
) -> None:
    engine = make_engine(store)
    engine.cancel(RUN)
    _assert_cancelled_by_the_lifetime(engine, store, answered.receipt, consumed=False)
    assert answer_steps.SEEN == []


def test_a_scheduler_pass_racing_a_cancel_applies_nothing(
    store: MemoryStore, make_engine: MakeEngine, answered: AnsweredRun
) -> None:
    gated = GatedStore(store)
    canceller = make_engine(store)
    gated.at("put_if_absent", point="before", key=f"{keys.claims_prefix(RUN)}*",
             do=lambda: canceller.cancel(RUN))
    assert make_engine(gated, claim_patience=False).serve_once() == []
    gated.assert_all_gates_used()
    _assert_cancelled_by_the_lifetime(make_engine(store), store, answered.receipt, consumed=False)


