"""The wait lifecycle in parallel: random batches of signal, timeout, cancel and resume run at once
on threads, each on its own handle of the store under test, recorded call by call.

Afterwards every run is driven to its end, and three things are checked:

- the recorded store history is linearizable, per key (the history checker), reading a
  create's ``False`` as "may have landed": the engine never trusts that answer, and a lost
  response can give it to the real winner (C-LOST-1), so this suite must tolerate it;
- each wait was decided exactly once, and its run applied at most one answer;
- every signal that was told it won is the answer its run holds (no acceptance lost).
"""

from __future__ import annotations

import dataclasses
import functools
import random
from dataclasses import dataclass, field
from typing import Any

import pytest

from conformance.engine_support import (
    NO,
    YES,
    answers_applied,
    approval_workflow,
    is_slow,
    receipt_in_run,
)
from dw_testing.history import (
    Budget,
    HistoryLog,
    HistoryRecorder,
    Operation,
    assert_linearizable,
)
from dw_testing.kit.clock import FakeClock
from dw_testing.kit.spec import StoreFactory
from dw_testing.kit.together import run_together
from dw_testing.plugin.engine_fixtures import MakeEngine
from dw_testing.plugin.profiles import rng
from reference_engine.engine import Engine
from reference_engine.refusals import Refusal

pytestmark = [pytest.mark.dw_engine, pytest.mark.dw_requires("put_if_absent", "cross_handle")]

ROUNDS = 3
SLOW_STORE_ROUNDS = 1  # an emulated or remote store: one round, not minutes of them
RUNS_PER_ROUND = 3
THREADS = 6
OPS_PER_THREAD = 2
TIMEOUT_SECONDS = 60
OPS = ("signal", "signal", "timeout", "cancel", "resume")
BUDGET = Budget(max_steps=2_000_000, max_seconds=10.0)


@dataclass
class Told:
    """What the actors were told, per run: the receipts told they won."""

    won: dict[str, list[str]] = field(default_factory=dict)

    def add(self, run_id: str, receipt: str) -> None:
        self.won.setdefault(run_id, []).append(receipt)


def _act(engine: Engine, clock: FakeClock, told: Told, waits: dict[str, str],
         plan: list[tuple[str, str, str]]) -> None:
    for op, run_id, payload in plan:
        try:
            if op == "signal":
                told.add(run_id, engine.signal(waits[run_id], payload).receipt.id)
            elif op == "timeout":
                clock.advance(TIMEOUT_SECONDS + 1)
                engine.open_waits()
            elif op == "cancel":
                engine.cancel(run_id)
            else:
                engine.resume(run_id)
        except Refusal:
            pass


def _finish(engine: Engine, told: Told, run_id: str, wait_id: str) -> dict[str, Any]:
    """Resume until the run ends; an open wait gets one more signal first."""
    for _ in range(4):
        try:
            if engine.resume(run_id).status != "suspended":
                break
        except Refusal as refusal:
            if refusal.kind == "not_suspended":
                break
            assert refusal.kind == "open_wait", refusal.message
            try:
                told.add(run_id, engine.signal(wait_id, NO).receipt.id)
            except Refusal as late:
                assert late.kind in ("expired", "already_settled", "closed"), late.message
    return engine.show(run_id)


def _check_run(shown: dict[str, Any], told: list[str]) -> None:
    run_id = shown["runId"]
    assert shown["status"] in ("succeeded", "cancelled"), (
        f"run {run_id} did not end: {shown['status']}")
    assert len(told) <= 1, f"run {run_id}: {len(told)} signals were told they won one wait"
    step = shown["steps"]["approval"]
    applied = answers_applied(shown)
    assert len(applied) <= 1, f"run {run_id}: answer applied {len(applied)} times"
    if told:
        assert receipt_in_run(shown) == told[0], (
            f"run {run_id}: signal {told[0]} was told it won, but the run holds "
            f"{receipt_in_run(shown)}")
        assert step["error"] in (None, "cancelled")
    if step["status"] == "succeeded":
        assert len(applied) == 1 and told, f"run {run_id}: applied an answer nobody sent"
    else:
        assert step["error"] in ("wait_timeout", "cancelled"), (
            f"run {run_id}: its wait ended {step['status']} / {step['error']}")
        assert applied == [], f"run {run_id}: a failed wait journaled an applied answer"


def _false_as_unknown(history: list[Operation]) -> list[Operation]:
    """Each create answered ``False`` becomes indeterminate: it may or may not have landed."""
    return [dataclasses.replace(op, result=None, ret=None, error="answered False")
            if op.op == "put_if_absent" and op.result is False and not op.indeterminate
            else op for op in history]


def _plans(random_: random.Random, run_ids: list[str]) -> list[list[tuple[str, str, str]]]:
    return [[(random_.choice(OPS), random_.choice(run_ids), random_.choice((YES, NO)))
             for _ in range(OPS_PER_THREAD)] for _ in range(THREADS)]


@pytest.mark.dw_clause("C-CREATE-2", "C-HANDLE-2", "C-LOST-1", "C-ENGINE-2")
def test_concurrent_signals_timeouts_cancels_and_resumes_decide_each_wait_once(
    dw_store: Any, dw_open_handle: StoreFactory, dw_clock: FakeClock,
    dw_make_engine: MakeEngine,
) -> None:
    random_ = rng("engine-parallel")
    log = HistoryLog()
    # Every call is recorded, the set-up and the finishing too: the checker's model starts
    # each key absent, and the test's prefix is fresh.
    main = HistoryRecorder(dw_store, process_id="main", log=log)
    recorded = [HistoryRecorder(dw_open_handle(), process_id=f"actor-{i}", log=log)
                for i in range(THREADS)]
    rounds = SLOW_STORE_ROUNDS if is_slow(dw_store) else ROUNDS
    for round_no in range(rounds):
        setup = dw_make_engine(main)
        waits = {}
        for n in range(RUNS_PER_ROUND):
            view = setup.run(approval_workflow(timeout=TIMEOUT_SECONDS),
                             run_id=f"p{round_no}-{n}")
            waits[view.run_id] = view.waits[0].wait_id
        told = Told()
        plans = _plans(random_, sorted(waits))
        actors = [dw_make_engine(handle, claim_patience=False) for handle in recorded]
        run_together([functools.partial(_act, actor, dw_clock, told, waits, plan)
                      for actor, plan in zip(actors, plans, strict=True)])
        finisher = dw_make_engine(main)
        for run_id, wait_id in waits.items():
            try:
                _check_run(_finish(finisher, told, run_id, wait_id), told.won.get(run_id, []))
            except AssertionError as failure:
                failure.add_note(f"round {round_no}, plans {plans}")
                raise
    assert_linearizable(_false_as_unknown(log.operations()), budget=BUDGET)
