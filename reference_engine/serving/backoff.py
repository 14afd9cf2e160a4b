"""The scheduler's back-off for a run whose resume failed: each failure doubles the pause.

One bad run (a record the store refuses, a workflow that cannot load) must not stop a
scheduler, nor be retried at full speed on every pass. Times are the engine clock's
monotonic seconds, so a test moves them with ``FakeClock``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FIRST_PAUSE_S = 5.0
LONGEST_PAUSE_S = 600.0


@dataclass(frozen=True)
class Failing:
    """A run's streak of failed resumes: how many, and when it may be tried again."""

    failures: int
    retry_at: float


@dataclass
class Backoff:
    """Per-run streaks of failures for one scheduler (forgotten when the process exits)."""

    first_pause: float = FIRST_PAUSE_S
    longest_pause: float = LONGEST_PAUSE_S
    streaks: dict[str, Failing] = field(default_factory=dict)

    def due(self, run_id: str, now: float) -> bool:
        streak = self.streaks.get(run_id)
        return streak is None or now >= streak.retry_at

    def failed(self, run_id: str, now: float) -> Failing:
        """Count one more failure; return the streak with its next try."""
        failures = self.streaks[run_id].failures + 1 if run_id in self.streaks else 1
        pause = min(self.first_pause * 2.0 ** min(failures - 1, 30), self.longest_pause)
        self.streaks[run_id] = streak = Failing(failures, now + pause)
        return streak

    def succeeded(self, run_id: str) -> None:
        self.streaks.pop(run_id, None)
