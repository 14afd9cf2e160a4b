"""What engine operations return: the stable ``--json`` shapes of docs/reference/cli.md."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reference_engine.records.decoding import iso


@dataclass(frozen=True)
class WaitView:
    wait_id: str
    job: str
    step: str
    deadline: float

    def to_json(self) -> dict[str, Any]:
        return {"waitId": self.wait_id, "job": self.job, "step": self.step,
                "deadline": iso(self.deadline)}


@dataclass(frozen=True)
class RunView:
    """A run after ``run``/``resume``/``cancel``. ``suspended`` means CLI exit code 3."""

    run_id: str
    workflow: str
    status: str
    waits: tuple[WaitView, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"runId": self.run_id, "workflow": self.workflow, "status": self.status,
                "waits": [w.to_json() for w in self.waits]}


@dataclass(frozen=True)
class ReceiptView:
    id: str
    received_at: float
    submitted_by: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "receivedAt": iso(self.received_at),
                "submittedBy": self.submitted_by}


@dataclass(frozen=True)
class Delivery:
    """A delivered signal or answer; the run changes only at the next resume."""

    wait_id: str
    run_id: str
    receipt: ReceiptView
    awaiting_resume: bool
    resume_command: str
    workflow: str = ""
    job: str = ""
    step: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"waitId": self.wait_id, "runId": self.run_id,
                "receipt": self.receipt.to_json(), "awaitingResume": self.awaiting_resume,
                "resumeCommand": self.resume_command, "workflow": self.workflow,
                "job": self.job, "step": self.step}


@dataclass(frozen=True)
class OpenWait:
    wait_id: str
    run_id: str
    workflow: str
    job: str
    step: str
    deadline: float
    expired: bool
    next_command: str
    schema: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"waitId": self.wait_id, "runId": self.run_id, "workflow": self.workflow,
                "job": self.job, "step": self.step, "deadline": iso(self.deadline),
                "expired": self.expired, "nextCommand": self.next_command}
