"""How fast the history checker settles concurrent-looking histories.

Histories are linearizable by construction (``dw_testing.history.generate``): processes
issue calls back to back, each call takes effect at one instant inside its interval, and
``overlap`` stretches intervals so that more calls are in flight at once. Every row checks
the same number of calls over the same keys; the table reports calls checked per second of
wall time (the goal) and per second of this process's CPU time (steadier on a shared
machine, where other work slows the wall clock), for the current checker ("after") and, on
the very same histories in the same run, the checker as it was before its rewrite
("before", ``benchmarks/history_baseline.py``). Verdicts must agree; the run fails if they
do not.
Run::

    python benchmarks/history_check.py [--operations 10000] [--keys 100] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from dw_testing.history.checker import Budget, check_history
from dw_testing.history.events import Operation
from dw_testing.history.generate import simulated_history

sys.path.insert(0, str(Path(__file__).parent))
import history_baseline  # a sibling file, not a package

GOAL = 100_000  # calls per second of wall time, every scenario

SCENARIOS: tuple[tuple[str, int, int, float, bool], ...] = (
    # (name, processes, overlap, indeterminate rate, corrupt one read)
    ("nearly sequential (4 procs)", 4, 1, 0.0, False),
    ("overlapping (8 procs)", 8, 3, 0.0, False),
    ("heavily overlapping (16 procs)", 16, 10, 0.0, False),
    ("overlapping, 2% indeterminate", 8, 3, 0.02, False),
    ("heavy overlap, 5% indeterminate", 16, 10, 0.05, False),
    ("heavy overlap, one read corrupted", 16, 10, 0.0, True),
)


def corrupt_one_read(history: list[Operation], rng: random.Random) -> list[Operation]:
    """Make one get return a value nobody wrote, so the search must exhaust that key."""
    reads = [i for i, op in enumerate(history) if op.op == "get" and op.ret is not None]
    i = rng.choice(reads)
    op = history[i]
    history = list(history)
    history[i] = Operation(op.process, op.op, op.key, None, b"never-written", op.call, op.ret)
    return history


def mean_in_flight(history: list[Operation]) -> float:
    """Average number of other calls whose interval overlaps a call's (finite ones only)."""
    spans = sorted((op.call, op.ret) for op in history if op.ret is not None)
    ends: list[int] = []
    total = 0
    for start, end in spans:
        ends = [e for e in ends if e >= start]
        total += len(ends)
        ends.append(end)
    return total / max(1, len(spans))


def _timed(check: Callable[[list[Operation]], tuple[str, int]],
           history: list[Operation]) -> tuple[float, float, str, int]:
    """Wall seconds, CPU seconds of this process, verdict and search steps."""
    started, cpu = time.perf_counter(), time.process_time()
    verdict, steps = check(history)
    return time.perf_counter() - started, time.process_time() - cpu, verdict, steps


def _after(history: list[Operation]) -> tuple[str, int]:
    result = check_history(history, budget=Budget(max_steps=None, max_seconds=120.0))
    return result.verdict, result.steps


def _before(history: list[Operation]) -> tuple[str, int]:
    result = history_baseline.check_history(
        history, budget=history_baseline.Budget(max_steps=None, max_seconds=120.0))
    return result.verdict, result.steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--operations", type=int, default=10_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    keys = [f"k{i}" for i in range(args.keys)]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    table = Table(title=f"history check: {args.operations} calls over {args.keys} keys, "
                        f"median of {args.repeats}, before and after on the same histories "
                        f"(violations include finding the fault); load average {load:.1f} "
                        f"on {os.cpu_count()} CPUs")
    for column in ("scenario", "overlapping calls", "verdict", "calls / s before",
                   "calls / s after", "calls / CPU s before", "calls / CPU s after",
                   "speed-up (CPU)", "steps before", "steps after"):
        table.add_column(column, justify="left" if column == "scenario" else "right",
                         no_wrap=True)
    disagreements = []
    slow = []
    for name, processes, overlap, indeterminate, corrupt in SCENARIOS:
        wall: dict[str, list[float]] = {"before": [], "after": []}
        cpu: dict[str, list[float]] = {"before": [], "after": []}
        verdicts: dict[str, set[str]] = {"before": set(), "after": set()}
        steps = {"before": 0, "after": 0}
        concurrency = 0.0
        for repeat in range(args.repeats):
            rng = random.Random(f"{args.seed}/{name}/{repeat}")
            history = simulated_history(rng, operations=args.operations, keys=keys,
                                        processes=processes, overlap=overlap,
                                        indeterminate_rate=indeterminate)
            if corrupt:
                history = corrupt_one_read(history, rng)
            concurrency = mean_in_flight(history)
            # Alternate which goes first, so neither always runs on a warmer cache.
            runs = [("before", _before), ("after", _after)]
            for label, check in runs if repeat % 2 else reversed(runs):
                seconds, cpu_seconds, verdict, count = _timed(check, history)
                wall[label].append(seconds)
                cpu[label].append(cpu_seconds)
                verdicts[label].add(verdict)
                steps[label] = count
            if verdicts["before"] != verdicts["after"]:
                disagreements.append(f"{name} (repeat {repeat})")
        rate = {label: args.operations / statistics.median(wall[label]) for label in wall}
        cpu_rate = {label: args.operations / max(1e-9, statistics.median(cpu[label]))
                    for label in cpu}
        if rate["after"] < GOAL:
            slow.append(name)
        table.add_row(name, f"{concurrency:.1f}",
                      "/".join(sorted(verdicts["after"]))
                      + ("" if verdicts["before"] == verdicts["after"] else " (DIFFERS)"),
                      f"{rate['before']:,.0f}", f"{rate['after']:,.0f}",
                      f"{cpu_rate['before']:,.0f}", f"{cpu_rate['after']:,.0f}",
                      f"{cpu_rate['after'] / cpu_rate['before']:.1f}x",
                      f"{steps['before']:,}", f"{steps['after']:,}")
    Console(width=200).print(table)
    print(f"goal: at least {GOAL:,} calls / s (wall) after, every scenario: "
          + ("met" if not slow else "NOT met on " + ", ".join(slow)))
    if disagreements:
        sys.exit("verdicts differ between the checkers on: " + ", ".join(disagreements))


if __name__ == "__main__":
    main()
