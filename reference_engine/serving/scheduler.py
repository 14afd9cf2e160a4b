"""Which runs a scheduler pass considers: the index, or every run (a full scan).

An *indexed* pass costs in proportion to the work that is due. It lists the ready hints
(one ``list``) and the deadline minutes since its last pass (one ``list`` each, usually
one or two), reads each run they name, and resumes those that are ready. A *full scan*
reads every run, as the engine always could; it is what finds a run whose hint was lost
to a crash between an outcome and its hint, an old record written before the index
existed, and a run left ``running`` by a dead owner that no hint names.

:class:`Schedule` holds a scheduler's memory between passes (the last full scan, the
time up to which deadlines were looked at, runs to retry) and decides which kind of pass
comes next: a full scan first, then whenever ``full_scan_every`` seconds have passed on
the clock's monotonic time, or when too many minutes of deadlines piled up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reference_engine.clock import Clock
from reference_engine.records import keys
from reference_engine.records.decoding import Absent, Found
from reference_engine.records.run import RUNNING, SUSPENDED, RunRecord
from reference_engine.records.run_store import newest_revision, run_ids
from reference_engine.waits.index import delete_keys, due_between, minutes_between, ready_hints
from reference_engine.waits.outcomes import WaitFacts, outcome_at
from reference_engine.waits.registration import read_registration

FULL_SCAN_EVERY_S = 300.0
MAX_DUE_MINUTES = 60  # more minutes than this since the last look: a full scan is cheaper


def is_ready(store: Any, record: RunRecord, now: float) -> bool:
    """Whether every waiting step of ``record`` has an outcome (settling overdue ones).

    A timeout settled here leaves no ready hint: this pass acts on it at once, a busy run
    is remembered for the next pass, and a scheduler that dies starts with a full scan.
    """
    for step in record.waiting_steps().values():
        assert step.wait is not None
        reg = read_registration(store, step.wait.id)
        raw = reg.raw if isinstance(reg, Found) else None
        facts = WaitFacts.of(step.wait.id, record.run_id, record.workflow,
                             step.wait.deadline, raw)
        if isinstance(outcome_at(store, facts, now, hint=False), Absent):
            return False
    return True


def full_scan_candidates(store: Any, now: float) -> list[tuple[str, str]]:
    """``(runId, status)`` of every run a pass may resume, from a read of every run:
    suspended runs whose waits all have outcomes, and runs left ``running`` (a live owner
    answers ``busy``; a dead one's stale claim is taken over)."""
    found = []
    for run_id in run_ids(store):
        newest = newest_revision(store, run_id)
        if not isinstance(newest.decoded, Found):
            continue
        record = newest.decoded.record
        if record.status == RUNNING or (record.status == SUSPENDED
                                        and is_ready(store, record, now)):
            found.append((run_id, record.status))
    return found


@dataclass
class Pass:
    """One pass's plan: the runs to resume, and the hints to drop once each is handled."""

    store: Any
    full_scan: bool
    candidates: list[tuple[str, str]] = field(default_factory=list)
    hints: dict[str, list[str]] = field(default_factory=dict)
    due_waits: dict[str, set[str]] = field(default_factory=dict)
    retry: set[str] = field(default_factory=set)

    def handled(self, run_id: str) -> None:
        """The run was resumed, or needs nothing: its hints have served."""
        delete_keys(self.store, self.hints.pop(run_id, []))

    def skipped(self, run_id: str, kind: str) -> None:
        """A refusal. ``busy`` keeps the hints (someone holds the run; look again next
        pass) and remembers a run found through a deadline; any other refusal means the
        run needs nothing a pass can give."""
        if kind == "busy":
            if run_id in self.due_waits or run_id not in self.hints:
                self.retry.add(run_id)
            return
        self.handled(run_id)


class Schedule:
    """A scheduler's memory between passes (see the module docstring)."""

    def __init__(self, store: Any, clock: Clock,
                 full_scan_every: float | None = FULL_SCAN_EVERY_S) -> None:
        self.store = store
        self.clock = clock
        self.full_scan_every = full_scan_every
        self.looked_until: float | None = None  # wall time up to which deadlines were seen
        self.last_full_scan: float | None = None  # monotonic time of the last full scan
        self.retry: set[str] = set()  # runs a deadline named that were busy

    def full_scan_due(self) -> bool:
        if self.looked_until is None or self.last_full_scan is None:
            return True
        if minutes_between(keys.deadline_ms(self.looked_until),
                           keys.deadline_ms(self.clock.now())) > MAX_DUE_MINUTES:
            return True
        every = self.full_scan_every
        return every is not None and self.clock.monotonic() - self.last_full_scan >= every

    def plan(self, full_scan: bool | None = None, *, dry: bool = False) -> Pass:
        """The next pass. ``dry`` (``ready_runs``) looks without moving this memory on
        and without dropping hints."""
        now = self.clock.now()
        full = self.full_scan_due() if full_scan is None else full_scan
        if full:
            planned = Pass(self.store, True, full_scan_candidates(self.store, now))
            if not dry:
                self.last_full_scan = self.clock.monotonic()
        else:
            planned = self._indexed(now, dry)
        if not dry:
            self.looked_until = max(now, self.looked_until if self.looked_until else now)
            self.retry = planned.retry  # filled by this pass's busy runs
        return planned

    def _indexed(self, now: float, dry: bool) -> Pass:
        hints = ready_hints(self.store)
        since = self.looked_until if self.looked_until is not None else now
        due: dict[str, set[str]] = {}
        for entry in due_between(self.store, keys.deadline_ms(since), keys.deadline_ms(now)):
            due.setdefault(entry.run_id, set()).add(entry.wait_id)
        planned = Pass(self.store, False, hints=hints, due_waits=due)
        for run_id in sorted(set(hints) | set(due) | self.retry):
            status = self._look(run_id, now)
            if status is None:
                if not dry:
                    planned.handled(run_id)
            else:
                planned.candidates.append((run_id, status))
        return planned

    def _look(self, run_id: str, now: float) -> str | None:
        """The run's status if a pass should try to resume it, else ``None``.

        A run that is missing, unreadable or ended needs nothing. A suspended run with an
        open wait needs nothing yet either: that wait's own settle or deadline brings it
        back. A run left ``running`` is tried: its live owner answers ``busy``.
        """
        newest = newest_revision(self.store, run_id)
        if not isinstance(newest.decoded, Found):
            return None
        record = newest.decoded.record
        if record.status == RUNNING:
            return RUNNING
        if record.status == SUSPENDED and is_ready(self.store, record, now):
            return SUSPENDED
        return None

