"""Delivery of a signal or a typed answer (docs/explanation/answers.md).

Delivery writes only the outcome record and its ready hint for the scheduler (and, at
most, a lazy ``timed_out`` or the rebuilt registration of a legacy run). It never takes
the run claim and never writes a run revision: the run changes only at the next resume.
A static test reads this source to keep it that way.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reference_engine.clock import Clock
from reference_engine.records.decoding import Absent, Found, Unreadable, iso
from reference_engine.records.outcome import ACCEPTED, TIMED_OUT, Outcome, Receipt, settled_by
from reference_engine.records.registration import Registration
from reference_engine.records.run import SUSPENDED, WAITING, RunRecord, StepRecord
from reference_engine.records.run_store import newest_revision, run_ids
from reference_engine.records.views import Delivery, ReceiptView
from reference_engine.refusals import Refusal
from reference_engine.secrets import SecretRefused, scan_or_refuse
from reference_engine.waits.budget import applied_cost, check_budget, check_submitter
from reference_engine.waits.index import drop_ready_hint
from reference_engine.waits.outcomes import (
    WaitFacts,
    outcome_at,
    read_outcome,
    remove_outcome,
    settle,
)
from reference_engine.waits.payloads import PayloadError, parse_payload, validate_payload
from reference_engine.waits.registration import (
    normalize_wait_id,
    read_registration,
    register,
)

_ITERATION = re.compile(r"\[(\d+)\]$")
SIGNAL_HINT = "dw signal {wait} --payload '<json>'"
ANSWER_HINT = "dw answer {run} {wait} '<json>'"


@dataclass(frozen=True)
class Request:
    wait_id: str
    payload: str
    submitted_by: str | None
    secret_detection: bool
    run_id: str | None = None  # set for ``dw answer``


def default_submitter() -> str:
    return os.environ.get("USER") or os.environ.get("USERNAME") or "unknown"


# --- refusals: each names the wait and the next command, never the payload --------------

def _unknown(shown: str) -> Refusal:
    return Refusal("unknown", f"No open wait has the id {shown}. List the open waits: dw waits",
                   {"waitId": shown})


def _unreadable(wait_id: str) -> Refusal:
    return Refusal("unreadable", f"The stored record of wait {wait_id} cannot be read, so no "
                   "signal can be delivered to it. Inspect the run: dw runs",
                   {"waitId": wait_id})


def _closed(wait_id: str, why: str) -> Refusal:
    return Refusal("closed", f"Wait {wait_id} was closed before a signal arrived: {why}. "
                   "List the waits still open: dw waits", {"waitId": wait_id})


def _run_ended(wait_id: str, record: RunRecord, step: StepRecord) -> Refusal:
    """The run ended: either before any signal, or after one that its step kept."""
    output = step.output if isinstance(step.output, Mapping) else {}
    signal = output.get("signal")
    receipt = signal.get("id") if isinstance(signal, Mapping) else None
    if not isinstance(receipt, str):
        return _closed(wait_id, f"run {record.run_id} has {record.status}")
    return Refusal("closed", f"Wait {wait_id} already took signal {receipt}, and then run "
                   f"{record.run_id} {record.status}; it takes no other. See what the step "
                   f"kept: dw show {record.run_id}",
                   {"waitId": wait_id, "runId": record.run_id, "receiptId": receipt})


def refusal_for(stored: Outcome) -> Refusal:
    """Answer a delivery that lost from what is stored."""
    wid, run = stored.wait_id, stored.run_id
    details: dict[str, Any] = {"waitId": wid, "runId": run, "outcome": stored.kind}
    if stored.kind == ACCEPTED:
        assert stored.receipt is not None
        details["receiptId"] = stored.receipt.id
        return Refusal("already_settled", f"Wait {wid} is already settled: run {run} received "
                       f"signal {stored.receipt.id}. Resume the run: dw resume {run}", details)
    if stored.kind == TIMED_OUT:
        details["deadline"] = iso(stored.deadline)
        return Refusal("expired", f"Wait {wid} expired at {iso(stored.deadline)} and no longer "
                       "accepts a signal. Resume the run to fail the step with wait_timeout: "
                       f"dw resume {run}", details)
    refusal = _closed(wid, f"run {run} was cancelled or ended")
    refusal.details.update(details)
    return refusal


# --- finding the registration ------------------------------------------------------------

def _holder(store: Any, wait_id: str) -> tuple[RunRecord, str, StepRecord] | None:
    """The run whose newest revision holds ``wait_id`` in a step: the engine's only scan."""
    for run_id in run_ids(store):
        newest = newest_revision(store, run_id)
        if not isinstance(newest.decoded, Found):
            continue
        record = newest.decoded.record
        for name, step in record.steps.items():
            if step.wait is not None and step.wait.id == wait_id:
                return record, name, step
    return None


