"""C-LOST-1, C-CREATE-6 at the engine level: ambiguous create answers, injected with
``FaultyStore`` around the store under test.

The engine never decides a race from ``put_if_absent``'s boolean: it reads the record back
and compares identities. So a lost reply, a ``False`` told to the real winner, or a 409
"conflict in flight" must never make it lose, duplicate or invent an outcome.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from conformance.engine_support import (
    OUTCOMES,
    REVISIONS,
    WAITS,
    YES,
    approval_workflow,
    assert_applied_once,
    outcome_kind,
)
from dw_testing.kit.faults import FaultyStore
from dw_testing.plugin.engine_fixtures import MakeEngine
from dw_testing.plugin.heal import ended_early
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.records.views import Delivery, RunView
from reference_engine.refusals import Refusal

pytestmark = [pytest.mark.dw_engine, pytest.mark.dw_requires("put_if_absent")]

CLAIMS = f"{keys.claims_prefix('*')}*"
FAMILIES = {"registration": WAITS, "outcome": OUTCOMES, "revision": REVISIONS, "claim": CLAIMS}


@pytest.fixture
def faulty(dw_store: Any, request: pytest.FixtureRequest) -> Iterator[FaultyStore]:
    """A FaultyStore around the store under test; every queued fault must be hit, unless a
    store error under --dw-network ended the test early (the heal phase judged it)."""
    wrapped = FaultyStore(dw_store)
    yield wrapped
    if not ended_early(request.node):
        wrapped.assert_all_hit()


def _lifecycle(engine: Any, store: Any) -> None:
    """Run, signal, resume: the signal must be accepted and applied exactly once."""
    view = engine.run(approval_workflow(), run_id="ambiguous")
    assert view.status == "suspended"
    delivery = engine.signal(view.waits[0].wait_id, YES)
    assert engine.resume(view.run_id).status == "succeeded"
    assert_applied_once(engine, store, view.run_id, delivery.receipt.id)


def _signal_meeting(fault: str, faulty: FaultyStore,
                    make: MakeEngine) -> tuple[Engine, RunView, Delivery]:
    """Suspend a run, then signal its wait while the outcome's create meets ``fault``."""
    engine = make(faulty)
    view = engine.run(approval_workflow())
    faulty.inject("put_if_absent", fault, key=OUTCOMES)
    return engine, view, engine.signal(view.waits[0].wait_id, YES)


def _assert_stored_as_accepted(store: Any, wait_id: str, receipt: str) -> None:
    """The stored outcome accepts the wait, with the receipt its signal was told."""
    assert outcome_kind(store, wait_id) == "accepted"
    assert receipt.encode() in (store.get(keys.outcome_key(wait_id)) or b""), (
        "the stored outcome holds another receipt than the one the signal was told")


@pytest.mark.dw_clause("C-LOST-1", "C-ENGINE-1")
def test_a_signal_whose_create_reply_was_lost_is_still_accepted(
    faulty: FaultyStore, dw_store: Any, dw_make_engine: MakeEngine,
) -> None:
    """The outcome's create commits but its reply is lost; the engine must find its own
    receipt stored and report the signal accepted, not refuse or duplicate it."""
    engine, view, delivery = _signal_meeting("drop-response-after-commit", faulty, dw_make_engine)
    assert delivery.wait_id == view.waits[0].wait_id
    _assert_stored_as_accepted(dw_store, view.waits[0].wait_id, delivery.receipt.id)
    assert engine.resume(view.run_id).status == "succeeded"
    assert_applied_once(engine, dw_store, view.run_id, delivery.receipt.id)


@pytest.mark.dw_clause("C-LOST-1", "C-ENGINE-1")
def test_a_signal_told_false_although_its_create_won_is_still_accepted(
    faulty: FaultyStore, dw_store: Any, dw_make_engine: MakeEngine,
) -> None:
    """What a retried create after a lost reply answers on S3 or GCS: ``False`` to the
    writer that won. The identity read-back must still make it the winner."""
    engine, view, delivery = _signal_meeting("false-to-winner", faulty, dw_make_engine)
    with pytest.raises(Refusal) as second:
        engine.signal(view.waits[0].wait_id, YES)
    assert second.value.kind == "already_settled"
    assert second.value.details.get("receiptId") == delivery.receipt.id
    assert engine.resume(view.run_id).status == "succeeded"
    assert_applied_once(engine, dw_store, view.run_id, delivery.receipt.id)


@pytest.mark.parametrize("fault", ["false-to-winner", "drop-response-after-commit",
                                   "conflict-409-once"])
@pytest.mark.dw_clause("C-LOST-1", "C-ENGINE-1")
def test_an_ambiguous_create_of_every_record_loses_and_duplicates_nothing(
    fault: str, faulty: FaultyStore, dw_store: Any, dw_make_engine: MakeEngine,
) -> None:
    """The first create of a registration, an outcome, a revision and a claim each meets
    ``fault``. A 409 means nothing landed: taken for "exists", the engine would report a
    winner that does not exist, or a busy run that nobody holds."""
    for family in sorted(FAMILIES):
        faulty.inject("put_if_absent", fault, key=FAMILIES[family])
    _lifecycle(dw_make_engine(faulty), dw_store)


@pytest.mark.dw_clause("C-CREATE-6", "C-ENGINE-1")
def test_a_conflict_on_a_signal_does_not_refuse_it(
    faulty: FaultyStore, dw_store: Any, dw_make_engine: MakeEngine,
) -> None:
    _, view, delivery = _signal_meeting("conflict-409-once", faulty, dw_make_engine)
    _assert_stored_as_accepted(dw_store, view.waits[0].wait_id, delivery.receipt.id)

