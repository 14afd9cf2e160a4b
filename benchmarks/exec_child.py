"""What one ``exec:`` handle of the Python child costs: its start, its calls, its close.

    python benchmarks/exec_child.py [--stores memory,file,sqlite] [--baseline PATH]
    python benchmarks/exec_child.py --baseline /tmp/dw-main-src   # a git archive of main

For each store, a worker process (``PYTHONPATH`` set to the tree measured) opens and
closes ``--opens`` handles one after another with no spare children (``DW_EXEC_SPARES=0``),
each making one ``get``, then makes ``--calls`` ``put``/``get`` calls on one handle; its
children are started as written, or forked from a warm process (``forked``: what the
built-in ``exec-`` stores do; the fork server's own start is in the child CPU, shared by
the opens). CPU is the children's and the parent's own (``getrusage``), so it holds on a
busy machine where wall time does not. With ``--baseline`` the trees are measured in
turns, ``--repeat`` times each, and every cell is the median; the CPU of a start is what
bounds the conformance suite through ``exec:``, which opens a child for each of its
~1,200 handles.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
CHILD = "reference_engine.stores.exec.child"


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


def _uri(store: str, root: str) -> str:
    return {"memory": "memory://", "file": f"file://{root}/fs?fsync=0",
            "sqlite": f"sqlite://{root}/store.db"}[store]


def worker(store: str, opens: int, calls: int, fork: bool) -> dict[str, float]:
    """Run in the tree under test: the figures of one store, as JSON on stdout."""
    from reference_engine.stores.exec.client import open_exec

    def open_store(reference: str) -> Any:
        command = reference.removeprefix("exec:")
        return open_exec(command, fork=True) if fork else open_exec(command)

    with tempfile.TemporaryDirectory(prefix="dw-exec-child-") as root:
        reference = "exec:" + shlex.join([sys.executable, "-m", CHILD, _uri(store, root)])
        own0, kids0 = _cpu()
        start = time.perf_counter()
        for _ in range(opens):
            handle = open_store(reference)
            handle.get("bench/k")
            handle.close()
        wall = time.perf_counter() - start
        if fork:  # its children's CPU is counted here once the fork server is reaped
            from reference_engine.stores.exec.forkserver import end_servers

            end_servers()
        own1, kids1 = _cpu()
        # The calls go to a started child (they cost the same either way), less its start.
        open_exec(reference.removeprefix("exec:")).close()
        _, kids2 = _cpu()
        handle = open_exec(reference.removeprefix("exec:"))
        handle.get("bench/warm")
        own2, _ = _cpu()
        start = time.perf_counter()
        for i in range(calls // 2):
            handle.put(f"bench/k{i % 50}", b"x" * 100)
            handle.get(f"bench/k{i % 50}")
        call_wall = time.perf_counter() - start
        own3, _ = _cpu()
        handle.close()
        _, kids3 = _cpu()
    return {
        "open ms": wall / opens * 1e3,
        "child cpu ms": (kids1 - kids0) / opens * 1e3,
        "parent cpu ms": (own1 - own0) / opens * 1e3,
        "call us": call_wall / calls * 1e6,
        "call parent cpu us": (own3 - own2) / calls * 1e6,
        "call child cpu us": max(0.0, (kids3 - kids2) - (kids2 - kids1)) / calls * 1e6,
    }


def measure(tree: Path, store: str, opens: int, calls: int, fork: bool) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree), "DW_EXEC_SPARES": "0"}
    done = subprocess.run([sys.executable, __file__, "--worker", store, str(opens), str(calls),
                           "fork" if fork else "start"],
                          env=env, cwd=tempfile.gettempdir(), check=True,
                          capture_output=True, text=True)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


COLUMNS = ("open ms", "child cpu ms", "parent cpu ms", "call us", "call parent cpu us",
           "call child cpu us")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--stores", default="memory,file,sqlite")
    parser.add_argument("--opens", type=int, default=40)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", type=Path, default=None,
                        help="a copy of the code to compare with (e.g. a git archive of main)")
    parser.add_argument("--worker", nargs=4, metavar=("STORE", "OPENS", "CALLS", "HOW"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        store, opens, calls, how = args.worker
        print(json.dumps(worker(store, int(opens), int(calls), how == "fork")))
        return 0
    # (label, tree, fork): this tree's children started as written, and forked
    trees = [("this tree, started", ROOT, False), ("this tree, forked", ROOT, True)]
    if args.baseline is not None:
        trees.insert(0, ("baseline, started", args.baseline.resolve(), False))
    console = Console(width=150)
    table = Table(title=f"one exec: handle of the Python child (median of {args.repeat}; "
                  f"{args.opens} opens, {args.calls} calls; {os.cpu_count()} cores, "
                  f"load {os.getloadavg()[0]:.1f})")
    for column in ("store", "code", *COLUMNS):
        table.add_column(column, justify="left" if column in ("store", "code") else "right")
    for store in [s.strip() for s in args.stores.split(",") if s.strip()]:
        samples: dict[str, list[dict[str, float]]] = {name: [] for name, _, _ in trees}
        for _ in range(args.repeat):  # in turns, so both trees see the same machine
            for name, tree, fork in trees:
                samples[name].append(measure(tree, store, args.opens, args.calls, fork))
        for name, _, _ in trees:
            cells = [statistics.median(s[c] for s in samples[name]) for c in COLUMNS]
            table.add_row(store, name, *(f"{v:.1f}" if v < 100 else f"{v:.0f}" for v in cells))
    console.print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