def _rebuild(store: Any, wait_id: str, now: float) -> tuple[Registration, bytes]:
    """Neither registration nor outcome: rebuild a legacy run's registration, or refuse."""
    found = _holder(store, wait_id)
    if found is None:
        raise _unknown(wait_id)
    record, name, step = found
    assert step.wait is not None
    if record.ended:
        raise _run_ended(wait_id, record, step)
    if step.status != WAITING:
        raise _closed(wait_id, f"step {name} of run {record.run_id} is {step.status}")
    match = _ITERATION.search(name)
    rebuilt = Registration(
        wait_id=wait_id, workflow=record.workflow, run_id=record.run_id, job=step.job,
        step=name, iteration=int(match.group(1)) if match else 0, attempt=1,
        deadline=step.wait.deadline, schema=dict(step.wait.schema), registered_at=now,
    )
    try:
        registered = register(store, rebuilt)
    except ValueError:
        raise _unreadable(wait_id) from None
    return registered.registration, registered.raw


def _registration(store: Any, wait_id: str, now: float) -> tuple[Registration, bytes]:
    reg = read_registration(store, wait_id)
    if isinstance(reg, Found):
        return reg.record, reg.raw
    if isinstance(reg, Unreadable):
        raise _unreadable(wait_id)
    out = read_outcome(store, wait_id)
    if isinstance(out, Found):
        raise refusal_for(out.record)
    if isinstance(out, Unreadable):
        raise _unreadable(wait_id)
    return _rebuild(store, wait_id, now)


# --- typed answer: the run named by the caller -------------------------------------------

def _check_answer_target(store: Any, run_id: str, wait_id: str) -> None:
    newest = newest_revision(store, run_id)
    if newest.n == 0:
        raise Refusal("run_not_found", f"No run has the id {run_id}; it never existed or was "
                      "deleted. List the runs: dw runs", {"runId": run_id, "waitId": wait_id})
    if isinstance(newest.decoded, Unreadable):
        raise Refusal("unreadable", f"The newest revision of run {run_id} cannot be read, so "
                      f"no answer can be delivered to it. Inspect it: dw show {run_id}",
                      {"runId": run_id, "waitId": wait_id})
    assert isinstance(newest.decoded, Found)
    record = newest.decoded.record
    owner: str | None = None
    reg = read_registration(store, wait_id)
    if isinstance(reg, Found):
        owner = reg.record.run_id
    elif isinstance(reg, Absent):
        out = read_outcome(store, wait_id)
        if isinstance(out, Found):
            owner = out.record.run_id
    if owner is not None and owner != run_id:
        raise Refusal("wrong_run", f"Wait {wait_id} belongs to another run, not run {run_id}. "
                      f"Answer it on its own run: dw answer {owner} {wait_id} '<json>'",
                      {"runId": run_id, "waitId": wait_id, "owner": owner})
    if record.status != SUSPENDED:
        raise Refusal("not_suspended", f"Run {run_id} is {record.status}, not suspended, so "
                      f"wait {wait_id} takes no answer now. See the run: dw show {run_id}",
                      {"runId": run_id, "waitId": wait_id, "status": record.status})
    for name, step in record.steps.items():
        if step.wait is None or step.wait.id != wait_id:
            continue
        if step.status == WAITING:
            return
        signal = step.output.get("signal") if isinstance(step.output, dict) else None
        if isinstance(signal, dict) and isinstance(signal.get("id"), str):
            raise Refusal("already_settled", f"Wait {wait_id} is already settled: step {name} "
                          f"of run {run_id} received answer {signal['id']}. See the run: "
                          f"dw show {run_id}",
                          {"runId": run_id, "waitId": wait_id, "receiptId": signal["id"]})
    raise Refusal("not_waiting_here", f"Run {run_id} is not waiting on wait {wait_id}. List "
                  "its open waits: dw waits", {"runId": run_id, "waitId": wait_id})


# --- delivery ----------------------------------------------------------------------------

def _awaiting_resume(store: Any, run_id: str, now: float) -> bool:
    """Whether the run is suspended with every wait decided (read-only)."""
    newest = newest_revision(store, run_id)
    if not isinstance(newest.decoded, Found) or newest.decoded.record.status != SUSPENDED:
        return False
    for step in newest.decoded.record.waiting_steps().values():
        assert step.wait is not None
        decided = read_outcome(store, step.wait.id, run_id)
        if isinstance(decided, Absent) and now <= step.wait.deadline:
            return False
    return True


