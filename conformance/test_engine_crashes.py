"""Crash points on the store under test: a resume, and a signal, killed at each of their writes.

The crash poisons the dying actor's handle (``FaultyStore``), before or after the write
reached the store; a fresh engine on a fresh handle (the restarted process) then finishes
the run. It must apply the signal's answer exactly once and leave no wait records. On a
store slower than 0.2 ms a round trip, only the consume revision is explored.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conformance.engine_support import (
    YES,
    answers_applied,
    approval_workflow,
    assert_applied_once,
    is_slow,
    receipt_in_run,
)
from dw_testing.kit.clock import FakeClock
from dw_testing.kit.faults import FaultyStore, SimulatedCrash, StoreCall
from dw_testing.kit.spec import StoreFactory
from dw_testing.plugin.engine_fixtures import MakeEngine
from reference_engine.records import keys
from reference_engine.refusals import Refusal

pytestmark = [pytest.mark.dw_engine, pytest.mark.dw_requires("put_if_absent", "cross_handle")]

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


Act = Callable[[Any, str], object]
Recover = Callable[[Any, str, str], None]
SlowPick = Callable[[list[StoreCall], list[int]], list[int]]


def _explore(dw_make_engine: MakeEngine, dw_store: Any, dw_open_handle: StoreFactory, *,
             prefix: str, act: Act, recover: Recover, slow_pick: SlowPick) -> int:
    """Crash ``act(engine, run_id)`` at every write (both points) on a run a signal won;
    then ``recover(engine, run_id, receipt)`` with a fresh engine on a fresh handle (the
    restarted process). On a slow store only the writes ``slow_pick`` keeps are tried."""
    probe = FaultyStore(dw_store)
    _suspended_and_signalled(dw_make_engine, dw_store, "probe")
    act(dw_make_engine(probe, lease_ttl_ms=SHORT_LEASE_MS), "probe")
    indexes = _write_indexes(probe.calls)
    if is_slow(dw_store):
        indexes = slow_pick(probe.calls, indexes)
    for index in indexes:
        for point in POINTS:
            run_id = f"{prefix}-{index}-{point}"
            receipt = _suspended_and_signalled(dw_make_engine, dw_store, run_id)
            dying = FaultyStore(dw_open_handle())
            dying.crash(None, after_calls=index, point=point)
            with pytest.raises(SimulatedCrash):
                act(dw_make_engine(dying, lease_ttl_ms=SHORT_LEASE_MS), run_id)
            restarted = dw_make_engine(dw_open_handle(), lease_ttl_ms=SHORT_LEASE_MS)
            try:
                recover(restarted, run_id, receipt)
            except AssertionError as failure:
                call = dying.crashed_at
                failure.add_note(f"crashed {point} {call.op}({call.key!r})" if call
                                 else f"crashed {point} call {index}")
                raise
    return len(indexes)


def _the_consume(calls: list[StoreCall], indexes: list[int]) -> list[int]:
    """The first create of a revision: the resume's consume."""
    return [i for i in indexes if calls[i].op == "put_if_absent"
            and keys.parse_revision_key(calls[i].key) is not None][:1]


def _the_first_two(_calls: list[StoreCall], indexes: list[int]) -> list[int]:
    """The first two writes only: a slow store cannot afford a crash at every one."""
    return indexes[:2]


def _finish(engine: Any, run_id: str) -> None:
    for _ in range(3):
        try:
            if engine.resume(run_id).status != "suspended":
                return
        except Refusal as refusal:
            raise AssertionError(f"the restarted process could not finish run {run_id}: "
                                 f"{refusal.kind}: {refusal.message}") from None


@pytest.mark.dw_clause("C-LOST-1", "C-ENGINE-2")
def test_a_resume_killed_at_any_write_is_finished_by_a_restart_exactly_once(
    dw_store: Any, dw_open_handle: StoreFactory, dw_make_engine: MakeEngine,
) -> None:
    def finish_exactly_once(restarted: Any, run_id: str, receipt: str) -> None:
        _finish(restarted, run_id)
        assert_applied_once(restarted, dw_store, run_id, receipt)

    explored = _explore(dw_make_engine, dw_store, dw_open_handle, prefix="crash",
                        act=lambda engine, run_id: engine.resume(run_id),
                        recover=finish_exactly_once, slow_pick=_the_consume)
    assert explored >= 1


@pytest.mark.dw_clause("C-LOST-1", "C-ENGINE-2")
def test_a_cancel_killed_at_any_write_keeps_the_signal_that_won(
    dw_store: Any, dw_open_handle: StoreFactory, dw_make_engine: MakeEngine,
) -> None:
    """A signal won, then the cancel dies; a restarted cancel ends the run and the
    receipt is kept in the run record."""

    def cancel_keeping_the_receipt(restarted: Any, run_id: str, receipt: str) -> None:
        assert restarted.cancel(run_id).status == "cancelled"
        shown = restarted.show(run_id)
        assert receipt_in_run(shown) == receipt, (
            "the signal that won was lost when the cancel died")
        wait_id = shown["steps"]["approval"]["wait"]["id"]
        assert dw_store.get(keys.wait_key(wait_id)) is None
        assert dw_store.get(keys.outcome_key(wait_id)) is None

    explored = _explore(dw_make_engine, dw_store, dw_open_handle, prefix="cancel",
                        act=lambda engine, run_id: engine.cancel(run_id),
                        recover=cancel_keeping_the_receipt, slow_pick=_the_first_two)
    assert explored >= 1


