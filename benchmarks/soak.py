"""Soak: randomized schedules of signal, answer, cancel, deadline, serve and resume, with
crashes, counting what is lost.

Each schedule starts a few runs (each suspended on one or two waits) and plays a random
interleaving of deliveries (two senders may race for a wait, through ``dw signal`` or
``dw answer``), cancels, deadlines passing, scheduler passes and manual resumes. In the
``inprocess`` mode every operation may crash (``SimulatedCrash``) after a random number
of store calls, before or after the call commits, leaving a dead claim behind. In the
``kill`` mode the operations run in worker processes that are killed with SIGKILL at
random moments and replaced. Then the clock passes every deadline and a patient engine
finishes every run, and the schedule is judged:

- **lost**: an acknowledged answer (the caller got its receipt) that its run's final
  record does not hold;
- **twice**: a receipt applied more than once (two ``answer_applied`` events);
- **wrong_run**: a receipt held by a run other than the one it was delivered to;
- **unfinished**: a run not succeeded, failed or cancelled once every deadline passed.

Prints one table row per store, side by side, with schedules per second, the seeds
played and the machine. ``--processes N`` splits the in-process schedules of each store
across N processes, each on its own store with a disjoint range of seeds (process k
plays seeds ``seed + k*chunk`` up to ``seed + (k+1)*chunk - 1``), and adds their tallies:

    python benchmarks/soak.py --store memory --store file --store sqlite --schedules 1000
    python benchmarks/soak.py --store file --mode kill --schedules 50
    nice -n 19 python benchmarks/soak.py --store file --store sqlite --schedules 100000 \
        --processes 2
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import platform
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dw_testing.kit.clock import FakeClock
from dw_testing.kit.faults import FaultyStore, SimulatedCrash
from dw_testing.kit.prefixed import PrefixedStore
from reference_engine.engine import Engine
from reference_engine.records.run import ENDED
from reference_engine.refusals import Refusal
from reference_engine.stores.contract import close_store
from reference_engine.stores.memory import MemoryStore
from reference_engine.stores.registry import open_store
from reference_engine.workflows.loader import parse_workflow

TIMEOUT_S = 3600
LEASE_TTL_MS = 30_000
STALE_S = 40.0  # past ttl + grace: a dead holder's lease may be taken over
OPEN = {"type": "object"}


def workflow(waits: int) -> Any:
    jobs: dict[str, Any] = {
        f"w{i}": {"steps": [{"name": f"gate{i}", "wait_for_signal": {
            "timeout": TIMEOUT_S, "schema": OPEN}}]} for i in range(waits)}
    jobs["after"] = {"depends_on": sorted(jobs), "steps": [{"name": "done", "log": "done"}]}
    return parse_workflow({"name": f"soak{waits}", "jobs": jobs})


FLOWS = {1: workflow(1), 2: workflow(2)}


@dataclass
class Tally:
    schedules: int = 0
    runs: int = 0
    acknowledged: int = 0
    crashes: int = 0
    lost: int = 0
    twice: int = 0
    wrong_run: int = 0
    unfinished: int = 0
    failures: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        for name in ("schedules", "runs", "acknowledged", "crashes", "lost", "twice",
                     "wrong_run", "unfinished"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.failures.extend(other.failures)


# --- one schedule, in process ------------------------------------------------------------

def _start_runs(store: Any, clock: FakeClock, rng: random.Random,
                id_prefix: str) -> dict[str, list[str]]:
    """One to three runs, each suspended on one or two waits: run id -> its wait ids."""
    setup = Engine(store, clock, sleeper=clock.advance, lease_ttl_ms=LEASE_TTL_MS)
    runs: dict[str, list[str]] = {}
    for i in range(rng.randint(1, 3)):
        view = setup.run(FLOWS[rng.choice((1, 2))], run_id=f"{id_prefix}{i}")
        runs[view.run_id] = [w.wait_id for w in view.waits]
    return runs


def _actions(rng: random.Random, runs: dict[str, list[str]]) -> list[tuple[str, ...]]:
    plan: list[tuple[str, ...]] = []
    for run_id, waits in runs.items():
        for wait_id in waits:
            for _ in range(rng.choice((1, 1, 2))):  # sometimes two senders race
                plan.append((rng.choice(("signal", "answer")), run_id, wait_id))
        if rng.random() < 0.25:
            plan.append(("cancel", run_id))
        plan.append(("resume", run_id))
    plan.extend(("serve",) for _ in range(rng.randint(1, 3)))
    if rng.random() < 0.25:
        plan.append(("deadline",))
    rng.shuffle(plan)
    return plan


def _do(engine: Engine, clock: FakeClock, action: tuple[str, ...], n: int) -> str | None:
    """Run one action; the receipt id when a delivery was acknowledged."""
    kind = action[0]
    try:
        if kind == "signal":
            return engine.signal(action[2], json.dumps({"n": n})).receipt.id
        if kind == "answer":
            return engine.answer(action[1], action[2], json.dumps({"n": n})).receipt.id
        if kind == "cancel":
            engine.cancel(action[1])
        elif kind == "resume":
            engine.resume(action[1])
        elif kind == "serve":
            engine.serve_once()
        elif kind == "deadline":
            clock.advance(TIMEOUT_S + 1)
    except Refusal:
        pass
    return None


def _finish_and_judge(store: Any, clock: FakeClock, runs: dict[str, list[str]],
                      acked: dict[str, str], tally: Tally, label: str) -> None:
    clock.advance(TIMEOUT_S + STALE_S)
    patient = Engine(store, clock, sleeper=clock.advance, lease_ttl_ms=LEASE_TTL_MS)
    for _ in range(4):
        for run_id in runs:
            for attempt in (patient.resume, patient.cancel):
                try:
                    if patient.show(run_id)["status"] not in ENDED:
                        attempt(run_id)
                    break
                except Refusal:
                    continue
        clock.advance(STALE_S)
    held: dict[str, list[str]] = {}  # receipt id -> runs whose final record holds it
    for run_id in runs:
        shown = patient.show(run_id)
        if shown["status"] not in ENDED:
            tally.unfinished += 1
            tally.failures.append(f"{label}: run {run_id} left {shown['status']}")
        applied = Counter(e.get("receiptId") for e in shown["journal"]
                          if e.get("type") == "answer_applied")
        tally.twice += sum(1 for count in applied.values() if count > 1)
        for step in shown["steps"].values():
            output = step.get("output")
            signal_seen = output.get("signal") if isinstance(output, dict) else None
            if isinstance(signal_seen, dict) and isinstance(signal_seen.get("id"), str):
                held.setdefault(signal_seen["id"], []).append(run_id)
    for receipt, run_id in acked.items():
        holders = held.get(receipt, [])
        if run_id not in holders:
            tally.lost += 1
            tally.failures.append(f"{label}: receipt {receipt} of run {run_id} lost")
        if any(other != run_id for other in holders):
            tally.wrong_run += 1


def inprocess_schedule(base: Any, seed: int, crash_rate: float) -> Tally:
    rng = random.Random(seed)
    tally = Tally(schedules=1)
    clock = FakeClock()
    store = PrefixedStore(base, f"soak-{seed}") if not isinstance(base, MemoryStore) else base
    runs = _start_runs(store, clock, rng, "r")
    tally.runs = len(runs)
    acked: dict[str, str] = {}
    for n, action in enumerate(_actions(rng, runs)):
        faulty = FaultyStore(store)
        if rng.random() < crash_rate:
            faulty.crash(None, after_calls=rng.randint(0, 25),
                         point=rng.choice(("before", "after_commit")))
        actor = Engine(faulty, clock, sleeper=clock.advance, claim_patience=False,
                       lease_ttl_ms=LEASE_TTL_MS)
        try:
            receipt = _do(actor, clock, action, n)
        except SimulatedCrash:
            tally.crashes += 1
            clock.advance(rng.choice((0.0, STALE_S)))  # the dead holder's lease may age
            continue
        if receipt is not None:
            acked[receipt] = action[1]
    tally.acknowledged = len(acked)
    _finish_and_judge(store, clock, runs, acked, tally, f"seed {seed}")
    return tally


# --- one schedule, with kill -9 ----------------------------------------------------------

WORKER = r"""
import json, sys
from reference_engine.clock import clock_from_env
from reference_engine.engine import Engine
from reference_engine.refusals import Refusal
from reference_engine.stores.registry import open_store

