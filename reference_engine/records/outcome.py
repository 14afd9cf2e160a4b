"""The wait outcome record, ``wait-outcomes/<waitId>``: written once, by the first settler."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reference_engine.records import decoding
from reference_engine.records.decoding import field_bool, field_num, field_obj, field_str

ACCEPTED = "accepted"
TIMED_OUT = "timed_out"
CANCELLED = "cancelled"
OUTCOME_KINDS = (ACCEPTED, TIMED_OUT, CANCELLED)
# Strict recognition of the delivery record: a field this build does not know means a
# schema amendment it cannot judge, so the record is unreadable rather than guessed at.
OUTCOME_FIELDS = frozenset({"v", "kind", "waitId", "runId", "workflow", "fingerprint",
                            "deadline", "settledAt"})
ACCEPTED_FIELDS = OUTCOME_FIELDS | {"receipt", "payload"}
RECEIPT_FIELDS = frozenset({"id", "waitId", "receivedAt", "submittedBy", "secretDetection"})


def _known_fields(obj: dict[str, Any], allowed: frozenset[str], what: str) -> None:
    unknown = set(obj) - allowed
    if unknown:  # counted, not named: a stored name is not ours to repeat
        raise decoding.SchemaError(f"{what} has {len(unknown)} field(s) this engine does not know")


@dataclass(frozen=True)
class Receipt:
    id: str
    wait_id: str
    received_at: float
    submitted_by: str
    secret_detection: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "waitId": self.wait_id, "receivedAt": self.received_at,
            "submittedBy": self.submitted_by, "secretDetection": self.secret_detection,
        }

    @staticmethod
    def from_json(obj: dict[str, Any]) -> Receipt:
        _known_fields(obj, RECEIPT_FIELDS, "the receipt")
        return Receipt(
            id=field_str(obj, "id"), wait_id=field_str(obj, "waitId"),
            received_at=field_num(obj, "receivedAt"), submitted_by=field_str(obj, "submittedBy"),
            secret_detection=field_bool(obj, "secretDetection"),
        )


@dataclass(frozen=True)
class Outcome:
    kind: str
    wait_id: str
    run_id: str
    workflow: str
    fingerprint: str
    deadline: float
    settled_at: float
    receipt: Receipt | None = None
    payload: Any = None

    def to_json(self) -> dict[str, Any]:
        obj: dict[str, Any] = {
            "v": decoding.VERSION, "kind": self.kind, "waitId": self.wait_id, "runId": self.run_id,
            "workflow": self.workflow, "fingerprint": self.fingerprint,
            "deadline": self.deadline, "settledAt": self.settled_at,
        }
        if self.kind == ACCEPTED:
            assert self.receipt is not None, "an accepted outcome carries a receipt"
            obj["receipt"] = self.receipt.to_json()
            obj["payload"] = self.payload
        return obj

    def encode(self) -> bytes:
        return decoding.dump(self.to_json())


def settled_by(stored: Outcome, mine: Outcome) -> bool:
    """Whether ``stored`` is the outcome ``mine`` wrote: identity, never a create's boolean."""
    if stored.kind != mine.kind or stored.wait_id != mine.wait_id:
        return False
    if stored.kind == ACCEPTED:
        return (
            stored.receipt is not None and mine.receipt is not None
            and stored.receipt.id == mine.receipt.id
        )
    return stored.settled_at == mine.settled_at


def decode_outcome(
    data: bytes | None, wait_id: str, run_id: str | None = None
) -> decoding.Decoded[Outcome]:
    """Decode ``wait-outcomes/<wait_id>``; another wait's or another run's record is unreadable."""
    decoded = decoding.decode_v2(data, f"outcome {wait_id}", _outcome_from)
    if not isinstance(decoded, decoding.Found):
        return decoded
    record = decoded.record
    if record.wait_id != wait_id or (record.receipt and record.receipt.wait_id != wait_id):
        return decoding.Unreadable(f"outcome under {wait_id} names another wait")
    if run_id is not None and record.run_id != run_id:
        return decoding.Unreadable(f"outcome {wait_id} names another run")
    return decoded


def _outcome_from(obj: dict[str, Any]) -> Outcome:
    kind = field_str(obj, "kind")
    if kind not in OUTCOME_KINDS:
        raise decoding.SchemaError(f"field 'kind' must be one of {list(OUTCOME_KINDS)}")
    _known_fields(obj, ACCEPTED_FIELDS if kind == ACCEPTED else OUTCOME_FIELDS,
                  f"a {kind} outcome")
    receipt = None
    payload = None
    if kind == ACCEPTED:
        receipt = Receipt.from_json(field_obj(obj, "receipt"))
        if "payload" not in obj:
            raise decoding.SchemaError("an accepted outcome needs field 'payload'")
        payload = obj["payload"]
    return Outcome(
        kind=kind, wait_id=field_str(obj, "waitId"), run_id=field_str(obj, "runId"),
        workflow=field_str(obj, "workflow"),
        fingerprint=field_str(obj, "fingerprint", optional=True),
        deadline=field_num(obj, "deadline"), settled_at=field_num(obj, "settledAt"),
        receipt=receipt, payload=payload,
    )
