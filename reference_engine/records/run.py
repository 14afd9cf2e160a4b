"""The run record: one revision at ``runs/<runId>/rev/<n>``; the newest revision is the run.

v2 records carry ``"v": 2``. A record without ``v`` is read as the legacy v1 shape
(docs/explanation/engine.md): a waiting step says ``"waiting"`` and holds ``wait: {kind, id, schema,
deadline}``; there is no nonce or claim generation. Any other shape is unreadable.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from reference_engine.records import decoding
from reference_engine.records.decoding import (
    SchemaError,
    field_int,
    field_list,
    field_num,
    field_obj,
    field_opt_str,
    field_str,
    load_object,
    parse_iso,
    require_version,
)

RUNNING = "running"
SUSPENDED = "suspended"
SUCCEEDED = "succeeded"
FAILED = "failed"
CANCELLED = "cancelled"
RUN_STATUSES = (RUNNING, SUSPENDED, SUCCEEDED, FAILED, CANCELLED)
ENDED = (SUCCEEDED, FAILED, CANCELLED)

WAITING = "waiting_signal"
LEGACY_WAITING = "waiting"
STEP_STATUSES = ("pending", "running", "succeeded", "failed", "skipped", WAITING)

_LEGACY_NONCE_NS = uuid.UUID("6f1c7d3e-3b7a-4d6e-9a41-2c0d5e8b9f10")


@dataclass(frozen=True)
class WaitRef:
    """The wait a step opened: ``{id, schema, deadline}``."""

    id: str
    schema: Mapping[str, Any]
    deadline: float

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "schema": dict(self.schema), "deadline": self.deadline}


@dataclass(frozen=True)
class StepRecord:
    job: str
    status: str
    output: Any = None
    error: str | None = None
    wait: WaitRef | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "job": self.job, "status": self.status, "output": self.output, "error": self.error,
            "wait": None if self.wait is None else self.wait.to_json(),
        }


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    workflow: str
    source: Mapping[str, Any]
    run_nonce: str
    rev: int
    status: str
    generation: int
    created_at: float
    updated_at: float
    inputs: Mapping[str, Any] = field(default_factory=dict)
    jobs: Mapping[str, str] = field(default_factory=dict)
    steps: Mapping[str, StepRecord] = field(default_factory=dict)
    journal: tuple[Mapping[str, Any], ...] = ()
    legacy: bool = False

    @property
    def ended(self) -> bool:
        return self.status in ENDED

    def waiting_steps(self) -> dict[str, StepRecord]:
        return {n: s for n, s in self.steps.items() if s.status == WAITING and s.wait}

    def wait_refs(self) -> dict[str, tuple[str, WaitRef]]:
        """Every wait this run ever opened: ``waitId -> (step name, ref)``."""
        return {s.wait.id: (n, s.wait) for n, s in self.steps.items() if s.wait is not None}

    def with_step(self, name: str, step: StepRecord) -> RunRecord:
        return replace(self, steps={**self.steps, name: step})

    def with_job(self, name: str, status: str) -> RunRecord:
        return replace(self, jobs={**self.jobs, name: status})

    def with_event(self, event: Mapping[str, Any]) -> RunRecord:
        return replace(self, journal=(*self.journal, dict(event)))

    def to_json(self) -> dict[str, Any]:
        return {
            "v": decoding.VERSION, "runId": self.run_id, "workflow": self.workflow,
            "source": dict(self.source), "runNonce": self.run_nonce, "rev": self.rev,
            "status": self.status, "generation": self.generation,
            "createdAt": self.created_at, "updatedAt": self.updated_at,
            "inputs": dict(self.inputs), "jobs": dict(self.jobs),
            "steps": {n: s.to_json() for n, s in self.steps.items()},
            "journal": [dict(e) for e in self.journal],
        }

    def encode(self) -> bytes:
        return decoding.dump(self.to_json())


def legacy_nonce(run_id: str) -> str:
    """A v1 run has no nonce; derive a stable one so replays adopt the same wait ids."""
    return str(uuid.uuid5(_LEGACY_NONCE_NS, run_id))


def _time(obj: Mapping[str, Any], name: str) -> float:
    value = obj.get(name)
    if isinstance(value, str):
        return parse_iso(value)
    return field_num(obj, name)


def _wait_ref(obj: dict[str, Any], *, legacy: bool) -> WaitRef:
    if legacy and obj.get("kind") != "signal":
        raise SchemaError("a legacy wait must have kind 'signal'")
    return WaitRef(id=field_str(obj, "id"), schema=field_obj(obj, "schema"),
                   deadline=_time(obj, "deadline"))


def _step(obj: Any, *, legacy: bool) -> StepRecord:
    if not isinstance(obj, dict):
        raise SchemaError("every step must be an object")
    status = field_str(obj, "status")
    if legacy and status == LEGACY_WAITING:
        status = WAITING
    if status not in STEP_STATUSES:
        raise SchemaError(f"step status {status!r} is not one of {list(STEP_STATUSES)}")
    wait = obj.get("wait")
    ref = None if wait is None else _wait_ref(field_obj(obj, "wait"), legacy=legacy)
    if status == WAITING and ref is None:
        raise SchemaError("a waiting step needs field 'wait'")
    return StepRecord(job=field_str(obj, "job"), status=status, output=obj.get("output"),
                      error=field_opt_str(obj, "error"), wait=ref)


def _jobs(obj: Mapping[str, Any]) -> dict[str, str]:
    jobs = field_obj(obj, "jobs")
    if not all(isinstance(v, str) for v in jobs.values()):
        raise SchemaError("field 'jobs' must map job names to statuses")
    return jobs


def _journal(obj: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    events = field_list(obj, "journal")
    if not all(isinstance(e, dict) for e in events):
        raise SchemaError("every journal event must be an object")
    return tuple(events)


def _decode_v2(obj: dict[str, Any], rev: int) -> RunRecord:
    require_version(obj)
    status = field_str(obj, "status")
    if status not in RUN_STATUSES:
        raise SchemaError(f"run status {status!r} is not one of {list(RUN_STATUSES)}")
    if field_int(obj, "rev") != rev:
        raise SchemaError("field 'rev' differs from the revision key")
    return RunRecord(
        run_id=field_str(obj, "runId"), workflow=field_str(obj, "workflow"),
        source=field_obj(obj, "source"), run_nonce=field_str(obj, "runNonce"), rev=rev,
        status=status, generation=field_int(obj, "generation"),
        created_at=field_num(obj, "createdAt"), updated_at=field_num(obj, "updatedAt"),
        inputs=field_obj(obj, "inputs"), jobs=_jobs(obj),
        steps={n: _step(s, legacy=False) for n, s in field_obj(obj, "steps").items()},
        journal=_journal(obj),
    )


def _decode_v1(obj: dict[str, Any], rev: int) -> RunRecord:
    status = field_str(obj, "status")
    if status not in RUN_STATUSES:
        raise SchemaError(f"legacy run status {status!r} is unknown")
    run_id = field_str(obj, "runId")
    return RunRecord(
        run_id=run_id, workflow=field_str(obj, "workflow"), source=field_obj(obj, "source"),
        run_nonce=legacy_nonce(run_id), rev=rev, status=status, generation=0,
        created_at=_time(obj, "createdAt"), updated_at=_time(obj, "updatedAt"),
        inputs=field_obj(obj, "inputs"), jobs=_jobs(obj),
        steps={n: _step(s, legacy=True) for n, s in field_obj(obj, "steps").items()},
        journal=_journal(obj), legacy=True,
    )


def decode_run(data: bytes | None, run_id: str, rev: int) -> decoding.Decoded[RunRecord]:
    """Decode revision ``rev`` of ``run_id``; v2, or the legacy v1 shape, else unreadable."""
    if data is None:
        return decoding.ABSENT
    obj = load_object(data, decoding.MAX_RUN_RECORD_BYTES)
    if isinstance(obj, decoding.Unreadable):
        return obj
    try:
        record = _decode_v2(obj, rev) if "v" in obj else _decode_v1(obj, rev)
    except SchemaError as exc:
        return decoding.Unreadable(f"run {run_id} revision {rev}: {exc}")
    if record.run_id != run_id:
        return decoding.Unreadable(f"revision {rev} under run {run_id} names another run")
    return decoding.Found(record, data)
