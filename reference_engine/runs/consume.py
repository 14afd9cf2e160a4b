"""The consume: a resume settles every waiting step from its outcome (docs/explanation/answers.md).

:func:`apply_outcomes` computes the one revision that applies every outcome with its
``answer_applied`` or ``wait_failed`` journal event; the caller saves it before any later
step runs, so a crash before the save leaves the outcomes for the next resume and a crash
after it replays from the record.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from reference_engine.records.decoding import Found, Unreadable
from reference_engine.records.outcome import ACCEPTED, CANCELLED, TIMED_OUT, Outcome
from reference_engine.records.registration import fingerprint
from reference_engine.records.run import FAILED, RUNNING, SUCCEEDED, RunRecord, StepRecord
from reference_engine.runs.executor import JOB_WAITING, journal_event
from reference_engine.waits.outcomes import WaitFacts, outcome_at
from reference_engine.waits.payloads import PayloadError, validate_payload
from reference_engine.waits.registration import read_registration


class OpenWaits(Exception):
    """Some waiting step has no outcome yet; the resume is refused with ``open_wait``."""

    def __init__(self, open_steps: list[tuple[str, StepRecord]]) -> None:
        super().__init__("open waits")
        self.open_steps = open_steps


def apply_outcomes(store: Any, record: RunRecord, now: float, *,
                   strict: bool = True) -> tuple[RunRecord, int]:
    """The record with every waiting step settled from its outcome, and how many applied.

    ``strict``: raise :class:`OpenWaits` (nothing to save) when any wait has no outcome
    yet; otherwise such steps stay waiting.
    """
    updated = record
    open_steps: list[tuple[str, StepRecord]] = []
    applied = 0
    for name, step in sorted(record.waiting_steps().items()):
        ref = step.wait
        assert ref is not None
        reg = read_registration(store, ref.id)
        reg_raw = reg.raw if isinstance(reg, Found) else None
        schema = reg.record.schema if isinstance(reg, Found) else ref.schema
        facts = WaitFacts.of(ref.id, record.run_id, record.workflow, ref.deadline, reg_raw)
        # No ready hint: this resume applies what it settles in the consume below.
        decoded = outcome_at(store, facts, now, hint=False)
        if isinstance(decoded, Unreadable) or isinstance(reg, Unreadable):
            updated = fail_wait(updated, name, step, "wait_unreadable", at=now)
            continue
        if not isinstance(decoded, Found):
            open_steps.append((name, step))
            continue
        outcome = decoded.record
        expected_fp = fingerprint(reg_raw) if reg_raw is not None else ""
        if outcome.fingerprint != expected_fp:
            updated = fail_wait(updated, name, step, "wait_unreadable", at=now)
            continue
        if outcome.kind == ACCEPTED:
            try:
                validate_payload(outcome.payload, schema)
            except PayloadError:
                updated = fail_wait(updated, name, step, "wait_unreadable", at=now)
                continue
            assert outcome.receipt is not None
            event = {"type": "answer_applied", "job": step.job, "step": name,
                     "waitId": ref.id, "receiptId": outcome.receipt.id,
                     "payload": outcome.payload, "at": now, **outcome_facts(outcome)}
            bypass = not outcome.receipt.secret_detection
            updated = updated.with_step(name, replace(
                step, status=SUCCEEDED, output=step_output_for_signal(outcome), error=None,
            )).with_event(journal_event(event, bypass=bypass))
            applied += 1
        elif outcome.kind == TIMED_OUT:
            updated = fail_wait(updated, name, step, "wait_timeout", at=now, outcome=outcome)
        elif outcome.kind == CANCELLED:
            updated = fail_wait(updated, name, step, "cancelled", at=now, outcome=outcome)
    if open_steps and strict:
        raise OpenWaits(open_steps)
    jobs = {j: (RUNNING if s == JOB_WAITING else s) for j, s in updated.jobs.items()}
    return replace(updated, jobs=jobs, status=RUNNING), applied


def outcome_facts(outcome: Outcome) -> dict[str, Any]:
    """What a journal event keeps of the outcome it applied: which kind won the wait and
    when it was written, so ``dw show --timeline`` can draw the race after cleanup."""
    return {"outcome": outcome.kind, "settledAt": outcome.settled_at}


def fail_wait(record: RunRecord, name: str, step: StepRecord, error: str, *,
              at: float | None = None, outcome: Outcome | None = None) -> RunRecord:
    event: dict[str, Any] = {"type": "wait_failed", "job": step.job, "step": name,
                             "error": error}
    if at is not None:
        event["at"] = at
    if outcome is not None:
        event.update(outcome_facts(outcome))
    return record.with_step(name, replace(step, status=FAILED, error=error)).with_event(
        journal_event(event))


def step_output_for_signal(outcome: Outcome) -> dict[str, Any]:
    """A wait step's output once its answer applies: the payload and the receipt."""
    assert outcome.receipt is not None
    return {"type": "wait_for_signal", "payload": outcome.payload,
            "signal": outcome.receipt.to_json()}
