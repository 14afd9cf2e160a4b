"""Run, suspend, signal, resume: the wait lifecycle on one handle (docs/explanation/engine.md)."""

from __future__ import annotations

import json

import pytest
from support.engine_flows import NO, YES, MakeEngine, approval_workflow, plain_workflow

from dw_testing.kit.clock import FakeClock
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.refusals import Refusal
from reference_engine.stores.memory import MemoryStore


def _wait_keys(store: MemoryStore) -> list[str]:
    return store.list(keys.waits_root()) + store.list(keys.outcomes_root())


def test_run_suspends_on_the_wait_and_registers_it(engine: Engine, store: MemoryStore) -> None:
    view = engine.run(approval_workflow())
    assert view.status == "suspended"
    [wait] = view.waits
    assert (wait.job, wait.step) == ("approve", "approval")
    assert store.list(keys.waits_root()) == [keys.wait_key(wait.wait_id)]
    assert store.list(keys.outcomes_root()) == []
    shown = engine.show(view.run_id)
    assert shown["steps"]["approval"]["status"] == "waiting_signal"
    assert shown["steps"]["soak"]["status"] == "succeeded"  # the level drained
    assert view.to_json()["waits"][0]["deadline"] == "2026-01-01T01:00:00Z"


def test_signal_then_resume_succeeds_and_cleans_up(engine: Engine, store: MemoryStore) -> None:
    view = engine.run(approval_workflow())
    wait_id = view.waits[0].wait_id
    delivery = engine.signal(wait_id, YES, submitted_by="ana")
    assert delivery.awaiting_resume and delivery.resume_command == f"dw resume {view.run_id}"
    assert engine.show(view.run_id)["status"] == "suspended"  # delivery wrote no revision
    done = engine.resume(view.run_id)
    assert done.status == "succeeded"
    shown = engine.show(view.run_id)
    output = shown["steps"]["approval"]["output"]
    assert output["payload"] == {"approved": True}
    assert output["signal"]["id"] == delivery.receipt.id
    assert output["signal"]["submittedBy"] == "ana"
    assert shown["steps"]["deploy"]["status"] == "succeeded"
    assert shown["jobs"]["rollback"] == "skipped"
    applied = [e for e in shown["journal"] if e["type"] == "answer_applied"]
    assert len(applied) == 1
    assert _wait_keys(store) == []


def test_a_false_answer_skips_ship(engine: Engine) -> None:
    view = engine.run(approval_workflow())
    engine.signal(view.waits[0].wait_id, NO)
    engine.resume(view.run_id)
    shown = engine.show(view.run_id)
    assert shown["status"] == "succeeded"
    assert shown["jobs"]["ship"] == "skipped"


def test_a_second_signal_is_refused_with_the_stored_receipt(engine: Engine) -> None:
    view = engine.run(approval_workflow())
    first = engine.signal(view.waits[0].wait_id, YES)
    with pytest.raises(Refusal) as refused:
        engine.signal(view.waits[0].wait_id, YES)
    assert refused.value.kind == "already_settled"
    assert first.receipt.id in refused.value.message
    assert refused.value.details["receiptId"] == first.receipt.id


def test_resume_without_an_outcome_is_refused_and_saves_nothing(
    engine: Engine, store: MemoryStore
) -> None:
    view = engine.run(approval_workflow())
    before = store.list(keys.run_root(view.run_id))
    with pytest.raises(Refusal) as refused:
        engine.resume(view.run_id)
    assert refused.value.kind == "open_wait"
    assert f"dw signal {view.waits[0].wait_id}" in refused.value.message
    assert store.list(keys.run_root(view.run_id)) == before


