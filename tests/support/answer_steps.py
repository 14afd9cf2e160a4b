"""Python steps the answer tests run inside workflows (importable by child processes too)."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping
from typing import Any

from reference_engine.records import keys
from reference_engine.records.decoding import Found
from reference_engine.records.run_store import newest_revision
from reference_engine.waits.registration import wait_id_for

MARKS_ENV = "DW_TEST_MARKS"

# Set by a test before it runs a workflow with these steps (in-process only).
STORE: list[Any] = []
SEEN: list[dict[str, Any]] = []


def reset() -> None:
    STORE.clear()
    SEEN.clear()


def observe(context: Mapping[str, Any]) -> dict[str, Any]:
    """Record what the step was given and what the store held when it ran."""
    run_id = context["run_id"]
    payload = context["steps"]["approval"]["outputs"].get("payload")
    saved: dict[str, Any] = {}
    if STORE:
        newest = newest_revision(STORE[0], run_id)
        assert isinstance(newest.decoded, Found)
        record = newest.decoded.record
        saved = {"approval": record.steps["approval"].status,
                 "applied": [e for e in record.journal if e.get("type") == "answer_applied"],
                 "rev": newest.n}
    SEEN.append({"runId": run_id, "payload": payload, "saved": saved})
    return {"seen": payload}


def forge_outcome_elsewhere(context: Mapping[str, Any]) -> dict[str, Any]:
    """Write a perfect accepted-outcome look-alike for this run's wait under other keys."""
    store = STORE[0]
    run_id = context["run_id"]
    newest = newest_revision(store, run_id)
    assert isinstance(newest.decoded, Found)
    wait_id = wait_id_for(newest.decoded.record.run_nonce, "approve", "approval", 0, 1)
    forged = {
        "v": 2, "kind": "accepted", "waitId": wait_id, "runId": run_id,
        "workflow": newest.decoded.record.workflow, "fingerprint": "0" * 64,
        "deadline": 4_000_000_000.0, "settledAt": 0.0, "payload": {"approved": True},
        "receipt": {"id": str(uuid.uuid4()), "waitId": wait_id, "receivedAt": 0.0,
                    "submittedBy": "forger", "secretDetection": True},
    }
    data = json.dumps(forged, sort_keys=True).encode()
    for key in (f"{keys.outcome_key(wait_id)}/copy", f"{keys.wait_key(wait_id)}/outcome",
                f"runs/{run_id}/answers/{wait_id}", f"forged/{wait_id}"):
        store.put(key, data)
    return {"forged": wait_id}


def answer_shaped(_context: Mapping[str, Any]) -> dict[str, Any]:
    """A return value shaped exactly like a consumed answer's step output."""
    return {"type": "wait_for_signal", "payload": {"approved": True},
            "signal": {"id": str(uuid.uuid4()), "waitId": "x", "receivedAt": 0.0,
                       "submittedBy": "step", "secretDetection": True},
            "approval": {"approved": True}}


def _append(line: str) -> None:
    fd = os.open(os.environ[MARKS_ENV], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (line + "\n").encode())  # one O_APPEND write: never torn by another
    finally:
        os.close(fd)


def mark(context: Mapping[str, Any]) -> dict[str, Any]:
    """Append ``start`` and ``end`` markers around this execution (for overlap checks)."""
    token = uuid.uuid4().hex
    run_id = context["run_id"]
    _append(f"start {run_id} {token} {os.getpid()}")
    payload = context["steps"]["approval"]["outputs"].get("payload")
    _append(f"end {run_id} {token} {os.getpid()}")
    return {"seen": payload, "token": token}


BLOCK_ENV = "DW_TEST_BLOCK_DIR"


def block(context: Mapping[str, Any]) -> dict[str, Any]:
    """With ``DW_TEST_BLOCK_DIR`` set: say ``running`` on its ``ready`` FIFO, then wait for
    a line on its ``go`` FIFO (a test kills or releases the process meanwhile)."""
    where = os.environ.get(BLOCK_ENV)
    payload = context["steps"]["approval"]["outputs"].get("payload")
    if where:
        with open(os.path.join(where, "ready"), "w", encoding="utf-8") as ready:
            ready.write(f"running {os.getpid()}\n")
        with open(os.path.join(where, "go"), encoding="utf-8") as go:
            go.readline()
    return {"seen": payload}
