"""The wait lifecycle leans on every promise of the store contract (docs/contract.md); here each
promise shows up as the engine-level harm its breach causes.

- racing signals from threads, handles and processes: one winner, every loser told
  ``already_settled`` with the winner's receipt, and the winner's answer applied;
- a second signal after the winner is refused, never told it won too;
- a deleted run's id can start a new run; run ids that differ only by case stay apart;
- a wait with a large schema suspends and resumes (records far over 64 KiB);
- a released claim stays released after the store is reopened;
- a signal writes its outcome and nothing else (docs/explanation/engine.md).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from conformance.engine_support import (
    NO,
    SCHEMA,
    YES,
    answers_applied,
    approval_workflow,
    assert_applied_once,
    outcome_kind,
    race_signals_in_processes,
    receipt_in_run,
    wait_records,
)
from dw_testing.kit.clock import FakeClock
from dw_testing.kit.gates import GatedStore
from dw_testing.kit.procs import DwChildTarget
from dw_testing.kit.spec import StoreFactory
from dw_testing.kit.together import run_together
from dw_testing.plugin.engine_fixtures import MakeEngine
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.refusals import Refusal
from reference_engine.stores.contract import close_store
from reference_engine.workflows.loader import parse_workflow
from reference_engine.workflows.model import Workflow

pytestmark = [pytest.mark.dw_engine, pytest.mark.dw_requires("put_if_absent")]

WAITS_PER_RUN = 6
THREADS = 8
HANDLES = 6
PROCESSES = 4
# Per racer, per wait: ("won", receipt) or ("refused", refusal kind).
Answers = Sequence[Sequence[Sequence[str]]]


def _many_waits(count: int = WAITS_PER_RUN) -> Workflow:
    """One job whose step waits once per item, then a job that runs after all of them."""
    return parse_workflow({"name": "many", "jobs": {
        "approve": {"steps": [{"name": "approval", "for_each": list(range(count)),
                               "wait_for_signal": {"timeout": 3600, "schema": SCHEMA}}]},
        "after": {"depends_on": ["approve"], "steps": [{"name": "done", "log": "done"}]},
    }})


def _signal_each(engine: Engine, wait_ids: list[str]) -> list[tuple[str, str]]:
    answers = []
    for wait_id in wait_ids:
        try:
            answers.append(("won", engine.signal(wait_id, YES).receipt.id))
        except Refusal as refusal:
            answers.append(("refused", refusal.kind))
    return answers


def _check_races(engine: Engine, store: Any, run_id: str, wait_ids: list[str],
                 answers: Answers) -> None:
    """Per wait: one racer won, the others were told already_settled, and the run applies
    exactly the winner's receipt."""
    winners: dict[str, str] = {}
    for index, wait_id in enumerate(wait_ids):
        told = [tuple(racer[index]) for racer in answers]
        won = [receipt for verdict, receipt in told if verdict == "won"]
        refusals = sorted(kind for verdict, kind in told if verdict == "refused")
        assert len(won) == 1, (
            f"wait {index}: {len(won)} of {len(told)} racing signals were told they won "
            f"(refusals: {refusals}); exactly one must be")
        assert set(refusals) <= {"already_settled"}, (
            f"wait {index}: losers were refused {refusals}; a loser must be told "
            "already_settled, since the winner's outcome exists")
        winners[wait_id] = won[0]
    assert engine.resume(run_id).status == "succeeded"
    shown = engine.show(run_id)
    for index, wait_id in enumerate(wait_ids):
        assert receipt_in_run(shown, f"approval[{index}]") == winners[wait_id], (
            f"wait {index}: the run applied another receipt than the one told it won")
    assert len(answers_applied(shown)) == len(wait_ids)
    assert wait_records(store) == []


def _suspended_many(engine: Engine) -> tuple[str, list[str]]:
    view = engine.run(_many_waits())
    assert view.status == "suspended"
    return view.run_id, [w.wait_id for w in sorted(view.waits, key=lambda w: w.step)]


