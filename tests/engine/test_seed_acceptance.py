"""One test per acceptance line of seed 004 ("Deliver answers to suspended workflows for
later resumption"), both lists; each docstring quotes the seed's line.

Our mapping: the seed's "executor lock" is the run claim (docs/explanation/engine.md),
"suspendFor()" is
a ``wait_for_signal`` step, "publication" is the consume revision, an "unsupported
entrypoint" is a store without ``put_if_absent``.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from support import answer_steps
from support.answers import (
    NO,
    OPEN_SCHEMA,
    SCHEMA,
    YES,
    MakeEngine,
    NoCreateStore,
    RecordingStore,
    applied,
    gate_workflow,
    snapshot,
)

from dw_testing.kit.clock import FakeClock
from dw_testing.kit.faults import FaultyStore, SimulatedCrash
from dw_testing.kit.gates import GatedStore
from reference_engine import secrets
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.records.decoding import Found
from reference_engine.records.outcome import decode_outcome
from reference_engine.records.registration import fingerprint
from reference_engine.records.run import decode_run
from reference_engine.records.run_store import newest_revision
from reference_engine.refusals import Refusal
from reference_engine.runs import executor
from reference_engine.stores.memory import MemoryStore
from reference_engine.stores.registry import open_store
from reference_engine.workflows.loader import parse_workflow

RUN = "seed"


def _refuses(store: Any, act: Callable[[], object], kind: str) -> None:
    before = snapshot(store)
    with pytest.raises(Refusal) as refused:
        act()
    assert refused.value.kind == kind, refused.value.message
    assert snapshot(store) == before


def _writes(recorder: RecordingStore) -> list[str]:
    return [key for key, _ in recorder.written]


# --- Acceptance: typed delivery -----------------------------------------------------------

def test_one_value_is_correlated_to_the_exact_suspension_and_schema(
    engine: Engine, store: MemoryStore
) -> None:
    """"One value is correlated to the exact retained suspension ID and response schema." """
    flow = parse_workflow({"name": "two", "jobs": {
        "a": {"steps": [{"name": "flag", "wait_for_signal": {"timeout": 60, "schema": SCHEMA}}]},
        "b": {"steps": [{"name": "count", "wait_for_signal": {
            "timeout": 60, "schema": {"type": "object", "required": ["n"],
                                      "properties": {"n": {"type": "integer"}}}}}]},
    }})
    view = engine.run(flow, run_id=RUN)
    waits = {w.step: w.wait_id for w in view.waits}
    _refuses(store, lambda: engine.answer(RUN, waits["flag"], '{"n": 3}'), "invalid_payload")
    _refuses(store, lambda: engine.answer(RUN, waits["count"], YES), "invalid_payload")
    engine.answer(RUN, waits["count"], '{"n": 3}')
    stored = decode_outcome(store.get(keys.outcome_key(waits["count"])), waits["count"], RUN)
    registration = store.get(keys.wait_key(waits["count"]))
    assert isinstance(stored, Found) and registration is not None
    assert stored.record.fingerprint == fingerprint(registration)  # the exact request
    assert stored.record.payload == {"n": 3} and stored.record.run_id == RUN
    assert store.get(keys.outcome_key(waits["flag"])) is None  # the other wait untouched


def test_delivery_validates_before_persistence_and_crosses_the_secret_gate(
    make_engine: MakeEngine
) -> None:
    """"Delivery validates before persistence and crosses the existing secret gate." """
    recorder = RecordingStore(MemoryStore())
    engine = make_engine(recorder)
    view = engine.run(gate_workflow(schema={**SCHEMA, "additionalProperties": True}))
    wait_id = view.waits[0].wait_id
    recorder.written.clear()
    for payload, kind in (('{"approved": 1}', "invalid_payload"),
                          ('{"approved": true, "token": "s3cr3t"}', "secret_detected")):
        with pytest.raises(Refusal) as refused:
            engine.answer(view.run_id, wait_id, payload)
        assert refused.value.kind == kind
    assert recorder.written == []  # not even a write that is later undone
    engine.answer(view.run_id, wait_id, YES)
    assert _writes(recorder) == [keys.ready_key(view.run_id, wait_id), keys.outcome_key(wait_id)]


def test_successful_delivery_changes_no_status_no_history_and_takes_no_claim(
    make_engine: MakeEngine
) -> None:
    """"Successful delivery changes neither run status nor document-execution history and
    acquires no executor lock." """
    recorder = RecordingStore(MemoryStore())
    engine = make_engine(recorder)
    view = engine.run(gate_workflow())
    before = snapshot(recorder)
    recorder.written.clear()
    engine.answer(view.run_id, view.waits[0].wait_id, YES)
    after = snapshot(recorder)
    wait_id = view.waits[0].wait_id
    # The scheduler's hint that the run may be ready, then the outcome: nothing else.
    assert _writes(recorder) == [keys.ready_key(view.run_id, wait_id), keys.outcome_key(wait_id)]
    assert {k: v for k, v in after.items() if k in before} == before
    assert engine.show(view.run_id)["status"] == "suspended"
    assert not any(k.startswith(keys.claims_root()) for k in set(after) - set(before))


