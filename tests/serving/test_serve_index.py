"""The scheduler's index: a pass reads what is due, hints stay hints, full scans cover the rest.

Store calls are counted with FaultyStore (it records every call); time moves on FakeClock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from support.engine_flows import MakeEngine

from dw_testing.kit.clock import FakeClock
from dw_testing.kit.faults import FaultyStore
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.records.decoding import Found
from reference_engine.records.hint import READY, decode_hint
from reference_engine.records.run_store import newest_revision
from reference_engine.serving.scheduler import MAX_DUE_MINUTES
from reference_engine.stores.memory import MemoryStore
from reference_engine.workflows.loader import parse_workflow
from reference_engine.workflows.model import Workflow


def gate(timeout: int = 3600) -> Workflow:
    return parse_workflow({"name": "gate", "jobs": {
        "approve": {"steps": [{"name": "approval", "wait_for_signal": {
            "timeout": timeout, "schema": {"type": "object"}}}]},
        "after": {"depends_on": ["approve"], "steps": [{"name": "done", "log": "ok"}]},
    }})


def suspended(engine: Engine, count: int, *, timeout: int = 3600) -> list[tuple[str, str]]:
    """``count`` suspended runs: ``(runId, waitId)`` each."""
    made = []
    for i in range(count):
        view = engine.run(gate(timeout), run_id=f"run-{i:04d}")
        made.append((view.run_id, view.waits[0].wait_id))
    return made


def hints(store: Any) -> list[str]:
    return list(store.list(keys.ready_root()))


def counted(store: MemoryStore, clock: FakeClock, **kwargs: Any) -> tuple[Engine, FaultyStore]:
    """An engine whose every store call is recorded in ``counting.calls``."""
    counting = FaultyStore(store)
    kwargs.setdefault("sleeper", clock.advance)
    return Engine(counting, clock, **kwargs), counting


def measure(counting: FaultyStore, action: Callable[[], object]) -> list[str]:
    """The store calls ``action`` makes, as ``"op key"`` lines."""
    counting.calls.clear()
    action()
    return [f"{c.op} {c.key}" for c in counting.calls]


# --- hints are written, and removed -----------------------------------------------------

def test_a_signal_leaves_a_ready_hint_and_the_run_end_removes_it(
    engine: Engine, store: MemoryStore
) -> None:
    [(run_id, wait_id)] = suspended(engine, 1)
    [due] = store.list(keys.due_root())
    assert keys.parse_due_key(due)[1:] == (run_id, wait_id)  # type: ignore[index]
    assert hints(store) == []
    engine.signal(wait_id, "{}")
    assert hints(store) == [keys.ready_key(run_id, wait_id)]
    decoded = decode_hint(store.get(keys.ready_key(run_id, wait_id)))
    assert isinstance(decoded, Found) and decoded.record.kind == READY
    assert decoded.record.reason == "accepted"
    assert engine.serve_once() == [run_id]
    assert hints(store) == [] and store.list(keys.due_root()) == []


def test_a_cancel_and_a_delete_leave_no_hint_behind(engine: Engine, store: MemoryStore) -> None:
    [(first, _w1), (second, w2)] = suspended(engine, 2)
    engine.cancel(first)
    engine.signal(w2, "{}")
    engine.delete(second)
    assert hints(store) == [] and store.list(keys.due_root()) == []


# --- an indexed pass costs what is due -----------------------------------------------------

def test_a_pass_with_one_ready_run_makes_the_same_calls_at_any_size(clock: FakeClock) -> None:
    seen = []
    for idle in (2, 20):
        engine, counting = counted(MemoryStore(), clock)
        runs = suspended(engine, idle + 1)
        assert engine.serve_once() == []  # the first pass is the full scan
        run_id, wait_id = runs[idle // 2]
        engine.signal(wait_id, "{}")
        result: list[list[str]] = []
        calls = measure(counting, lambda: result.append(engine.serve_once()))  # noqa: B023
        assert result == [[run_id]]
        others = [r for r, _w in runs if r != run_id]
        assert not any(other in call for other in others for call in calls), calls
        seen.append([call.replace(run_id, "RUN").replace(wait_id, "WAIT") for call in calls])
    assert seen[0] == seen[1]


def test_a_full_scan_reads_every_run(store: MemoryStore, clock: FakeClock) -> None:
    engine, counting = counted(store, clock)
    runs = suspended(engine, 4)
    calls = measure(counting, lambda: engine.serve_once(full_scan=True))
    for run_id, _w in runs:
        assert f"get {keys.revision_key(run_id, newest_revision(store, run_id).n)}" in calls


# --- hints are hints ---------------------------------------------------------------------

def test_a_missing_hint_delays_the_resume_until_the_next_full_scan(
    store: MemoryStore, clock: FakeClock, make_engine: MakeEngine
) -> None:
    scheduler = make_engine(store, full_scan_every=600)
    [(run_id, wait_id)] = suspended(scheduler, 1)
    assert scheduler.serve_once() == []
    make_engine(store).signal(wait_id, "{}")
    store.delete(keys.ready_key(run_id, wait_id))  # as if the signaller died before it
    assert scheduler.ready_runs() == [] and scheduler.serve_once() == []
    clock.advance(599)
    assert scheduler.serve_once() == []
    clock.advance(1)
    assert scheduler.ready_runs() == [run_id]  # the full scan is due: it is what ready sees
    assert scheduler.serve_once() == [run_id]


def test_a_stale_hint_costs_one_look_and_is_dropped(
    engine: Engine, store: MemoryStore, clock: FakeClock
) -> None:
    [(run_id, wait_id)] = suspended(engine, 1)
    engine.serve_once()
    engine.signal(wait_id, "{}")
    engine.resume(run_id)  # resumed by hand: the hint now points at nothing
    store.put(keys.ready_key(run_id, wait_id), b"{}")  # and a stale one, rewritten late
    store.put(keys.ready_key("gone", wait_id), b"not even json")
    assert engine.serve_once() == []
    assert hints(store) == []


def test_a_hint_for_a_run_with_another_open_wait_waits_for_that_wait(
    engine: Engine, store: MemoryStore
) -> None:
    pair = parse_workflow({"name": "pair", "jobs": {
        "l": {"steps": [{"name": "l", "wait_for_signal": {"timeout": 60, "schema": {}}}]},
        "r": {"steps": [{"name": "r", "wait_for_signal": {"timeout": 3600, "schema": {}}}]},
    }})
    view = engine.run(pair, run_id="pair")
    engine.serve_once()
    left, right = (w.wait_id for w in view.waits)
    engine.signal(right, "{}")
    assert engine.serve_once() == []
    assert hints(store) == []  # the open wait's own settle or deadline brings the run back
    engine.signal(left, "{}")
    assert engine.serve_once() == ["pair"]


def test_a_signal_during_the_drain_is_resumed_once_the_owner_suspends(
    store: MemoryStore, clock: FakeClock, make_engine: MakeEngine
) -> None:
    """The run is still ``running`` when the hint arrives: a pass meets ``busy`` and keeps
    the hint, so the pass after the owner's suspension resumes it."""
    owner = make_engine(store)
    view = owner.run(gate(), run_id="drain")
    scheduler = make_engine(store, claim_patience=False)
    scheduler.serve_once()
    held = owner.claims.take("drain")  # the owner is back in the run, still draining
    owner.signal(view.waits[0].wait_id, "{}")
    assert scheduler.serve_once() == []
    assert hints(store) != []
    held.release()
    assert scheduler.serve_once() == ["drain"]


