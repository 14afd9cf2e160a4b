"""One bad run never stops the others.

What delivery accepts can be applied: an answer that would push its run's revision past
the record budget is refused ``too_large`` at delivery; ``--submitted-by`` is bounded,
printable and secret-free; a cancel always fits its record. And if a run's resume fails
all the same, the scheduler reports it for that run (a line, a journal event) and backs
it off, and the pass goes on with the others.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from support.answers import YES, MakeEngine, applied, gate_workflow, snapshot

from dw_testing.kit.clock import FakeClock
from dw_testing.kit.faults import FaultyStore
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.records.compact import compacted
from reference_engine.records.decoding import MAX_RUN_RECORD_BYTES
from reference_engine.records.outcome import Receipt
from reference_engine.refusals import Refusal
from reference_engine.serving.backoff import FIRST_PAUSE_S, LONGEST_PAUSE_S, Backoff
from reference_engine.stores.memory import MemoryStore
from reference_engine.waits import budget
from reference_engine.waits.budget import MAX_SUBMITTER_CHARS
from reference_engine.workflows.loader import parse_workflow

WAITS = 40
BIG = 15_000  # an accepted payload size (under the 16 KiB payload limit)
OPEN = {"type": "object"}


def many_waits(n: int = WAITS) -> Any:
    return parse_workflow({"name": "many", "jobs": {
        "collect": {"steps": [{"name": "item", "for_each": list(range(n)),
                               "wait_for_signal": {"timeout": 3600, "schema": OPEN}}]},
        "after": {"depends_on": ["collect"], "steps": [{"name": "done", "log": "done"}]},
    }})


def big_payload(i: int) -> str:
    return json.dumps({"i": i, "blob": "x" * (BIG - 40)})


def _answer_all(engine: Engine, run_id: str) -> tuple[int, list[str]]:
    """Answer every wait with a big payload; return how many were accepted and the kinds
    of the refusals."""
    accepted, refused = 0, []
    for wait in _waits(engine, run_id):
        try:
            engine.answer(run_id, wait, big_payload(accepted))
            accepted += 1
        except Refusal as refusal:
            refused.append(refusal.kind)
    return accepted, refused


def _waits(engine: Engine, run_id: str) -> list[str]:
    return [s["wait"]["id"] for _n, s in sorted(engine.show(run_id)["steps"].items())
            if s.get("wait") and s["status"] == "waiting_signal"]


# --- the budget at delivery ---------------------------------------------------------------

def test_an_answer_the_run_could_not_apply_is_refused_at_delivery(
    engine: Engine, store: MemoryStore
) -> None:
    view = engine.run(many_waits())
    accepted, refused = _answer_all(engine, view.run_id)
    assert 0 < accepted < WAITS and set(refused) == {"too_large"}
    assert len(refused) == WAITS - accepted
    # Every refused wait is still open and takes a small answer; then the run resumes.
    for wait in _waits(engine, view.run_id):
        try:
            engine.answer(view.run_id, wait, "{}")
        except Refusal as refusal:
            assert refusal.kind == "already_settled"
    finished = engine.resume(view.run_id)
    assert finished.status == "succeeded"
    assert len(applied(engine.show(view.run_id))) == WAITS


def test_the_too_large_refusal_changes_nothing_and_quotes_no_payload(
    engine: Engine, store: MemoryStore
) -> None:
    view = engine.run(many_waits())
    _answer_all(engine, view.run_id)
    open_wait = _waits(engine, view.run_id)[-1]
    before = snapshot(store)
    with pytest.raises(Refusal) as refused:
        engine.answer(view.run_id, open_wait, big_payload(99))
    assert refused.value.kind == "too_large"
    assert snapshot(store) == before
    message = refused.value.message
    assert "xxxx" not in message and f"dw answer {view.run_id} {open_wait}" in message


def test_the_budget_holds_at_the_limit_and_refuses_just_past_it(
    engine: Engine, store: MemoryStore, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    view = engine.run(many_waits(2))
    first, second = _waits(engine, view.run_id)
    raw = store.get(keys.revision_key(view.run_id, engine.show(view.run_id)["rev"]))
    assert raw is not None
    payload = big_payload(0)
    # Priced exactly as delivery prices it: a receipt id is a UUID, received now.
    receipt = Receipt(str(uuid.uuid4()), first, clock.now(), "alice").to_json()
    cost = budget.applied_cost(json.loads(payload), receipt)
    room = len(raw) + cost
    monkeypatch.setattr(budget, "APPLY_RESERVE_BYTES", MAX_RUN_RECORD_BYTES - room)
    engine.answer(view.run_id, first, payload, submitted_by="alice")  # exactly at the limit
    # The second answer needs the first's cost again on top: one byte short of it refuses.
    monkeypatch.setattr(budget, "APPLY_RESERVE_BYTES", MAX_RUN_RECORD_BYTES - room - cost + 1)
    with pytest.raises(Refusal) as refused:
        engine.answer(view.run_id, second, payload, submitted_by="alice")
    assert refused.value.kind == "too_large"
    monkeypatch.setattr(budget, "APPLY_RESERVE_BYTES", MAX_RUN_RECORD_BYTES - room - cost)
    engine.answer(view.run_id, second, payload, submitted_by="alice")


# --- the submitter -------------------------------------------------------------------------

@pytest.mark.parametrize("name, problem", [
    ("a" * (MAX_SUBMITTER_CHARS + 1), "over the limit"),
    ("   ", "blank"),
    ("alice\tbob", "non-printable"),
    ("alice\x1b[31m", "non-printable"),
    ("ghp_" + "A1b2" * 9, "secret rule 'github_token'"),
    ("AKIA" + "ABCDEFGHIJKLMNOP", "secret rule 'aws_access_key_id'"),
])
def test_a_bad_submitter_is_refused_and_never_quoted(
    engine: Engine, store: MemoryStore, name: str, problem: str
) -> None:
    view = engine.run(gate_workflow())
    before = snapshot(store)
    for deliver in (lambda: engine.answer(view.run_id, view.waits[0].wait_id, YES,
                                          submitted_by=name),
                    lambda: engine.signal(view.waits[0].wait_id, YES, submitted_by=name)):
        with pytest.raises(Refusal) as refused:
            deliver()
        assert refused.value.kind == "invalid_submitter"
        assert problem in refused.value.message
        assert name.strip() not in refused.value.message or not name.strip()
    assert snapshot(store) == before


def test_a_submitter_at_the_length_limit_is_accepted(engine: Engine) -> None:
    view = engine.run(gate_workflow())
    name = "a" * MAX_SUBMITTER_CHARS
    delivery = engine.answer(view.run_id, view.waits[0].wait_id, YES, submitted_by=name)
    assert delivery.receipt.submitted_by == name


# --- cancel always fits --------------------------------------------------------------------

def test_cancel_ends_a_run_whose_revision_could_not_grow(
    engine: Engine, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As an older engine without the budget would have let it: every big answer accepted.
    monkeypatch.setattr(budget, "APPLY_RESERVE_BYTES", -10 * MAX_RUN_RECORD_BYTES)
    # Seventy payloads: even the cancel's own copy of them would pass the record limit.
    view = engine.run(many_waits(70))
    accepted, refused = _answer_all(engine, view.run_id)
    assert (accepted, refused) == (70, [])
    with pytest.raises(Refusal) as stuck:
        engine.resume(view.run_id)
    assert stuck.value.kind == "too_large"
    assert f"dw cancel {view.run_id}" in stuck.value.message
    assert engine.cancel(view.run_id).status == "cancelled"  # the hint's recovery works
    shown = engine.show(view.run_id)
    assert shown["status"] == "cancelled"
    item = shown["steps"]["item[0]"]["output"]
    assert item["omitted"] > BIG and isinstance(item["signal"]["id"], str)
    assert store.list(keys.waits_root()) == store.list(keys.outcomes_root()) == []


def test_compaction_leaves_a_record_that_fits_alone(engine: Engine) -> None:
    view = engine.run(gate_workflow())
    from reference_engine.records.run_store import newest_revision

    newest = newest_revision(engine.store, view.run_id).decoded
    record = newest.record  # type: ignore[union-attr]
    assert compacted(record) is record


# --- the scheduler isolates a failing run -------------------------------------------------

def _bad_and_good(store: Any, make_engine: MakeEngine) -> tuple[Engine, str, str]:
    owner = make_engine(store)
    bad = owner.run(gate_workflow(), run_id="a-bad").run_id  # sorted first
    good = owner.run(gate_workflow(), run_id="b-good").run_id
    for run_id in (bad, good):
        owner.answer(run_id, owner.show(run_id)["steps"]["approval"]["wait"]["id"], YES)
    return owner, bad, good


def test_a_run_whose_resume_fails_is_reported_and_the_pass_goes_on(
    store: MemoryStore, clock: FakeClock, make_engine: MakeEngine
) -> None:
    owner, bad, good = _bad_and_good(store, make_engine)
    faulty = FaultyStore(store)
    faulty.inject("put_if_absent", "raise-before", key=keys.revisions_prefix(bad) + "*")
    lines: list[str] = []
    scheduler = make_engine(faulty, claim_patience=False, progress=lines.append)
    assert scheduler.serve_once() == [good]
    faulty.assert_all_hit()
    reported = [ln for ln in lines if ln.startswith(f"serve: run {bad} failed")]
    assert reported == [f"serve: run {bad} failed (StoreError); failure 1, next try in "
                        f"{FIRST_PAUSE_S:g}s. See it: dw show {bad}"]
    events = [e for e in owner.show(bad)["journal"] if e["type"] == "serve_failed"]
    assert [(e["error"], e["failures"]) for e in events] == [("StoreError", 1)]
    assert owner.show(bad)["status"] == "suspended"
    # Backed off: the next pass does not try it; once the pause is over, one does.
    lines.clear()
    assert scheduler.serve_once() == [] and lines == []
    clock.advance(FIRST_PAUSE_S)
    assert scheduler.serve_once() == [bad]
    assert len(applied(owner.show(bad))) == 1


def test_a_run_too_large_to_save_is_backed_off_not_retried_every_pass(
    store: MemoryStore, clock: FakeClock, make_engine: MakeEngine,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(budget, "APPLY_RESERVE_BYTES", -10 * MAX_RUN_RECORD_BYTES)
    owner = make_engine(store)
    huge = owner.run(many_waits(), run_id="a-huge").run_id
    _answer_all(owner, huge)
    view = owner.run(gate_workflow(), run_id="b-fine")
    owner.answer(view.run_id, view.waits[0].wait_id, YES)
    lines: list[str] = []
    scheduler = make_engine(store, claim_patience=False, progress=lines.append)
    assert scheduler.serve_once() == [view.run_id]
    assert any(f"run {huge} failed (too_large); failure 1" in ln for ln in lines)
    clock.advance(FIRST_PAUSE_S)
    assert scheduler.serve_once() == []
    assert any(f"run {huge} failed (too_large); failure 2" in ln for ln in lines)
    assert owner.cancel(huge).status == "cancelled"


def test_the_back_off_doubles_up_to_its_ceiling() -> None:
    backoff = Backoff()
    pauses = [backoff.failed("r", 0.0).retry_at for _ in range(12)]
    assert pauses[:3] == [FIRST_PAUSE_S, 2 * FIRST_PAUSE_S, 4 * FIRST_PAUSE_S]
    assert max(pauses) == LONGEST_PAUSE_S
    assert not backoff.due("r", LONGEST_PAUSE_S - 0.001) and backoff.due("r", LONGEST_PAUSE_S)
    for _ in range(2000):  # a long streak never overflows
        backoff.failed("r", 0.0)
    backoff.succeeded("r")
    assert backoff.due("r", 0.0)
