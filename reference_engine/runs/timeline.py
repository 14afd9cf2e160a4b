"""A run's history as a timeline: what ``dw show RUN --timeline`` draws.

Read-only. It walks every stored revision of the run (each event is placed at its own
``at``, or at the time of the revision that first carried it), the claim leases (who
held the run for each generation) and the outcomes still stored. Each wait gets a lane
on which the race is visible: when it opened, when its deadline fell, which outcome was
written first (the write-once record is the winner) and when the run applied it. A
delivery that lost writes nothing, so the picture shows the winner and the deadline it
raced with; a signal sent after the deadline settles ``timed_out`` itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reference_engine.records import keys
from reference_engine.records.claim import Lease, decode_lease
from reference_engine.records.decoding import Found, iso
from reference_engine.records.outcome import ACCEPTED, CANCELLED, TIMED_OUT
from reference_engine.records.run import RunRecord, WaitRef, decode_run
from reference_engine.records.run_store import revision_numbers
from reference_engine.waits.outcomes import read_outcome

# The shape of one mark on its lane.
OPEN = "open"  # a span starts: the run, a claim, a wait
CLOSE = "close"  # the span ends
POINT = "point"  # something happened
WON = "won"  # the outcome that was written first
LOST = "lost"  # a contender that came second (only the deadline is ever known)
SHAPES = (OPEN, CLOSE, POINT, WON, LOST)

RUN_LANE = "run"
CLAIM_LANE = "claim"
STEPS_LANE = "steps"
_OUTCOME_NAMES = {ACCEPTED: "signal", TIMED_OUT: "timed_out", CANCELLED: "cancel"}


@dataclass(frozen=True)
class Lane:
    key: str
    title: str

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "title": self.title}


@dataclass(frozen=True)
class Mark:
    """One thing on one lane at one time; ``order`` keeps the journal order at equal times."""

    at: float
    lane: str
    shape: str
    text: str
    order: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"at": iso(self.at), "lane": self.lane, "shape": self.shape, "text": self.text}


@dataclass(frozen=True)
class RunTimeline:
    run_id: str
    workflow: str
    status: str
    lanes: tuple[Lane, ...]
    marks: tuple[Mark, ...]
    missing_revisions: int = 0  # revisions already pruned by the sweep

    def to_json(self) -> dict[str, Any]:
        return {"runId": self.run_id, "workflow": self.workflow, "status": self.status,
                "lanes": [lane.to_json() for lane in self.lanes],
                "marks": [mark.to_json() for mark in self.marks],
                "missingRevisions": self.missing_revisions}


def wait_lane(wait_id: str) -> str:
    return f"wait:{wait_id}"


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


class _Builder:
    def __init__(self, store: Any, run_id: str, step_waits: Mapping[str, str]) -> None:
        self.store = store
        self.run_id = run_id
        self.step_waits = step_waits  # step name -> the wait it opened
        self.marks: list[Mark] = []
        self.applied: dict[str, Mapping[str, Any]] = {}  # waitId -> applying event

    def add(self, at: float, lane: str, shape: str, text: str) -> None:
        self.marks.append(Mark(at, lane, shape, text, len(self.marks)))

    # --- claims -------------------------------------------------------------------

    def lease(self, generation: int) -> Lease | None:
        decoded = decode_lease(self.store.get(keys.claim_key(self.run_id, generation)))
        return decoded.record if isinstance(decoded, Found) else None

    def claim_taken(self, generation: int, at: float, first: bool) -> None:
        lease = self.lease(generation)
        holder = (f"{lease.host} (pid {lease.pid}, holder {lease.holder[:8]})"
                  if lease is not None else "a holder whose lease is gone")
        self.add(at, CLAIM_LANE, OPEN, f"claim g{generation} taken by {holder}")
        if not first:
            self.add(at, RUN_LANE, POINT, f"resumed under claim g{generation}")

    def claim_left(self, generation: int, at: float, newer: bool) -> None:
        lease = self.lease(generation)
        if lease is not None and lease.released:
            self.add(at, CLAIM_LANE, CLOSE, f"claim g{generation} released")
        elif newer:
            self.add(at, CLAIM_LANE, CLOSE, f"claim g{generation} never released: "
                     "a later claim took the run over (its holder stopped or died)")
        elif lease is None:
            self.add(at, CLAIM_LANE, CLOSE, f"claim g{generation}: lease swept")
        else:
            self.add(at, CLAIM_LANE, CLOSE, f"claim g{generation} still held "
                     "(its holder is running, or died: a resume takes over after the ttl)")

    # --- journal events -----------------------------------------------------------

    def event(self, event: Mapping[str, Any], at: float) -> None:
        kind = str(event.get("type", "?"))
        step = f"{event.get('job', '?')}/{event.get('step', '?')}"
        wait_id = event.get("waitId")
        if kind == "run_started":
            self.add(at, RUN_LANE, OPEN, "run started")
        elif kind == "run_suspended":
            self.add(at, RUN_LANE, POINT, "suspended on its waits")
        elif kind in ("run_ended", "run_cancelled"):
            status = "cancelled" if kind == "run_cancelled" else event.get("status", "?")
            self.add(at, RUN_LANE, CLOSE, f"run ended: {status}")
        elif kind == "step_finished":
            error = f" ({event['error']})" if event.get("error") else ""
            self.add(at, STEPS_LANE, POINT, f"{step} {event.get('status', '?')}{error}")
        elif kind in ("job_skipped", "job_failed"):
            self.add(at, STEPS_LANE, POINT, f"job {event.get('job', '?')} {kind[4:]}")
        elif kind == "wait_opened" and isinstance(wait_id, str):
            self.add(at, wait_lane(wait_id), OPEN, f"wait {wait_id} opened by {step}")
        elif kind == "answer_applied" and isinstance(wait_id, str):
            self.applied[wait_id] = event
            self.add(at, wait_lane(wait_id), CLOSE,
                     f"resume applied the signal: {step} succeeded")
        elif kind == "wait_failed":
            self.wait_failed(event, at, step)
        else:
            self.add(at, RUN_LANE, POINT, kind)

    def wait_failed(self, event: Mapping[str, Any], at: float, step: str) -> None:
        wait_id = self.step_waits.get(str(event.get("step", "")))
        if wait_id is None:
            self.add(at, STEPS_LANE, POINT, f"{step} failed: {event.get('error', '?')}")
            return
        self.applied[wait_id] = event
        self.add(at, wait_lane(wait_id), CLOSE, f"{step} failed: {event.get('error', '?')}")

    # --- the race of each wait ------------------------------------------------------

    def race(self, record: RunRecord, step: str, ref: WaitRef) -> None:
        lane = wait_lane(ref.id)
        won = self.winner(record, step, ref)
        if won is None:
            self.add(ref.deadline, lane, POINT, f"deadline {iso(ref.deadline)}: no outcome "
                     "written yet (the first look after it writes timed_out)")
            return
        kind, settled_at, who = won
        name = _OUTCOME_NAMES.get(kind, kind)
        if kind == TIMED_OUT:
            who = " by the first look after the deadline (a late signal, dw waits, a resume)"
        self.add(settled_at, lane, WON, f"{name} written{who}: WON the wait")
        if kind == TIMED_OUT:
            self.add(ref.deadline, lane, POINT, f"deadline {iso(ref.deadline)} passed")
        else:
            self.add(ref.deadline, lane, LOST, f"deadline {iso(ref.deadline)}: lost, "
                     f"the {name} was written first")

    def winner(self, record: RunRecord, step: str,
               ref: WaitRef) -> tuple[str, float, str] | None:
        """``(kind, written at, by whom)`` of the outcome that won, from the stored record,
        else from the journal event that applied it, else from the step's receipt."""
        stored = read_outcome(self.store, ref.id, self.run_id)
        if isinstance(stored, Found):
            outcome = stored.record
            who = (f" by {outcome.receipt.submitted_by} (receipt {outcome.receipt.id[:8]})"
                   if outcome.receipt is not None else "")
            return outcome.kind, outcome.settled_at, who
        event = self.applied.get(ref.id, {})
        settled = _number(event.get("settledAt"))
        kind = event.get("outcome")
        output = record.steps[step].output
        signal = output.get("signal") if isinstance(output, Mapping) else None
        if isinstance(signal, Mapping) and _number(signal.get("receivedAt")) is not None:
            received = _number(signal.get("receivedAt"))
            assert received is not None
            who = f" by {signal.get('submittedBy', '?')} (receipt {str(signal.get('id'))[:8]})"
            return ACCEPTED, received, who
        if isinstance(kind, str) and settled is not None:
            return kind, settled, ""
        return None