def test_bad_payload_is_refused_writes_nothing_and_keeps_the_wait_open(
    engine: Engine, store: MemoryStore
) -> None:
    view = engine.run(approval_workflow())
    wait_id = view.waits[0].wait_id
    for payload, rule in [('{"approved": "yes-please"}', "type"), ("{", "json_syntax"),
                          ('{"approved": NaN}', None), ("{}", "required")]:
        with pytest.raises(Refusal) as refused:
            engine.signal(wait_id, payload)
        assert refused.value.kind == "invalid_payload"
        assert "yes-please" not in refused.value.message
        assert wait_id in refused.value.message
        if rule:
            assert refused.value.details["rule"] == rule
    assert store.list(keys.outcomes_root()) == []
    engine.signal(wait_id, YES)


def test_secret_is_refused_unless_bypassed_and_the_bypass_is_recorded(engine: Engine) -> None:
    view = engine.run(approval_workflow())
    wait_id = view.waits[0].wait_id
    secret = '{"approved": true, "note": "AKIAABCDEFGHIJKLMNOP"}'
    with pytest.raises(Refusal) as refused:
        engine.signal(wait_id, secret)
    assert refused.value.kind == "secret_detected"
    assert "AKIA" not in refused.value.message
    engine.signal(wait_id, secret, secret_detection=False)
    engine.resume(view.run_id)
    shown = engine.show(view.run_id)
    assert shown["steps"]["approval"]["output"]["signal"]["secretDetection"] is False


def test_unknown_and_malformed_wait_ids(engine: Engine) -> None:
    engine.run(approval_workflow())
    for wait_id in ("not-a-uuid", "00000000-0000-4000-8000-000000000000"):
        with pytest.raises(Refusal) as refused:
            engine.signal(wait_id, YES)
        assert refused.value.kind == "unknown"


def test_wait_ids_are_trimmed_and_lowercased(engine: Engine) -> None:
    view = engine.run(approval_workflow())
    delivery = engine.signal(f"  {view.waits[0].wait_id.upper()} ", YES)
    assert delivery.wait_id == view.waits[0].wait_id


def test_lazy_deadline_signal_refused_expired_then_resume_fails_the_step(
    engine: Engine, clock: FakeClock
) -> None:
    view = engine.run(approval_workflow(timeout=60))
    clock.advance(61)
    with pytest.raises(Refusal) as refused:
        engine.signal(view.waits[0].wait_id, YES)
    assert refused.value.kind == "expired"
    assert "expired at 2026-01-01T00:01:0" in refused.value.message
    assert f"dw resume {view.run_id}" in refused.value.message
    done = engine.resume(view.run_id)
    shown = engine.show(view.run_id)
    assert shown["steps"]["approval"]["error"] == "wait_timeout"
    assert shown["jobs"]["rollback"] == "succeeded"  # the failed branch ran
    assert done.status == "succeeded"


def test_signal_accepted_before_the_deadline_holds_after_it(
    engine: Engine, clock: FakeClock
) -> None:
    view = engine.run(approval_workflow(timeout=60))
    engine.signal(view.waits[0].wait_id, YES)
    clock.advance(3600)
    assert engine.resume(view.run_id).status == "succeeded"
    assert engine.show(view.run_id)["steps"]["approval"]["status"] == "succeeded"


def test_open_waits_settles_overdue_waits(engine: Engine, clock: FakeClock) -> None:
    view = engine.run(approval_workflow(timeout=60))
    [listed] = engine.open_waits()
    assert not listed.expired and listed.next_command.startswith("dw signal ")
    clock.advance(61)
    [overdue] = engine.open_waits()
    assert overdue.expired and overdue.next_command == f"dw resume {view.run_id}"
    with pytest.raises(Refusal) as refused:
        engine.signal(view.waits[0].wait_id, YES)
    assert refused.value.kind == "expired"


def test_resume_settles_an_expired_wait_itself(engine: Engine, clock: FakeClock) -> None:
    view = engine.run(approval_workflow(timeout=60))
    clock.advance(61)
    engine.resume(view.run_id)
    assert engine.show(view.run_id)["steps"]["approval"]["error"] == "wait_timeout"


