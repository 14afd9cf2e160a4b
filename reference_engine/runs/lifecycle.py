"""A run's end, cancel, delete and the sweep (docs/explanation/engine.md,
docs/explanation/answers.md).

End of a run, by its claim holder, in this order: settle ``cancelled`` on every open
wait (a signal that won keeps its outcome), copy receipts and payloads into the run
record and save, delete the registrations, delete the outcomes.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from reference_engine.records import keys
from reference_engine.records.claim import decode_lease
from reference_engine.records.compact import compacted
from reference_engine.records.decoding import Found, Unreadable
from reference_engine.records.outcome import ACCEPTED
from reference_engine.records.run import ENDED, RUNNING, WAITING, RunRecord, StepRecord, WaitRef
from reference_engine.records.run_states import all_entries, forget_run, move_run
from reference_engine.records.run_store import Newest, newest_revision, revision_numbers, run_ids
from reference_engine.records.views import OpenWait
from reference_engine.runs.consume import fail_wait, step_output_for_signal
from reference_engine.runs.executor import journal_event
from reference_engine.waits.index import all_due, delete_keys, forget_waits, ready_hints
from reference_engine.waits.outcomes import (
    WaitFacts,
    list_outcome_ids,
    outcome_at,
    read_outcome,
    remove_outcome,
    settle_cancelled,
)
from reference_engine.waits.registration import (
    list_registration_ids,
    read_registration,
    remove_registration,
    wait_id_for,
)
from reference_engine.workflows.model import Workflow

SWEEP_AFTER_S = 24 * 3600
KEEP_REVISIONS = 3

Saver = Callable[[RunRecord], RunRecord]


def _facts(store: Any, record: RunRecord, wait_id: str, deadline: float) -> WaitFacts:
    reg = read_registration(store, wait_id)
    raw = reg.raw if isinstance(reg, Found) else None
    return WaitFacts.of(wait_id, record.run_id, record.workflow, deadline, raw)


def adopt_unsaved_waits(store: Any, workflow: Workflow, record: RunRecord) -> RunRecord:
    """The record with every wait that was registered but never saved as waiting.

    A crash between registering a wait and saving its step leaves a registration no
    revision shows (docs/explanation/engine.md). Wait ids are deterministic, so the run finds them
    without a scan, and the end of the run closes them like any other open wait.
    """
    known = record.wait_refs()
    adopted = record
    for job in workflow.jobs.values():
        for step in job.steps:
            if not step.is_wait:
                continue
            for index in itertools.count():
                name = step.name if step.for_each is None else f"{step.name}[{index}]"
                wait_id = wait_id_for(record.run_nonce, job.name, step.name, index, 1)
                if wait_id not in known:
                    reg = read_registration(store, wait_id)
                    if not isinstance(reg, Found) or reg.record.run_id != record.run_id:
                        break  # iterations register in order: none after this one
                    r = reg.record
                    adopted = adopted.with_step(name, StepRecord(
                        job.name, WAITING, None, None, WaitRef(wait_id, r.schema, r.deadline)))
                if step.for_each is None:
                    break
    return adopted


def end_run(store: Any, record: RunRecord, status: str, now: float, save: Saver,
            event: dict[str, Any], workflow: Workflow | None = None) -> RunRecord:
    """Run the four lifetime steps and return the saved final record."""
    assert status in ENDED
    if workflow is not None and not record.legacy:
        record = adopt_unsaved_waits(store, workflow, record)
    final = record
    # 1. settle cancelled on open waits; 2. copy what won into the record.
    for name, step in sorted(record.waiting_steps().items()):
        assert step.wait is not None
        stored = settle_cancelled(store, _facts(store, record, step.wait.id,
                                                step.wait.deadline), now)
        won = stored.record if isinstance(stored, Found) else None
        if won is not None and won.kind == ACCEPTED:
            step = replace(step, output=step_output_for_signal(won))
        final = fail_wait(final.with_step(name, step), name, step, "cancelled", at=now,
                          outcome=won)
    final = replace(final, status=status).with_event(journal_event({**event, "at": now}))
    saved = save(compacted(final))  # an end always fits its record, whatever it held
    # 3. registrations, then 4. outcomes.
    finish_cleanup(store, saved)
    return saved


def finish_cleanup(store: Any, record: RunRecord) -> None:
    """Steps 3 and 4 of the lifetime, after the run's index hints; idempotent, so a retry
    after a crash completes them.

    An outcome the run could not read (its step failed ``wait_unreadable``) is left as
    it is: the engine never guesses at, nor destroys, a record it cannot read.
    """
    refs = record.wait_refs()
    # The index first: while a registration remains, has_leftovers() brings a retry here.
    forget_waits(store, record.run_id, [(wid, ref.deadline) for wid, (_n, ref) in refs.items()])
    for wait_id in sorted(refs):
        remove_registration(store, wait_id)
    for wait_id, (name, _ref) in sorted(refs.items()):
        if record.steps[name].error != "wait_unreadable":
            remove_outcome(store, wait_id)


def has_leftovers(store: Any, record: RunRecord) -> bool:
    """Whether an ended run still has wait records that :func:`finish_cleanup` removes."""
    return any(
        store.get(key) is not None
        for wait_id, (name, _ref) in record.wait_refs().items()
        for key in (keys.wait_key(wait_id), keys.outcome_key(wait_id))
        if key == keys.wait_key(wait_id) or record.steps[name].error != "wait_unreadable"
    )


def delete_run_records(store: Any, run_id: str, waits: dict[str, float],
                       workflow: str | None = None) -> None:
    """Remove the run's index hints, outcomes, registrations, revisions, then its claims.

    ``waits`` maps the wait ids the run record knows to their deadlines; ``workflow`` (when
    the run record could be read) names its listing entries.
    """
    if workflow is not None:
        forget_run(store, run_id, workflow)
    waits = dict(waits)
    for wid in list_registration_ids(store):
        reg = read_registration(store, wid)
        if isinstance(reg, Found) and reg.record.run_id == run_id:
            waits[wid] = reg.record.deadline
    for wid in list_outcome_ids(store):
        out = read_outcome(store, wid)
        if isinstance(out, Found) and out.record.run_id == run_id:
            waits.setdefault(wid, out.record.deadline)
    forget_waits(store, run_id, waits.items())
    delete_keys(store, [key for keys_ in ready_hints(store, keys.ready_prefix(run_id)).values()
                        for key in keys_])
    wait_ids = set(waits)
    for wid in sorted(wait_ids):
        remove_outcome(store, wid)
    for wid in sorted(wait_ids):
        remove_registration(store, wid)
    for n in revision_numbers(store, run_id):
        store.delete(keys.revision_key(run_id, n))
    for key in sorted(store.list(keys.claims_prefix(run_id))):
        store.delete(key)


@dataclass
class SweepCounts:
    registrations: int = 0
    outcomes: int = 0
    claims: int = 0
    revisions: int = 0
    hints: int = 0
    run_states: int = 0

    def to_json(self) -> dict[str, int]:
        return {"registrations": self.registrations, "outcomes": self.outcomes,
                "claims": self.claims, "revisions": self.revisions, "hints": self.hints,
                "runStates": self.run_states}


def _sweep_hints(store: Any, run_status: Callable[[str], str | None],
                 waiting_of: Callable[[str], set[str]]) -> int:
    """Remove index hints that point nowhere: their run is missing or ended, or (a ready
    hint) the wait is no longer open and its outcome is gone. Hints cost nothing to
    lose, so they go at once, without the 24 h grace of the records a signal may name."""
    stale: list[str] = []
    for run_id, hint_keys in ready_hints(store).items():
        state = run_status(run_id)
        if state is None or state in ENDED:
            stale.extend(hint_keys)
            continue
        waiting = waiting_of(run_id)
        for key in hint_keys:
            parsed = keys.parse_ready_key(key)
            if parsed is None or parsed[1] in waiting:
                continue  # the wait is open: a settler leaves its hint before the outcome
            if store.get(keys.outcome_key(parsed[1])) is None:
                stale.append(key)  # nothing settled there any more (consumed, or deleted)
    for entry in all_due(store):
        state = run_status(entry.run_id)
        if state is None or state in ENDED:
            stale.append(entry.key)
    delete_keys(store, stale)
    return len(stale)


def _sweep_run_states(store: Any, every_run: list[str],
                      newest_of: Callable[[str], Newest]) -> int:
    """Make the listing's index match the runs: drop entries that name a missing run or
    another status, and file a run that has none (a crash between a save and its entry,
    or a run older than the index). Counts the entries it changed."""
    entries: dict[str, list[tuple[str, str, str]]] = {}
    for key, status, workflow, run_id in all_entries(store):
        entries.setdefault(run_id, []).append((key, status, workflow))
    changed = 0
    for run_id in sorted(set(entries) | set(every_run)):
        newest = newest_of(run_id)
        record = newest.decoded.record if isinstance(newest.decoded, Found) else None
        wanted = None if record is None else keys.run_state_key(record.status,
                                                                 record.workflow, run_id)
        have = [key for key, _status, _workflow in entries.get(run_id, [])]
        for key in have:
            if key != wanted and (record is not None or newest.n == 0):
                if _may_be_announced(store, key, record):
                    continue
                store.delete(key)
                changed += 1
        if record is not None and wanted not in have:
            move_run(store, run_id, record.workflow, None, record.status)
            changed += 1
    return changed


def _may_be_announced(store: Any, key: str, record: RunRecord | None) -> bool:
    """A ``running`` entry of a run that is not (yet) running, while a claim on it is
    held: its owner files it before the revision that makes the run running, so it stays
    (see ``records/run_states.py``)."""
    parsed = keys.parse_run_state_key(key)
    if parsed is None or parsed[0] != RUNNING or (record is not None and record.ended):
        return False
    generations = sorted(store.list(keys.claims_prefix(parsed[2])))
    if not generations:
        return False
    decoded = decode_lease(store.get(generations[-1]))
    return not (isinstance(decoded, Found) and decoded.record.released)


def sweep(store: Any, now: float) -> SweepCounts:
    """Remove wait records of missing or ended runs past ``deadline + 24 h``, and stale
    index hints; prune ended runs."""
    counts = SweepCounts()
    seen: dict[str, Newest] = {}

    def newest_of(run_id: str) -> Newest:
        if run_id not in seen:
            seen[run_id] = newest_revision(store, run_id)
        return seen[run_id]

    def run_status(run_id: str) -> str | None:
        newest = newest_of(run_id)
        if isinstance(newest.decoded, Found):
            return newest.decoded.record.status
        return None if newest.n == 0 else "unreadable"

    def gone(run_id: str, deadline: float) -> bool:
        state = run_status(run_id)
        return (state is None or state in ENDED) and now > deadline + SWEEP_AFTER_S

    for wid in list_registration_ids(store):
        reg = read_registration(store, wid)
        if isinstance(reg, Found) and gone(reg.record.run_id, reg.record.deadline):
            remove_registration(store, wid)
            counts.registrations += 1
    for wid in list_outcome_ids(store):
        out = read_outcome(store, wid)
        if isinstance(out, Found) and gone(out.record.run_id, out.record.deadline):
            remove_outcome(store, wid)
            counts.outcomes += 1
    def waiting_of(run_id: str) -> set[str]:
        newest = newest_of(run_id)
        if not isinstance(newest.decoded, Found):
            return set()
        return {step.wait.id for step in newest.decoded.record.waiting_steps().values()
                if step.wait is not None}

    counts.hints = _sweep_hints(store, run_status, waiting_of)
    every_run = run_ids(store)
    counts.run_states = _sweep_run_states(store, every_run, newest_of)
    for run_id in every_run:
        if run_status(run_id) not in ENDED:
            continue
        for key in sorted(store.list(keys.claims_prefix(run_id))):
            store.delete(key)
            counts.claims += 1
        for n in revision_numbers(store, run_id)[:-KEEP_REVISIONS]:
            store.delete(keys.revision_key(run_id, n))
            counts.revisions += 1
    return counts


def list_open_waits(store: Any, now: float, *, workflow: str | None = None) -> list[OpenWait]:
    """Registered waits not yet applied: open ones, and timed-out ones awaiting a resume.

    Looking settles overdue waits as ``timed_out`` (lazy deadlines). It reads what it
    prints: each registration and its outcome. Only a timed-out wait costs a read of its
    run, to tell whether the resume has applied it yet. A wait without an outcome is open:
    a run ends only after settling ``cancelled`` on every open wait.
    """
    found: list[OpenWait] = []
    for wid in list_registration_ids(store):
        reg = read_registration(store, wid)
        if not isinstance(reg, Found):
            continue
        r = reg.record
        if workflow is not None and r.workflow != workflow:
            continue
        facts = WaitFacts.of(wid, r.run_id, r.workflow, r.deadline, reg.raw)
        decoded = outcome_at(store, facts, now)
        if isinstance(decoded, Found) and decoded.record.kind != "timed_out":
            continue
        if isinstance(decoded, Unreadable):
            continue
        expired = isinstance(decoded, Found)
        if expired:
            newest = newest_revision(store, r.run_id)
            if isinstance(newest.decoded, Found):
                run = newest.decoded.record
                step = run.steps.get(r.step)
                if run.ended or step is None or step.status != WAITING:
                    continue
        command = (f"dw resume {r.run_id}" if expired
                   else f"dw signal {wid} --payload '<json>'")
        found.append(OpenWait(wid, r.run_id, r.workflow, r.job, r.step, r.deadline,
                              expired, command, dict(r.schema)))
    return sorted(found, key=lambda w: (w.deadline, w.wait_id))
