"""How fast the history checker settles concurrent-looking histories.

Histories are linearizable by construction (``dw_testing.history.generate``): processes
issue calls back to back, each call takes effect at one instant inside its interval, and
``overlap`` stretches intervals so that more calls are in flight at once. Every row checks
the same number of calls over the same keys; the table reports calls checked per second of
wall time (the goal) and per second of the checking process's CPU time (steadier on a
shared machine, where other work slows the wall clock).

``--baseline PATH`` checks the very same histories, in the same run, with the checker of
the code in PATH as well ("before"; this tree's checker is "after"). Verdicts must agree;
the run fails if they do not. The checker before its rewrite (d65ef82, "a quick greedy pass
settles most keys") is the one at 364443e::

    git worktree add --detach /tmp/dw-history-old 364443e
    python benchmarks/history_check.py --baseline /tmp/dw-history-old
    git worktree remove /tmp/dw-history-old

Each tree's checker runs in a child process of its own (``PYTHONPATH`` set to the tree);
histories reach it as JSON lines and only the check itself is timed. Run::

    python benchmarks/history_check.py [--operations 10000] [--keys 100] [--repeats 5]
                                       [--baseline PATH]

``--sizes 1000,10000,100000`` (or ``--vs-porcupine PATH``) checks instead every scenario,
and a recorded one (``run_threads`` on the memory store, about 2 % of calls raising before
or after they apply), at each size, written once to a file by ``dump_jsonl``; it prints
CPU seconds to parse and to check each file with the default ``Budget()`` (the least of
``--repeats`` runs, each side in turn). With
``--vs-porcupine PATH``, PATH holding a checkout of Porcupine's Go source
(github.com/anishathalye/porcupine; nothing is downloaded), it builds
``benchmarks/porcupine_runner`` with the ``go`` on PATH (Debian: ``golang-go``), checks the
same files with it on one core (``GOMAXPROCS=1``), fails if a verdict differs, and prints
the ratios ours / Porcupine. Without Go it prints ours alone. Run::

    python benchmarks/history_check.py --sizes 1000,10000,100000 --vs-porcupine /tmp/porcupine
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.table import Table

from dw_testing.history.checker import check_history
from dw_testing.history.events import Operation, dump_jsonl, load_jsonl
from dw_testing.history.generate import simulated_history
from dw_testing.history.workload import run_threads
from reference_engine.errors import TransientStoreError
from reference_engine.stores.memory import MemoryStore

HERE = Path(__file__).resolve().parent.parent
# The child: says where its checker comes from, then checks one JSON-lines history a line.
# Budget(max_steps=None, max_seconds=...) and CheckResult.verdict/.steps are the same in
# the checker before its rewrite and after it.
CHECKER = """
import json, sys, time
from dw_testing.history import checker
from dw_testing.history.events import Operation
print(json.dumps(checker.__file__), flush=True)
budget = checker.Budget(max_steps=None, max_seconds=120.0)
for line in sys.stdin:
    history = [Operation.from_json(row) for row in json.loads(line)]
    started, cpu = time.perf_counter(), time.process_time()
    result = checker.check_history(history, budget=budget)
    print(json.dumps([time.perf_counter() - started, time.process_time() - cpu,
                      result.verdict, result.steps]), flush=True)