# --- what is due is in the index: a fresh process's first pass finds it without a scan ----

def _scans(calls: list[StoreCall]) -> list[str]:
    """The calls of a full scan: a ``list`` of every run."""
    return [f"{c.op} {c.key}" for c in calls if c.op == "list" and c.key == keys.runs_root()]


class FreshProcesses:
    """``dw serve --once`` from cron: each pass a new engine on a new handle, sharing only
    the host's claim looks (as CLI processes do), each pass's calls recorded."""

    def __init__(self, make: MakeEngine, open_handle: StoreFactory, looks: Path) -> None:
        self.make = make
        self.open_handle = open_handle
        self.looks = looks
        self.calls: list[StoreCall] = []

    def serve_once(self) -> list[str]:
        handle = FaultyStore(self.open_handle())
        engine = self.make(handle, claim_patience=False, claim_looks=self.looks,
                           lease_ttl_ms=SHORT_LEASE_MS)
        resumed = engine.serve_once()
        self.calls = list(handle.calls)
        return resumed


@pytest.fixture
def fresh_processes(dw_make_engine: MakeEngine, dw_open_handle: StoreFactory,
                    tmp_path: Path) -> FreshProcesses:
    looks = tmp_path / "looks"
    looks.mkdir(mode=0o700)
    cron = FreshProcesses(dw_make_engine, dw_open_handle, looks)
    cron.serve_once()  # the store's first pass ever: a full scan, then the cursor
    return cron


def _settle_by_signal(engine: Any, wait_id: str) -> object:
    return engine.signal(wait_id, YES)


def _settle_by_looking_late(engine: Any, _wait_id: str) -> object:
    return engine.open_waits()  # a look after the deadline settles timed_out


@pytest.mark.parametrize("settler", [_settle_by_signal, _settle_by_looking_late],
                         ids=["signal", "lazy-timeout"])
@pytest.mark.dw_clause("C-LOST-1", "C-ENGINE-2")
def test_a_settler_killed_after_any_store_call_is_resumed_by_the_next_fresh_pass(
    settler: Callable[[Any, str], object], dw_store: Any, dw_open_handle: StoreFactory,
    dw_make_engine: MakeEngine, dw_clock: FakeClock, fresh_processes: FreshProcesses,
) -> None:
    """Settling dies after each of its store calls in turn. The next ``serve --once`` of a
    fresh process (no full scan) resumes the run if the outcome landed, and an outcome
    that never landed is sent again. Nothing is lost or applied twice."""
    timeout = 60
    clock_step = timeout + 1 if settler is _settle_by_looking_late else 0
    cron = fresh_processes

    def prepare(run_id: str) -> str:
        view = dw_make_engine(dw_store).run(approval_workflow(timeout=timeout), run_id=run_id)
        return view.waits[0].wait_id

    probe_wait = prepare("hint-probe")
    dw_clock.advance(clock_step)
    probe = FaultyStore(dw_store)
    settler(dw_make_engine(probe), probe_wait)
    total = probe.call_count
    assert total >= 3, f"settling made only {total} store calls"
    calls = range(1, total + 1)
    if is_slow(dw_store):  # the hint, the outcome's create and its read-back
        create = next(i for i, c in enumerate(probe.calls) if c.op == "put_if_absent")
        calls = range(max(create - 1, 1), min(create + 2, total) + 1)
    assert "hint-probe" in cron.serve_once()  # out of the way
    for n in calls:
        run_id = f"hint-{n}"
        wait_id = prepare(run_id)
        assert cron.serve_once() == []
        dw_clock.advance(clock_step)
        dying = FaultyStore(dw_open_handle())
        dying.crash_after_call(n)
        with pytest.raises(SimulatedCrash):
            settler(dw_make_engine(dying), wait_id)
        crashed = dying.crashed_at
        where = f"(crashed after call {n}: {crashed.op} {crashed.key!r})" if crashed else ""
        settled = dw_store.get(keys.outcome_key(wait_id)) is not None
        # A passed deadline is in the index too, so a timeout is found whatever landed.
        expected = settled or settler is _settle_by_looking_late
        resumed = cron.serve_once()
        assert (run_id in resumed) == expected, (
            f"the next fresh pass {'missed' if expected else 'found'} run {run_id} "
            f"(outcome {'present' if settled else 'absent'}) {where}")
        assert _scans(cron.calls) == [], f"the fresh pass read every run {where}"
        if run_id not in resumed:
            settler(dw_make_engine(dw_open_handle()), wait_id)  # the sender tries again
            assert run_id in cron.serve_once(), where
        shown = dw_make_engine(dw_store).show(run_id)
        if settler is _settle_by_looking_late:
            assert shown["steps"]["approval"]["error"] == "wait_timeout", where
        else:
            assert shown["status"] == "succeeded", where
            assert len(answers_applied(shown)) == 1, f"applied more than once {where}"
        assert dw_store.list(keys.ready_prefix(run_id)) == [], f"a hint outlived run {run_id}"


