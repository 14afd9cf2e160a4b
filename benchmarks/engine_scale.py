"""How the scheduler and the listings grow with the number of suspended runs.

For 250, 1,000, 4,000 and 16,000 suspended runs on ``file://...?fsync=0`` and
``memory://``, times (median of ``--repeat`` tries) and counts the store calls of:

* ``first pass``: the first pass of a new process (a new ``Engine``, as ``dw serve
  --once`` from cron makes), one run ready, on a store a scheduler has served before;
* ``serve pass``: one later scheduler pass of the same process, one ready run (the
  index names the one run a signal made ready);
* ``full scan``: the same pass reading every run, which is what every pass did before
  the index (``serve_once(full_scan=True)``);
* ``ready_runs``: what the next pass would resume, one run ready;
* ``dw waits`` and ``dw runs``: the engine calls the two commands make
  (``open_waits()``, ``runs()``), without process start and printing.

Each cell is wall milliseconds / store calls; ``pass cpu ms`` is the CPU time of the
serve pass, which a machine shared with other work inflates less than wall time.

Runs are built by writing their records directly (a suspended revision, the wait's
registration and its deadline entry), since the engine path would take minutes at
16,000. ``--baseline PATH`` also measures the code in PATH (a checkout of another
commit, e.g. ``git worktree add /tmp/dw-main main``) on the same file store, in a
child process with ``PYTHONPATH=PATH``, so before and after print side by side:

    python benchmarks/engine_scale.py [--sizes 250,1000,4000,16000] [--baseline PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from reference_engine.clock import SystemClock
from reference_engine.engine import Engine
from reference_engine.stores.registry import open_store
from reference_engine.workflows.loader import parse_workflow

WORKFLOW = {
    "name": "scale",
    "jobs": {
        "approve": {"steps": [{"name": "approval", "wait_for_signal": {
            "timeout": 7 * 24 * 3600, "schema": {"type": "object"}}}]},
        "after": {"depends_on": ["approve"], "steps": [{"name": "done", "log": "done"}]},
    },
}
OPS = ("first pass", "serve pass", "full scan", "ready_runs", "dw waits", "dw runs")
LARGE = 16_000


class CountingStore:
    """Counts every store call; ``put_if_absent`` only when the inner store has it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0
        if callable(getattr(inner, "put_if_absent", None)):
            self.put_if_absent = self._put_if_absent

    def _count(self, method: str, *args: Any) -> Any:
        self.calls += 1
        return getattr(self.inner, method)(*args)

    def put(self, key: str, data: bytes) -> None:
        self._count("put", key, data)

    def _put_if_absent(self, key: str, data: bytes) -> bool:
        return bool(self._count("put_if_absent", key, data))

    def get(self, key: str) -> bytes | None:
        found: bytes | None = self._count("get", key)
        return found

    def delete(self, key: str) -> None:
        self._count("delete", key)

    def list(self, prefix: str) -> list[str]:
        found: list[str] = self._count("list", prefix)
        return found


# --- building the runs (this tree only) -----------------------------------------------

def build(store: Any, count: int) -> list[tuple[str, str]]:
    """``count`` suspended runs written record by record: ``(runId, waitId)`` each."""
    from reference_engine.records import keys
    from reference_engine.records.decoding import Found
    from reference_engine.records.run_store import newest_revision
    from reference_engine.waits.index import file_deadline
    from reference_engine.waits.registration import read_registration, wait_id_for

    engine = Engine(store, SystemClock())
    template = engine.run(parse_workflow(WORKFLOW), run_id="template")
    newest = newest_revision(store, "template").decoded
    assert isinstance(newest, Found)
    record = newest.record
    step_name, step = next(iter(record.waiting_steps().items()))
    assert step.wait is not None
    reg = read_registration(store, template.waits[0].wait_id)
    assert isinstance(reg, Found)
    engine.delete("template")
    made = []
    for i in range(count):
        run_id = f"scale-{i:06d}"
        nonce = str(uuid.uuid4())
        wait_id = wait_id_for(nonce, step.job, step_name, 0, 1)
        deadline = step.wait.deadline + i  # spread over many minutes, as real waits are
        wait = replace(step.wait, id=wait_id, deadline=deadline)
        run = replace(record, run_id=run_id, run_nonce=nonce, rev=1,
                      steps={**record.steps, step_name: replace(step, wait=wait)})
        registration = replace(reg.record, wait_id=wait_id, run_id=run_id, deadline=deadline)
        store.put(keys.wait_key(wait_id), registration.encode())
        file_deadline(store, run_id, wait_id, deadline)
        store.put(keys.revision_key(run_id, 1), run.encode())
        made.append((run_id, wait_id))
    return made


# --- measuring (any tree: only the Engine's public methods) ------------------------------

def _timed(counting: CountingStore, action: Callable[[], object]) -> tuple[float, int, float]:
    """Wall ms, store calls and CPU ms of ``action`` (CPU: what a busy machine inflates
    least)."""
    counting.calls = 0
    cpu = time.process_time()
    started = time.perf_counter()
    action()
    wall = (time.perf_counter() - started) * 1000
    return wall, counting.calls, (time.process_time() - cpu) * 1000