def _race(engine: Engine, store: Any, signal_all: Callable[[list[str]], Answers]) -> None:
    """Suspend a run of many waits; ``signal_all(wait_ids)`` races its signallers over them
    and returns each one's answers; then check the races."""
    run_id, wait_ids = _suspended_many(engine)
    _check_races(engine, store, run_id, wait_ids, signal_all(wait_ids))


def _on_threads(racers: list[Engine]) -> Callable[[list[str]], Answers]:
    """Each racer signals every wait in turn, all racers at once, each on its own thread."""
    return lambda wait_ids: run_together(
        [functools.partial(_signal_each, racer, wait_ids) for racer in racers])


@pytest.mark.dw_clause("C-CREATE-2", "C-HANDLE-2", "C-ENGINE-2")
def test_signals_racing_from_threads_have_one_winner_per_wait(
    dw_store: Any, dw_make_engine: MakeEngine,
) -> None:
    racers = [dw_make_engine(dw_store) for _ in range(THREADS)]
    _race(dw_make_engine(dw_store), dw_store, _on_threads(racers))


@pytest.mark.dw_clause("C-CREATE-2", "C-HANDLE-1", "C-ENGINE-2")
@pytest.mark.dw_requires("cross_handle")
def test_signals_racing_from_handles_have_one_winner_per_wait(
    dw_store: Any, dw_open_handle: StoreFactory, dw_make_engine: MakeEngine,
) -> None:
    racers = [dw_make_engine(dw_open_handle()) for _ in range(HANDLES)]
    _race(dw_make_engine(dw_store), dw_store, _on_threads(racers))


@pytest.mark.dw_clause("C-CREATE-2", "C-CHILD-1", "C-ENGINE-2")
@pytest.mark.dw_requires("cross_process")
def test_signals_racing_from_processes_have_one_winner_per_wait(
    dw_store: Any, dw_child_target: DwChildTarget, dw_clock: FakeClock,
    dw_make_engine: MakeEngine,
) -> None:
    _race(dw_make_engine(dw_store), dw_store, lambda wait_ids: race_signals_in_processes(
        dw_child_target, wait_ids, racers=PROCESSES, now=dw_clock.now(), payload=YES))


@pytest.mark.dw_clause("C-ENGINE-2")
def test_a_second_signal_is_refused_with_the_first_receipt(
    dw_store: Any, dw_make_engine: MakeEngine,
) -> None:
    engine = dw_make_engine(dw_store)
    view = engine.run(approval_workflow())
    wait_id = view.waits[0].wait_id
    first = engine.signal(wait_id, YES)
    stored = dw_store.get(keys.outcome_key(wait_id))
    with pytest.raises(Refusal) as second:
        dw_make_engine(dw_store).signal(wait_id, NO)
    assert second.value.kind == "already_settled"
    assert second.value.details.get("receiptId") == first.receipt.id
    assert dw_store.get(keys.outcome_key(wait_id)) == stored, "the outcome changed"
    assert engine.resume(view.run_id).status == "succeeded"
    assert_applied_once(engine, dw_store, view.run_id, first.receipt.id)


@pytest.mark.dw_clause("C-CREATE-5", "C-ENGINE-2")
def test_a_deleted_runs_id_starts_a_new_run_with_new_waits(
    dw_store: Any, dw_make_engine: MakeEngine,
) -> None:
    engine = dw_make_engine(dw_store)
    old = engine.run(approval_workflow(), run_id="reused")
    engine.signal(old.waits[0].wait_id, YES)
    engine.delete("reused")
    new = engine.run(approval_workflow(), run_id="reused")
    assert new.status == "suspended"
    assert new.waits[0].wait_id != old.waits[0].wait_id
    with pytest.raises(Refusal) as stale:
        engine.signal(old.waits[0].wait_id, YES)
    assert stale.value.kind in ("unknown", "closed")
    delivery = engine.signal(new.waits[0].wait_id, YES)
    assert engine.resume("reused").status == "succeeded"
    assert_applied_once(engine, dw_store, "reused", delivery.receipt.id)


