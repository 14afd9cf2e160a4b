"""The parsed workflow: frozen values the executor walks. The loader builds them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reference_engine.workflows.cel import Program

STEP_KINDS = ("log", "sleep", "fail", "shell", "python", "wait_for_signal")


@dataclass(frozen=True)
class WaitSpec:
    """``wait_for_signal: {timeout, schema}``; the schema is already checked against the subset."""

    timeout: float
    schema: Mapping[str, Any]


@dataclass(frozen=True)
class Step:
    """One step. ``kind`` is one of STEP_KINDS and ``value`` is that key's value.

    ``value`` is str for log/fail/shell/python, float for sleep, WaitSpec for wait_for_signal.
    ``for_each`` is a literal list or an expression string, evaluated when the step runs.
    The loader compiles the expressions once: ``for_each_program`` and ``template`` (the
    text of log/fail/shell as literal pieces and programs).
    """

    name: str
    kind: str
    value: Any
    for_each: list[Any] | str | None = None
    allow_failure: bool = False
    for_each_program: Program | None = field(default=None, compare=False, repr=False)
    template: tuple[str | Program, ...] | None = field(default=None, compare=False,
                                                       repr=False)

    @property
    def is_wait(self) -> bool:
        return self.kind == "wait_for_signal"


@dataclass(frozen=True)
class Job:
    name: str
    steps: tuple[Step, ...]
    depends_on: tuple[str, ...] = ()
    when: str | None = None
    when_program: Program | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Workflow:
    """A loaded workflow. ``source`` is the validated mapping, stored in the run as its snapshot."""

    name: str
    inputs: Mapping[str, Any]
    jobs: Mapping[str, Job]
    source: Mapping[str, Any] = field(default_factory=dict)

    def levels(self) -> list[list[str]]:
        """Topological layers of ``depends_on``: each level's jobs run concurrently."""
        remaining = dict(self.jobs)
        placed: set[str] = set()
        levels: list[list[str]] = []
        while remaining:
            level = sorted(n for n, j in remaining.items() if set(j.depends_on) <= placed)
            if not level:  # the loader refuses cycles, so this is a programming error
                raise ValueError(f"workflow {self.name!r} has a dependency cycle")
            levels.append(level)
            placed.update(level)
            for n in level:
                del remaining[n]
        return levels

    def has_wait(self) -> bool:
        return any(step.is_wait for job in self.jobs.values() for step in job.steps)

    def step(self, name: str) -> Step:
        """The step named ``name`` (a ``for_each`` iteration ``s[i]`` maps to ``s``)."""
        base = name.split("[", 1)[0]
        for job in self.jobs.values():
            for step in job.steps:
                if step.name == base:
                    return step
        raise KeyError(name)