@pytest.mark.dw_clause("C-LOST-1", "C-ENGINE-2")
def test_a_pass_killed_at_any_write_is_finished_by_the_next_fresh_passes_exactly_once(
    dw_store: Any, dw_open_handle: StoreFactory, dw_make_engine: MakeEngine,
    dw_clock: FakeClock, fresh_processes: FreshProcesses,
) -> None:
    """``serve --once`` dies at each of its writes (before or after it reached the store):
    the run is left suspended and ready, or ``running`` under a dead owner's claim. The
    next ``serve --once`` passes of fresh processes, with nothing else run in between,
    finish it without a full scan: the first meets the dead owner's lease, a later one,
    once the lease is stale, takes it over."""
    cron = fresh_processes

    def act(engine: Any, _run_id: str) -> object:
        return engine.serve_once()

    def finish_exactly_once(restarted: Any, run_id: str, receipt: str) -> None:
        for _ in range(3):
            cron.serve_once()
            assert _scans(cron.calls) == [], "a fresh pass read every run"
            if restarted.show(run_id)["status"] == "succeeded":
                break
            dw_clock.advance(SHORT_LEASE_MS / 1000 * 2)  # the dead owner's lease goes stale
        assert restarted.show(run_id)["status"] == "succeeded", "the fresh passes left it"
        # A crash inside the end-of-run clean-up leaves wait records of an ended run:
        # garbage, not state. The next resume (or the sweep) removes them.
        restarted.resume(run_id)
        assert_applied_once(restarted, dw_store, run_id, receipt)

    explored = _explore(dw_make_engine, dw_store, dw_open_handle, prefix="pass",
                        act=act, recover=finish_exactly_once, slow_pick=_the_first_two)
    assert explored >= 1


@pytest.mark.dw_clause("C-LOST-1", "C-ENGINE-2")
def test_a_run_killed_at_any_write_is_taken_over_by_the_next_fresh_passes(
    dw_store: Any, dw_open_handle: StoreFactory, dw_make_engine: MakeEngine,
    dw_clock: FakeClock, fresh_processes: FreshProcesses,
) -> None:
    """``dw run`` dies at each of its writes. No hint names the run: it is filed as
    ``running`` before its first revision, so the next ``serve --once`` passes of fresh
    processes take it over once the dead owner's lease is stale, without a full scan,
    and it suspends at its wait; its answer is then applied once."""
    cron = fresh_processes
    probe = FaultyStore(dw_store)
    dw_make_engine(probe, lease_ttl_ms=SHORT_LEASE_MS).run(approval_workflow(),
                                                           run_id="run-probe")
    indexes = _write_indexes(probe.calls)
    if is_slow(dw_store):
        indexes = [i for i in indexes if probe.calls[i].op == "put_if_absent"
                   and keys.parse_revision_key(probe.calls[i].key) is not None][:1]
    for index in indexes:
        for point in POINTS:
            run_id = f"run-{index}-{point}"
            dying = FaultyStore(dw_open_handle())
            dying.crash(None, after_calls=index, point=point)
            with pytest.raises(SimulatedCrash):
                dw_make_engine(dying, lease_ttl_ms=SHORT_LEASE_MS).run(approval_workflow(),
                                                                       run_id=run_id)
            call = dying.crashed_at
            where = f"(crashed {point} {call.op}({call.key!r}))" if call else ""
            restarted = dw_make_engine(dw_open_handle(), lease_ttl_ms=SHORT_LEASE_MS)
            if not restarted.runs(statuses=("running", "suspended")) or all(
                    r["runId"] != run_id for r in restarted.runs()):
                continue  # it died before its first revision: there is no run to take over
            for _ in range(3):
                cron.serve_once()
                assert _scans(cron.calls) == [], f"a fresh pass read every run {where}"
                if restarted.show(run_id)["status"] != "running":
                    break
                dw_clock.advance(SHORT_LEASE_MS / 1000 * 2)  # the dead lease goes stale
            shown = restarted.show(run_id)
            assert shown["status"] == "suspended", f"left {shown['status']} {where}"
            wait_id = shown["steps"]["approval"]["wait"]["id"]
            receipt = restarted.signal(wait_id, YES).receipt.id
            for _ in range(3):  # a lease its owner died holding goes stale between passes
                if run_id in cron.serve_once():
                    break
                dw_clock.advance(SHORT_LEASE_MS / 1000 * 2)
            # (The dead owner's registration of a wait its successor registered again is
            # garbage of an ended run, for the sweep: not asserted here.)
            shown = restarted.show(run_id)
            assert shown["status"] == "succeeded", where
            assert receipt_in_run(shown) == receipt, where
            assert len(answers_applied(shown)) == 1, f"applied more than once {where}"
