"""The listing's index: ``run-states/<status>/<workflow>/<runId>``, one entry per run.

The claim holder moves a run's entry when a save changes the run's status: the new entry
after the revision (the truth) is saved, then the old one goes. ``running`` is filed
*before* the revision that makes a run running: it is how a scheduler pass finds a run
whose owner died mid-step without reading every run (``serving/scheduler.py``), so no
crash may leave a running run without it. ``dw runs --status`` and
``--workflow`` list these keys and read only the runs they name, confirming each against
its newest revision, so a stale entry costs one read and is not printed. A crash between
the revision and its entry can leave a run without one: ``dw sweep`` (which reads every
run anyway) puts it back, and a plain ``dw runs`` always reads every run.
"""

from __future__ import annotations

from typing import Any

from reference_engine.records import keys
from reference_engine.records.decoding import dump

STATUSES = ("running", "suspended", "succeeded", "failed", "cancelled")


def _entry(status: str, workflow: str, run_id: str) -> bytes:
    return dump({"v": 2, "status": status, "workflow": workflow, "runId": run_id})


def file_run(store: Any, run_id: str, workflow: str, status: str) -> None:
    """File the run under ``status`` (one ``put``, idempotent)."""
    store.put(keys.run_state_key(status, workflow, run_id), _entry(status, workflow, run_id))


def move_run(store: Any, run_id: str, workflow: str, old: str | None, new: str, *,
             filed: bool = False) -> None:
    """File the run under ``new`` (unless ``filed`` already), then take it out of ``old``
    (two calls at most; none if equal)."""
    if old == new:
        return
    if not filed:
        file_run(store, run_id, workflow, new)
    if old is not None:
        store.delete(keys.run_state_key(old, workflow, run_id))


def forget_run(store: Any, run_id: str, workflow: str) -> None:
    """Remove every entry of a deleted run (whatever status a crash left it under)."""
    for status in STATUSES:
        store.delete(keys.run_state_key(status, workflow, run_id))


def indexed(store: Any, statuses: tuple[str, ...],
            workflow: str | None) -> list[tuple[str, str, str]]:
    """``(status, workflow, runId)`` of the entries under the given statuses (and workflow):
    one ``list`` per status."""
    found = []
    for status in statuses:
        for key in sorted(store.list(keys.run_state_prefix(status, workflow))):
            parsed = keys.parse_run_state_key(key)
            if parsed is not None:
                found.append(parsed)
    return found


def all_entries(store: Any) -> list[tuple[str, str, str, str]]:
    """``(key, status, workflow, runId)`` of every entry: for the sweep."""
    found = []
    for key in sorted(store.list(keys.run_states_root())):
        parsed = keys.parse_run_state_key(key)
        if parsed is not None:
            found.append((key, *parsed))
    return found