def measure(store: Any, runs: list[tuple[str, str]], repeat: int) -> dict[str, list[float]]:
    """``{op: [median ms, store calls]}`` for every op this engine has."""
    counting = CountingStore(store)
    engine = Engine(counting, SystemClock(), claim_patience=False)
    engine.serve_once()  # the scheduler's start: a full scan where there is an index
    has_index = "full_scan" in Engine.serve_once.__code__.co_varnames
    ready = iter(runs)
    samples: dict[str, list[tuple[float, int, float]]] = {op: [] for op in OPS}

    def make_one_ready() -> str:
        run_id, wait_id = next(ready)
        engine.signal(wait_id, "{}")
        return run_id

    for _ in range(repeat):
        run_id = make_one_ready()
        fresh = Engine(counting, SystemClock(), claim_patience=False)  # a new process
        samples["first pass"].append(_timed(counting, fresh.serve_once))
        assert engine.show(run_id)["status"] == "succeeded", run_id
        run_id = make_one_ready()
        samples["ready_runs"].append(_timed(counting, engine.ready_runs))
        samples["serve pass"].append(_timed(counting, engine.serve_once))
        assert engine.show(run_id)["status"] == "succeeded", run_id
        if has_index:
            run_id = make_one_ready()
            samples["full scan"].append(_timed(counting, lambda: engine.serve_once(full_scan=True)))
            assert engine.show(run_id)["status"] == "succeeded", run_id
        samples["dw waits"].append(_timed(counting, engine.open_waits))
        samples["dw runs"].append(_timed(counting, engine.runs))
    return {op: [statistics.median(ms for ms, _, _ in got),
                 statistics.median(c for _, c, _ in got),
                 statistics.median(cpu for _, _, cpu in got)]
            for op, got in samples.items() if got}


def _worker(uri: str, runs_file: Path, repeat: int) -> None:
    runs = [tuple(pair) for pair in json.loads(runs_file.read_text())]
    print(json.dumps(measure(open_store(uri), runs, repeat)))


def _baseline(path: Path, uri: str, runs: list[tuple[str, str]], repeat: int,
              scratch: Path) -> dict[str, list[float]]:
    runs_file = scratch / "runs.json"
    runs_file.write_text(json.dumps(runs))
    env = {**os.environ, "PYTHONPATH": str(path)}
    done = subprocess.run([sys.executable, __file__, "--worker", uri, str(runs_file),
                           str(repeat)], env=env, check=True, capture_output=True, text=True)
    result: dict[str, list[float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# --- the table ---------------------------------------------------------------------------

HEADER = ("store", "runs", "code", "pass cpu ms", *(f"{op} ms/calls" for op in OPS))
WIDTHS = (6, 6, 9, 11, *(max(len(f"{op} ms/calls"), 16) for op in OPS))


def _print(row: tuple[str, ...]) -> None:
    print("  ".join(cell.rjust(w) for cell, w in zip(row, WIDTHS, strict=True)), flush=True)


def _row(store: str, size: int, code: str, got: dict[str, list[float]]) -> tuple[str, ...]:
    cells = [f"{got[op][0]:.1f} / {int(got[op][1])}" if op in got else "-" for op in OPS]
    return (store, str(size), code, f"{got['serve pass'][2]:.1f}", *cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="250,1000,4000,16000")
    parser.add_argument("--stores", default="file,memory")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", type=Path, default=None,
                        help="a checkout of the code to compare with (file store only)")
    parser.add_argument("--dir", type=Path, default=None, help="where the file stores live")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(args.worker[0], Path(args.worker[1]), int(args.worker[2]))
        return
    scratch = args.dir or Path(tempfile.mkdtemp(prefix="dw-scale-"))
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"load average {os.getloadavg()[0]:.1f}; median of {args.repeat} tries "
          f"({LARGE}+ runs: one)", flush=True)
    _print(HEADER)
    _print(tuple("-" * w for w in WIDTHS))
    for kind in args.stores.split(","):
        for size in sizes:
            repeat = args.repeat if size < LARGE else 1  # large sizes take a while: once
            if kind == "file":
                folder = scratch / f"file-{size}"
                shutil.rmtree(folder, ignore_errors=True)
                uri = f"file://{folder.resolve()}?fsync=0"
            else:
                uri = "memory://"
            store = open_store(uri)
            started = time.perf_counter()
            runs = build(store, size + 6 * repeat)
            print(f"built {size} runs on {kind} in {time.perf_counter() - started:.1f}s",
                  file=sys.stderr, flush=True)
            spare = runs[size:]  # the runs each measurement signals, one at a time
            if args.baseline is not None and kind == "file":
                before = _baseline(args.baseline, uri, spare[: 3 * repeat], repeat, scratch)
                _print(_row(kind, size, "baseline", before))
            _print(_row(kind, size, "this tree", measure(store, spare[3 * repeat:], repeat)))
            if kind == "file":
                shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
