"""How fast the history checker settles concurrent-looking histories.

Histories are linearizable by construction (``dw_testing.history.generate``): processes
issue calls back to back, each call takes effect at one instant inside its interval, and
``overlap`` stretches intervals so that more calls are in flight at once. Every row checks
the same number of calls over the same keys; the table reports histories checked per
second and calls checked per second. Run::

    python benchmarks/history_check.py [--operations 10000] [--keys 100] [--repeats 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from rich.console import Console
from rich.table import Table

from dw_testing.history.checker import Budget, check_history
from dw_testing.history.events import Operation
from dw_testing.history.generate import simulated_history

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--operations", type=int, default=10_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    keys = [f"k{i}" for i in range(args.keys)]
    table = Table(title=f"history check: {args.operations} calls over {args.keys} keys, "
                        f"median of {args.repeats} (violations include shrinking)")
    for column in ("scenario", "overlapping calls", "verdict", "seconds / history",
                   "histories / s", "calls / s", "search steps"):
        table.add_column(column, justify="left" if column == "scenario" else "right")
    for name, processes, overlap, indeterminate, corrupt in SCENARIOS:
        timings: list[float] = []
        verdicts: set[str] = set()
        steps = 0
        concurrency = 0.0
        for repeat in range(args.repeats):
            rng = random.Random(f"{args.seed}/{name}/{repeat}")
            history = simulated_history(rng, operations=args.operations, keys=keys,
                                        processes=processes, overlap=overlap,
                                        indeterminate_rate=indeterminate)
            if corrupt:
                history = corrupt_one_read(history, rng)
            concurrency = mean_in_flight(history)
            started = time.perf_counter()
            result = check_history(history, budget=Budget(max_steps=None, max_seconds=120.0))
            timings.append(time.perf_counter() - started)
            verdicts.add(result.verdict)
            steps = result.steps
        seconds = statistics.median(timings)
        table.add_row(name, f"{concurrency:.1f}", "/".join(sorted(verdicts)), f"{seconds:.3f}",
                      f"{1 / seconds:.1f}", f"{args.operations / seconds:,.0f}", f"{steps:,}")
    Console(width=150).print(table)


if __name__ == "__main__":
    main()