"""


class CheckerProcess:
    """The history checker of the code in ``tree``, in a child process."""

    def __init__(self, label: str, tree: Path) -> None:
        self.label, self.tree = label, tree.resolve()
        self._child = subprocess.Popen(
            [sys.executable, "-c", CHECKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, env={**os.environ, "PYTHONPATH": str(self.tree)},
            cwd=tempfile.gettempdir())  # ``python -c`` puts the working folder on sys.path
        source = Path(json.loads(self._answer()))
        if not source.resolve().is_relative_to(self.tree):
            self.close()
            raise SystemExit(f"the {label} checker was imported from {source}, not from "
                             f"{self.tree}; pass a checkout that has dw_testing/history/")

    def _answer(self) -> str:
        stdout: IO[str] | None = self._child.stdout
        line = stdout.readline() if stdout is not None else ""
        if not line:
            raise SystemExit(f"the {self.label} checker in {self.tree} stopped (see its "
                             "error above); is it a checkout of this project?")
        return line

    def check(self, history: str) -> tuple[float, float, str, int]:
        """Wall seconds, CPU seconds, verdict and search steps of one JSON-lines history."""
        assert self._child.stdin is not None
        self._child.stdin.write(history + "\n")
        self._child.stdin.flush()
        wall, cpu, verdict, steps = json.loads(self._answer())
        return float(wall), float(cpu), str(verdict), int(steps)

    def close(self) -> None:
        if self._child.stdin is not None:
            self._child.stdin.close()
        self._child.wait(timeout=30)
        if self._child.stdout is not None:
            self._child.stdout.close()


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


def _columns(labels: list[str]) -> list[str]:
    columns = ["scenario", "overlapping calls", "verdict"]
    columns += [f"calls / s {label}" for label in labels]
    columns += [f"calls / CPU s {label}" for label in labels]
    columns += ["speed-up (CPU)"] if len(labels) == 2 else []
    return columns + [f"steps {label}" for label in labels]


def _agree(verdicts: dict[str, set[str]]) -> bool:
    return len({frozenset(found) for found in verdicts.values()}) == 1


RUNNER = Path(__file__).resolve().parent / "porcupine_runner"


class FlakyStore:
    """A memory store whose calls raise ``rate`` of the time, half before they apply and
    half after (the answer lost): what a lossy wire leaves in a recording."""

    def __init__(self, inner: MemoryStore, rng: random.Random, rate: float) -> None:
        self.inner, self.rng, self.rate = inner, rng, rate

    def _call(self, apply: Callable[[], Any]) -> Any:
        roll = self.rng.random()
        if roll < self.rate / 2:
            raise TransientStoreError("dropped before it applied")
        result = apply()
        if roll < self.rate:
            raise TransientStoreError("answer lost after it applied")
        return result

    def put(self, key: str, data: bytes) -> None:
        self._call(lambda: self.inner.put(key, data))

    def put_if_absent(self, key: str, data: bytes) -> bool:
        return bool(self._call(lambda: self.inner.put_if_absent(key, data)))

    def get(self, key: str) -> bytes | None:
        result: bytes | None = self._call(lambda: self.inner.get(key))
        return result

    def delete(self, key: str) -> None:
        self._call(lambda: self.inner.delete(key))


def recorded(size: int, keys: list[str], seed: int) -> list[Operation]:
    """``size`` calls by 8 threads on one memory store, 2 % raising."""
    space = f"history-bench-{seed}-{size}"
    rng = random.Random(seed)
    return run_threads(lambda: FlakyStore(MemoryStore(space), rng, 0.02), racers=8,
                       calls=size // 8, keys=keys, seed=seed)


def porcupine_runner(checkout: Path, folder: Path) -> Path | None:
    """Build the Porcupine runner against ``checkout``; None when there is no Go."""
    go = shutil.which("go")
    if go is None:
        print("no `go` on PATH (Debian: apt-get install golang-go): ours alone")
        return None
    if not (checkout / "porcupine.go").is_file():
        raise SystemExit(f"{checkout} has no porcupine.go: pass a checkout of "
                         "github.com/anishathalye/porcupine")
    build = folder / "runner-src"
    build.mkdir()
    shutil.copy(RUNNER / "main.go", build / "main.go")
    (build / "go.mod").write_text(
        "module dwrunner\n\ngo 1.19\n\nrequire github.com/anishathalye/porcupine v0.0.0\n\n"
        f"replace github.com/anishathalye/porcupine => {checkout.resolve()}\n",
        encoding="utf-8")
    binary = folder / "runner"
    subprocess.run([go, "build", "-o", str(binary), "."], cwd=build, check=True,
                   env={**os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off"})
    return binary


def ours(path: Path) -> tuple[float, float, float, str]:
    """CPU seconds to parse one file, to reach the verdict (default budget) and to explain
    a violation, and the verdict."""
    started = time.process_time()
    history = load_jsonl(path)
    parsed = time.process_time()
    result = check_history(history)
    checked = time.process_time() - parsed
    # ``explain_seconds`` is wall time; on one busy core its share of the CPU is near 1.
    explaining = min(checked, result.explain_seconds)
    return parsed - started, checked - explaining, explaining, result.verdict


def side_by_side(args: argparse.Namespace) -> None:
    sizes = [int(float(size)) for size in args.sizes.split(",")]
    keys = [f"k{i}" for i in range(args.keys)]
    rows: list[tuple[str, int, str, float, float, float | None, float | None]] = []
    disagreements = []
    with tempfile.TemporaryDirectory() as folder:
        binary = (porcupine_runner(args.vs_porcupine, Path(folder))
                  if args.vs_porcupine is not None else None)
        cases = [(name, size) for size in sizes for name, *_ in SCENARIOS]
        cases += [("recorded, 2% raised (8 threads)", size) for size in sizes]
        for name, size in cases:
            rng = random.Random(f"{args.seed}/{name}/{size}")
            if name.startswith("recorded"):
                history = recorded(size, keys, args.seed)
            else:
                _, processes, overlap, indeterminate, corrupt = next(
                    row for row in SCENARIOS if row[0] == name)
                history = simulated_history(rng, operations=size, keys=keys,
                                            processes=processes, overlap=overlap,
                                            indeterminate_rate=indeterminate)
                if corrupt:
                    history = corrupt_one_read(history, rng)
            path = Path(folder) / "history.jsonl"
            dump_jsonl(history, path)
            # Turn about, ``--repeats`` times each, the least of each kept: a shared
            # machine slows a run now and then, and both sides alike.
            parse = check = explaining = float("inf")
            theirs: tuple[float | None, float | None] = (None, None)
            for _ in range(max(1, args.repeats)):
                took = ours(path)
                parse, check = min(parse, took[0]), min(check, took[1])
                explaining, verdict = min(explaining, took[2]), took[3]
                if binary is None:
                    continue
                answer = subprocess.run(
                    ["taskset", "-c", "0", str(binary), str(path)] if shutil.which("taskset")
                    else [str(binary), str(path)], check=True, capture_output=True, text=True,
                    env={**os.environ, "GOMAXPROCS": "1"}).stdout
                found = json.loads(answer.splitlines()[0])
                theirs = (min(theirs[0] or float("inf"), float(found["parse"])),
                          min(theirs[1] or float("inf"), float(found["check"])))
                if found["verdict"] != verdict:
                    disagreements.append(f"{name} at {size:,}: ours {verdict}, "
                                         f"Porcupine {found['verdict']}")
            rows.append((name, len(history), verdict, parse, check, *theirs))
            beside = ("" if theirs[0] is None
                      else f"; Porcupine {theirs[0]:.2f}s + {theirs[1]:.2f}s")
            print(f"{name} {len(history):,}: {verdict}, parse {parse:.2f}s, check "
                  f"{check:.2f}s, explain {explaining:.2f}s{beside}", flush=True)
    print_side_by_side(rows, compared=binary is not None, repeats=max(1, args.repeats))
    if disagreements:
        sys.exit("verdicts differ: " + "; ".join(disagreements))


def print_side_by_side(rows: list[tuple[str, int, str, float, float, float | None,
                                        float | None]], *, compared: bool,
                       repeats: int = 1) -> None:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\nCPU seconds, one core each, the least of {repeats} run(s); load average "
          f"{load:.1f} on {os.cpu_count()} CPUs")
    head = "| scenario | calls | verdict | ours parse | ours check | ours calls / CPU s |"
    if compared:
        head += (" Porcupine parse | Porcupine check | Porcupine calls / CPU s |"
                 " check ours ÷ Porcupine | parse + check ours ÷ Porcupine |")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for name, calls, verdict, parse, check, their_parse, their_check in rows:
        line = (f"| {name} | {calls:,} | {verdict} | {parse:.3f} | {check:.3f} | "
                f"{calls / max(1e-9, parse + check):,.0f} |")
        if compared and their_parse is not None and their_check is not None:
            line += (f" {their_parse:.3f} | {their_check:.3f} | "
                     f"{calls / max(1e-9, their_parse + their_check):,.0f} | "
                     f"{check / max(1e-9, their_check):.2f} | "
                     f"{(parse + check) / max(1e-9, their_parse + their_check):.2f} |")
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--operations", type=int, default=10_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--baseline", type=Path, default=None,
                        help="a checkout of an older commit, e.g. 364443e (see above)")
    parser.add_argument("--sizes", default=None,
                        help="check every scenario at these sizes, e.g. 1000,10000,1e5")
    parser.add_argument("--vs-porcupine", type=Path, default=None, metavar="PATH",
                        help="a checkout of Porcupine's Go source: check with both")
    args = parser.parse_args()
    if args.sizes is not None or args.vs_porcupine is not None:
        args.sizes = args.sizes or "1000,10000,100000"
        side_by_side(args)
        return
    checkers = [CheckerProcess("after", HERE)]
    if args.baseline is not None:
        checkers.insert(0, CheckerProcess("before", args.baseline))
    labels = [checker.label for checker in checkers]
    keys = [f"k{i}" for i in range(args.keys)]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    compared = (f"before ({args.baseline}) and after on the same histories"
                if args.baseline else "this tree only; --baseline PATH adds a before")
    table = Table(title=f"history check: {args.operations} calls over {args.keys} keys, "
                        f"median of {args.repeats}, {compared} (violations include finding "
                        f"the fault); load average {load:.1f} on {os.cpu_count()} CPUs")
    for column in _columns(labels):
        table.add_column(column, justify="left" if column == "scenario" else "right",
                         no_wrap=True)
    disagreements = []
    slow = []
    for name, processes, overlap, indeterminate, corrupt in SCENARIOS:
        wall: dict[str, list[float]] = {label: [] for label in labels}
        cpu: dict[str, list[float]] = {label: [] for label in labels}
        verdicts: dict[str, set[str]] = {label: set() for label in labels}
        steps = dict.fromkeys(labels, 0)
        concurrency = 0.0
        for repeat in range(args.repeats):
            rng = random.Random(f"{args.seed}/{name}/{repeat}")
            history = simulated_history(rng, operations=args.operations, keys=keys,
                                        processes=processes, overlap=overlap,
                                        indeterminate_rate=indeterminate)
            if corrupt:
                history = corrupt_one_read(history, rng)
            concurrency = mean_in_flight(history)
            line = json.dumps([op.to_json() for op in history])
            # Alternate which goes first, so neither always runs on a warmer machine.
            for checker in checkers if repeat % 2 else reversed(checkers):
                seconds, cpu_seconds, verdict, count = checker.check(line)
                wall[checker.label].append(seconds)
                cpu[checker.label].append(cpu_seconds)
                verdicts[checker.label].add(verdict)
                steps[checker.label] = count
            if not _agree(verdicts):
                disagreements.append(f"{name} (repeat {repeat})")
        rate = {label: args.operations / statistics.median(wall[label]) for label in labels}
        cpu_rate = {label: args.operations / max(1e-9, statistics.median(cpu[label]))
                    for label in labels}
        if rate["after"] < GOAL:
            slow.append(name)
        found = "/".join(sorted(verdicts["after"]))
        table.add_row(name, f"{concurrency:.1f}",
                      found if _agree(verdicts) else f"{found} (DIFFERS)",
                      *(f"{rate[label]:,.0f}" for label in labels),
                      *(f"{cpu_rate[label]:,.0f}" for label in labels),
                      *([f"{cpu_rate['after'] / cpu_rate['before']:.1f}x"]
                        if len(labels) == 2 else []),
                      *(f"{steps[label]:,}" for label in labels))
    for checker in checkers:
        checker.close()
    Console(width=200).print(table)
    print(f"goal: at least {GOAL:,} calls / s (wall) after, every scenario: "
          + ("met" if not slow else "NOT met on " + ", ".join(slow)))
    if disagreements:
        sys.exit("verdicts differ between the checkers on: " + ", ".join(disagreements))


if __name__ == "__main__":
    main()