def test_explicit_resume_publishes_one_filtered_event_atomically_and_returns_the_value(
    engine: Engine, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """"Explicit resume publishes one filtered answer event, consumes the pending delivery
    atomically, and returns the value from suspendFor()." """
    answer_steps.STORE[:] = [store]
    view = engine.run(gate_workflow(), run_id=RUN)
    engine.answer(RUN, view.waits[0].wait_id, NO)
    suspended_at = newest_revision(store, RUN).n
    filtered: list[tuple[str, bool]] = []
    real = secrets.filter_event

    def spy(event: Any, *, bypass: bool) -> dict[str, Any]:
        filtered.append((str(event.get("type")), bypass))
        return real(event, bypass=bypass)

    monkeypatch.setattr(executor, "filter_event", spy)
    engine.resume(RUN)
    assert ("answer_applied", False) in filtered  # through the journal's secret filter
    consume = engine.show(RUN)
    assert len(applied(consume)) == 1
    decoded = decode_run(store.get(keys.revision_key(RUN, suspended_at + 1)), RUN,
                         suspended_at + 1)
    assert isinstance(decoded, Found)
    assert [e["type"] for e in decoded.record.journal].count("answer_applied") == 1
    assert "use" not in decoded.record.steps  # saved before the next step ran
    [seen] = answer_steps.SEEN
    assert seen["payload"] == {"approved": False}  # the step after the wait got the value
    assert seen["saved"]["approval"] == "succeeded"  # and only once it was saved


def test_a_crash_before_publication_leaves_it_pending_and_replay_adds_nothing(
    store: MemoryStore, clock: FakeClock, make_engine: MakeEngine
) -> None:
    """"A crash before publication leaves the answer pending; replay after publication emits
    no duplicate event and requests no replacement answer." """
    engine = make_engine(store)
    wait_id = engine.run(gate_workflow(after="support.answer_steps:answer_shaped"),
                         run_id=RUN).waits[0].wait_id
    receipt = engine.answer(RUN, wait_id, YES).receipt.id
    consume_key = keys.revision_key(RUN, newest_revision(store, RUN).n + 1)
    for point in ("before", "after_commit"):
        faulty = FaultyStore(store)
        faulty.crash("put_if_absent", key=consume_key, point=point)
        with pytest.raises(SimulatedCrash):
            make_engine(faulty).resume(RUN)
        if point == "before":
            assert store.get(consume_key) is None and engine.show(RUN)["status"] == "suspended"
            assert store.get(keys.outcome_key(wait_id)) is not None  # still pending
    assert store.get(consume_key) is not None
    assert make_engine(store).resume(RUN).status == "succeeded"  # no open_wait: no new ask
    assert [e["receiptId"] for e in applied(engine.show(RUN))] == [receipt]


def test_duplicate_late_consumed_mismatched_invalid_cancelled_deleted_are_refused(
    engine: Engine, store: MemoryStore, clock: FakeClock
) -> None:
    """"Duplicate, late, consumed, mismatched, invalid, cancelled-run, and deleted-run
    delivery is refused without mutation." """
    dup = engine.run(gate_workflow())
    dup_wait = dup.waits[0].wait_id
    engine.answer(dup.run_id, dup_wait, YES)
    _refuses(store, lambda: engine.answer(dup.run_id, dup_wait, YES), "already_settled")
    other = engine.run(gate_workflow())
    _refuses(store, lambda: engine.answer(other.run_id, dup_wait, YES), "wrong_run")
    _refuses(store, lambda: engine.answer(other.run_id, other.waits[0].wait_id, '{"x": 1}'),
             "invalid_payload")
    engine.resume(dup.run_id)
    _refuses(store, lambda: engine.answer(dup.run_id, dup_wait, YES), "not_suspended")
    cancelled = engine.run(gate_workflow())
    engine.cancel(cancelled.run_id)
    _refuses(store, lambda: engine.answer(cancelled.run_id, cancelled.waits[0].wait_id, YES),
             "not_suspended")
    engine.delete(cancelled.run_id)
    _refuses(store, lambda: engine.answer(cancelled.run_id, cancelled.waits[0].wait_id, YES),
             "run_not_found")
    late = engine.run(gate_workflow(timeout=10))
    clock.advance(11)
    with pytest.raises(Refusal) as refused:
        engine.answer(late.run_id, late.waits[0].wait_id, YES)  # writes the lazy timeout
    assert refused.value.kind == "expired"
    _refuses(store, lambda: engine.answer(late.run_id, late.waits[0].wait_id, YES), "expired")


def test_middleware_return_values_props_document_code_and_same_names_grant_nothing(
    engine: Engine, store: MemoryStore, tmp_path: Path
) -> None:
    """"Public middleware, contextual return values, props, document code, and same-name
    APIs cannot manufacture answer authority." """
    flow = parse_workflow({
        "name": "gate", "inputs": {"approval": YES},
        "jobs": {
            "pre": {"steps": [{"name": "shaped", "python": "support.answer_steps:answer_shaped"}]},
            "approve": {"depends_on": ["pre"], "steps": [
                {"name": "approval", "wait_for_signal": {"timeout": 60, "schema": SCHEMA}}]},
        }})
    view = engine.run(flow, run_id=RUN)
    wait_id = view.waits[0].wait_id
    _refuses(store, lambda: engine.signal("approval", YES), "unknown")  # the step's name
    _refuses(store, lambda: engine.answer(RUN, "approval", YES), "unknown")
    assert "payload" not in inspect.signature(Engine.resume).parameters
    with pytest.raises(Refusal) as refused:
        engine.resume(RUN)  # the document's code and props are no answer
    assert refused.value.kind == "open_wait"
    assert engine.serve_once() == []
    assert store.get(keys.outcome_key(wait_id)) is None


def test_strict_storage_recognition_reads_unknown_versions_and_shapes_as_unreadable(
    engine: Engine, store: MemoryStore
) -> None:
    """"Strict storage recognition covers any durable input-delivery schema amendment; older
    development-only schema handling follows the repository's settled pre-release
    compatibility policy." """
    view = engine.run(gate_workflow(), run_id=RUN)
    wait_id = view.waits[0].wait_id
    engine.answer(RUN, wait_id, YES)
    good = json.loads(store.get(keys.outcome_key(wait_id)) or b"")
    amended: list[dict[str, Any]] = [
        {**good, "v": 3}, {**good, "v": 1}, {k: v for k, v in good.items() if k != "v"},
        {**good, "v": "2"}, {**good, "kind": "pending"},
        {**good, "state": "pending"},  # an amendment: a field this build does not know
        {**good, "receipt": {**good["receipt"], "consumedAt": 1.0}},
        {k: v for k, v in good.items() if k != "receipt"},
        {**good, "payload": None, "receipt": "r-1"},
    ]
    for shape in amended:
        data = json.dumps(shape).encode()
        store.put(keys.outcome_key(wait_id), data)
        _refuses(store, lambda: engine.answer(RUN, wait_id, NO), "unreadable")
        _refuses(store, lambda: engine.signal(wait_id, NO), "unreadable")
        assert engine.ready_runs() == [RUN]  # decided, though undecodable: never absent
    store.put(keys.revision_key(RUN, newest_revision(store, RUN).n + 1),
              json.dumps({**json.loads(store.get(keys.revision_key(RUN, 1)) or b""),
                          "v": 3}).encode())
    _refuses(store, lambda: engine.answer(RUN, wait_id, NO), "unreadable")
    # The settled pre-release policy: the documented v1 run shape still reads and resumes.
    fixture = resources.files("reference_engine").joinpath("fixtures/legacy_v1_run.json")
    legacy = json.loads(fixture.read_bytes())
    store.put(keys.revision_key(legacy["runId"], 1), fixture.read_bytes())
    engine.signal(legacy["steps"]["approval"]["wait"]["id"], YES)
    assert engine.resume(legacy["runId"]).status == "succeeded"


def test_a_resume_fails_an_unrecognised_outcome_and_leaves_its_bytes(
    engine: Engine, store: MemoryStore
) -> None:
    """"Strict storage recognition ..." (resume side): an amended outcome is never applied,
    the step fails ``wait_unreadable``, and the bytes stay for a human to inspect."""
    view = engine.run(gate_workflow(), run_id=RUN)
    wait_id = view.waits[0].wait_id
    engine.answer(RUN, wait_id, YES)
    amended = json.dumps({**json.loads(store.get(keys.outcome_key(wait_id)) or b""),
                          "state": "consumed"}).encode()
    store.put(keys.outcome_key(wait_id), amended)
    engine.resume(RUN)
    shown = engine.show(RUN)
    assert applied(shown) == [] and shown["steps"]["approval"]["error"] == "wait_unreadable"
    assert store.get(keys.outcome_key(wait_id)) == amended


def test_unsupported_entrypoints_refuse_before_mutation(make_engine: MakeEngine) -> None:
    """"Deno and the compiled binary supply the local durable adapter; unsupported
    entrypoints refuse before mutation." (Ours: a store without put_if_absent.)"""
    plain = NoCreateStore()
    engine = make_engine(plain)
    _refuses(plain, lambda: engine.run(gate_workflow()), "unsupported")
    assert plain.list("") == []
    donor = MemoryStore()  # a suspended, answered run's records on a store that cannot create
    view = make_engine(donor).run(gate_workflow(), run_id=RUN)
    wait_id = view.waits[0].wait_id
    for key, data in snapshot(donor).items():
        plain.put(key, data)
    for act in (lambda: engine.answer(RUN, wait_id, YES), lambda: engine.signal(wait_id, YES),
                lambda: engine.resume(RUN), lambda: engine.cancel(RUN),
                engine.serve_once, engine.ready_runs):
        _refuses(plain, act, "unsupported")


@pytest.fixture(params=["file", "sqlite"])
def durable_uri(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield str(tmp_path / "s") if request.param == "file" else f"sqlite:///{tmp_path}/s.db"


def test_the_local_durable_adapters_carry_an_answer_across_handles(
    durable_uri: str, clock: FakeClock
) -> None:
    """"Deno and the compiled binary supply the local durable adapter ..." (ours: the file
    and SQLite stores, each handle a separate open)."""
    first = Engine(open_store(durable_uri), clock)
    wait_id = first.run(gate_workflow(), run_id=RUN).waits[0].wait_id
    Engine(open_store(durable_uri), clock).answer(RUN, wait_id, YES)
    assert Engine(open_store(durable_uri), clock).resume(RUN).status == "succeeded"
    assert len(applied(first.show(RUN))) == 1


# --- Acceptance: scheduling ---------------------------------------------------------------

def test_answer_availability_schedules_only_the_ordinary_resume_path(
    engine: Engine, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """"Answer availability may schedule only the ordinary resume path." """
    view = engine.run(gate_workflow(), run_id=RUN)
    engine.answer(RUN, view.waits[0].wait_id, YES)
    calls: list[str] = []
    real_resume, real_take = Engine._resume, engine.claims.take

    def resume(self: Engine, run_id: str, **kwargs: Any) -> Any:
        calls.append(f"resume {run_id}")
        return real_resume(self, run_id, **kwargs)

    def take(run_id: str, **kwargs: Any) -> Any:
        calls.append(f"claim {run_id}")
        return real_take(run_id, **kwargs)

    monkeypatch.setattr(Engine, "_resume", resume)
    monkeypatch.setattr(engine.claims, "take", take)
    assert engine.serve_once() == [RUN]
    assert calls == [f"resume {RUN}", f"claim {RUN}"]
    events = [e["type"] for e in engine.show(RUN)["journal"]]
    assert events.count("answer_applied") == 1 and events[-1] == "run_ended"


@pytest.mark.parametrize("holder", ["manual", "scheduler"])
def test_competing_schedulers_and_manual_resume_are_serialized_by_the_claim(
    store: MemoryStore, make_engine: MakeEngine, holder: str
) -> None:
    """"Competing schedulers and manual resume are serialized by the same executor lock." """
    view = make_engine(store).run(gate_workflow(), run_id=RUN)
    make_engine(store).answer(RUN, view.waits[0].wait_id, YES)
    gated = GatedStore(store)
    refusals: list[str] = []
    passes: list[list[str]] = []
    rival = make_engine(store, claim_patience=False)

    def compete() -> None:
        passes.append(rival.serve_once())
        try:
            rival.resume(RUN)
        except Refusal as refusal:
            refusals.append(refusal.kind)

    gated.at("put_if_absent", point="after_commit", key=f"{keys.claims_prefix(RUN)}*",
             do=compete)
    first = make_engine(gated, claim_patience=False)
    if holder == "manual":
        assert first.resume(RUN).status == "succeeded"
    else:
        assert first.serve_once() == [RUN]
    gated.assert_all_gates_used()
    assert passes == [[]] and refusals == ["busy"]
    assert len(applied(first.show(RUN))) == 1


def test_process_exit_needs_no_in_memory_waiter(tmp_path: Path, clock: FakeClock) -> None:
    """"Process exit requires no in-memory waiter or hidden Agent transcript." """
    uri = str(tmp_path / "store")
    starter = Engine(open_store(uri), clock)
    wait_id = starter.run(gate_workflow(), run_id=RUN).waits[0].wait_id
    del starter  # everything below starts from the store alone
    Engine(open_store(uri), clock).answer(RUN, wait_id, YES)
    scheduler = Engine(open_store(uri), clock, claim_patience=False)
    assert scheduler.serve_once() == [RUN]
    assert scheduler.show(RUN)["status"] == "succeeded"


def test_duplicate_or_late_scheduling_cannot_consume_twice_or_run_concurrently(
    store: MemoryStore, make_engine: MakeEngine
) -> None:
    """"Duplicate or late scheduling cannot consume an answer twice or start concurrent
    execution." """
    owner = make_engine(store)
    view = owner.run(gate_workflow(), run_id=RUN)
    owner.answer(RUN, view.waits[0].wait_id, YES)
    gated = GatedStore(store)
    inner: list[list[str]] = []
    late = make_engine(gated, claim_patience=False)
    # Late: this pass saw the run ready, then another pass resumed it before the claim.
    gated.at("list", key=keys.claims_prefix(RUN),
             do=lambda: inner.append(make_engine(store, claim_patience=False).serve_once()))
    assert late.serve_once() == []
    gated.assert_all_gates_used()
    assert inner == [[RUN]]
    assert make_engine(store).serve_once() == []  # duplicate: nothing left to schedule
    assert len(applied(owner.show(RUN))) == 1


@pytest.mark.parametrize("where", ["acquisition", "answer_claim", "resumed_execution"])
def test_scheduled_cancellation_at_each_point_keeps_the_lifecycle_rules(
    store: MemoryStore, make_engine: MakeEngine, where: str
) -> None:
    """"Cancellation at acquisition, answer claim, and resumed execution preserves the
    existing durable lifecycle outcome rules." """
    owner = make_engine(store)
    answer_steps.STORE[:] = [store]
    wait_id = owner.run(gate_workflow(), run_id=RUN).waits[0].wait_id
    receipt = owner.answer(RUN, wait_id, YES).receipt.id
    suspended_at = newest_revision(store, RUN).n
    op, key, point = {
        "acquisition": ("put_if_absent", f"{keys.claims_prefix(RUN)}*", "before"),
        "answer_claim": ("get", keys.outcome_key(wait_id), "after_commit"),
        "resumed_execution": ("put_if_absent", keys.revision_key(RUN, suspended_at + 2),
                              "after_commit"),
    }[where]
    gated = GatedStore(store)
    gated.at(op, point=point, key=key, do=lambda: owner.cancel(RUN))  # wins (stale or free)
    assert make_engine(gated, claim_patience=False).serve_once() == []
    gated.assert_all_gates_used()
    shown = owner.show(RUN)
    assert shown["status"] == "cancelled"
    assert shown["steps"]["approval"]["output"]["signal"]["id"] == receipt
    assert len(applied(shown)) == (1 if where == "resumed_execution" else 0)
    assert store.list(keys.waits_root()) == store.list(keys.outcomes_root()) == []


@pytest.mark.parametrize("uri_kind", ["memory", "file", "sqlite"])
def test_local_and_remote_hosts_share_one_lifecycle_api_without_changing_documents(
    tmp_path: Path, clock: FakeClock, uri_kind: str
) -> None:
    """"Local and future remote hosts can implement the same contextual lifecycle API
    without changing documents." """
    uri = {"memory": f"memory://hosts-{tmp_path.name}", "file": str(tmp_path / "s"),
           "sqlite": f"sqlite:///{tmp_path}/s.db"}[uri_kind]
    document = gate_workflow(after="support.answer_steps:answer_shaped", schema=OPEN_SCHEMA)
    hosts = {name: Engine(open_store(uri), clock, host=name, sleeper=clock.advance)
             for name in ("laptop", "ci", "remote")}
    view = hosts["laptop"].run(document, run_id=RUN)
    hosts["remote"].answer(RUN, view.waits[0].wait_id, '{"ok": true}')
    assert hosts["ci"].serve_once() == [RUN]
    shown = hosts["laptop"].show(RUN)
    assert shown["status"] == "succeeded" and len(applied(shown)) == 1
    newest = newest_revision(open_store(uri), RUN)
    assert isinstance(newest.decoded, Found)
    assert dict(newest.decoded.record.source) == dict(document.source)  # unchanged document