def test_for_each_opens_one_wait_per_item_and_resumes_only_when_all_settled(
    engine: Engine
) -> None:
    view = engine.run(approval_workflow(for_each=["eu", "us"]))
    assert [w.step for w in view.waits] == ["approval[0]", "approval[1]"]
    assert len({w.wait_id for w in view.waits}) == 2
    engine.signal(view.waits[0].wait_id, YES)
    with pytest.raises(Refusal) as refused:
        engine.resume(view.run_id)
    assert refused.value.kind == "open_wait"
    engine.signal(view.waits[1].wait_id, YES)
    assert engine.resume(view.run_id).status == "succeeded"
    assert engine.show(view.run_id)["jobs"]["ship"] == "succeeded"


def test_resume_uses_the_run_snapshot_not_a_new_workflow(engine: Engine) -> None:
    view = engine.run(approval_workflow())
    engine.signal(view.waits[0].wait_id, YES)
    engine.resume(view.run_id)
    assert engine.show(view.run_id)["steps"]["compile"]["output"]["message"] == "compiling prod"


def test_run_ids_are_unique_and_a_reused_live_id_is_refused(engine: Engine) -> None:
    first = engine.run(plain_workflow(), run_id="r-1")
    assert first.status == "succeeded"
    with pytest.raises(Refusal) as refused:
        engine.run(plain_workflow(), run_id="r-1")
    assert refused.value.kind == "run_exists"


def test_a_reused_deleted_id_gets_new_wait_ids(engine: Engine, store: MemoryStore) -> None:
    old = engine.run(approval_workflow(), run_id="again")
    engine.delete("again")
    assert store.list("") == []
    new = engine.run(approval_workflow(), run_id="again")
    assert new.waits[0].wait_id != old.waits[0].wait_id
    with pytest.raises(Refusal) as refused:
        engine.signal(old.waits[0].wait_id, YES)
    assert refused.value.kind == "unknown"


def test_resume_of_succeeded_is_a_noop_and_of_cancelled_is_refused(engine: Engine) -> None:
    done = engine.run(plain_workflow())
    assert engine.resume(done.run_id).status == "succeeded"
    view = engine.run(approval_workflow())
    engine.cancel(view.run_id)
    with pytest.raises(Refusal) as refused:
        engine.resume(view.run_id)
    assert refused.value.kind == "not_suspended"


def test_missing_runs_are_refused(engine: Engine) -> None:
    for action in (engine.resume, engine.cancel, engine.delete, engine.show):
        with pytest.raises(Refusal) as refused:
            action("nope")
        assert refused.value.kind == "run_not_found"


def test_allow_failure_and_fail_steps(engine: Engine, make_engine: MakeEngine) -> None:
    from reference_engine.workflows.loader import parse_workflow

    wf = parse_workflow({"name": "f", "jobs": {
        "a": {"steps": [{"name": "oops", "fail": "tolerated", "allow_failure": True},
                        {"name": "sh", "shell": "echo out; exit 3", "allow_failure": True},
                        {"name": "after", "log": "still here"}]},
        "b": {"depends_on": ["a"], "steps": [{"name": "boom", "fail": "no"}]},
    }})
    view = engine.run(wf)
    shown = engine.show(view.run_id)
    assert shown["steps"]["after"]["status"] == "succeeded"
    assert shown["steps"]["sh"]["output"] == {"exit_code": 3, "output": "out\n"}
    assert view.status == "failed"


def test_python_step_gets_a_read_only_context(engine: Engine) -> None:
    from reference_engine.workflows.loader import parse_workflow

    wf = parse_workflow({"name": "py", "inputs": {"who": "x"}, "jobs": {
        "a": {"steps": [{"name": "call", "python": "support.engine_steps:echo_inputs"},
                        {"name": "mutate", "python": "support.engine_steps:mutate",
                         "allow_failure": True}]},
    }})
    view = engine.run(wf)
    shown = engine.show(view.run_id)
    assert shown["steps"]["call"]["output"] == {"inputs": {"who": "x"}}
    assert shown["steps"]["mutate"]["status"] == "failed"


