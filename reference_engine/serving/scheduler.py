"""Which runs a scheduler pass considers: the index, or every run (a full scan).

An *indexed* pass costs in proportion to the work that is due, on a process's first pass
as on its later ones. It lists the ready hints (one ``list``), the runs filed as
``running`` (one ``list``), and the deadline minutes since the last look (one ``list``
each, usually one or two; one ``list`` of every deadline when more than
``MAX_DUE_MINUTES`` passed), reads each run they name, and resumes those that are ready.
A new process learns where the last look stopped from the cursor (one ``get``), and a
pass moves the cursor on (one ``put``) once a minute at most.

That finds every run a pass may resume, whatever write a crash stopped at: a settler
leaves its ready hint before its outcome; the owner of a run files it as ``running``
before it saves a ``running`` revision; and a deadline stays in the window of the next
look until a pass has looked at it (settling ``timed_out`` leaves a ready hint too).

A *full scan* reads every run, as the engine always could. It is what a store gets that
has no cursor yet (written before the cursor existed, or before the index: the scan also
files the deadlines of the waits it reads), what ``dw serve --full-scan`` asks for, and
what a long-running ``dw serve`` still makes every ``full_scan_every`` seconds.

:class:`Schedule` holds a scheduler's memory between passes (the last full scan, the time
up to which deadlines were looked at, runs to retry) and decides which kind of pass
comes next.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reference_engine.clock import Clock
from reference_engine.records import keys
from reference_engine.records.decoding import Absent, Found
from reference_engine.records.outcome import TIMED_OUT
from reference_engine.records.run import RUNNING, SUSPENDED, RunRecord
from reference_engine.records.run_states import indexed
from reference_engine.records.run_store import newest_revision, run_ids
from reference_engine.waits.index import (
    all_due,
    deadlines_seen,
    delete_keys,
    due_between,
    file_deadline,
    mark_deadlines_seen,
    minutes_between,
    ready_hints,
)
from reference_engine.waits.outcomes import WaitFacts, outcome_at
from reference_engine.waits.registration import read_registration

FULL_SCAN_EVERY_S = 300.0
MAX_DUE_MINUTES = 60  # more minutes than this since the last look: one list of them all


@dataclass(frozen=True)
class Look:
    """What a pass saw of one suspended run's waits: which are still open, and which it
    found timed out (their ready hints served once the run is resumed)."""

    open_waits: frozenset[str]
    timed_out: frozenset[str]

    @property
    def ready(self) -> bool:
        return not self.open_waits


def look_at_waits(store: Any, record: RunRecord, now: float, *,
                  every: bool = True) -> Look:
    """Settle the overdue waits of ``record`` (``timed_out``, with a ready hint) and say
    which are open. ``every=False`` stops at the first open wait (enough to say *not
    ready*: the open wait's own settle or deadline brings the run back)."""
    open_waits: set[str] = set()
    timed_out: set[str] = set()
    for step in record.waiting_steps().values():
        assert step.wait is not None
        reg = read_registration(store, step.wait.id)
        raw = reg.raw if isinstance(reg, Found) else None
        facts = WaitFacts.of(step.wait.id, record.run_id, record.workflow,
                             step.wait.deadline, raw)
        decoded = outcome_at(store, facts, now)
        if isinstance(decoded, Absent):
            open_waits.add(step.wait.id)
            if not every:
                break
        elif isinstance(decoded, Found) and decoded.record.kind == TIMED_OUT:
            timed_out.add(step.wait.id)
    return Look(frozenset(open_waits), frozenset(timed_out))


def is_ready(store: Any, record: RunRecord, now: float) -> bool:
    """Whether every waiting step of ``record`` has an outcome (settling overdue ones)."""
    return look_at_waits(store, record, now, every=False).ready


@dataclass
class Pass:
    """One pass's plan: the runs to resume, and the hints to drop once each is handled."""

    store: Any
    full_scan: bool
    candidates: list[tuple[str, str]] = field(default_factory=list)
    hints: dict[str, list[str]] = field(default_factory=dict)
    due_waits: dict[str, set[str]] = field(default_factory=dict)
    retry: set[str] = field(default_factory=set)

    def handled(self, run_id: str, open_waits: frozenset[str] = frozenset()) -> None:
        """The run was resumed, or needs nothing: its hints have served, but for those of
        ``open_waits`` (waits still open: a settler left the hint and its outcome is yet
        to come, so the hint is what will bring the run back)."""
        served = [key for key in self.hints.pop(run_id, [])
                  if (parsed := keys.parse_ready_key(key)) is None
                  or parsed[1] not in open_waits]
        delete_keys(self.store, served)

    def skipped(self, run_id: str, kind: str) -> None:
        """A refusal. ``busy`` keeps the hints (someone holds the run; look again next
        pass) and remembers a run found through a deadline; any other refusal means the
        run needs nothing a pass can give."""
        if kind == "busy":
            if run_id in self.due_waits or run_id not in self.hints:
                self.retry.add(run_id)
            return
        self.handled(run_id)

    def note_timed_out(self, run_id: str, wait_ids: frozenset[str]) -> None:
        """The ready hints that settling these waits left: dropped with the run's others."""
        have = self.hints.setdefault(run_id, [])
        have.extend(key for wait_id in sorted(wait_ids)
                    if (key := keys.ready_key(run_id, wait_id)) not in have)


class Schedule:
    """A scheduler's memory between passes (see the module docstring)."""

    def __init__(self, store: Any, clock: Clock,
                 full_scan_every: float | None = FULL_SCAN_EVERY_S) -> None:
        self.store = store
        self.clock = clock
        self.full_scan_every = full_scan_every
        self.looked_until: float | None = None  # wall time up to which deadlines were seen
        self.last_full_scan: float | None = None  # monotonic time of the last full scan
        self.retry: set[str] = set()  # runs a deadline or a running entry named, busy
        self._cursor_minute: int | None = None  # the minute of the cursor last seen or put

    def _since(self) -> float | None:
        """Where the deadline window starts: this process's last look, else the cursor
        (read once); ``None``: the store has no cursor, so only a full scan will do."""
        if self.looked_until is not None:
            return self.looked_until
        cursor = deadlines_seen(self.store)
        if cursor is not None:
            self._cursor_minute = keys.due_minute(keys.deadline_ms(cursor))
            if self.last_full_scan is None:
                self.last_full_scan = self.clock.monotonic()  # scans every N s from here
        return cursor

    def full_scan_due(self, since: float | None) -> bool:
        if since is None or self.last_full_scan is None:
            return True
        every = self.full_scan_every
        return every is not None and self.clock.monotonic() - self.last_full_scan >= every

    def plan(self, full_scan: bool | None = None, *, dry: bool = False) -> Pass:
        """The next pass. ``dry`` (``ready_runs``) looks without moving this memory on
        and without dropping hints."""
        now = self.clock.now()
        since = self._since()
        full = self.full_scan_due(since) if full_scan is None else full_scan
        if full:
            planned = self._full(now, backfill=since is None and not dry)
            if not dry:
                self.last_full_scan = self.clock.monotonic()
        else:
            planned = self._indexed(now, now if since is None else min(since, now), dry)
        if not dry:
            # Every deadline before ``now`` was looked at: a timed-out wait now has its
            # outcome and ready hint. Only then may the cursor move past it.
            self.looked_until = max(now, self.looked_until if self.looked_until else now)
            self.retry = planned.retry  # filled by this pass's busy runs
            self._move_cursor(now)
        return planned

    def _move_cursor(self, now: float) -> None:
        """Put the cursor at ``now`` when its minute changed: a new process re-reads at
        most one minute of deadlines that were looked at already."""
        minute = keys.due_minute(keys.deadline_ms(now))
        if minute != self._cursor_minute:
            mark_deadlines_seen(self.store, now)
            self._cursor_minute = minute

    def _full(self, now: float, *, backfill: bool) -> Pass:
        """Read every run: suspended runs whose waits all have outcomes, and runs left
        ``running`` (a live owner answers ``busy``; a dead one's stale claim is taken
        over). ``backfill`` files the deadlines of the open waits it reads, for runs
        written before the index."""
        planned = Pass(self.store, True)
        for run_id in run_ids(self.store):
            newest = newest_revision(self.store, run_id)
            if not isinstance(newest.decoded, Found):
                continue
            record = newest.decoded.record
            if record.status == RUNNING:
                planned.candidates.append((run_id, RUNNING))
            elif record.status == SUSPENDED:
                looked = look_at_waits(self.store, record, now, every=backfill)
                if backfill:
                    for step in record.waiting_steps().values():
                        if step.wait is not None and step.wait.id in looked.open_waits:
                            file_deadline(self.store, run_id, step.wait.id,
                                          step.wait.deadline)
                if looked.ready:
                    planned.note_timed_out(run_id, looked.timed_out)
                    planned.candidates.append((run_id, SUSPENDED))
        return planned

    def _indexed(self, now: float, since: float, dry: bool) -> Pass:
        hints = ready_hints(self.store)
        running: dict[str, list[str]] = {}
        for _status, workflow, run_id in indexed(self.store, (RUNNING,), None):
            running.setdefault(run_id, []).append(keys.run_state_key(RUNNING, workflow,
                                                                     run_id))
        since_ms, now_ms = keys.deadline_ms(since), keys.deadline_ms(now)
        if minutes_between(since_ms, now_ms) > MAX_DUE_MINUTES:
            entries = [e for e in all_due(self.store) if since_ms <= e.deadline_ms < now_ms]
        else:
            entries = due_between(self.store, since_ms, now_ms)
        due: dict[str, set[str]] = {}
        for entry in entries:
            due.setdefault(entry.run_id, set()).add(entry.wait_id)
        planned = Pass(self.store, False, hints=hints, due_waits=due)
        for run_id in sorted(set(hints) | set(due) | set(running) | self.retry):
            status, looked, ended = self._look(run_id, now)
            if looked is not None:
                planned.note_timed_out(run_id, looked.timed_out)
            if status is None:
                if not dry:
                    planned.handled(run_id, looked.open_waits if looked else frozenset())
                    if ended:  # filed as running by an owner that died before moving it
                        delete_keys(self.store, running.get(run_id, []))
            else:
                planned.candidates.append((run_id, status))
        return planned

    def _look(self, run_id: str, now: float) -> tuple[str | None, Look | None, bool]:
        """The run's status if a pass should try to resume it, else ``None``; what was
        seen of a suspended run's waits; whether the run has ended.

        A run that is missing, unreadable or ended needs nothing. A suspended run with an
        open wait needs nothing yet either: that wait's own settle or deadline brings it
        back. A run left ``running`` is tried: its live owner answers ``busy``. (A
        ``running`` entry of a run that is not running stays for its owner, or the
        sweep, to move: its owner may be about to save the revision it announces.)
        """
        newest = newest_revision(self.store, run_id)
        if not isinstance(newest.decoded, Found):
            return None, None, False
        record = newest.decoded.record
        if record.status == RUNNING:
            return RUNNING, None, False
        if record.status != SUSPENDED:
            return None, None, record.ended
        looked = look_at_waits(self.store, record, now)
        return (SUSPENDED if looked.ready else None), looked, False
