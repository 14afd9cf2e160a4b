"""The six orderings of signal, timeout, cancel, owner saves and resume, on the
store under test.

Each interleaving is scripted: ``GatedStore`` parks or hooks one actor's store call, the
other actors run on their own handles (``dw_open_handle``), and ``FakeClock`` moves
deadlines and lease ages. Across processes, whole CLI calls run one after another with
``DW_CLOCK``. Nothing sleeps. A store whose records do not reach every handle at once, or
whose create lets two settlers win, makes the engine lose or duplicate an outcome here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from conformance.engine_child import PREFIX_ENV, URI_ENV
from conformance.engine_support import (
    OUTCOMES,
    REVISIONS,
    WAITS,
    YES,
    answers_applied,
    approval_workflow,
    assert_applied_once,
    outcome_kind,
    parked_at_create,
    receipt_in_run,
    wait_records,
)
from dw_testing.kit.child_env import child_environment
from dw_testing.kit.clock import FakeClock
from dw_testing.kit.faults import FaultyStore, SimulatedCrash
from dw_testing.kit.gates import Gate, GatedStore, Spawned
from dw_testing.kit.procs import DwChildTarget
from dw_testing.kit.spec import StoreFactory
from dw_testing.plugin.engine_fixtures import MakeEngine
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.records.run_store import revision_numbers
from reference_engine.refusals import Refusal

pytestmark = [pytest.mark.dw_engine, pytest.mark.dw_requires("put_if_absent")]


def _refused(call: Callable[[], object]) -> str:
    with pytest.raises(Refusal) as refused:
        call()
    return refused.value.kind


def _signal_parked(make: MakeEngine, handle: Any, wait_id: str, *,
                   point: str) -> tuple[Gate, Spawned[Any]]:
    """A signal of ``wait_id`` on ``handle``, parked at ``point`` of its outcome's create."""
    return parked_at_create(handle, point, OUTCOMES,
                            lambda gated: make(gated).signal(wait_id, YES), name="signal")


# --- 1. a signal during the drain of a level -----------------------------------------------


@pytest.mark.dw_clause("C-HANDLE-1", "C-ENGINE-2")
@pytest.mark.dw_requires("cross_handle")
def test_a_signal_during_the_drain_survives_the_owners_later_saves(
    dw_store: Any, dw_open_handle: StoreFactory, dw_make_engine: MakeEngine,
) -> None:
    """The wait step is saved waiting; its sibling job is still running when the signal
    lands; the owner then saves the sibling's end and the suspension on top."""
    run_id = "drain"
    opened = threading.Event()
    signer = dw_make_engine(dw_open_handle())
    delivered: list[Any] = []
    revision_at_signal: list[int] = []

    def progress(message: str) -> None:
        if "approval: waiting for a signal" in message:
            opened.set()

    def sibling_sleep(_seconds: float) -> None:
        assert opened.wait(30), "the wait step was never saved waiting_signal"
        [wait_key] = dw_store.list(keys.waits_root())
        delivered.append(signer.signal(keys.wait_id_from_key(wait_key) or "", YES))
        revision_at_signal.append(revision_numbers(dw_store, run_id)[-1])

    owner_handle = GatedStore(dw_store)
    owner = dw_make_engine(owner_handle, progress=progress, sleeper=sibling_sleep)
    view = owner.run(approval_workflow(siblings=[{"name": "soak", "sleep": 1}]), run_id=run_id)

    assert view.status == "suspended"
    saves_after = [c for c in owner_handle.calls if c.op == "put_if_absent"
                   and c.point == "after_commit" and c.key.startswith(f"runs/{run_id}/rev/")
                   and int(c.key.rsplit("/", 1)[1]) > revision_at_signal[0]]
    assert saves_after, "the owner saved nothing after the signal, so the drain was not tested"
    assert outcome_kind(dw_store, view.waits[0].wait_id) == "accepted"
    assert owner.resume(run_id).status == "succeeded"
    assert_applied_once(owner, dw_store, run_id, delivered[0].receipt.id)


# --- 2. a signal against a timeout ---------------------------------------------------------

DEADLINE_SECONDS = 60


@dataclass(frozen=True)
class _DeadlineRace:
    """A run whose wait times out, and a signal of it parked on another handle."""

    engine: Engine
    run_id: str
    wait_id: str
    gate: Gate
    signal: Spawned[Any]


