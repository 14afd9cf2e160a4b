"""Index hints: ``ready-runs/<runId>/<waitId>`` and ``wait-deadlines/.../<runId>/<waitId>``.

A hint only says where a scheduler pass should look: the key carries everything a pass
needs, and the value is a small record for people reading the store. The outcome and the
run revision stay the only truth, so a hint is never trusted and never needs decoding to
be used; :func:`decode_hint` exists for inspection and the sweep.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reference_engine.records import decoding
from reference_engine.records.decoding import field_num, field_str

READY = "ready"  # a wait of the run was settled: the run may be ready to resume
DUE = "due"  # a wait of the run falls due at ``at``
HINT_KINDS = (READY, DUE)


@dataclass(frozen=True)
class Hint:
    kind: str
    run_id: str
    wait_id: str
    at: float  # READY: when the wait was settled; DUE: the wait's deadline
    reason: str = ""  # READY: the outcome kind that settled it

    def encode(self) -> bytes:
        obj = {"v": decoding.VERSION, "kind": self.kind, "runId": self.run_id,
               "waitId": self.wait_id, "at": self.at}
        if self.reason:
            obj["reason"] = self.reason
        return decoding.dump(obj)


def decode_hint(data: bytes | None) -> decoding.Decoded[Hint]:
    return decoding.decode_v2(data, "hint", _hint_from)


def _hint_from(obj: dict[str, Any]) -> Hint:
    kind = field_str(obj, "kind")
    if kind not in HINT_KINDS:
        raise decoding.SchemaError(f"field 'kind' must be one of {list(HINT_KINDS)}")
    return Hint(kind=kind, run_id=field_str(obj, "runId"), wait_id=field_str(obj, "waitId"),
                at=field_num(obj, "at"), reason=field_str(obj, "reason", optional=True))
