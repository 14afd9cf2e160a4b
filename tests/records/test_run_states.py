"""The listing's index: runs filed by status and workflow, confirmed by a read, repaired by
the sweep."""

from __future__ import annotations

from typing import Any

from dw_testing.kit.clock import FakeClock
from dw_testing.kit.faults import FaultyStore
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.stores.memory import MemoryStore
from reference_engine.workflows.loader import parse_workflow
from reference_engine.workflows.model import Workflow


def gate(name: str = "gate") -> Workflow:
    return parse_workflow({"name": name, "jobs": {
        "approve": {"steps": [{"name": "approval", "wait_for_signal": {
            "timeout": 3600, "schema": {"type": "object"}}}]},
        "after": {"depends_on": ["approve"], "steps": [{"name": "done", "log": "ok"}]},
    }})


def entries(store: Any) -> list[str]:
    return list(store.list(keys.run_states_root()))


def ids(listed: list[dict[str, Any]]) -> list[str]:
    return sorted(run["runId"] for run in listed)


def test_a_run_is_filed_under_its_status_as_it_moves(engine: Engine, store: MemoryStore) -> None:
    view = engine.run(gate(), run_id="r1")
    assert entries(store) == [keys.run_state_key("suspended", "gate", "r1")]
    engine.signal(view.waits[0].wait_id, "{}")
    engine.resume("r1")
    assert entries(store) == [keys.run_state_key("succeeded", "gate", "r1")]
    engine.delete("r1")
    assert entries(store) == []


def test_a_filtered_listing_reads_only_the_runs_it_names(store: MemoryStore,
                                                         clock: FakeClock) -> None:
    counting = FaultyStore(store)
    engine = Engine(counting, clock, sleeper=clock.advance)
    for i in range(6):
        engine.run(gate("gate" if i % 2 else "other"), run_id=f"r{i}")
    engine.cancel("r0")
    engine.cancel("r1")
    counting.calls.clear()
    assert ids(engine.runs(statuses=("cancelled",))) == ["r0", "r1"]
    read = {c.key.split("/")[1] for c in counting.calls if c.key.startswith("runs/")}
    assert read == {"r0", "r1"}, counting.calls
    assert ids(engine.runs(workflow="gate")) == ["r1", "r3", "r5"]
    assert ids(engine.runs(statuses=("suspended",), workflow="other")) == ["r2", "r4"]
    assert len(engine.runs()) == 6


def test_a_stale_entry_is_not_printed_and_a_missing_one_comes_back_with_the_sweep(
    engine: Engine, store: MemoryStore
) -> None:
    engine.run(gate(), run_id="lost")
    engine.run(gate(), run_id="kept")
    store.delete(keys.run_state_key("suspended", "gate", "lost"))  # a crash before the entry
    store.put(keys.run_state_key("succeeded", "gate", "kept"), b"{}")  # and one left behind
    store.put(keys.run_state_key("running", "gate", "deleted"), b"{}")
    assert ids(engine.runs(statuses=("suspended",))) == ["kept"]
    assert engine.runs(statuses=("succeeded", "running")) == []
    assert engine.sweep()["runStates"] == 3
    assert entries(store) == [keys.run_state_key("suspended", "gate", "kept"),
                              keys.run_state_key("suspended", "gate", "lost")]
    assert ids(engine.runs(statuses=("suspended",))) == ["kept", "lost"]
    assert engine.sweep()["runStates"] == 0


def test_a_workflow_name_is_one_key_segment_whatever_it_holds() -> None:
    for name in ("gate", "a.b-c_d", "odd/name", "", ".."):
        key = keys.run_state_key("running", name, "r")
        assert keys.parse_run_state_key(key) == ("running", name, "r")
