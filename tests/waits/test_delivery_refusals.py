"""Every delivery refusal names the wait and a next command, and never quotes the payload."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.engine_flows import YES, approval_workflow

from dw_testing.kit.clock import FakeClock
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.refusals import Refusal
from reference_engine.stores.fs import FsStore
from reference_engine.stores.memory import MemoryStore

MARKER = "PAYLOAD-MARKER-7"


def _refusal(engine: Engine, wait_id: str, payload: str = YES) -> Refusal:
    with pytest.raises(Refusal) as refused:
        engine.signal(wait_id, payload)
    return refused.value


def test_each_refusal_names_the_wait_and_the_next_command(
    engine: Engine, store: MemoryStore, clock: FakeClock
) -> None:
    seen: dict[str, Refusal] = {}
    view = engine.run(approval_workflow(timeout=60))
    wait_id = view.waits[0].wait_id
    seen["invalid_payload"] = _refusal(engine, wait_id, json.dumps({"approved": MARKER}))
    seen["secret_detected"] = _refusal(
        engine, wait_id, json.dumps({"approved": True, "password": MARKER}))
    engine.signal(wait_id, YES)
    seen["already_settled"] = _refusal(engine, wait_id)
    expiring = engine.run(approval_workflow(timeout=60))
    clock.advance(61)
    seen["expired"] = _refusal(engine, expiring.waits[0].wait_id)
    cancelled = engine.run(approval_workflow())
    engine.cancel(cancelled.run_id)
    seen["closed"] = _refusal(engine, cancelled.waits[0].wait_id)
    broken = engine.run(approval_workflow())
    store.put(keys.wait_key(broken.waits[0].wait_id), b"{broken")
    seen["unreadable"] = _refusal(engine, broken.waits[0].wait_id)
    seen["unknown"] = _refusal(engine, "00000000-0000-4000-8000-00000000abcd")
    for kind, refusal in seen.items():
        assert refusal.kind == kind
        assert "dw " in refusal.message, kind
        assert MARKER not in refusal.message and MARKER not in json.dumps(refusal.to_json())
        if kind != "unknown":
            assert refusal.details["waitId"] in refusal.message, kind


def test_a_scanner_failure_refuses_the_delivery(
    engine: Engine, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import reference_engine.secrets as secrets

    def broken(_value: object) -> str | None:
        raise RuntimeError("scanner fell over")

    view = engine.run(approval_workflow())
    monkeypatch.setattr(secrets, "scan", broken)
    refusal = _refusal(engine, view.waits[0].wait_id)
    assert refusal.kind == "secret_detected"
    assert store.list(keys.outcomes_root()) == []


CHILD = """
import json, sys
from reference_engine.clock import clock_from_env
from reference_engine.engine import Engine
from reference_engine.stores.fs import FsStore

engine = Engine(FsStore(sys.argv[1], fsync=False), clock_from_env())
print(json.dumps(engine.signal(sys.argv[2], '{"approved": true}',
                               submitted_by="child").to_json()))
"""


def test_a_signal_from_another_process_is_applied(tmp_path: Path) -> None:
    clock = FakeClock(mirror_to=tmp_path / "clock")
    engine = Engine(FsStore(tmp_path / "store", fsync=False), clock, sleeper=clock.advance)
    view = engine.run(approval_workflow())
    done = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "store"),
                           view.waits[0].wait_id], capture_output=True, text=True,
                          env={**os.environ, **clock.env}, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    delivery = json.loads(done.stdout)
    assert delivery["receipt"]["submittedBy"] == "child" and delivery["awaitingResume"]
    assert engine.resume(view.run_id).status == "succeeded"
    signal = engine.show(view.run_id)["steps"]["approval"]["output"]["signal"]
    assert signal["id"] == delivery["receipt"]["id"]


@settings(max_examples=80, deadline=None)
@given(wait_text=st.one_of(st.text(max_size=40), st.uuids().map(str)),
       payload=st.one_of(st.text(max_size=200),
                         st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                                      lambda inner: st.lists(inner, max_size=3)
                                      | st.dictionaries(st.text(max_size=8), inner,
                                                        max_size=3),
                                      max_leaves=20).map(json.dumps)))
def test_delivery_of_anything_answers_or_refuses_never_crashes(wait_text: str,
                                                                payload: str) -> None:
    clock = FakeClock()
    store = MemoryStore()
    engine = Engine(store, clock, sleeper=clock.advance)
    view = engine.run(approval_workflow())
    for target in (wait_text, view.waits[0].wait_id):
        with contextlib.suppress(Refusal):
            engine.signal(target, payload)
        with contextlib.suppress(Refusal):
            engine.answer(view.run_id, target, payload)
