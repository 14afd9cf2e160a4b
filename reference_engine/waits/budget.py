"""What delivery checks so that an accepted answer can always be applied.

A run's revision holds every applied payload twice (the step output and the
``answer_applied`` journal event) and must stay under ``MAX_RUN_RECORD_BYTES``. An
answer whose application, together with the answers already accepted for the run,
would push the revision past that limit (less a reserve for the run's own later steps
and its end) is refused at delivery, while the sender can still send a smaller one:
once accepted, an answer that cannot be saved would stop the run for ever.

The submitter name is stored on the receipt, applied into the run and printed by
``dw show``; it is bounded, printable, and passes the secret gate like a payload.
"""

from __future__ import annotations

from typing import Any

from reference_engine.records.decoding import MAX_RUN_RECORD_BYTES, Found, dump
from reference_engine.records.outcome import ACCEPTED
from reference_engine.records.run import RunRecord
from reference_engine.refusals import Refusal
from reference_engine.secrets import SecretRefused, scan_or_refuse
from reference_engine.waits.outcomes import read_outcome

# Left free after every accepted answer is applied: later steps' outputs, the end-of-run
# event and a cancel's copy of the receipts all need room in the same record.
APPLY_RESERVE_BYTES = 64 * 1024
# Per applied answer, beyond its payload and receipt: step fields and the event's ids.
APPLY_OVERHEAD_BYTES = 512
MAX_SUBMITTER_CHARS = 200


def applied_cost(payload: Any, receipt: dict[str, Any]) -> int:
    """Bytes one applied answer adds to the run's revision (an upper estimate)."""
    return 2 * (len(dump({"payload": payload})) + len(dump(receipt))) + APPLY_OVERHEAD_BYTES


def check_budget(store: Any, record: RunRecord, size: int, wait_id: str, cost: int,
                 retry: str) -> None:
    """Refuse ``too_large`` unless the run's revision (``size`` bytes now) can take this
    answer and every answer already accepted for it, with :data:`APPLY_RESERVE_BYTES`
    to spare."""
    pending = 0
    for step in record.waiting_steps().values():
        if step.wait is None or step.wait.id == wait_id:
            continue
        stored = read_outcome(store, step.wait.id, record.run_id)
        if isinstance(stored, Found) and stored.record.kind == ACCEPTED:
            receipt = stored.record.receipt
            pending += applied_cost(stored.record.payload,
                                    receipt.to_json() if receipt is not None else {})
    budget = MAX_RUN_RECORD_BYTES - APPLY_RESERVE_BYTES
    if size + pending + cost > budget:
        raise Refusal(
            "too_large", f"Payload refused for wait {wait_id}; the wait stays open: with the "
            f"answers already accepted, run {record.run_id} would grow past its "
            f"{budget} byte budget, so the answer could never be applied. Send a smaller "
            "payload: " + retry,
            {"waitId": wait_id, "runId": record.run_id, "budget": budget})


def check_submitter(name: str, wait_id: str, retry: str) -> None:
    """Refuse ``invalid_submitter``: a name that is blank, too long, not printable text,
    or that looks like a credential. The message never quotes the name."""
    problem = None
    if not name.strip():
        problem = "it is blank"
    elif len(name) > MAX_SUBMITTER_CHARS:
        problem = f"it is {len(name)} characters, over the limit of {MAX_SUBMITTER_CHARS}"
    elif not name.isprintable():
        problem = "it holds a control or non-printable character"
    else:
        try:
            scan_or_refuse(name)
        except SecretRefused as refused:
            problem = f"it matched the secret rule '{refused.rule}'"
    if problem is not None:
        raise Refusal(
            "invalid_submitter", f"--submitted-by refused for wait {wait_id}: {problem}. "
            "Name the sender with printable text (a user or host name), e.g. "
            "--submitted-by alice: " + retry, {"waitId": wait_id})
