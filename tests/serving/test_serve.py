"""``dw serve``, the scheduler (docs/explanation/answers.md; seed 004 "Acceptance: scheduling").

A pass resumes, through the ordinary resume path under the ordinary claim, suspended
runs whose waits all have outcomes; a ``busy`` run is skipped; a run someone else
resumed first is left alone. Processes: ``--once``, ``--until-idle``, SIGTERM, SIGKILL,
and three schedulers racing a manual resume over 20 answered runs on a file store.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import answer_steps
from support.answers import (
    YES,
    AnsweredRun,
    MakeEngine,
    answered_run,
    applied,
    gate_workflow,
    snapshot,
)
from support.store_copies import memory_copy

from dw_testing.kit.clock import FakeClock
from dw_testing.kit.faults import FaultyStore, SimulatedCrash
from dw_testing.kit.gates import GatedStore
from reference_engine.clock import SystemClock
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.refusals import Refusal
from reference_engine.stores.memory import MemoryStore
from reference_engine.stores.registry import open_store
from reference_engine.workflows.loader import parse_workflow

# Children import the steps as ``support.answer_steps``: the tests folder goes on their path.
TESTS = Path(__file__).resolve().parents[1]
DW = [sys.executable, "-m", "reference_engine"]
# Imports everything, then waits for one line on stdin: the racers start together.
AT_THE_LINE = ("import sys\nfrom reference_engine.cli.main import dw\nsys.stdin.readline()\n"
               "dw.main(args=sys.argv[1:], prog_name='dw')\n")
PROCESS_TIMEOUT = 60


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    drop = ("DW_STORE", "DW_CLOCK", "DW_DEBUG", answer_steps.BLOCK_ENV, answer_steps.MARKS_ENV)
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(TESTS), env.get("PYTHONPATH")) if p)
    env["DW_CLAIM_LOOKS_DIR"] = str(tmp_path / "looks")
    if os.environ.get("DW_TEST_CHILD_DEBUG") == "1":  # children print their tracebacks
        env["DW_DEBUG"] = "1"
    env.update(extra)
    return env


def _dw(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*DW, *args], env=env, capture_output=True, text=True,
                          timeout=PROCESS_TIMEOUT, check=False)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def _two_waits() -> Any:
    wait = {"timeout": 3600, "schema": {"type": "object"}}
    return parse_workflow({"name": "pair", "jobs": {
        "left": {"steps": [{"name": "l", "wait_for_signal": wait}]},
        "right": {"steps": [{"name": "r", "wait_for_signal": wait}]},
    }})


# --- one pass, in process -----------------------------------------------------------------

def test_a_pass_resumes_only_runs_whose_waits_all_have_outcomes(
    engine: Engine, store: MemoryStore, clock: FakeClock
) -> None:
    pair = engine.run(_two_waits())
    late = engine.run(gate_workflow(timeout=60))
    engine.answer(pair.run_id, pair.waits[0].wait_id, "{}")
    assert engine.ready_runs() == [] and engine.serve_once() == []
    engine.answer(pair.run_id, pair.waits[1].wait_id, "{}")
    assert engine.ready_runs() == [pair.run_id]
    assert engine.serve_once() == [pair.run_id]
    assert len(applied(engine.show(pair.run_id))) == 2
    clock.advance(61)  # a timed-out wait is decided too: the resume fails its step
    assert engine.serve_once() == [late.run_id]
    assert engine.show(late.run_id)["steps"]["approval"]["error"] == "wait_timeout"
    assert engine.serve_once() == []


def test_a_busy_run_is_skipped_and_resumed_on_a_later_pass(
    store: MemoryStore, make_engine: MakeEngine
) -> None:
    owner = make_engine(store)
    run_id = answered_run(owner).run_id
    held = owner.claims.take(run_id)  # another process holds the ordinary claim
    lines: list[str] = []
    scheduler = make_engine(store, claim_patience=False, progress=lines.append)
    before = snapshot(store)
    assert scheduler.serve_once() == []
    moved = snapshot(store)
    assert moved.pop(keys.deadlines_seen_key())  # the pass moved the cursor, nothing else
    assert moved == before
    assert any("busy" in line for line in lines)
    held.release()
    assert scheduler.serve_once() == [run_id]
    assert len(applied(owner.show(run_id))) == 1


def test_a_late_pass_never_counts_or_redoes_a_resume_someone_else_finished(
    store: MemoryStore, make_engine: MakeEngine
) -> None:
    owner = make_engine(store)
    run_id = answered_run(owner).run_id
    gated = GatedStore(store)
    # The scheduler saw the run ready; a manual resume finishes it before the claim.
    gated.at("list", key=keys.claims_prefix(run_id),
             do=lambda: owner.resume(run_id))
    assert make_engine(gated, claim_patience=False).serve_once() == []
    gated.assert_all_gates_used()
    shown = owner.show(run_id)
    assert shown["status"] == "succeeded" and len(applied(shown)) == 1


def test_a_scheduler_killed_at_any_store_call_loses_nothing(clock: FakeClock) -> None:
    base = MemoryStore()
    answer_steps.STORE[:] = []
    engine = Engine(base, clock, sleeper=clock.advance)
    view = engine.run(gate_workflow(), run_id="served")
    receipt = engine.answer("served", view.waits[0].wait_id, YES).receipt.id
    counting = FaultyStore(memory_copy(base))
    assert Engine(counting, FakeClock(clock.now())).serve_once() == ["served"]
    total = counting.call_count
    for n in range(1, total + 1):
        for point in ("before", "after_commit"):
            store, at = memory_copy(base), FakeClock(clock.now())
            faulty = FaultyStore(store)
            faulty.crash(None, after_calls=n - 1, point=point)
            with pytest.raises(SimulatedCrash):
                Engine(faulty, at, claim_patience=False).serve_once()
            survivor = Engine(store, at, claim_patience=False)
            for _ in range(3):  # a dead holder's lease goes stale between passes
                survivor.serve_once()
                at.advance(40)
            shown = survivor.show("served")
            assert shown["status"] == "succeeded", (n, point)
            assert [e["receiptId"] for e in applied(shown)] == [receipt], (n, point)
            # A crash inside the end-of-run clean-up leaves wait records of an ended run:
            # garbage, not state. The next resume (or the sweep) removes them.
            patient = Engine(store, at, sleeper=at.advance)  # waits out a dead lease
            assert patient.resume("served").status == "succeeded"
            assert store.list(keys.waits_root()) == store.list(keys.outcomes_root()) == []


# --- processes ----------------------------------------------------------------------------

def test_serve_once_resumes_ready_runs_and_reports_them(tmp_path: Path) -> None:
    uri = str(tmp_path / "store")
    engine = Engine(open_store(uri), SystemClock())
    ready = engine.run(gate_workflow(after="support.answer_steps:block"))
    waiting = engine.run(gate_workflow(after="support.answer_steps:block"))
    engine.answer(ready.run_id, ready.waits[0].wait_id, YES)
    env = _env(tmp_path)
    first = _dw(["serve", "--once", "--json", "--store", uri], env)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == {"resumed": [ready.run_id]}
    again = _dw(["serve", "--once", "--store", uri], env)
    assert again.returncode == 0 and "nothing to resume" in again.stdout
    assert engine.show(waiting.run_id)["status"] == "suspended"
    assert len(applied(engine.show(ready.run_id))) == 1


def _wait_for_line(fd: int, what: str) -> str:
    """Read one line from a FIFO opened O_RDWR; fail after a bound instead of hanging."""
    readable, _, _ = select.select([fd], [], [], PROCESS_TIMEOUT)
    assert readable, f"the child never reported {what}"
    return os.read(fd, 4096).decode()


def _fifos(tmp_path: Path) -> tuple[Path, int]:
    where = tmp_path / "fifos"
    where.mkdir()
    os.mkfifo(where / "ready")
    os.mkfifo(where / "go")
    # O_RDWR: the open never blocks, and a read waits for data rather than for a writer.
    return where, os.open(where / "ready", os.O_RDWR)


def _release(where: Path) -> int:
    """Write the ``go`` line without waiting for a reader (a killed child never reads):
    O_RDWR never blocks, and the line waits in the FIFO while the returned fd is open."""
    fd = os.open(where / "go", os.O_RDWR)
    os.write(fd, b"go\n")
    return fd


def _finish(proc: subprocess.Popen[str]) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=PROCESS_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def stop_once_reported(proc: subprocess.Popen[str], where: Path, ready: int, said: str,
                        what: str, stop: signal.Signals) -> tuple[str, str]:
    """Once the child reports ``what`` (a line holding ``said``) on the FIFO ``ready``, send
    it ``stop`` and let it go on; its stdout and stderr after it exited."""
    try:
        assert said in _wait_for_line(ready, what)
        proc.send_signal(stop)
        go = _release(where)
        try:
            return _finish(proc)
        finally:
            os.close(go)
    finally:
        os.close(ready)


def answered_on_disk(tmp_path: Path, runs: int, *, after: str = "support.answer_steps:observe"
                     ) -> tuple[str, Engine, list[AnsweredRun]]:
    """``runs`` gate runs answered yes in a file store under ``tmp_path``: its uri, the
    engine that made them, and the runs."""
    uri = str(tmp_path / "store")
    engine = Engine(open_store(uri), SystemClock())
    return uri, engine, [answered_run(engine, after=after) for _ in range(runs)]


def stopped_mid_step(tmp_path: Path, uri: str,
                     stop: signal.Signals) -> tuple[subprocess.Popen[str], str, str]:
    """``dw serve`` on ``uri``, sent ``stop`` while a resumed python step blocks; the
    finished process, its stdout and its stderr."""
    where, ready = _fifos(tmp_path)
    proc = subprocess.Popen([*DW, "serve", "--interval", "60", "--store", uri],
                            env=_env(tmp_path, DW_TEST_BLOCK_DIR=str(where)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = stop_once_reported(proc, where, ready, "running", "its python step", stop)
    return proc, out, err


def test_sigterm_during_a_pass_finishes_the_resume_and_stops_cleanly(tmp_path: Path) -> None:
    uri, engine, [run] = answered_on_disk(tmp_path, 1, after="support.answer_steps:block")
    proc, out, err = stopped_mid_step(tmp_path, uri, signal.SIGTERM)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "stopped" in err
    assert f"resumed {run.run_id}" in out
    shown = engine.show(run.run_id)
    assert shown["status"] == "succeeded" and len(applied(shown)) == 1


def test_a_killed_scheduler_loses_nothing(tmp_path: Path) -> None:
    uri = str(tmp_path / "store")
    clock = FakeClock(mirror_to=tmp_path / "clock")
    engine = Engine(open_store(uri), clock)
    view = engine.run(gate_workflow(after="support.answer_steps:block"))
    receipt = engine.answer(view.run_id, view.waits[0].wait_id, YES).receipt.id
    where, ready = _fifos(tmp_path)
    env = _env(tmp_path, **clock.env)
    proc = subprocess.Popen([*DW, "serve", "--once", "--store", uri],
                            env={**env, answer_steps.BLOCK_ENV: str(where)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "running" in _wait_for_line(ready, "its python step")
        proc.kill()  # SIGKILL in the middle of the resumed execution
        proc.communicate(timeout=PROCESS_TIMEOUT)
    finally:
        os.close(ready)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    shown = engine.show(view.run_id)
    assert shown["status"] == "running" and len(applied(shown)) == 1  # consumed, then killed
    with pytest.raises(Refusal) as refused:
        engine.answer(view.run_id, view.waits[0].wait_id, YES)
    assert refused.value.kind == "not_suspended"
    # Another scheduler: the dead owner's lease is busy at first look, stale once the
    # clock has moved past ttl + grace with the lease unchanged; then it finishes the run.
    first = _dw(["serve", "--once", "--json", "--store", uri], env)
    assert json.loads(first.stdout) == {"resumed": []}
    clock.advance(40)
    second = _dw(["serve", "--once", "--json", "--store", uri], env)
    assert json.loads(second.stdout) == {"resumed": [view.run_id]}, second.stderr
    shown = engine.show(view.run_id)
    assert shown["status"] == "succeeded"
    assert [e["receiptId"] for e in applied(shown)] == [receipt]
    assert shown["steps"]["use"]["output"] == {"seen": {"approved": True}}


RACE_RUNS = 20
SCHEDULERS = 3


def test_three_schedulers_and_a_manual_resume_resume_every_run_exactly_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    record_property: Callable[[str, object], None]
) -> None:
    # fsync=0: FsStore.delete in durable mode raises ENOENT when a concurrent delete of a
    # sibling key prunes the shared directory before this one fsyncs it (reported to the
    # store's owner); the race under test here is the engine's, not the store's.
    uri = f"file://{tmp_path / 'store'}?fsync=0"
    marks = tmp_path / "marks"
    engine = Engine(open_store(uri), SystemClock())
    receipts: dict[str, str] = {}
    for _ in range(RACE_RUNS):
        view = engine.run(gate_workflow(after="support.answer_steps:mark"))
        receipts[view.run_id] = engine.answer(view.run_id, view.waits[0].wait_id,
                                              YES).receipt.id
    env = _env(tmp_path, **{answer_steps.MARKS_ENV: str(marks)})
    procs = [subprocess.Popen(
        [sys.executable, "-c", AT_THE_LINE, "serve", "--until-idle", "--interval", "0.05",
         "--json", "--store", uri],
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True) for _ in range(SCHEDULERS)]
    monkeypatch.setenv(answer_steps.MARKS_ENV, str(marks))
    manual = Engine(open_store(uri), SystemClock(), claim_patience=False)
    busy = 0
    try:
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        for run_id in sorted(receipts, reverse=True):  # against the schedulers' order
            try:
                manual.resume(run_id)
            except Refusal as refusal:
                assert refusal.kind == "busy", refusal.message
                busy += 1
        outputs = [proc.communicate(timeout=PROCESS_TIMEOUT) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for proc, (_out, err) in zip(procs, outputs, strict=True):
        # Progress lines are indented; anything else is what went wrong.
        assert proc.returncode == 0, [ln for ln in err.splitlines() if not ln.startswith(" ")]
        assert "Traceback" not in err
    by_pid = {proc.pid: json.loads(out)["resumed"] for proc, (out, _) in zip(procs, outputs,
                                                                             strict=True)}
    by_pid[os.getpid()] = []
    # The observable: each execution of the step after the wait appends start and end
    # markers (O_APPEND); no run may start twice, nor start while it is running.
    executions: dict[str, list[int]] = defaultdict(list)
    running: dict[str, str] = {}
    for line in marks.read_text().splitlines():
        what, run_id, token, pid_text = line.split()
        if what == "start":
            assert run_id not in running, f"run {run_id} executed twice at the same time"
            running[run_id] = token
            executions[run_id].append(int(pid_text))
        else:
            assert running.pop(run_id) == token
    assert running == {}
    assert {r: len(p) for r, p in executions.items()} == dict.fromkeys(receipts, 1)
    for run_id, [executor] in executions.items():
        assert executor in by_pid, f"run {run_id} was executed by an unknown process"
        if executor != os.getpid():
            assert run_id in by_pid[executor]
    record_property("executions_per_process",
                    sorted(sum(1 for p in executions.values() if p == [pid]) for pid in by_pid))
    record_property("manual_busy", busy)
    reported = [r for runs in by_pid.values() for r in runs]
    assert len(reported) == len(set(reported))  # no scheduler claims another's resume
    assert sum(1 for pid in executions.values() if pid == [os.getpid()]) + len(reported) \
        == RACE_RUNS
    for run_id, receipt in receipts.items():
        shown = engine.show(run_id)
        assert shown["status"] == "succeeded"
        assert [e["receiptId"] for e in applied(shown)] == [receipt]
    store = open_store(uri)
    assert store.list(keys.waits_root()) == store.list(keys.outcomes_root()) == []


def test_dw_resume_takes_over_a_dead_owners_claim_across_cli_calls(tmp_path: Path) -> None:
    """Under a frozen ``DW_CLOCK`` a first ``dw resume`` meets the dead owner's lease and
    says ``busy``; its look is kept in the host-local looks file, so once the clock has
    moved past ``ttl + grace`` a second ``dw resume`` takes the run over."""
    uri = str(tmp_path / "store")
    clock = FakeClock(mirror_to=tmp_path / "clock")
    engine = Engine(open_store(uri), clock)
    view = engine.run(gate_workflow(after="support.answer_steps:answer_shaped"))
    receipt = engine.answer(view.run_id, view.waits[0].wait_id, YES).receipt.id
    dying = FaultyStore(open_store(uri))
    dying.crash("put_if_absent", key=f"{keys.runs_root()}*", point="before")
    with pytest.raises(SimulatedCrash):  # the owner dies holding the claim, before the consume
        Engine(dying, clock).resume(view.run_id)
    env = _env(tmp_path, **clock.env)
    first = _dw(["resume", view.run_id, "--store", uri, "--json"], env)
    assert json.loads(first.stdout)["error"]["refusal"] == "busy"
    clock.advance(40)
    second = _dw(["resume", view.run_id, "--store", uri, "--json"], env)
    assert second.returncode == 0, second.stdout
    assert json.loads(second.stdout)["status"] == "succeeded"
    assert [e["receiptId"] for e in applied(engine.show(view.run_id))] == [receipt]