def test_runs_lists_every_run(engine: Engine) -> None:
    a = engine.run(plain_workflow())
    b = engine.run(approval_workflow())
    listed = {r["runId"]: r["status"] for r in engine.runs()}
    assert listed == {a.run_id: "succeeded", b.run_id: "suspended"}
    json.dumps(engine.runs())


def test_a_registration_over_256_kib_fails_the_step_before_suspending(
    engine: Engine, store: MemoryStore
) -> None:
    from reference_engine.workflows.loader import parse_workflow

    schema = {"type": "string", "enum": ["x" * 1000 + str(i) for i in range(300)]}
    wf = parse_workflow({"name": "big", "jobs": {"a": {"steps": [
        {"name": "w", "wait_for_signal": {"timeout": 60, "schema": schema}}]}}})
    view = engine.run(wf)
    assert view.status == "failed"
    assert "262144 byte limit" in (engine.show(view.run_id)["steps"]["w"]["error"] or "")
    assert store.list(keys.waits_root()) == []


def test_a_forged_outcome_fails_the_step_unreadable_and_keeps_its_bytes(
    engine: Engine, store: MemoryStore
) -> None:
    view = engine.run(approval_workflow())
    wait_id = view.waits[0].wait_id
    forged = b'{"v": 2, "kind": "accepted", "forged": true}'
    store.put(keys.outcome_key(wait_id), forged)
    with pytest.raises(Refusal) as refused:
        engine.signal(wait_id, YES)
    assert refused.value.kind == "unreadable"
    done = engine.resume(view.run_id)
    shown = engine.show(view.run_id)
    assert shown["steps"]["approval"]["error"] == "wait_unreadable"
    assert shown["jobs"]["rollback"] == "succeeded"  # the failed branch applies
    assert done.status == "succeeded"
    assert store.get(keys.outcome_key(wait_id)) == forged


def test_an_outcome_with_another_fingerprint_is_unreadable_at_resume(
    engine: Engine, store: MemoryStore
) -> None:
    view = engine.run(approval_workflow())
    wait_id = view.waits[0].wait_id
    engine.signal(wait_id, YES)
    key = keys.outcome_key(wait_id)
    record = json.loads(store.get(key) or b"")
    record["fingerprint"] = "0" * 64
    store.put(key, json.dumps(record).encode())
    engine.resume(view.run_id)
    assert engine.show(view.run_id)["steps"]["approval"]["error"] == "wait_unreadable"
    assert json.loads(store.get(key) or b"")["fingerprint"] == "0" * 64


def test_a_step_error_quoting_a_credential_is_redacted(engine: Engine) -> None:
    from reference_engine.workflows.loader import parse_workflow

    wf = parse_workflow({"name": "leaky", "jobs": {
        "a": {"steps": [{"name": "call", "python": "support.engine_steps:leak"}]}}})
    view = engine.run(wf)
    shown = json.dumps(engine.show(view.run_id))
    assert view.status == "failed"
    assert "AKIA" not in shown and "redacted" in shown


def test_a_store_error_while_saving_is_not_recorded_as_a_step_failure(
    store: MemoryStore, make_engine: MakeEngine
) -> None:
    from dw_testing.kit.faults import FaultyStore
    from reference_engine.errors import StoreError

    faulty = FaultyStore(store)
    faulty.inject("put_if_absent", "raise-before",
                  key=keys.revision_key("r", 2).rsplit("/", 1)[0] + "/0000000002")
    with pytest.raises(StoreError):
        make_engine(faulty).run(plain_workflow(), run_id="r")
    faulty.assert_all_hit()
    engine = make_engine(store, claim_patience=False)
    assert engine.show("r")["steps"] == {}
    assert engine.resume("r").status == "succeeded"  # the claim was released: no wait
