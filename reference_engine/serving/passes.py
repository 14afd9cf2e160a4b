"""The scheduler's passes (``dw serve``): resume the runs a pass names, back off failures.

A pass resumes each run through the engine's ordinary resume path under the ordinary
claim; which runs it looks at is :class:`~reference_engine.serving.scheduler.Schedule`'s choice.
Loaded by the engine on its first pass only: the other commands never need it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from reference_engine.clock import Clock
from reference_engine.records.run import SUSPENDED
from reference_engine.records.views import RunView
from reference_engine.refusals import Refusal
from reference_engine.serving.backoff import Backoff
from reference_engine.serving.scheduler import Schedule

# Refusals that a later pass cannot cure by itself: reported and backed off like a failure.
RETRY_LATER = frozenset({"too_large", "unreadable"})


@dataclass
class Scheduler:
    """One engine's scheduler: its schedule, the back-off of failing runs, and the pass.

    ``resume`` is the engine's resume for a scheduler (``None``: the run needed none any
    more); ``journal`` appends one event to a live run's journal under its claim.
    """

    schedule: Schedule
    clock: Clock
    resume: Callable[[str], RunView | None]
    journal: Callable[[str, dict[str, Any]], None]
    progress: Callable[[str], None]
    backoff: Backoff = field(default_factory=Backoff)

    def ready_runs(self) -> list[str]:
        """Suspended runs whose waits all have outcomes: what the next pass would resume
        (a full scan when one is due, else through the index)."""
        planned = self.schedule.plan(dry=True)
        return [run_id for run_id, status in planned.candidates if status == SUSPENDED]

    def serve_once(self, full_scan: bool | None = None,
                   should_stop: Callable[[], bool] | None = None) -> list[str]:
        """One pass; the run ids it resumed (see :meth:`Engine.serve_once`)."""
        planned = self.schedule.plan(full_scan)
        resumed = []
        for index, (run_id, _status) in enumerate(planned.candidates):
            if should_stop is not None and should_stop():
                for later, _ in planned.candidates[index:]:
                    planned.skipped(later, "busy")  # untouched: look again next pass
                break
            if not self.backoff.due(run_id, self.clock.monotonic()):
                planned.skipped(run_id, "busy")
                continue
            try:
                view = self.resume(run_id)
            except Refusal as refusal:
                if refusal.kind in RETRY_LATER:
                    self._failed(run_id, refusal)
                    planned.skipped(run_id, "busy")
                else:
                    self.progress(f"serve: skipped run {run_id}: {refusal.kind}")
                    planned.skipped(run_id, refusal.kind)
                continue
            except Exception as exc:  # one bad run must not stop the others
                self._failed(run_id, exc)
                planned.skipped(run_id, "busy")
                continue
            # A wait the resume left open keeps its hint: its settler may be on its way.
            planned.handled(run_id, frozenset(w.wait_id for w in view.waits)
                            if view is not None else frozenset())
            self.backoff.succeeded(run_id)
            if view is not None:
                resumed.append(run_id)
        return resumed

    def _failed(self, run_id: str, exc: Exception) -> None:
        """Report a failed resume for its run: a progress line, a journal event, a back-off."""
        streak = self.backoff.failed(run_id, self.clock.monotonic())
        pause = streak.retry_at - self.clock.monotonic()
        # The type only: an exception's text may quote a payload or a secret.
        why = exc.kind if isinstance(exc, Refusal) else type(exc).__name__
        self.progress(f"serve: run {run_id} failed ({why}); "
                      f"failure {streak.failures}, next try in {pause:g}s. See it: "
                      f"dw show {run_id}")
        with contextlib.suppress(Exception):  # the line above is the report of last resort
            self.journal(run_id, {"type": "serve_failed", "error": why,
                                  "failures": streak.failures, "retryInS": pause})
