"""Outcomes: one write-once record per wait; whoever settles first wins
(docs/explanation/answers.md).

``settle`` is create-then-read; the caller knows it won only through
:func:`~reference_engine.records.outcome.settled_by`. ``outcome_at`` makes deadlines
lazy: whoever looks after the deadline settles ``timed_out``. Every settler first leaves a
ready hint (``waits/index.py``), so the scheduler finds the run without a scan whatever
write a crash stopped at; the one exception is the resume's own consume, whose caller
applies the outcome at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reference_engine.records import keys
from reference_engine.records.decoding import ABSENT, Absent, Decoded
from reference_engine.records.io import create_then_read
from reference_engine.records.outcome import (
    CANCELLED,
    TIMED_OUT,
    Outcome,
    decode_outcome,
    settled_by,
)
from reference_engine.records.registration import fingerprint
from reference_engine.waits.index import leave_ready_hint


@dataclass(frozen=True)
class WaitFacts:
    """What a settler needs to know about one wait (from its registration or run record)."""

    wait_id: str
    run_id: str
    workflow: str
    deadline: float
    fingerprint: str  # sha256 of the registration bytes; "" when there is none (legacy)

    @staticmethod
    def of(wait_id: str, run_id: str, workflow: str, deadline: float,
           registration_raw: bytes | None) -> WaitFacts:
        fp = "" if registration_raw is None else fingerprint(registration_raw)
        return WaitFacts(wait_id, run_id, workflow, deadline, fp)

    def outcome(self, kind: str, settled_at: float, **extra: Any) -> Outcome:
        return Outcome(kind=kind, wait_id=self.wait_id, run_id=self.run_id,
                       workflow=self.workflow, fingerprint=self.fingerprint,
                       deadline=self.deadline, settled_at=settled_at, **extra)


def read_outcome(store: Any, wait_id: str, run_id: str | None = None) -> Decoded[Outcome]:
    return decode_outcome(store.get(keys.outcome_key(wait_id)), wait_id, run_id)


def settle(store: Any, outcome: Outcome, *, hint: bool = True) -> Decoded[Outcome]:
    """With ``hint``, leave the run's ready hint; then create the outcome unless one
    exists, and return what is stored.

    The hint goes first, so a settler that dies after its create has always left one. A
    hint whose outcome never came (the settler died before its create, or lost to
    another) names the wait's run and wait, as the winner's does: a pass keeps it while
    that wait is open and drops it once the wait is decided or the run ended.

    Absent means the record was deleted between the create and the read: the run ended.
    """
    if hint:
        leave_ready_hint(store, outcome.run_id, outcome.wait_id, outcome.kind,
                         outcome.settled_at)
    stored = create_then_read(store, keys.outcome_key(outcome.wait_id), outcome.encode())
    return decode_outcome(stored, outcome.wait_id, outcome.run_id)


def outcome_at(store: Any, facts: WaitFacts, now: float, *,
               hint: bool = True) -> Decoded[Outcome]:
    """The wait's outcome; absent and past its deadline, settle ``timed_out`` first."""
    decoded = read_outcome(store, facts.wait_id, facts.run_id)
    if isinstance(decoded, Absent) and now > facts.deadline:
        return settle(store, facts.outcome(TIMED_OUT, now), hint=hint)
    return decoded


def settle_cancelled(store: Any, facts: WaitFacts, now: float) -> Decoded[Outcome]:
    """Close an open wait; an outcome that won earlier keeps its place."""
    decoded = read_outcome(store, facts.wait_id, facts.run_id)
    if not isinstance(decoded, Absent):
        return decoded
    return settle(store, facts.outcome(CANCELLED, now))


def remove_outcome(store: Any, wait_id: str) -> None:
    store.delete(keys.outcome_key(wait_id))


def list_outcome_ids(store: Any) -> list[str]:
    ids = []
    for key in sorted(store.list(keys.outcomes_root())):
        wait_id = keys.wait_id_from_key(key)
        if wait_id is not None:
            ids.append(wait_id)
    return ids


__all__ = [
    "ABSENT", "WaitFacts", "list_outcome_ids", "outcome_at", "read_outcome",
    "remove_outcome", "settle", "settle_cancelled", "settled_by",
]
