"""The executor: walks a run's levels, saves fenced revisions, suspends on waits
(docs/explanation/engine.md).

One :class:`Executor` drives one run under one claim. Jobs of a level run in threads;
every record change goes through :meth:`Executor.update`, which holds one lock, so the
owner's saves are serialized while siblings run. Saves are creates of the next revision
(``put_if_absent`` then read-back); a lost create means another holder took the run,
and the executor stops with ``busy`` and writes nothing more.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from reference_engine.clock import Clock
from reference_engine.records import keys
from reference_engine.records.decoding import MAX_RUN_RECORD_BYTES
from reference_engine.records.io import create_then_read
from reference_engine.records.registration import Registration
from reference_engine.records.run import (
    FAILED,
    RUNNING,
    SUCCEEDED,
    SUSPENDED,
    WAITING,
    RunRecord,
    StepRecord,
    WaitRef,
)
from reference_engine.records.run_states import file_run, move_run
from reference_engine.records.views import RunView, WaitView
from reference_engine.refusals import Refusal
from reference_engine.runs.claims import Claim
from reference_engine.runs.plain_steps import perform
from reference_engine.secrets import filter_event, let_through, redact_text
from reference_engine.waits.registration import (
    RegistrationTooLarge,
    register,
    wait_id_for,
)
from reference_engine.workflows.cel import CelRuntimeError, kind_of
from reference_engine.workflows.model import Job, Step, WaitSpec, Workflow

JOB_DONE = ("succeeded", "failed", "skipped")
JOB_WAITING = "waiting"
_FAILED_CALL = re.compile(r"failed\(\s*['\"]([^'\"]+)['\"]\s*\)")

Saver = Callable[[RunRecord], RunRecord]


def journal_event(event: Mapping[str, Any], *, bypass: bool = False) -> dict[str, Any]:
    """A journal event after the secret filter (docs/explanation/answers.md)."""
    return filter_event(event, bypass=bypass)


def run_view(record: RunRecord) -> RunView:
    waits = tuple(
        WaitView(s.wait.id, s.job, name, s.wait.deadline)
        for name, s in sorted(record.waiting_steps().items()) if s.wait is not None
    )
    return RunView(record.run_id, record.workflow, record.status, waits)


class FencedSaver:
    """Saves revision ``n+1`` of a run: a create carrying the claim generation, then a read.

    Without ``put_if_absent`` (a store that cannot hold waits) it saves with ``put``,
    unclaimed, as C-CAP-2 allows for runs without waits.
    """

    def __init__(self, store: Any, clock: Clock, claim: Claim | None, creates: bool,
                 status: str | None = None) -> None:
        self.store = store
        self.clock = clock
        self.claim = claim
        self.creates = creates
        self.status = status  # the status of the newest saved revision (None: no run yet)

    def __call__(self, record: RunRecord) -> RunRecord:
        if self.claim is not None:
            self.claim.ensure_held()
        generation = self.claim.generation if self.claim is not None else 0
        new = replace(record, rev=record.rev + 1, generation=generation,
                      updated_at=self.clock.now())
        data = new.encode()
        if len(data) > MAX_RUN_RECORD_BYTES:
            # Written, it would read back as unreadable; stop here with a clear reason. A
            # cancel always fits (an ending record leaves large values out), so it is the
            # way out.
            raise Refusal("too_large", f"Run {new.run_id} would grow to {len(data)} bytes, "
                          f"over the {MAX_RUN_RECORD_BYTES} byte record limit, so this step "
                          "cannot be saved; split the workflow or shorten its for_each lists. "
                          f"End this run: dw cancel {new.run_id}",
                          {"runId": new.run_id, "bytes": len(data)})
        key = keys.revision_key(new.run_id, new.rev)
        filed = new.status == RUNNING and self.status != RUNNING
        if filed:  # before the save: a run left running by a dead owner is always filed
            file_run(self.store, new.run_id, new.workflow, RUNNING)
        if not self.creates:
            self.store.put(key, data)
            self._index(new, filed)
            return new
        stored = create_then_read(self.store, key, data)
        if stored != data:
            if self.claim is not None:
                self.claim.lost = True
            raise Refusal("busy", f"Run {new.run_id} is busy: another process saved revision "
                          f"{new.rev} first, so this one stopped writing. See where it "
                          f"stands: dw show {new.run_id}", {"runId": new.run_id})
        self._index(new, filed)
        return new

    def _index(self, saved: RunRecord, filed: bool) -> None:
        """Move the run's listing entry after its status changed (the revision is saved)."""
        move_run(self.store, saved.run_id, saved.workflow, self.status, saved.status,
                 filed=filed)
        self.status = saved.status


