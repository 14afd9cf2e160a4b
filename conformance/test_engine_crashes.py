"""SPEC §6.4 on the store under test: a resume, and a signal, killed at each of their writes.

The crash poisons the dying actor's handle (``FaultyStore``), before or after the write
reached the store; a fresh engine on a fresh handle (the restarted process) then finishes
the run. It must apply the signal's answer exactly once and leave no wait records. On a
store slower than 0.2 ms a round trip, only the consume revision is explored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from conformance.engine_support import (
    YES,
    approval_workflow,
    assert_applied_once,
    is_slow,
)
from dw_testing.kit.faults import FaultyStore, SimulatedCrash, StoreCall
from dw_testing.plugin.engine_fixtures import MakeEngine
from reference_engine.records import keys
from reference_engine.refusals import Refusal

pytestmark = [pytest.mark.dw_engine,
              pytest.mark.dw_requires("put_if_absent", "cross_handle")]

OpenHandle = Callable[[], Any]
WRITES = ("put", "put_if_absent", "delete")
POINTS = ("before", "after_commit")
SHORT_LEASE_MS = 3_000  # a restarted process waits out the dead holder's lease in few polls


def _write_indexes(calls: list[StoreCall]) -> list[int]:
    """Positions (0-based) of the writes among ``calls``."""
    return [i for i, call in enumerate(calls) if call.op in WRITES]


def _suspended_and_signalled(make: MakeEngine, store: Any, run_id: str) -> str:
    engine = make(store, lease_ttl_ms=SHORT_LEASE_MS)
    view = engine.run(approval_workflow(), run_id=run_id)
    return engine.signal(view.waits[0].wait_id, YES).receipt.id


def _explore(dw_make_engine: MakeEngine, dw_store: Any, dw_open_handle: OpenHandle,
             act: Callable[[Any, str], object], prepare: Callable[[str], str]) -> int:
    """Crash ``act`` at every write (both points); recover each with a fresh engine."""
    probe = FaultyStore(dw_store)
    prepare("probe")
    act(dw_make_engine(probe, lease_ttl_ms=SHORT_LEASE_MS), "probe")
    indexes = _write_indexes(probe.calls)
    if is_slow(dw_store):
        consume = [i for i in indexes if probe.calls[i].op == "put_if_absent"
                   and keys.parse_revision_key(probe.calls[i].key) is not None]
        indexes = consume[:1]
    for index in indexes:
        for point in POINTS:
            run_id = f"crash-{index}-{point}"
            receipt = prepare(run_id)
            dying = FaultyStore(dw_open_handle())
            dying.crash(None, after_calls=index, point=point)
            with pytest.raises(SimulatedCrash):
                act(dw_make_engine(dying, lease_ttl_ms=SHORT_LEASE_MS), run_id)
            restarted = dw_make_engine(dw_open_handle(), lease_ttl_ms=SHORT_LEASE_MS)
            _finish(restarted, run_id)
            try:
                assert_applied_once(restarted, dw_store, run_id, receipt)
            except AssertionError as failure:
                call = dying.crashed_at
                failure.add_note(f"crashed {point} {call.op}({call.key!r})" if call else "")
                raise
    return len(indexes)


def _finish(engine: Any, run_id: str) -> None:
    for _ in range(3):
        try:
            if engine.resume(run_id).status != "suspended":
                return
        except Refusal as refusal:
            raise AssertionError(f"the restarted process could not finish run {run_id}: "
                                 f"{refusal.kind}: {refusal.message}") from None


def test_a_resume_killed_at_any_write_is_finished_by_a_restart_exactly_once(
    dw_store: Any, dw_open_handle: OpenHandle, dw_make_engine: MakeEngine,
) -> None:
    explored = _explore(dw_make_engine, dw_store, dw_open_handle,
                        lambda engine, run_id: engine.resume(run_id),
                        lambda run_id: _suspended_and_signalled(dw_make_engine, dw_store, run_id))
    assert explored >= 1


def test_a_cancel_killed_at_any_write_keeps_the_signal_that_won(
    dw_store: Any, dw_open_handle: OpenHandle, dw_make_engine: MakeEngine,
) -> None:
    """A signal won, then the cancel dies; a restarted cancel ends the run and the
    receipt is kept in the run record."""
    receipts: dict[str, str] = {}

    def prepare(run_id: str) -> str:
        receipts[run_id] = _suspended_and_signalled(dw_make_engine, dw_store, run_id)
        return receipts[run_id]

    def cancel(engine: Any, run_id: str) -> object:
        return engine.cancel(run_id)

    probe = FaultyStore(dw_store)
    prepare("probe")
    cancel(dw_make_engine(probe, lease_ttl_ms=SHORT_LEASE_MS), "probe")
    indexes = _write_indexes(probe.calls)
    if is_slow(dw_store):
        indexes = indexes[:2]
    for index in indexes:
        for point in POINTS:
            run_id = f"cancel-{index}-{point}"
            receipt = prepare(run_id)
            dying = FaultyStore(dw_open_handle())
            dying.crash(None, after_calls=index, point=point)
            with pytest.raises(SimulatedCrash):
                cancel(dw_make_engine(dying, lease_ttl_ms=SHORT_LEASE_MS), run_id)
            restarted = dw_make_engine(dw_open_handle(), lease_ttl_ms=SHORT_LEASE_MS)
            assert restarted.cancel(run_id).status == "cancelled"
            shown = restarted.show(run_id)
            output = shown["steps"]["approval"]["output"] or {}
            assert (output.get("signal") or {}).get("id") == receipt, (
                f"the signal that won was lost when the cancel died {point} call {index}")
            wait_id = shown["steps"]["approval"]["wait"]["id"]
            assert dw_store.get(keys.wait_key(wait_id)) is None
            assert dw_store.get(keys.outcome_key(wait_id)) is None