@pytest.mark.dw_clause("C-KEY-2", "C-ENGINE-2")
def test_run_ids_that_differ_only_by_case_are_two_runs(
    dw_store: Any, dw_make_engine: MakeEngine,
) -> None:
    engine = dw_make_engine(dw_store)
    upper = engine.run(approval_workflow(), run_id="Release-A")
    lower = engine.run(approval_workflow(), run_id="release-a")
    assert upper.status == lower.status == "suspended"
    yes = engine.signal(upper.waits[0].wait_id, YES)
    no = engine.signal(lower.waits[0].wait_id, NO)
    assert engine.resume("Release-A").status == engine.resume("release-a").status
    assert receipt_in_run(engine.show("Release-A")) == yes.receipt.id
    assert receipt_in_run(engine.show("release-a")) == no.receipt.id
    assert engine.show("release-a")["jobs"]["ship"] == "skipped"


@pytest.mark.dw_clause("C-VAL-1", "C-ENGINE-2")
@pytest.mark.dw_requires("large_values")
def test_a_wait_with_a_large_schema_suspends_and_resumes(
    dw_store: Any, dw_make_engine: MakeEngine,
) -> None:
    """Its registration holds ~120 KiB of schema, and every revision holds it twice."""
    tickets = [f"T-{i:06d}" for i in range(12_000)]
    schema = {"type": "object", "required": ["approved", "ticket"],
              "properties": {"approved": {"type": "boolean"}, "ticket": {"enum": tickets}}}
    workflow = parse_workflow({"name": "large", "jobs": {
        "approve": {"steps": [{"name": "approval",
                               "wait_for_signal": {"timeout": 3600, "schema": schema}}]},
        "ship": {"depends_on": ["approve"], "steps": [{"name": "deploy", "log": "go"}]},
    }})
    engine = dw_make_engine(dw_store)
    view = engine.run(workflow)
    assert view.status == "suspended"
    delivery = engine.signal(view.waits[0].wait_id, '{"approved": true, "ticket": "T-011999"}')
    assert engine.resume(view.run_id).status == "succeeded"
    assert_applied_once(engine, dw_store, view.run_id, delivery.receipt.id)


@pytest.mark.dw_clause("C-HANDLE-3", "C-ENGINE-2")
@pytest.mark.dw_requires("durable_reopen")
def test_a_run_released_before_the_store_was_reopened_resumes_at_once(
    dw_open_handle: StoreFactory, dw_make_engine: MakeEngine,
) -> None:
    """The suspended run released its claim; after a reopen nobody may still seem to hold it."""
    first = dw_open_handle()
    view = dw_make_engine(first).run(approval_workflow(), run_id="reopened")
    close_store(first)
    second = dw_open_handle()
    engine = dw_make_engine(second, claim_patience=False)
    delivery = engine.signal(view.waits[0].wait_id, YES)
    assert engine.resume("reopened").status == "succeeded"
    assert_applied_once(engine, second, "reopened", delivery.receipt.id)


@pytest.mark.dw_clause("C-ENGINE-2")
def test_a_signal_writes_its_outcome_and_nothing_else(
    dw_store: Any, dw_make_engine: MakeEngine,
) -> None:
    """Delivery takes no claim and writes no revision (docs/explanation/engine.md): the run changes
    only at
    the next resume, under the claim. Its one other write is the index hint that tells
    the scheduler the run may be ready."""
    view = dw_make_engine(dw_store).run(approval_workflow())
    wait_id = view.waits[0].wait_id
    watched = GatedStore(dw_store)
    dw_make_engine(watched).signal(wait_id, YES)
    written = sorted({c.key for c in watched.calls if c.point == "before"
                      and c.op in ("put", "put_if_absent", "delete")})
    allowed = sorted([keys.outcome_key(wait_id), keys.ready_key(view.run_id, wait_id)])
    assert written == allowed, (
        f"a signal wrote {written}; it may write only its outcome and the scheduler's "
        "ready hint")
    assert outcome_kind(dw_store, wait_id) == "accepted"
