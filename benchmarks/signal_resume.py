"""Signal -> resume latency and throughput on the filesystem store (docs/explanation/profiles.md).

For each of N suspended runs, time one `signal` followed by the `resume` that finishes the
run: through the Python API (one Engine per store) and through the CLI (two `dw` processes
per wait). Prints median and p99 latency and waits/s, for `file://...?fsync=0` and the
durable default, side by side in one run.

    python benchmarks/signal_resume.py [--n 200] [--cli-n 200] [--dir PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from reference_engine.clock import SystemClock
from reference_engine.engine import Engine
from reference_engine.stores.registry import open_store
from reference_engine.workflows.loader import parse_workflow

WORKFLOW = {
    "name": "bench",
    "jobs": {
        "wait": {"steps": [{"name": "approval", "wait_for_signal": {
            "timeout": 3600,
            "schema": {"type": "object", "required": ["ok"],
                       "properties": {"ok": {"type": "boolean"}}}}}]},
        "after": {"depends_on": ["wait"], "steps": [{"name": "done", "log": "done"}]},
    },
}
PAYLOAD = '{"ok": true}'


def _suspend(engine: Engine, n: int) -> list[tuple[str, str]]:
    workflow = parse_workflow(WORKFLOW)
    pending = []
    for _ in range(n):
        view = engine.run(workflow)
        pending.append((view.run_id, view.waits[0].wait_id))
    return pending


def _summary(label: str, latencies: list[float], wall: float) -> tuple[str, str, str, str, str]:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return (label, str(len(ordered)), f"{statistics.median(ordered) * 1000:.2f}",
            f"{p99 * 1000:.2f}", f"{len(ordered) / wall:.1f}")


def bench_api(uri: str, n: int) -> list[float]:
    engine = Engine(open_store(uri), SystemClock())
    pending = _suspend(engine, n)
    latencies = []
    for run_id, wait_id in pending:
        start = time.perf_counter()
        engine.signal(wait_id, PAYLOAD)
        view = engine.resume(run_id)
        latencies.append(time.perf_counter() - start)
        if view.status != "succeeded":
            raise SystemExit(f"run {run_id} ended {view.status}, expected succeeded")
    return latencies


def bench_cli(uri: str, n: int) -> list[float]:
    pending = _suspend(Engine(open_store(uri), SystemClock()), n)
    dw = [sys.executable, "-m", "reference_engine"]
    latencies = []
    for run_id, wait_id in pending:
        start = time.perf_counter()
        subprocess.run([*dw, "signal", wait_id, "--payload", PAYLOAD, "--store", uri],
                       check=True, capture_output=True)
        done = subprocess.run([*dw, "resume", run_id, "--store", uri, "--json"],
                              check=True, capture_output=True)
        latencies.append(time.perf_counter() - start)
        if json.loads(done.stdout)["status"] != "succeeded":
            raise SystemExit(f"run {run_id} did not succeed through the CLI")
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="waits through the Python API")
    parser.add_argument("--cli-n", type=int, default=200, help="waits through the CLI")
    parser.add_argument("--dir", type=Path, default=None, help="where the stores live")
    args = parser.parse_args()
    base = args.dir or Path(tempfile.mkdtemp(prefix="dw-bench-"))
    rows = []
    for mode, query in (("fsync=0", "?fsync=0"), ("fsync=1", "")):
        for path, bench, count in (("api", bench_api, args.n), ("cli", bench_cli, args.cli_n)):
            if count <= 0:
                continue
            uri = f"file://{(base / f'{path}-{mode}').resolve()}{query}"
            started = time.perf_counter()
            latencies = bench(uri, count)
            rows.append(_summary(f"{path} file {mode}", latencies, time.perf_counter() - started))
    header = ("path", "waits", "median ms", "p99 ms", "waits/s")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
