"""The wait registration record, ``waits/<waitId>``: the index of an open wait."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reference_engine.records import decoding
from reference_engine.records.decoding import field_int, field_num, field_obj, field_str

KIND = "signal"


@dataclass(frozen=True)
class Registration:
    wait_id: str
    workflow: str
    run_id: str
    job: str
    step: str
    iteration: int
    attempt: int
    deadline: float
    schema: Mapping[str, Any] = field(default_factory=dict)
    registered_at: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "v": decoding.VERSION, "kind": KIND, "waitId": self.wait_id, "workflow": self.workflow,
            "runId": self.run_id, "job": self.job, "step": self.step,
            "iteration": self.iteration, "attempt": self.attempt, "deadline": self.deadline,
            "schema": dict(self.schema), "registeredAt": self.registered_at,
        }

    def encode(self) -> bytes:
        return decoding.dump(self.to_json())


def fingerprint(registration_bytes: bytes) -> str:
    """What an outcome carries to prove which registration it settled."""
    return hashlib.sha256(registration_bytes).hexdigest()


def decode_registration(data: bytes | None, wait_id: str) -> decoding.Decoded[Registration]:
    """Decode ``waits/<wait_id>``; a record naming another wait is unreadable."""
    decoded = decoding.decode_v2(data, f"registration {wait_id}", _registration_from)
    if isinstance(decoded, decoding.Found) and decoded.record.wait_id != wait_id:
        return decoding.Unreadable(f"registration under {wait_id} names another wait")
    return decoded


def _registration_from(obj: dict[str, Any]) -> Registration:
    if obj.get("kind") != KIND:
        raise decoding.SchemaError("field 'kind' must be 'signal'")
    return Registration(
        wait_id=field_str(obj, "waitId"), workflow=field_str(obj, "workflow"),
        run_id=field_str(obj, "runId"), job=field_str(obj, "job"),
        step=field_str(obj, "step"), iteration=field_int(obj, "iteration"),
        attempt=field_int(obj, "attempt"), deadline=field_num(obj, "deadline"),
        schema=field_obj(obj, "schema"), registered_at=field_num(obj, "registeredAt"),
    )