def _signal_parked_past_the_deadline(make: MakeEngine, store: Any, open_handle: StoreFactory,
                                     clock: FakeClock, *, point: str) -> _DeadlineRace:
    """Suspend a run, park a signal of its wait at ``point`` of the outcome's create, then
    move the clock past the wait's deadline."""
    engine = make(store)
    view = engine.run(approval_workflow(timeout=DEADLINE_SECONDS))
    wait_id = view.waits[0].wait_id
    gate, signal = _signal_parked(make, open_handle(), wait_id, point=point)
    clock.advance(2 * DEADLINE_SECONDS)
    return _DeadlineRace(engine, view.run_id, wait_id, gate, signal)


@pytest.mark.dw_clause("C-HANDLE-1", "C-ENGINE-2")
@pytest.mark.dw_requires("cross_handle")
def test_a_signal_created_before_the_deadline_beats_a_later_look(
    dw_store: Any, dw_open_handle: StoreFactory, dw_clock: FakeClock, dw_make_engine: MakeEngine,
) -> None:
    race = _signal_parked_past_the_deadline(dw_make_engine, dw_store, dw_open_handle, dw_clock,
                                            point="after_commit")  # its answer is in flight
    assert [w.wait_id for w in race.engine.open_waits() if w.expired] == []
    race.gate.release()
    delivery = race.signal.result()
    assert outcome_kind(dw_store, race.wait_id) == "accepted"
    assert race.engine.resume(race.run_id).status == "succeeded"
    assert_applied_once(race.engine, dw_store, race.run_id, delivery.receipt.id)


@pytest.mark.dw_clause("C-CREATE-1", "C-ENGINE-2")
@pytest.mark.dw_requires("cross_handle")
def test_a_timeout_settled_first_refuses_a_parked_signal(
    dw_store: Any, dw_open_handle: StoreFactory, dw_clock: FakeClock, dw_make_engine: MakeEngine,
) -> None:
    race = _signal_parked_past_the_deadline(dw_make_engine, dw_store, dw_open_handle, dw_clock,
                                            point="before")  # it found the wait open
    [overdue] = race.engine.open_waits()
    assert overdue.expired and overdue.wait_id == race.wait_id
    race.gate.release()
    assert _refused(race.signal.result) == "expired"
    assert outcome_kind(dw_store, race.wait_id) == "timed_out"
    race.engine.resume(race.run_id)
    shown = race.engine.show(race.run_id)
    assert shown["steps"]["approval"]["error"] == "wait_timeout"
    assert shown["steps"]["notify"]["status"] == "succeeded"
    assert answers_applied(shown) == [] and wait_records(dw_store) == []


# --- 3. a signal against a cancel ----------------------------------------------------------


# Where the cancel runs, inside the signal's own store calls (op, point, key, nth):
CANCEL_WINDOWS = {
    # nothing created yet: the signal finds the run ended and has nothing to win
    "before-the-create": ("put_if_absent", "before", OUTCOMES, 1),
    # the create committed; the whole cancel runs before the signal sees its answer
    "between-create-and-answer": ("put_if_absent", "after_commit", OUTCOMES, 1),
    # the signal won and read its outcome back; the cancel lands before the winner
    # re-reads the registration, so the winner retracts (its outcome is already gone)
    "between-win-and-re-read": ("get", "before", WAITS, 2),
}


@pytest.mark.dw_clause("C-CREATE-2", "C-ENGINE-2")
@pytest.mark.dw_requires("cross_handle")
@pytest.mark.parametrize("window", list(CANCEL_WINDOWS))
def test_a_cancel_inside_a_signal_closes_the_wait(
    dw_store: Any, dw_open_handle: StoreFactory, dw_make_engine: MakeEngine, window: str,
) -> None:
    op, point, key, nth = CANCEL_WINDOWS[window]
    engine = dw_make_engine(dw_store)
    view = engine.run(approval_workflow())
    gated = GatedStore(dw_open_handle())
    hook = gated.at(op, point=point, key=key, nth=nth, do=lambda: engine.cancel(view.run_id))
    assert _refused(lambda: dw_make_engine(gated).signal(view.waits[0].wait_id, YES)) == "closed"
    assert hook.result() is not None, "the cancel must have run inside the signal"
    shown = engine.show(view.run_id)
    assert shown["status"] == "cancelled"
    assert shown["steps"]["approval"]["error"] == "cancelled"
    assert wait_records(dw_store) == []
    if window == "before-the-create":
        assert receipt_in_run(shown) is None