def _revisions(store: Any, run_id: str) -> tuple[list[RunRecord], int]:
    records = []
    numbers = revision_numbers(store, run_id)
    for n in numbers:
        decoded = decode_run(store.get(keys.revision_key(run_id, n)), run_id, n)
        if isinstance(decoded, Found):
            records.append(decoded.record)
    missing = (numbers[0] - 1 if numbers else 0) + len(numbers) - len(records)
    return records, missing


def build_timeline(store: Any, run_id: str) -> RunTimeline | None:
    """The timeline of ``run_id``, or ``None`` when it has no readable revision."""
    records, missing = _revisions(store, run_id)
    if not records:
        return None
    newest = records[-1]
    refs = newest.wait_refs()
    builder = _Builder(store, run_id, {step: wait_id for wait_id, (step, _) in refs.items()})
    seen = 0
    generations: list[tuple[int, float]] = []  # (g, its last save)
    for record in records:
        if len(record.journal) < seen:
            seen = 0  # a shorter journal (a replayed revision): read it from the start
        new = [(event, _number(event.get("at"))) for event in record.journal[seen:]]
        seen = len(record.journal)
        if record.generation and (not generations or generations[-1][0] != record.generation):
            # Taken before this save and before anything it journals.
            taken = min([record.updated_at, *(at for _e, at in new if at is not None)])
            # Revision 1 is the run's start; a claim first saving any later one resumed it
            # (a legacy run's first claim, too).
            builder.claim_taken(record.generation, taken, first=record.rev <= 1)
            generations.append((record.generation, record.updated_at))
        elif generations:
            generations[-1] = (generations[-1][0], record.updated_at)
        for event, at in new:
            builder.event(event, record.updated_at if at is None else at)
    for index, (g, last) in enumerate(generations):
        builder.claim_left(g, last, newer=index + 1 < len(generations))
    lanes = [Lane(RUN_LANE, "run"), Lane(CLAIM_LANE, "claims"), Lane(STEPS_LANE, "steps")]
    for wait_id, (step, ref) in sorted(refs.items(), key=lambda item: item[1][0]):
        builder.race(newest, step, ref)
        lanes.append(Lane(wait_lane(wait_id), f"wait {newest.steps[step].job}/{step}"))
    used = {m.lane for m in builder.marks}
    marks = sorted(builder.marks, key=lambda m: (m.at, m.order))
    return RunTimeline(newest.run_id, newest.workflow, newest.status,
                       tuple(lane for lane in lanes if lane.key in used), tuple(marks),
                       missing)
