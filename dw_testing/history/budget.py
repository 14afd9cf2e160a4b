"""How much search a history check may spend, and the meter that counts it."""

from __future__ import annotations

import time
from dataclasses import dataclass

_DEADLINE_EVERY = 1024  # search steps between clock reads


@dataclass(frozen=True)
class Budget:
    """How much search one key's check may spend; either limit reached means UNKNOWN.

    The budget is per key: a key that exhausts it is reported UNKNOWN and the other keys are
    still checked, each with a budget of its own, so their violations are still found.
    """

    max_steps: int | None = 2_000_000
    max_seconds: float | None = 20.0


class OutOfBudget(Exception):
    """A search ran out of its budget (internal: the checker turns it into UNKNOWN)."""


class Meter:
    """Counts search steps against a :class:`Budget`; raises :class:`OutOfBudget`."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.steps = 0
        self.started = time.monotonic()
        self.deadline = (None if budget.max_seconds is None
                         else self.started + budget.max_seconds)

    def spend(self, steps: int) -> None:
        before = self.steps
        self.steps += steps
        if self.budget.max_steps is not None and self.steps > self.budget.max_steps:
            raise OutOfBudget(f"search passed {self.budget.max_steps} steps")
        if (self.deadline is not None and before // _DEADLINE_EVERY != self.steps // _DEADLINE_EVERY
                and time.monotonic() > self.deadline):
            raise OutOfBudget(f"search passed {self.budget.max_seconds}s")

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.started
