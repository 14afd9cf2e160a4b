"""Records the record tests share: a registration and an accepted outcome of one wait."""

from __future__ import annotations

from typing import Any

from reference_engine.records.outcome import Outcome, Receipt
from reference_engine.records.registration import Registration

WID = "3e2d7c51-9a84-4f0b-8d6e-1c5b7a9f0e42"
OTHER = "00000000-0000-4000-8000-000000000001"


def registration(**changes: Any) -> Registration:
    fields: dict[str, Any] = {
        "wait_id": WID, "workflow": "w", "run_id": "r", "job": "j", "step": "s",
        "iteration": 0, "attempt": 1, "deadline": 100.0, "schema": {"type": "object"},
        "registered_at": 1.0,
    }
    fields.update(changes)
    return Registration(**fields)


def accepted(run_id: str = "r") -> Outcome:
    return Outcome("accepted", WID, run_id, "w", "fp", 100.0, 5.0,
                   Receipt("rid", WID, 5.0, "ana", True), {"approved": True})