# --- deadlines ---------------------------------------------------------------------------

def test_a_passed_deadline_is_found_by_minute_without_a_scan(
    store: MemoryStore, clock: FakeClock
) -> None:
    engine, counting = counted(store, clock)
    runs = suspended(engine, 5, timeout=3600)
    late = engine.run(gate(120), run_id="late")
    engine.serve_once()
    clock.advance(90)
    assert engine.serve_once() == []
    clock.advance(31)
    result: list[list[str]] = []
    calls = measure(counting, lambda: result.append(engine.serve_once()))
    assert result == [[late.run_id]]
    assert not any(run_id in call for run_id, _w in runs for call in calls), calls
    # the minute of the last look and this one: no older minute, no other run
    assert len([c for c in calls if c.startswith(f"list {keys.due_root()}")]) <= 2, calls
    assert engine.show(late.run_id)["steps"]["approval"]["error"] == "wait_timeout"


def test_a_deadline_is_looked_at_once_by_a_scheduler(store: MemoryStore,
                                                     clock: FakeClock) -> None:
    engine, counting = counted(store, clock)
    engine.run(parse_workflow({"name": "pair", "jobs": {
        "l": {"steps": [{"name": "l", "wait_for_signal": {"timeout": 60, "schema": {}}}]},
        "r": {"steps": [{"name": "r", "wait_for_signal": {"timeout": 3600, "schema": {}}}]},
    }}), run_id="pair")
    engine.serve_once()
    clock.advance(61)
    assert engine.serve_once() == []  # l timed out; r is still open
    clock.advance(1)
    calls = measure(counting, engine.serve_once)
    assert not any("pair" in call for call in calls), calls


@pytest.mark.parametrize("minutes", [MAX_DUE_MINUTES, MAX_DUE_MINUTES + 1])
def test_too_many_minutes_since_the_last_look_make_one_list_of_every_deadline(
    minutes: int, store: MemoryStore, clock: FakeClock
) -> None:
    engine, counting = counted(store, clock, full_scan_every=None)
    [(run_id, _wait)] = suspended(engine, 1, timeout=(minutes - 1) * 60)
    clock.advance(60 - clock.now() % 60)  # at the start of a minute
    engine.serve_once()
    clock.advance(minutes * 60 - 1)
    result: list[list[str]] = []
    calls = measure(counting, lambda: result.append(engine.serve_once()))
    assert result == [[run_id]]  # its deadline passed in the window, however it was listed
    lists = [c for c in calls if c.startswith(f"list {keys.due_root()}")]
    assert (lists == [f"list {keys.due_root()}"]) == (minutes > MAX_DUE_MINUTES), lists
    assert len(lists) == (1 if minutes > MAX_DUE_MINUTES else minutes), lists
    assert f"list {keys.runs_root()}" not in calls  # never a full scan


