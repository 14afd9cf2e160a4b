"""The engine facade: one object per store and clock, one method per ``dw`` command.

Every refusal raises :class:`~reference_engine.refusals.Refusal`. The store and the
clock are always passed in; ``sleeper`` (default ``time.sleep``) serves the workflow
``sleep:`` step and the wait for a possibly dead claim holder, so tests pass
``FakeClock.advance`` and never sleep. ``claim_looks`` names a host-local file in which
separate processes share what they saw of claim leases (see ``claims.py``), so a later
CLI call can take over a dead owner's claim once ``DW_CLOCK`` has moved past its ttl.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reference_engine.clock import Clock
from reference_engine.errors import InvalidKey
from reference_engine.records.decoding import Found
from reference_engine.records.run import (
    CANCELLED,
    FAILED,
    RUNNING,
    SUCCEEDED,
    SUSPENDED,
    RunRecord,
)
from reference_engine.records.run_store import newest_revision, revision_numbers
from reference_engine.records.views import Delivery, OpenWait, ReceiptView, RunView, WaitView
from reference_engine.refusals import Refusal
from reference_engine.runs.reading import list_runs, read_run, run_not_found, show_run
from reference_engine.stores.contract import ControlPlaneStore, supports_create
from reference_engine.stores.keys import key_problem
from reference_engine.stores.transient import with_transient_retries

# Each `dw` command is its own process and should import only what it uses: the claims,
# the executor, the consume, the lifecycle, the workflow loader, the delivery, the
# timeline and the scheduler are imported inside the methods that need them (`dw signal`
# runs no step and takes no claim; only `dw serve` schedules).
if TYPE_CHECKING:
    from reference_engine.runs.claims import Claim, ClaimBook
    from reference_engine.runs.executor import FencedSaver
    from reference_engine.runs.timeline import RunTimeline
    from reference_engine.serving.passes import Scheduler
    from reference_engine.serving.scheduler import Schedule
    from reference_engine.workflows.model import Workflow

# reference_engine.serving.scheduler.FULL_SCAN_EVERY_S, written out so that building an Engine
# (every dw command does) need not import the scheduler; a test keeps the two equal.
FULL_SCAN_EVERY_S = 300.0

__all__ = ["Delivery", "Engine", "OpenWait", "ReceiptView", "RunView", "WaitView"]


def _refuse_secret_inputs(workflow: Workflow) -> None:
    """Inputs are stored in every revision of the run and shown by ``dw show``: one that
    holds a secret is refused before anything is written (the input is never quoted)."""
    from reference_engine.secrets import SecretRefused, scan_or_refuse

    try:
        scan_or_refuse(dict(workflow.inputs))
    except SecretRefused as refused:
        rule = refused.rule
    else:
        return
    raise Refusal("secret_detected", f"An input of workflow {workflow.name} was refused: it "
                  f"matched the secret rule '{rule}', and inputs are stored in the run "
                  "record. Give the secret to a shell: step through its environment (e.g. "
                  "$API_TOKEN) instead, and run again without it: dw run WORKFLOW.yaml",
                  {"rule": rule})


def _store_name(store: object) -> str:
    return getattr(store, "name", None) or type(store).__name__


class Engine:
    """Runs, resumes, signals, answers, cancels and sweeps workflow runs on one store."""

    def __init__(self, store: ControlPlaneStore, clock: Clock, *, host: str | None = None,
                 lease_ttl_ms: int = 30_000, progress: Callable[[str], None] | None = None,
                 sleeper: Callable[[float], object] | None = None,
                 claim_patience: bool = True, claim_looks: Path | None = None,
                 full_scan_every: float | None = FULL_SCAN_EVERY_S) -> None:
        self.sleeper = sleeper if sleeper is not None else time.sleep
        # A transient failure of a read, list, put or delete is retried (C-ENGINE-1), the
        # first list of a run included; a create looks before it retries (records.io).
        self.store = with_transient_retries(store, self.sleeper)
        self.clock = clock
        self.host = host
        self.lease_ttl_ms = lease_ttl_ms
        self.progress = progress or (lambda _msg: None)
        self.creates = supports_create(store)
        self._claim_patience = claim_patience
        self._claim_looks = claim_looks
        self._full_scan_every = full_scan_every

    @cached_property
    def claims(self) -> ClaimBook:
        """The run claims; built on first use (delivering a signal takes none)."""
        from reference_engine.runs.claims import ClaimBook

        return ClaimBook(self.store, self.clock, host=self.host, ttl_ms=self.lease_ttl_ms,
                         sleeper=self.sleeper, patience=self._claim_patience,
                         looks_path=self._claim_looks)

    @cached_property
    def schedule(self) -> Schedule:
        """The scheduler's memory between passes; built when serve first plans one."""
        from reference_engine.serving.scheduler import Schedule

        return Schedule(self.store, self.clock, self._full_scan_every)

    # --- helpers ----------------------------------------------------------------------

    def _unsupported(self, what: str) -> Refusal:
        return Refusal("unsupported", f"Store {_store_name(self.store)} has no put_if_absent, "
                       f"so it cannot {what}. Use a store with the write-once create, such as "
                       "the default ./.dw", {"capability": "put_if_absent"})

    def _release(self, claim: Claim | None) -> None:
        if claim is not None:
            claim.release()

    def _snapshot(self, record: RunRecord) -> Workflow | None:
        """The run's own workflow, or None when its snapshot no longer parses."""
        from reference_engine.workflows.errors import WorkflowError
        from reference_engine.workflows.loader import parse_workflow

        try:
            return parse_workflow(record.source, stored=True)
        except WorkflowError:
            return None

    def _release_quietly(self, claim: Claim | None) -> None:
        """After a refusal or a store error, let go of the claim if we still can, so the
        next resume need not wait for the lease to go stale. A crash (BaseException) never
        gets here: a killed process writes nothing more."""
        with contextlib.suppress(Exception):  # the original error is what the caller sees
            self._release(claim)

    def _drive(self, workflow: Workflow, record: RunRecord, claim: Claim | None,
               saver: FencedSaver) -> RunView:
        """Execute from ``record``; suspend or end the run; release the claim."""
        from reference_engine.runs.executor import Executor, run_view
        from reference_engine.runs.lifecycle import end_run

        try:
            executor = Executor(self.store, self.clock, workflow, record, saver, claim=claim,
                                sleeper=self.sleeper, progress=self.progress)
            record = executor.execute()
            if record.status != SUSPENDED:
                status = executor.final_status()
                record = end_run(self.store, record, status, self.clock.now(), saver,
                                 {"type": "run_ended", "status": status}, workflow)
                self.progress(f"run {record.run_id} {status}")
        except Exception:
            self._release_quietly(claim)
            raise
        self._release(claim)
        return run_view(record)

    # --- run, resume --------------------------------------------------------------------

    def run(self, workflow: Workflow, *, run_id: str | None = None,
            inputs: Mapping[str, str] | None = None) -> RunView:
        """Start a run; returns it suspended, succeeded or failed."""
        from reference_engine.runs.executor import FencedSaver, journal_event
        from reference_engine.workflows.loader import with_inputs

        if workflow.has_wait() and not self.creates:
            raise self._unsupported(f"hold the waits of workflow {workflow.name}")
        if inputs:
            workflow = with_inputs(workflow, inputs)
        _refuse_secret_inputs(workflow)
        run_id = str(uuid.uuid4()) if run_id is None else run_id.strip()
        problem = key_problem(run_id) if "/" not in run_id else "it contains '/'"
        if problem:
            raise InvalidKey(f"run id is not usable as one key segment ({problem}); "
                             "pass --run-id with letters, digits and dashes", op="run")
        exists = Refusal("run_exists", f"Run {run_id} already exists. Pick another --run-id, or "
                         f"delete the old run first: dw delete {run_id}", {"runId": run_id})
        if revision_numbers(self.store, run_id):
            raise exists
        claim: Claim | None = None
        if self.creates:
            try:
                claim = self.claims.take(run_id)
            except Refusal:
                if revision_numbers(self.store, run_id):
                    raise exists from None
                raise
        now = self.clock.now()
        record = RunRecord(
            run_id=run_id, workflow=workflow.name, source=dict(workflow.source),
            run_nonce=str(uuid.uuid4()), rev=0, status=RUNNING,
            generation=claim.generation if claim else 0, created_at=now, updated_at=now,
            inputs=dict(workflow.inputs),
            journal=(journal_event({"type": "run_started", "at": now}),),
        )
        saver = FencedSaver(self.store, self.clock, claim, self.creates)
        try:
            record = saver(record)
        except Refusal:
            self._release_quietly(claim)
            if revision_numbers(self.store, run_id):
                raise exists from None
            raise
        except Exception:
            self._release_quietly(claim)
            raise
        self.progress(f"run {run_id} of {workflow.name} started")
        return self._drive(workflow, record, claim, saver)

    def resume(self, run_id: str) -> RunView:
        """Apply stored outcomes to the run's waiting steps and continue it."""
        view = self._resume(run_id, patience=None)
        assert view is not None
        return view

    def _resume(self, run_id: str, *, patience: bool | None,
                scheduled: bool = False) -> RunView | None:
        """The resume path. ``scheduled`` (the scheduler): a run that is no longer
        resumable once the claim is held (another resume finished it first) is left
        alone, and ``None`` says so, so a late pass never counts or redoes a resume."""
        from reference_engine.runs.consume import OpenWaits, apply_outcomes
        from reference_engine.runs.executor import FencedSaver, run_view
        from reference_engine.runs.lifecycle import finish_cleanup, has_leftovers
        from reference_engine.workflows.loader import parse_workflow

        if not self.creates:
            raise self._unsupported("resume a run")
        read_run(self.store, run_id)  # run_not_found before any claim is written
        claim = self.claims.take(run_id, patience=patience)
        try:
            record = read_run(self.store, run_id)
            if scheduled and record.status not in (SUSPENDED, RUNNING):
                self._release(claim)
                return None
            if record.status in (FAILED, CANCELLED):
                if has_leftovers(self.store, record):
                    finish_cleanup(self.store, record)
                raise Refusal("not_suspended", f"Run {run_id} has {record.status}; there is "
                              f"nothing to resume. See it: dw show {run_id}",
                              {"runId": run_id, "status": record.status})
            if record.status == SUCCEEDED:
                if has_leftovers(self.store, record):
                    finish_cleanup(self.store, record)
                self._release(claim)
                return run_view(record)
            workflow = parse_workflow(record.source, stored=True)
            saver = FencedSaver(self.store, self.clock, claim, True, record.status)
            try:
                # A suspended run needs every wait decided; a run left running by a dead
                # owner first finishes its level, so its open waits simply stay open.
                applied, _count = apply_outcomes(self.store, record, self.clock.now(),
                                                 strict=record.status == SUSPENDED)
            except OpenWaits as open_waits:
                name, step = open_waits.open_steps[0]
                wait_id = step.wait.id if step.wait else "?"
                raise Refusal("open_wait", f"Step {name} in job {step.job} of run {run_id} is "
                              "still waiting for a signal. Send it first: "
                              f"dw signal {wait_id} --payload '<json>'",
                              {"runId": run_id, "waitId": wait_id, "step": name}) from None
            if applied != record:
                # The consume: this one revision applies every outcome and its journal event,
                # and it is saved before any later step runs.
                record = saver(applied)
        except Exception:
            self._release_quietly(claim)
            raise
        return self._drive(workflow, record, claim, saver)

    # --- delivery ---------------------------------------------------------------------

    def signal(self, wait_id: str, payload: str, *, submitted_by: str | None = None,
               secret_detection: bool = True) -> Delivery:
        from reference_engine.waits.delivery import Request, deliver

        if not self.creates:
            raise self._unsupported("accept a signal")
        return deliver(self.store, self.clock,
                       Request(wait_id, payload, submitted_by, secret_detection))

    def answer(self, run_id: str, wait_id: str, payload: str, *,
               submitted_by: str | None = None, secret_detection: bool = True) -> Delivery:
        from reference_engine.waits.delivery import Request, deliver

        if not self.creates:
            raise self._unsupported("accept an answer")
        return deliver(self.store, self.clock,
                       Request(wait_id, payload, submitted_by, secret_detection, run_id))

    # --- cancel, delete ---------------------------------------------------------------

    def cancel(self, run_id: str) -> RunView:
        from reference_engine.runs.executor import FencedSaver, run_view
        from reference_engine.runs.lifecycle import end_run, finish_cleanup

        if not self.creates:
            raise self._unsupported("cancel a run")
        read_run(self.store, run_id)
        claim = self.claims.take(run_id)
        try:
            record = read_run(self.store, run_id)
            if record.status == CANCELLED:
                finish_cleanup(self.store, record)  # idempotent; completes a crashed cancel
            elif record.status in (SUCCEEDED, FAILED):
                raise Refusal("not_suspended", f"Run {run_id} already {record.status}; only a "
                              f"running or suspended run can be cancelled. See it: "
                              f"dw show {run_id}", {"runId": run_id, "status": record.status})
            else:
                saver = FencedSaver(self.store, self.clock, claim, True, record.status)
                record = end_run(self.store, record, CANCELLED, self.clock.now(), saver,
                                 {"type": "run_cancelled"}, self._snapshot(record))
                self.progress(f"run {run_id} cancelled")
        except Exception:
            self._release_quietly(claim)
            raise
        self._release(claim)
        return run_view(record)

    def delete(self, run_id: str) -> None:
        from reference_engine.runs.lifecycle import delete_run_records

        newest = newest_revision(self.store, run_id)
        if newest.n == 0:
            raise run_not_found(run_id)
        if self.creates:
            self.claims.take(run_id)
        waits: dict[str, float] = {}
        workflow: str | None = None
        if isinstance(newest.decoded, Found):
            refs = newest.decoded.record.wait_refs()
            waits = {wid: ref.deadline for wid, (_name, ref) in refs.items()}
            workflow = newest.decoded.record.workflow
        delete_run_records(self.store, run_id, waits, workflow)
        self.progress(f"run {run_id} deleted")

    # --- listing ----------------------------------------------------------------------

    def open_waits(self, *, workflow: str | None = None) -> list[OpenWait]:
        """Open waits by deadline (of one workflow, when named); settles overdue ones."""
        from reference_engine.runs.lifecycle import list_open_waits

        return list_open_waits(self.store, self.clock.now(), workflow=workflow)

    def runs(self, *, statuses: tuple[str, ...] = (),
             workflow: str | None = None) -> list[dict[str, Any]]:
        """Every run with its status, or those of some statuses or one workflow."""
        return list_runs(self.store, statuses=statuses, workflow=workflow)

    def show(self, run_id: str) -> dict[str, Any]:
        """The run's newest readable revision; a damaged newer one is named, not guessed at."""
        return show_run(self.store, run_id)

    def timeline(self, run_id: str) -> RunTimeline:
        """The run's history drawn from every stored revision, claim and outcome (read-only)."""
        from reference_engine.runs.timeline import build_timeline

        read_run(self.store, run_id)  # run_not_found or unreadable, as for show
        drawn = build_timeline(self.store, run_id)
        assert drawn is not None, "a readable newest revision makes a timeline"
        return drawn

    def sweep(self) -> dict[str, int]:
        from reference_engine.runs.lifecycle import sweep

        return sweep(self.store, self.clock.now()).to_json()

    # --- the scheduler ----------------------------------------------------------------

    @cached_property
    def scheduler(self) -> Scheduler:
        """The scheduler's passes, built on the first: the other commands never load it."""
        from reference_engine.serving.passes import Scheduler

        return Scheduler(self.schedule, self.clock, progress=self.progress,
                         # late bound, so a subclass's (or a test's) _resume is the one used
                         resume=lambda run_id: self._resume(run_id, patience=False,
                                                            scheduled=True),
                         journal=self._journal)

    def ready_runs(self) -> list[str]:
        """Suspended runs whose waits all have outcomes: what the next scheduler pass
        would resume (a full scan when one is due, else through the index)."""
        if not self.creates:
            raise self._unsupported("serve runs")
        return self.scheduler.ready_runs()

    def serve_once(self, *, full_scan: bool | None = None,
                   should_stop: Callable[[], bool] | None = None) -> list[str]:
        """One scheduler pass through the ordinary resume path under the ordinary claim.

        The pass looks at the runs the index names (ready hints, runs filed as running,
        deadlines that passed since the store's cursor), on a process's first pass as on
        its later ones, or at every run when ``full_scan`` is true or one is due (a store
        with no cursor yet, then every ``full_scan_every`` seconds; see
        ``serving/scheduler.py``). A ``busy`` run is
        skipped (someone else holds it) and tried again next pass; a run that someone
        else resumed between the look and the claim is left alone. A run whose resume
        fails is reported and backed off, and the pass goes on. ``should_stop`` is asked
        between runs, so a stop waits for the run in progress only. Returns the run ids
        this pass resumed.
        """
        if not self.creates:
            raise self._unsupported("serve runs")
        return self.scheduler.serve_once(full_scan, should_stop)

    def _journal(self, run_id: str, event: dict[str, Any]) -> None:
        """Append one event to a live run's journal under its claim, changing nothing else."""
        from reference_engine.runs.executor import FencedSaver, journal_event

        claim = self.claims.take(run_id, patience=False)
        try:
            record = read_run(self.store, run_id)
            if not record.ended:
                saver = FencedSaver(self.store, self.clock, claim, True)
                saver(record.with_event(journal_event({**event, "at": self.clock.now()})))
        finally:
            self._release_quietly(claim)