@pytest.mark.dw_clause("C-CREATE-1", "C-ENGINE-2")
def test_a_signal_that_won_before_a_cancel_keeps_its_receipt(
    dw_store: Any, dw_make_engine: MakeEngine,
) -> None:
    engine = dw_make_engine(dw_store)
    view = engine.run(approval_workflow())
    delivery = engine.signal(view.waits[0].wait_id, YES)
    assert engine.cancel(view.run_id).status == "cancelled"
    shown = engine.show(view.run_id)
    assert receipt_in_run(shown) == delivery.receipt.id
    assert shown["steps"]["approval"]["error"] == "cancelled"
    assert wait_records(dw_store) == []
    assert _refused(lambda: engine.signal(view.waits[0].wait_id, YES)) == "closed"


# --- 4. a signal from a second repository context ------------------------------------------


@pytest.mark.dw_clause("C-HANDLE-1", "C-ENGINE-2")
@pytest.mark.dw_requires("cross_handle")
def test_a_signal_from_another_handle_is_seen_and_applied(
    dw_store: Any, dw_open_handle: StoreFactory, dw_make_engine: MakeEngine,
) -> None:
    owner = dw_make_engine(dw_store)
    view = owner.run(approval_workflow())
    wait_id = view.waits[0].wait_id
    gate, signal = _signal_parked(dw_make_engine, dw_open_handle(), wait_id, point="before")
    assert [w.wait_id for w in owner.open_waits()] == [wait_id]  # still open here
    assert _refused(lambda: owner.resume(view.run_id)) == "open_wait"
    gate.release()
    delivery = signal.result()
    assert delivery.awaiting_resume
    assert owner.open_waits() == []  # the other handle's outcome is visible at once
    assert owner.resume(view.run_id).status == "succeeded"
    assert_applied_once(owner, dw_store, view.run_id, delivery.receipt.id)


CHILD_TIMEOUT_SECONDS = 60
Cli = Callable[..., tuple[int, Any]]


@pytest.fixture
def cli(dw_child_target: DwChildTarget, dw_clock: FakeClock) -> Cli:
    """``cli(*args)``: one ``python -m reference_engine ... --json`` call on the test's
    corner of the store, at the test's clock; its exit code and its JSON answer."""

    def call(*args: str) -> tuple[int, Any]:
        env = child_environment({**dw_clock.env, URI_ENV: dw_child_target.uri,
                                 PREFIX_ENV: dw_child_target.prefix})
        env.pop("DW_STORE", None)
        done = subprocess.run(
            [sys.executable, "-m", "reference_engine", *args, "--json",
             "--store", "conformance.engine_child:store_from_env"],
            capture_output=True, text=True, env=env, timeout=CHILD_TIMEOUT_SECONDS, check=False)
        assert done.returncode in (0, 1, 3), f"dw {args[0]} crashed:\n{done.stderr[-2000:]}"
        return done.returncode, json.loads(done.stdout)

    return call


@pytest.mark.dw_clause("C-CHILD-1", "C-ENGINE-2")
@pytest.mark.dw_requires("cross_process")
def test_sequenced_cli_processes_signal_and_resume_a_run_on_the_store(
    dw_store: Any, cli: Cli, dw_make_engine: MakeEngine,
) -> None:
    """A run suspended here is signalled by one process and resumed by another."""
    engine = dw_make_engine(dw_store)
    view = engine.run(approval_workflow(timeout=600))
    wait_id = view.waits[0].wait_id
    code, delivery = cli("signal", wait_id, "--payload", YES)
    assert code == 0, delivery
    assert delivery["runId"] == view.run_id and delivery["awaitingResume"]
    assert engine.open_waits() == []
    code, resumed = cli("resume", view.run_id)
    assert (code, resumed["status"]) == (0, "succeeded"), resumed
    assert_applied_once(engine, dw_store, view.run_id, delivery["receipt"]["id"])


@pytest.mark.dw_clause("C-CHILD-1", "C-ENGINE-2")
@pytest.mark.dw_requires("cross_process")
def test_a_cli_process_sees_the_deadline_this_process_let_pass(
    dw_store: Any, cli: Cli, dw_clock: FakeClock, dw_make_engine: MakeEngine,
) -> None:
    engine = dw_make_engine(dw_store)
    view = engine.run(approval_workflow(timeout=60))
    dw_clock.advance(61)  # DW_CLOCK carries it to the child
    code, refusal = cli("signal", view.waits[0].wait_id, "--payload", YES)
    assert code == 1 and refusal["error"]["refusal"] == "expired", refusal
    assert outcome_kind(dw_store, view.waits[0].wait_id) == "timed_out"  # the lazy timeout
    assert _refused(lambda: engine.signal(view.waits[0].wait_id, YES)) == "expired"


