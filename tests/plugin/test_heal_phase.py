"""The heal phase of a faulted engine test (issue 35): with the faults off, what the stored
records say (a signal doubled, misapplied or lost) and a store that stays broken, named by
the call that kept failing."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from support.engine_flows import YES, MakeEngine, approval_workflow

from dw_testing.kit.prefixed import PrefixedStore
from dw_testing.kit.spec import StoreSpec
from dw_testing.plugin.fault_tally import FaultTally, Tallied, delta, describe, merge
from dw_testing.plugin.heal import heal, judge
from reference_engine.errors import StoreError
from reference_engine.records import keys
from reference_engine.records.run_store import newest_revision
from reference_engine.stores.memory import MemoryStore


def _succeeded(make_engine: MakeEngine, store: Any) -> tuple[str, Any]:
    engine = make_engine(store)
    view = engine.run(approval_workflow(), run_id="r1")
    engine.signal(view.waits[0].wait_id, YES)
    engine.resume("r1")
    newest = newest_revision(store, "r1")
    return "r1", newest


def _rewrite(store: Any, run_id: str, newest: Any, journal: tuple[Any, ...]) -> None:
    record = dataclasses.replace(newest.decoded.record, rev=newest.n + 1, journal=journal)
    store.put(keys.revision_key(run_id, newest.n + 1), record.encode())


def test_a_healthy_run_has_nothing_to_judge(make_engine: MakeEngine) -> None:
    store = MemoryStore()
    _succeeded(make_engine, store)
    assert judge(store) == []


def test_an_answer_applied_twice_is_reported_doubled(make_engine: MakeEngine) -> None:
    store = MemoryStore()
    run_id, newest = _succeeded(make_engine, store)
    journal = newest.decoded.record.journal
    applied = [e for e in journal if e.get("type") == "answer_applied"]
    assert applied, "the flow applied no answer: the test proves nothing"
    _rewrite(store, run_id, newest, (*journal, applied[0]))
    problems = judge(store)
    assert any("doubled" in p and run_id in p for p in problems), problems


def test_an_answer_applied_to_a_wait_of_another_run_is_reported_misapplied(
    make_engine: MakeEngine,
) -> None:
    store = MemoryStore()
    run_id, newest = _succeeded(make_engine, store)
    journal = tuple({**e, "waitId": "00000000-0000-0000-0000-000000000000"}
                    if e.get("type") == "answer_applied" else e
                    for e in newest.decoded.record.journal)
    _rewrite(store, run_id, newest, journal)
    assert any("misapplied" in p for p in judge(store)), judge(store)


class BrokenLists(MemoryStore):
    def list(self, prefix: str) -> list[str]:
        raise StoreError("the backend is down", op="list", key=prefix)


class FakeItem:
    def __init__(self, spec: StoreSpec, prefix: str) -> None:
        self.funcargs = {"dw_spec": spec, "_dw_prefix": prefix}


def test_a_store_still_broken_after_the_faults_stop_fails_naming_the_call() -> None:
    spec = StoreSpec(factory=BrokenLists, name="broken")
    problems = heal(FakeItem(spec, "p1"))  # type: ignore[arg-type]
    assert len(problems) == 1
    assert "still fails" in problems[0] and "list(" in problems[0], problems
    assert "the backend is down" in problems[0]


def test_the_heal_phase_resumes_a_run_whose_wait_was_decided(
    make_engine: MakeEngine,
) -> None:
    backing = MemoryStore()
    engine = make_engine(PrefixedStore(backing, "p2"))
    view = engine.run(approval_workflow(), run_id="r1")
    engine.signal(view.waits[0].wait_id, YES)  # accepted; the run not yet resumed
    spec = StoreSpec(factory=lambda: backing, name="memory")
    assert heal(FakeItem(spec, "p2")) == []  # type: ignore[arg-type]
    assert engine.show("r1")["status"] == "succeeded", "the heal left the run suspended"


def test_the_tally_counts_raised_calls_and_creates_false_over_their_own_bytes() -> None:
    tally = FaultTally()
    store = MemoryStore()
    handle = Tallied(store, tally)
    assert handle.put_if_absent("k", b"mine") is True
    store.delete("k")
    store.put("k", b"mine")  # as if a retried create met its own first attempt
    assert handle.put_if_absent("k", b"mine") is False
    assert handle.put_if_absent("k", b"other") is False
    with pytest.raises(StoreError):
        Tallied(BrokenLists(), tally).list("x/")
    before: dict[str, Any] = {}
    tally.settle(lambda: store)
    met = delta({**tally.snapshot(), "played": {"lost-reply": 2}}, before)
    assert met["false_to_own_write"] == 1 and met["raised"] == {"list": 1}
    total: dict[str, Any] = {}
    merge(total, met)
    merge(total, met)
    assert total["raised"]["list"] == 2
    assert "2 replies lost" in describe(met) and "calls raised: list 1" in describe(met)
