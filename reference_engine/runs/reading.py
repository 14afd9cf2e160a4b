"""Reading runs for a command: ``dw runs``, ``dw show`` and the run a command acts on.

Read-only. A run's newest revision is what every command acts on; when it is missing or
cannot be read, the refusal says so and names the command that recovers, and the engine
never guesses at an older revision. Only ``dw show`` falls back to the newest readable
one, and names the damaged revision beside it.
"""

from __future__ import annotations

from typing import Any

from reference_engine.records import keys
from reference_engine.records.decoding import Absent, Found, Unreadable, iso
from reference_engine.records.run import RunRecord, decode_run
from reference_engine.records.run_states import STATUSES, indexed
from reference_engine.records.run_store import newest_revision, revision_numbers, run_ids
from reference_engine.refusals import Refusal


def run_not_found(run_id: str) -> Refusal:
    return Refusal("run_not_found", f"No run has the id {run_id}. List the runs: dw runs",
                   {"runId": run_id})


def damaged_hint(run_id: str, n: int) -> str:
    """How to recover from an unreadable revision ``n``: remove it, or delete the run."""
    return (f"remove the damaged record to fall back to revision {n - 1}: "
            f"dw store rm {keys.revision_key(run_id, n)}, or delete the run: "
            f"dw delete {run_id}")


def read_run(store: Any, run_id: str) -> RunRecord:
    """The run's newest revision; refused when there is none or it cannot be read."""
    newest = newest_revision(store, run_id)
    if newest.n == 0:
        raise run_not_found(run_id)
    if not isinstance(newest.decoded, Found):
        raise Refusal("unreadable", f"The newest revision ({newest.n}) of run {run_id} "
                      "cannot be read; the engine will not guess at it. See the newest "
                      f"readable one with dw show {run_id}; to recover, "
                      + damaged_hint(run_id, newest.n),
                      {"runId": run_id, "rev": newest.n})
    return newest.decoded.record


def list_runs(store: Any, *, statuses: tuple[str, ...] = (),
              workflow: str | None = None) -> list[dict[str, Any]]:
    """Every run with its status: one list and one read per run. With ``statuses`` or
    ``workflow``, only the runs the listing's index files there, each read to confirm
    it (see ``records/run_states.py``)."""
    if not statuses and workflow is None:
        every = (_listed(store, run_id) for run_id in run_ids(store))
        return [listed for listed in every if listed]
    found = []
    wanted = statuses or STATUSES
    named = sorted({run_id for _s, _w, run_id in indexed(store, wanted, workflow)})
    for run_id in named:
        listed = _listed(store, run_id)
        if listed.get("status") in wanted and workflow in (None, listed.get("workflow")):
            found.append(listed)
    return found


def _listed(store: Any, run_id: str) -> dict[str, Any]:
    """A run's line in ``list_runs()``; empty when it has no revision."""
    newest = newest_revision(store, run_id)
    if isinstance(newest.decoded, Found):
        r = newest.decoded.record
        return {"runId": run_id, "workflow": r.workflow, "status": r.status,
                "updatedAt": iso(r.updated_at)}
    if isinstance(newest.decoded, Absent):
        return {}
    return {"runId": run_id, "workflow": "", "status": "unreadable", "updatedAt": ""}


def show_run(store: Any, run_id: str) -> dict[str, Any]:
    """The run's newest readable revision; a damaged newer one is named, not guessed at."""
    newest = newest_revision(store, run_id)
    if newest.n == 0 or isinstance(newest.decoded, Found):
        return _shown(read_run(store, run_id))
    reason = newest.decoded.reason if isinstance(newest.decoded, Unreadable) else "absent"
    damaged = {"rev": newest.n, "key": keys.revision_key(run_id, newest.n),
               "reason": reason, "recovery": damaged_hint(run_id, newest.n)}
    for n in reversed(revision_numbers(store, run_id)[:-1]):
        older = decode_run(store.get(keys.revision_key(run_id, n)), run_id, n)
        if isinstance(older, Found):
            return {**_shown(older.record), "damaged": damaged}
    raise Refusal("unreadable", f"No revision of run {run_id} can be read (the newest, "
                  f"{newest.n}: {reason}); delete the run: dw delete {run_id}",
                  {"runId": run_id, "rev": newest.n})


def _shown(r: RunRecord) -> dict[str, Any]:
    steps = {}
    for name, s in r.steps.items():
        entry: dict[str, Any] = {"status": s.status, "output": s.output, "error": s.error,
                                 "job": s.job}
        if s.wait is not None:
            entry["wait"] = {"id": s.wait.id, "deadline": iso(s.wait.deadline),
                             "schema": dict(s.wait.schema)}
        steps[name] = entry
    return {"runId": r.run_id, "workflow": r.workflow, "status": r.status, "rev": r.rev,
            "createdAt": iso(r.created_at), "updatedAt": iso(r.updated_at),
            "inputs": dict(r.inputs), "jobs": dict(r.jobs), "steps": steps,
            "journal": [dict(e) for e in r.journal], "legacy": r.legacy}
