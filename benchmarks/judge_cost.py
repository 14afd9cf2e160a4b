"""What the judge costs (dw_testing.judge): calls judged per second, the recording overhead
per call, and the ``ci`` profile's wall and CPU time on the memory store with the judge on
and off, side by side (issue 34 bounds the judge at 25 % of a ``ci`` run on memory).

    python benchmarks/judge_cost.py [--calls 20000] [--runs 1] [--store memory] [--skip-suite]

The suite runs serially (``-n 0``) in an empty temporary directory, on and off in turns, so
both see the same machine; CPU time (user + system of the pytest child) is printed beside
the wall because the machine may be shared.
"""

from __future__ import annotations

import argparse
import random
import resource
import subprocess
import sys
import tempfile
import time

from dw_testing.judge import Trial
from reference_engine.stores.memory import MemoryStore

NS = "dwc-bench-main/1/"
CAPS = {"cross_handle": True, "durable_reopen": True, "sorted_list": True,
        "segment_prefixes": True}


def judged_history(calls: int, seed: int = 1) -> tuple[Trial, float, float]:
    """A trial of ``calls`` calls over 200 keys on 4 handles; (trial, bare s, recorded s)."""
    rng = random.Random(seed)
    backing = MemoryStore()
    trial = Trial("memory", NS, CAPS)
    handles = [trial.wrap(backing) for _ in range(4)]
    plan = [(rng.randrange(4), rng.choice(("put", "create", "get", "get", "delete", "list")),
             f"{NS}k/{rng.randrange(200)}", rng.randbytes(rng.randrange(32))) for _ in range(calls)]

    def play(stores: list[object]) -> float:
        start = time.perf_counter()
        for n, op, key, value in plan:
            store = stores[n]
            if op == "put":
                store.put(key, value)  # type: ignore[attr-defined]
            elif op == "create":
                store.put_if_absent(key, value)  # type: ignore[attr-defined]
            elif op == "get":
                store.get(key)  # type: ignore[attr-defined]
            elif op == "delete":
                store.delete(key)  # type: ignore[attr-defined]
            else:
                store.list(NS + "k/")  # type: ignore[attr-defined]
        return time.perf_counter() - start

    bare = play([MemoryStore()] * 4)
    recorded = play(handles)  # type: ignore[arg-type]
    return trial, bare, recorded


def suite(store: str, judge: str, profile: str) -> tuple[float, float, str]:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               f"--dw-store={store}", "--dw-suite-only", f"--dw-profile={profile}",
               f"--dw-judge={judge}", "--dw-seed=1"]
    with tempfile.TemporaryDirectory(prefix="dw-judge-") as empty:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(command, cwd=empty, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    tail = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
    return wall, cpu, tail


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--store", default="memory")
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--skip-suite", action="store_true")
    args = parser.parse_args()
    trial, bare, recorded = judged_history(args.calls)
    start = time.perf_counter()
    judgement = trial.verdict()
    checked = time.perf_counter() - start
    print(f"history of {trial.log.calls} calls: verdict {judgement.verdict}; judged in "
          f"{checked:.3f}s = {trial.log.calls / checked:,.0f} calls/s")
    print(f"recording: {bare * 1e6 / args.calls:.1f} us/call bare, "
          f"{recorded * 1e6 / args.calls:.1f} us/call recorded")
    if args.skip_suite:
        return 0
    print(f"{'run':>4} {'judge':>5} {'wall s':>8} {'cpu s':>8}  outcome")
    totals: dict[str, list[float]] = {"on": [0.0, 0.0], "off": [0.0, 0.0]}
    for run in range(args.runs):
        for judge in ("off", "on"):
            wall, cpu, tail = suite(args.store, judge, args.profile)
            totals[judge][0] += wall
            totals[judge][1] += cpu
            print(f"{run + 1:>4} {judge:>5} {wall:>8.1f} {cpu:>8.1f}  {tail}")
    on, off = totals["on"], totals["off"]
    print(f"judge cost on {args.store}, profile {args.profile}: wall {on[0] - off[0]:+.1f}s "
          f"({(on[0] - off[0]) / off[0]:+.1%}), cpu {on[1] - off[1]:+.1f}s "
          f"({(on[1] - off[1]) / off[1]:+.1%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
