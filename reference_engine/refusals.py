"""``Refusal``: the engine said no. One kind, one sentence, the next command."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

REFUSAL_KINDS = frozenset({
    "unknown", "invalid_payload", "secret_detected", "expired",
    "already_settled", "closed", "unreadable", "unsupported",
    "not_suspended", "wrong_run", "not_waiting_here", "open_wait",
    "busy", "run_not_found", "run_exists", "too_large", "invalid_submitter",
})


class Refusal(Exception):
    """An operation refused. ``message`` is one sentence plus the next command to run.

    ``details`` holds ids and paths only, never a payload value or a secret.
    """

    def __init__(self, kind: str, message: str, details: Mapping[str, Any] | None = None) -> None:
        if kind not in REFUSAL_KINDS:
            raise ValueError(f"unknown refusal kind {kind!r}; use one of {sorted(REFUSAL_KINDS)}")
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.details: dict[str, Any] = dict(details or {})

    def to_json(self) -> dict[str, Any]:
        return {"error": {"refusal": self.kind, "message": self.message, "details": self.details}}