# --- 5. a resume crash before and after the consume revision -------------------------------


def _suspended_and_signalled(engine: Any) -> tuple[str, str]:
    view = engine.run(approval_workflow(), run_id="consume")
    return view.run_id, engine.signal(view.waits[0].wait_id, YES).receipt.id


@pytest.mark.dw_clause("C-LOST-1", "C-ENGINE-2")
@pytest.mark.parametrize("point", ["before", "after_commit"])
@pytest.mark.dw_requires("cross_handle")
def test_a_resume_crashing_at_its_consume_loses_and_duplicates_nothing(
    point: str, dw_store: Any, dw_open_handle: StoreFactory, dw_make_engine: MakeEngine,
) -> None:
    """Crash at the consume's create: before it (the outcome stays for the next resume)
    or after it committed (the next resume replays from the run record)."""
    run_id, receipt = _suspended_and_signalled(dw_make_engine(dw_store))
    wait_id = keys.wait_id_from_key(dw_store.list(keys.waits_root())[0]) or ""
    crashing = FaultyStore(dw_open_handle())
    crashing.crash("put_if_absent", key=REVISIONS, point=point)
    with pytest.raises(SimulatedCrash):
        dw_make_engine(crashing).resume(run_id)
    shown = dw_make_engine(dw_store).show(run_id)
    if point == "before":
        assert answers_applied(shown) == []
        assert outcome_kind(dw_store, wait_id) == "accepted"
    else:
        assert len(answers_applied(shown)) == 1  # the consume landed whole
    restarted = dw_make_engine(dw_open_handle())  # a new process: waits out the dead claim
    assert restarted.resume(run_id).status == "succeeded"
    assert_applied_once(restarted, dw_store, run_id, receipt)


# --- 6. competing schedulers and a manual resume -------------------------------------------


@pytest.mark.dw_clause("C-CREATE-2", "C-ENGINE-2")
@pytest.mark.dw_requires("cross_handle")
def test_competing_schedulers_and_a_manual_resume_apply_the_answer_once(
    dw_store: Any, dw_open_handle: StoreFactory, dw_make_engine: MakeEngine,
) -> None:
    run_id, receipt = _suspended_and_signalled(dw_make_engine(dw_store))
    gate, serving = parked_at_create(dw_open_handle(), "before", REVISIONS,
                                     lambda gated: dw_make_engine(gated).serve_once(),
                                     name="scheduler-1")  # it holds the claim, about to consume
    assert dw_make_engine(dw_open_handle()).serve_once() == []  # busy: skipped
    manual = dw_make_engine(dw_open_handle(), claim_patience=False)
    assert _refused(lambda: manual.resume(run_id)) == "busy"
    gate.release()
    assert serving.result() == [run_id]
    assert dw_make_engine(dw_open_handle()).serve_once() == []  # nothing left to do
    assert_applied_once(dw_make_engine(dw_store), dw_store, run_id, receipt)


@pytest.mark.dw_clause("C-ENGINE-2")
@pytest.mark.dw_requires("cross_handle")
def test_a_resume_paused_past_its_lease_is_fenced_off_by_the_next_holder(
    dw_store: Any, dw_open_handle: StoreFactory, dw_make_engine: MakeEngine,
) -> None:
    """The first resume stalls before its consume; the lease goes stale; a second resume
    takes over and finishes; the first wakes and must stop with ``busy``, writing nothing."""
    run_id, receipt = _suspended_and_signalled(dw_make_engine(dw_store))
    gate, first = parked_at_create(dw_open_handle(), "before", REVISIONS,
                                   lambda gated: dw_make_engine(gated).resume(run_id),
                                   name="stalled-resume")
    takeover = dw_make_engine(dw_open_handle())  # patient: ages the lease on the fake clock
    assert takeover.resume(run_id).status == "succeeded"
    revisions = revision_numbers(dw_store, run_id)
    gate.release()
    assert _refused(first.result) == "busy"
    assert revision_numbers(dw_store, run_id) == revisions, "the fenced-off resume wrote on"
    assert_applied_once(takeover, dw_store, run_id, receipt)