def test_a_busy_run_named_by_a_deadline_is_tried_again_next_pass(
    store: MemoryStore, clock: FakeClock, make_engine: MakeEngine
) -> None:
    owner = make_engine(store)
    view = owner.run(gate(60), run_id="slow")
    scheduler = make_engine(store, claim_patience=False)
    scheduler.serve_once()
    clock.advance(61)
    held = owner.claims.take(view.run_id)
    assert scheduler.serve_once() == []
    held.release()
    assert scheduler.serve_once() == ["slow"]


# --- old records, and the sweep -----------------------------------------------------------

def test_a_run_without_any_index_record_resumes_on_the_full_scan(
    engine: Engine, store: MemoryStore
) -> None:
    [(run_id, wait_id)] = suspended(engine, 1)
    engine.signal(wait_id, "{}")
    for key in store.list(keys.ready_root()) + store.list(keys.due_root()):
        store.delete(key)  # as written by an engine older than the index
    assert engine.serve_once() == [run_id]  # a fresh scheduler starts with a full scan


def test_the_sweep_removes_stale_hints_and_keeps_live_ones(
    engine: Engine, store: MemoryStore
) -> None:
    [(live, live_wait), (ended, ended_wait)] = suspended(engine, 2)
    engine.signal(live_wait, "{}")
    engine.cancel(ended)
    store.put(keys.ready_key(ended, ended_wait), b"{}")  # leftovers of a crashed clean-up
    store.put(keys.due_key(ended, ended_wait, 5.0), b"{}")
    store.put(keys.ready_key("deleted-run", ended_wait), b"{}")
    counts = engine.sweep()
    assert counts["hints"] == 3
    assert hints(store) == [keys.ready_key(live, live_wait)]
    assert [keys.parse_due_key(k)[1] for k in store.list(keys.due_root())] == [live]  # type: ignore[index]
    assert engine.sweep()["hints"] == 0


def test_listing_open_waits_reads_what_it_prints_and_sweeps_nothing(
    store: MemoryStore, clock: FakeClock
) -> None:
    engine, counting = counted(store, clock)
    [(run_id, wait_id)] = suspended(engine, 1)
    done = engine.run(gate(10), run_id="done")
    engine.cancel(done.run_id)
    calls = measure(counting, engine.open_waits)
    assert calls == [f"list {keys.waits_root()}", f"get {keys.wait_key(wait_id)}",
                     f"get {keys.outcome_key(wait_id)}"]
    clock.advance(3 * 24 * 3600)  # now expired: a look at the run tells if it was applied
    calls = measure(counting, engine.open_waits)
    assert not any(call.startswith("delete") or "done" in call for call in calls), calls
    assert [c for c in calls if c.startswith("get runs/")] == [
        f"get {keys.revision_key(run_id, newest_revision(store, run_id).n)}"]


# --- a new process: the cursor ------------------------------------------------------------

def test_a_new_process_first_pass_reads_only_the_index_at_any_size(clock: FakeClock) -> None:
    seen = []
    for idle in (2, 20):
        store = MemoryStore()
        engine, _counting = counted(store, clock)
        runs = suspended(engine, idle + 1)
        assert engine.serve_once() == []  # the store's first pass ever: a full scan
        run_id, wait_id = runs[idle // 2]
        engine.signal(wait_id, "{}")
        fresh, counting = counted(store, clock)  # cron's next `dw serve --once`
        result: list[list[str]] = []
        calls = measure(counting, lambda: result.append(fresh.serve_once()))  # noqa: B023
        assert result == [[run_id]]
        assert f"list {keys.runs_root()}" not in calls
        assert f"get {keys.deadlines_seen_key()}" in calls
        seen.append([c.replace(run_id, "RUN").replace(wait_id, "WAIT") for c in calls])
    assert seen[0] == seen[1]


def test_a_store_without_a_cursor_gets_one_full_scan_that_files_missing_deadlines(
    engine: Engine, store: MemoryStore, clock: FakeClock
) -> None:
    [(run_id, _wait)] = suspended(engine, 1, timeout=120)
    for key in store.list(keys.due_root()):
        store.delete(key)  # as written by an engine older than the index
    fresh, counting = counted(store, clock)
    calls = measure(counting, fresh.serve_once)
    assert f"list {keys.runs_root()}" in calls  # no cursor: the full scan
    assert store.list(keys.due_root()) != []  # the deadline is filed again
    clock.advance(121)
    later, counting = counted(store, clock)
    result: list[list[str]] = []
    calls = measure(counting, lambda: result.append(later.serve_once()))
    assert result == [[run_id]] and f"list {keys.runs_root()}" not in calls