engine = Engine(open_store(sys.argv[1]), clock_from_env(), claim_patience=False)
print("ready", flush=True)
for line in sys.stdin:
    kind, run_id, wait_id, n = json.loads(line)
    receipt = None
    try:
        if kind == "signal":
            receipt = engine.signal(wait_id, json.dumps({"n": n})).receipt.id
        elif kind == "answer":
            receipt = engine.answer(run_id, wait_id, json.dumps({"n": n})).receipt.id
        elif kind == "cancel":
            engine.cancel(run_id)
        elif kind == "resume":
            engine.resume(run_id)
        elif kind == "serve":
            engine.serve_once()
    except Refusal:
        pass
    print(json.dumps({"receipt": receipt, "run": run_id}), flush=True)
"""


class Worker:
    """A process that executes actions on the store, one JSON line each, until killed."""

    def __init__(self, uri: str, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER, uri], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError("a soak worker failed to start")

    def send(self, action: tuple[str, ...], n: int) -> None:
        assert self.proc.stdin is not None
        run_id = action[1] if len(action) > 1 else ""
        wait_id = action[2] if len(action) > 2 else ""
        self.proc.stdin.write(json.dumps([action[0], run_id, wait_id, n]) + "\n")
        self.proc.stdin.flush()

    def answer(self) -> dict[str, Any] | None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        return json.loads(line) if line else None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def kill_schedule(uri: str, workdir: Path, seed: int, workers: list[Worker],
                  env: dict[str, str], clock: FakeClock) -> Tally:
    rng = random.Random(seed)
    tally = Tally(schedules=1)
    store = open_store(uri)
    runs = _start_runs(store, clock, rng, f"k{seed}-")
    tally.runs = len(runs)
    acked: dict[str, str] = {}
    plan = [a for a in _actions(rng, runs) if a[0] != "deadline"]
    # Two workers take turns; one is killed at a random moment of a random action.
    for n, action in enumerate(plan):
        slot = n % len(workers)
        worker = workers[slot]
        worker.send(action, n)
        if rng.random() < 0.3:
            time.sleep(rng.uniform(0, 0.02))  # somewhere inside the operation, or after
            worker.kill()
            tally.crashes += 1
            workers[slot] = Worker(uri, env)
            clock.advance(rng.choice((0.0, STALE_S)))
            continue
        reply = worker.answer()
        if reply is not None and reply["receipt"] is not None:
            acked[reply["receipt"]] = reply["run"]
    tally.acknowledged = len(acked)
    _finish_and_judge(store, clock, runs, acked, tally, f"kill seed {seed}")
    close_store(store)
    return tally


# --- driver ------------------------------------------------------------------------------

@contextmanager
def opened(kind: str, workdir: Path) -> Iterator[tuple[Any, str]]:
    if kind == "memory":
        yield MemoryStore(), "memory://soak"
        return
    uri = {"file": f"file://{workdir / 'fs'}?fsync=0",
           "sqlite": f"sqlite://{workdir / 'soak.db'}?fsync=0"}.get(kind, kind)
    store = open_store(uri)
    try:
        yield store, uri
    finally:
        close_store(store)


def soak_inprocess(kind: str, schedules: int, seed: int, crash_rate: float,
                   progress: Callable[[str], None]) -> tuple[Tally, float]:
    tally = Tally()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dw-soak-") as tmp, \
            opened(kind, Path(tmp)) as (store, _uri):
        for i in range(schedules):
            base = MemoryStore() if kind == "memory" else store
            tally.add(inprocess_schedule(base, seed + i, crash_rate))
            if (i + 1) % 1000 == 0:
                progress(f"{kind}: {i + 1} schedules, {time.perf_counter() - started:.0f}s")
    return tally, time.perf_counter() - started


def _chunk(job: tuple[str, int, int, float]) -> tuple[Tally, float]:
    kind, schedules, seed, crash_rate = job
    return soak_inprocess(kind, schedules, seed, crash_rate,
                          lambda line: print(f"[seed {seed}] {line}", file=sys.stderr,
                                             flush=True))


def soak_split(kind: str, schedules: int, seed: int, crash_rate: float,
               processes: int) -> tuple[Tally, float, list[tuple[int, int]]]:
    """``soak_inprocess`` in ``processes`` processes with disjoint seed ranges: the summed
    tally, the wall seconds, and each process's ``(first seed, last seed)``."""
    chunk = -(-schedules // processes)
    jobs = [(kind, min(chunk, schedules - k * chunk), seed + k * chunk, crash_rate)
            for k in range(processes) if schedules - k * chunk > 0]
    started = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(len(jobs)) as pool:
        results = pool.map(_chunk, jobs)
    tally = Tally()
    for got, _seconds in results:
        tally.add(got)
    ranges = [(first, first + n - 1) for _k, n, first, _r in jobs]
    return tally, time.perf_counter() - started, ranges


def machine() -> str:
    """The machine a soak ran on, for its table: CPU model, cores, Python, OS."""
    model = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return (f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"{platform.system()} {platform.release()}")


def soak_kill(kind: str, schedules: int, seed: int,
              progress: Callable[[str], None]) -> tuple[Tally, float]:
    if kind == "memory":
        raise SystemExit("--mode kill needs a store shared by processes: file or sqlite")
    tally = Tally()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dw-soak-kill-") as tmp:
        workdir = Path(tmp)
        clock = FakeClock(mirror_to=workdir / "clock")
        env = {**os.environ, **clock.env, "DW_CLAIM_LOOKS_DIR": str(workdir / "looks")}
        with opened(kind, workdir) as (_store, uri):
            workers = [Worker(uri, env) for _ in range(2)]
            try:
                for i in range(schedules):
                    tally.add(kill_schedule(uri, workdir, seed + i, workers, env, clock))
                    if (i + 1) % 50 == 0:
                        progress(f"{kind} kill: {i + 1} schedules, "
                                 f"{time.perf_counter() - started:.0f}s")
            finally:
                for worker in workers:
                    worker.kill()
    return tally, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", action="append", default=None,
                        help="memory, file, sqlite or a URI (repeatable)")
    parser.add_argument("--schedules", type=int, default=1000)
    parser.add_argument("--mode", choices=("inprocess", "kill"), default="inprocess")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--crash-rate", type=float, default=0.3,
                        help="share of operations that crash (in-process mode)")
    parser.add_argument("--processes", type=int, default=1,
                        help="split each store's schedules across this many processes, "
                             "disjoint seeds (in-process mode)")
    args = parser.parse_args(argv)
    kinds = args.store or ["memory", "file", "sqlite"]

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    rows = []
    for kind in kinds:
        ranges = [(args.seed, args.seed + args.schedules - 1)]
        if args.mode == "kill":
            tally, seconds = soak_kill(kind, args.schedules, args.seed, progress)
        elif args.processes > 1:
            tally, seconds, ranges = soak_split(kind, args.schedules, args.seed,
                                                args.crash_rate, args.processes)
        else:
            tally, seconds = soak_inprocess(kind, args.schedules, args.seed,
                                            args.crash_rate, progress)
        rows.append((kind, tally, seconds, ranges))
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.1f}")
    head = ("store", "mode", "schedules", "runs", "acked", "crashes", "lost", "twice",
            "wrong_run", "unfinished", "sched/s", "wall s", "processes", "seeds")
    print(" | ".join(head))
    for kind, tally, seconds, ranges in rows:
        seeds = ", ".join(f"{a}-{b}" for a, b in ranges)
        print(" | ".join(str(v) for v in (
            kind, args.mode, tally.schedules, tally.runs, tally.acknowledged, tally.crashes,
            tally.lost, tally.twice, tally.wrong_run, tally.unfinished,
            f"{tally.schedules / seconds:.1f}", f"{seconds:.0f}", len(ranges), seeds)))
        for failure in tally.failures[:10]:
            print(f"  {failure}")
    bad = sum(t.lost + t.twice + t.wrong_run + t.unfinished for _k, t, _s, _r in rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
