"""The scheduler's index: where a pass looks instead of reading every run.

Three kinds of record (``records/keys.py`` names them):

* ``ready-runs/<runId>/<waitId>``: left by whoever settles a wait, *before* the outcome
  is created. It says "this run may be ready now".
* ``wait-deadlines/<minute>/<deadlineMs>/<runId>/<waitId>``: left when a wait is
  registered. A pass lists only the minutes that passed since its last look.
* ``scheduler/deadlines-seen``: the cursor, the time up to which a pass looked at the
  deadlines, so that the first pass of a new process starts there.

With the listing's ``run-states/running/`` entries (filed before a run's ``running``
revision is saved), these name every run a pass may resume, whatever write a crash
stopped at. All are hints. The outcome record and the run revision stay the only truth:
a pass reads the run before it acts, so a stale hint costs one read. A store with no
cursor (older than it) gets one full scan.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from reference_engine.records import keys
from reference_engine.records.cursor import DeadlinesSeen, decode_deadlines_seen
from reference_engine.records.decoding import Found
from reference_engine.records.hint import DUE, READY, Hint


@dataclass(frozen=True)
class DueEntry:
    run_id: str
    wait_id: str
    deadline_ms: int
    key: str


def leave_ready_hint(store: Any, run_id: str, wait_id: str, reason: str, at: float) -> None:
    """Say that ``run_id`` may be ready: one ``put``, idempotent. A settler leaves it before
    its outcome, so no crash can leave an outcome that no hint names."""
    store.put(keys.ready_key(run_id, wait_id),
              Hint(READY, run_id, wait_id, at, reason).encode())


def drop_ready_hint(store: Any, run_id: str, wait_id: str) -> None:
    store.delete(keys.ready_key(run_id, wait_id))


def file_deadline(store: Any, run_id: str, wait_id: str, deadline: float) -> None:
    """File the wait under its deadline's minute: one ``put``, idempotent."""
    store.put(keys.due_key(run_id, wait_id, deadline), Hint(DUE, run_id, wait_id,
                                                             deadline).encode())


def ready_hints(store: Any, prefix: str | None = None) -> dict[str, list[str]]:
    """Hint keys by run id: every run (one ``list``), or one run's (``prefix``)."""
    found: dict[str, list[str]] = {}
    for key in sorted(store.list(prefix or keys.ready_root())):
        parsed = keys.parse_ready_key(key)
        if parsed is not None:
            found.setdefault(parsed[0], []).append(key)
    return found


def due_between(store: Any, since_ms: int, until_ms: int) -> list[DueEntry]:
    """Entries with ``since_ms <= deadline_ms < until_ms``: one ``list`` per minute."""
    entries: list[DueEntry] = []
    if until_ms <= since_ms:
        return entries
    for minute in range(keys.due_minute(since_ms), keys.due_minute(until_ms - 1) + 1):
        for key in sorted(store.list(keys.due_bucket(minute))):
            parsed = keys.parse_due_key(key)
            if parsed is not None and since_ms <= parsed[0] < until_ms:
                entries.append(DueEntry(parsed[1], parsed[2], parsed[0], key))
    return entries


def minutes_between(since_ms: int, until_ms: int) -> int:
    """How many minute buckets :func:`due_between` would list."""
    if until_ms <= since_ms:
        return 0
    return keys.due_minute(until_ms - 1) - keys.due_minute(since_ms) + 1


def all_due(store: Any) -> list[DueEntry]:
    """Every deadline entry (one ``list`` of the whole family): for the sweep only."""
    entries = []
    for key in sorted(store.list(keys.due_root())):
        parsed = keys.parse_due_key(key)
        if parsed is not None:
            entries.append(DueEntry(parsed[1], parsed[2], parsed[0], key))
    return entries


def forget_waits(store: Any, run_id: str, waits: Iterable[tuple[str, float]]) -> None:
    """Remove the hints of ``(waitId, deadline)`` pairs of a run that ended or was deleted."""
    for wait_id, deadline in sorted(waits):
        store.delete(keys.ready_key(run_id, wait_id))
        store.delete(keys.due_key(run_id, wait_id, deadline))


def delete_keys(store: Any, hint_keys: Iterable[str]) -> None:
    for key in sorted(hint_keys):
        store.delete(key)


def deadlines_seen(store: Any) -> float | None:
    """The cursor (one ``get``): deadlines before it were looked at; ``None``: no cursor."""
    decoded = decode_deadlines_seen(store.get(keys.deadlines_seen_key()))
    return decoded.record.until if isinstance(decoded, Found) else None


def mark_deadlines_seen(store: Any, until: float) -> None:
    """Move the cursor (one ``put``); schedulers race it harmlessly, it only says where
    a new process starts looking."""
    store.put(keys.deadlines_seen_key(), DeadlinesSeen(until).encode())