def _check_run_can_take(store: Any, run_id: str, wait_id: str, cost: int, retry: str) -> None:
    """The run that will apply this answer is readable and has room for it."""
    newest = newest_revision(store, run_id)
    if newest.n == 0:
        return  # a legacy registration whose run is gone: the sweep's business
    if not isinstance(newest.decoded, Found):
        raise Refusal("unreadable", f"The newest revision of run {run_id} cannot be read, so "
                      f"no signal can be delivered to wait {wait_id}: it could never be "
                      f"applied. Inspect the run: dw show {run_id}",
                      {"runId": run_id, "waitId": wait_id})
    check_budget(store, newest.decoded.record, newest.size, wait_id, cost, retry)


def deliver(store: Any, clock: Clock, request: Request) -> Delivery:
    """Settle ``accepted`` on the wait, or raise the :class:`Refusal` that explains why not."""
    shown = request.wait_id.strip()[:80]
    wait_id = normalize_wait_id(request.wait_id)
    if wait_id is None:
        raise _unknown(shown)
    if request.run_id is not None:
        _check_answer_target(store, request.run_id, wait_id)
    now = clock.now()
    registration, raw = _registration(store, wait_id, now)
    if request.run_id is not None and registration.run_id != request.run_id:
        raise Refusal("wrong_run", f"Wait {wait_id} belongs to another run, not run "
                      f"{request.run_id}.", {"runId": request.run_id, "waitId": wait_id})
    facts = WaitFacts.of(wait_id, registration.run_id, registration.workflow,
                         registration.deadline, raw)
    decided = outcome_at(store, facts, now)
    if isinstance(decided, Found):
        raise refusal_for(decided.record)
    if isinstance(decided, Unreadable):
        raise _unreadable(wait_id)
    retry = (SIGNAL_HINT.format(wait=wait_id) if request.run_id is None
             else ANSWER_HINT.format(run=request.run_id, wait=wait_id))
    try:
        payload = parse_payload(request.payload)
        validate_payload(payload, registration.schema)
    except PayloadError as exc:
        raise Refusal("invalid_payload", f"Payload refused for wait {wait_id}; the wait stays "
                      f"open: {exc}. Send a payload that fits the schema: " + retry,
                      {"waitId": wait_id, "path": exc.path, "rule": exc.rule}) from None
    if request.secret_detection:
        refused: SecretRefused | None = None
        try:
            scan_or_refuse(payload)
        except SecretRefused as exc:
            refused = exc
        if refused is not None:
            # Raised outside the handler: the refusal carries no exception chain, so not
            # even a scanner error's own text (which may quote the value) travels with it.
            rule, why = refused.rule, str(refused)
            del refused
            raise Refusal("secret_detected", f"Payload refused for wait {wait_id}: {why}. "
                          "Remove the secret, or pass --no-secret-detection if it is none: "
                          + retry, {"waitId": wait_id, "rule": rule})
    submitted_by = request.submitted_by if request.submitted_by is not None \
        else default_submitter()
    check_submitter(submitted_by, wait_id, retry)
    receipt = Receipt(id=str(uuid.uuid4()), wait_id=wait_id, received_at=now,
                      submitted_by=submitted_by, secret_detection=request.secret_detection)
    _check_run_can_take(store, registration.run_id, wait_id,
                        applied_cost(payload, receipt.to_json()), retry)
    mine = facts.outcome(ACCEPTED, now, receipt=receipt, payload=payload)
    stored = settle(store, mine)
    if isinstance(stored, Absent):
        raise _closed(wait_id, f"run {registration.run_id} ended while the signal was in flight")
    if isinstance(stored, Unreadable):
        raise _unreadable(wait_id)
    if not settled_by(stored.record, mine):
        raise refusal_for(stored.record)
    # The winner looks again: a registration gone means the run ended meanwhile.
    if isinstance(read_registration(store, wait_id), Absent):
        remove_outcome(store, wait_id)
        drop_ready_hint(store, registration.run_id, wait_id)
        raise _closed(wait_id, f"run {registration.run_id} ended while the signal was in flight")
    run_id = registration.run_id
    return Delivery(
        wait_id=wait_id, run_id=run_id,
        receipt=ReceiptView(receipt.id, receipt.received_at, receipt.submitted_by),
        awaiting_resume=_awaiting_resume(store, run_id, now),
        resume_command=f"dw resume {run_id}", workflow=registration.workflow,
        job=registration.job, step=registration.step,
    )