def _say_nothing(_line: str) -> None:
    pass


@dataclass(eq=False)
class Executor:
    """Runs the levels of one run from its own workflow snapshot.

    ``record`` is the newest revision ``save`` wrote; ``claim`` (when the store creates)
    is the one that saver writes under, beaten while a long step runs.
    """

    store: Any
    clock: Clock
    workflow: Workflow
    record: RunRecord
    save: Saver
    claim: Claim | None = field(default=None, kw_only=True)
    sleeper: Callable[[float], object] | None = field(default=None, kw_only=True)
    progress: Callable[[str], None] = field(default=_say_nothing, kw_only=True)
    _lock: threading.RLock = field(default_factory=threading.RLock, init=False, repr=False)

    # --- record updates ---------------------------------------------------------------

    def update(self, change: Callable[[RunRecord], RunRecord]) -> RunRecord:
        """Apply ``change`` to the current record and save it, under the executor lock."""
        with self._lock:
            self.record = self.save(change(self.record))
            return self.record

    def context(self) -> dict[str, Any]:
        with self._lock:
            record = self.record
        return {
            "inputs": dict(record.inputs),
            "steps": {n: {"outputs": s.output if s.output is not None else {},
                          "status": s.status} for n, s in record.steps.items()},
            "jobs": dict(record.jobs),
        }

    # --- levels -----------------------------------------------------------------------

    def execute(self) -> RunRecord:
        """Run until the run suspends or every level is done; returns the record.

        A suspended run is saved ``suspended``. When every level is done the record is
        returned still ``running``: the caller takes :meth:`final_status` and runs the
        end-of-run lifetime (``lifecycle.end_run``), which saves the final status.
        """
        for level in self.workflow.levels():
            todo = [j for j in level if self.record.jobs.get(j) not in JOB_DONE]
            self._run_level(todo)
            if any(self.record.jobs.get(j) == JOB_WAITING for j in level):
                self.update(lambda r: replace(r, status=SUSPENDED).with_event(
                    journal_event({"type": "run_suspended", "at": self.clock.now()})))
                self.progress(f"run {self.record.run_id} suspended on a wait")
                return self.record
        return self.record

    def _run_level(self, jobs: list[str]) -> None:
        if len(jobs) <= 1:
            for name in jobs:
                self._run_job(self.workflow.jobs[name])
            return
        errors: list[BaseException] = []

        def work(job: Job) -> None:
            try:
                self._run_job(job)
            except BaseException as exc:  # re-raised on the level's thread below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(self.workflow.jobs[n],),
                                    name=f"job-{n}") for n in jobs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]

    def final_status(self) -> str:
        """``failed`` if a failed job was handled by no job that ran ``when: failed(...)``."""
        jobs = self.record.jobs
        failed = {n for n, s in jobs.items() if s == "failed"}
        handled: set[str] = set()
        for name, job in self.workflow.jobs.items():
            if job.when and jobs.get(name) not in (None, "skipped"):
                handled.update(_FAILED_CALL.findall(job.when))
        return FAILED if failed - handled else SUCCEEDED

    # --- jobs -------------------------------------------------------------------------

    def _set_job(self, name: str, status: str, event: dict[str, Any] | None = None) -> None:
        def change(r: RunRecord) -> RunRecord:
            r = r.with_job(name, status)
            return r.with_event(journal_event({**event, "at": self.clock.now()})) if event else r
        self.update(change)

    def _run_job(self, job: Job) -> None:
        status = self.record.jobs.get(job.name)
        if status is None or status == "pending":
            if job.when_program is not None:
                try:
                    go = job.when_program.condition(self.context())
                except CelRuntimeError as exc:  # names the expression; fails only this job
                    self.progress(redact_text(f"{job.name}: {exc}"))
                    self._set_job(job.name, "failed", {"type": "job_failed", "job": job.name,
                                                       "error": str(exc)})
                    return
                if not go:
                    self._set_job(job.name, "skipped", {"type": "job_skipped",
                                                        "job": job.name})
                    return
            with self._lock:
                self.record = self.record.with_job(job.name, RUNNING)
        for step in job.steps:
            verdict = self._run_step(job, step)
            if verdict == JOB_WAITING:
                self._set_job(job.name, JOB_WAITING)
                return
            if verdict == "failed":
                self._set_job(job.name, "failed", {"type": "job_failed", "job": job.name})
                return
        self._set_job(job.name, "succeeded")

    # --- steps ------------------------------------------------------------------------

    def _iterations(self, step: Step) -> list[tuple[str, int, Any]]:
        if step.for_each is None:
            return [(step.name, 0, None)]
        items = step.for_each
        program = step.for_each_program
        if program is not None:
            items = program.evaluate(self.context())
            if program.old and not isinstance(items, list):  # the old language's rule
                items = [] if items is None else [items]
            if not isinstance(items, list):
                raise CelRuntimeError(f"the for_each expression '{program.text}' gave "
                                      f"{kind_of(items)}, not a list")
        return [(f"{step.name}[{i}]", i, item) for i, item in enumerate(items)]

    def _run_step(self, job: Job, step: Step) -> str:
        """``ok``, ``failed`` (not allowed) or ``waiting``, over all of the step's iterations."""
        waiting = False
        failed = False
        try:
            iterations = self._iterations(step)
        except CelRuntimeError as exc:
            self._finish(job, step.name, FAILED, None, str(exc))
            return "ok" if step.allow_failure else "failed"
        for name, index, item in iterations:
            existing = self.record.steps.get(name)
            if existing is not None and existing.status in ("succeeded", "skipped"):
                continue
            if existing is not None and existing.status == WAITING:
                waiting = True
                continue
            if existing is not None and existing.status == FAILED:
                failed = failed or not step.allow_failure
                continue
            if step.is_wait:
                result = self._open_wait(job, step, name, index)
            else:
                result = self._run_plain(job, step, name, item)
            waiting = waiting or result == WAITING
            failed = failed or (result == FAILED and not step.allow_failure)
        if failed:
            return "failed"
        return JOB_WAITING if waiting else "ok"

    def let_through(self) -> frozenset[str]:
        """The strings of answers accepted with the ``--no-secret-detection`` bypass."""
        with self._lock:
            steps = list(self.record.steps.values())
        found: frozenset[str] = frozenset()
        for step in steps:
            out = step.output
            if isinstance(out, dict) and out.get("type") == "wait_for_signal" \
                    and isinstance(out.get("signal"), dict) \
                    and out["signal"].get("secretDetection") is False:
                found |= let_through(out.get("payload"))
        return found

    def _finish(self, job: Job, name: str, status: str, output: Any, error: str | None) -> str:
        if error:  # an exception's text may quote a credential: the secret rules apply,
            # span by span, and a bypassed answer's text stays (the event needs no filter)
            error = redact_text(error, self.let_through())
        event = {"type": "step_finished", "job": job.name, "step": name, "status": status,
                 "at": self.clock.now()}
        if error:
            event["error"] = error

        def change(r: RunRecord) -> RunRecord:
            return r.with_step(name, StepRecord(job.name, status, output, error)).with_event(
                journal_event(event, bypass=True))
        self.update(change)
        self.progress(f"{job.name}/{name}: {status}" + (f" ({error})" if error else ""))
        return status

    def _run_plain(self, job: Job, step: Step, name: str, item: Any) -> str:
        context = self.context()
        if item is not None:
            context["item"] = item
        try:
            status, output, error = perform(step, context, run_id=self.record.run_id,
                                            claim=self.claim, sleeper=self.sleeper,
                                            progress=self.progress,
                                            allowed=self.let_through())
        except Refusal:
            raise
        except CelRuntimeError as exc:  # names the expression; no traceback
            status, output, error = FAILED, None, str(exc)
        except Exception as exc:  # the step's own failure; a crash (BaseException) passes
            status, output, error = FAILED, None, f"{type(exc).__name__}: {exc}"
        return self._finish(job, name, status, output, error)

    # --- waits ------------------------------------------------------------------------

    def _open_wait(self, job: Job, step: Step, name: str, index: int) -> str:
        """Register ``waits/<id>``, then save the step ``waiting_signal`` (in that order)."""
        spec: WaitSpec = step.value
        record = self.record
        wait_id = wait_id_for(record.run_nonce, job.name, step.name, index, 1)
        now = self.clock.now()
        wanted = Registration(
            wait_id=wait_id, workflow=record.workflow, run_id=record.run_id, job=job.name,
            step=name, iteration=index, attempt=1, deadline=now + spec.timeout,
            schema=dict(spec.schema), registered_at=now,
        )
        try:
            registered = register(self.store, wanted).registration
        except (RegistrationTooLarge, ValueError) as exc:
            return self._finish(job, name, FAILED, None, str(exc))
        ref = WaitRef(wait_id, dict(registered.schema), registered.deadline)
        event = {"type": "wait_opened", "job": job.name, "step": name, "waitId": wait_id,
                 "at": now}

        def change(r: RunRecord) -> RunRecord:
            return r.with_step(name, StepRecord(job.name, WAITING, None, None, ref)).with_event(
                journal_event(event))
        self.update(change)
        self.progress(f"{job.name}/{name}: waiting for a signal: dw signal {wait_id} "
                      "--payload '<json>'")
        return WAITING
