"""A Hypothesis state machine over one run's wait: deliveries, time, looks, cancel, resume,
and crashes at any store call followed by a fresh engine (a restarted process).

Invariants after every step (docs/reference/kit.md): the outcome never changes once created, only
one delivery is told it won, the winner's receipt is never lost, no answer is applied
twice, and a bad payload is never stored.
"""

from __future__ import annotations

import json
from typing import Any

from engine_helpers import YES, approval_workflow
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from dw_testing.kit.clock import FakeClock
from dw_testing.kit.faults import FaultyStore, SimulatedCrash
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.refusals import Refusal
from reference_engine.stores.memory import MemoryStore

BAD_MARK = "NEVER-STORED-9"
OPS = ("signal", "answer", "look", "cancel", "resume")


class WaitMachine(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        self.clock = FakeClock()
        self.store = MemoryStore()
        view = self._engine(self.store).run(approval_workflow(timeout=600))
        self.run_id, self.wait_id = view.run_id, view.waits[0].wait_id
        self.first_outcome: bytes | None = None
        self.winners: list[str] = []

    def _engine(self, store: Any) -> Engine:
        return Engine(store, self.clock, sleeper=self.clock.advance, lease_ttl_ms=30_000)

    def _do(self, engine: Engine, op: str) -> None:
        try:
            if op == "signal":
                self.winners.append(engine.signal(self.wait_id, YES).receipt.id)
            elif op == "answer":
                self.winners.append(engine.answer(self.run_id, self.wait_id, YES).receipt.id)
            elif op == "look":
                engine.open_waits()
            elif op == "cancel":
                engine.cancel(self.run_id)
            elif op == "resume":
                engine.resume(self.run_id)
        except Refusal:
            pass

    @rule(op=st.sampled_from(OPS))
    def act(self, op: str) -> None:
        self._do(self._engine(self.store), op)

    @rule(payload=st.sampled_from([json.dumps({"approved": BAD_MARK}), "{", "[]",
                                   json.dumps({"approved": True, "token": BAD_MARK})]))
    def bad_signal(self, payload: str) -> None:
        try:
            self._engine(self.store).signal(self.wait_id, payload)
        except Refusal as refusal:
            assert refusal.kind in ("invalid_payload", "secret_detected", "expired",
                                    "already_settled", "closed", "unknown")

    @rule(seconds=st.sampled_from([1, 300, 700]))
    def advance(self, seconds: int) -> None:
        self.clock.advance(seconds)

    @rule(op=st.sampled_from(OPS), after=st.integers(min_value=0, max_value=40),
          point=st.sampled_from(["before", "after_commit"]))
    def crash_during(self, op: str, after: int, point: str) -> None:
        faulty = FaultyStore(self.store)
        faulty.crash(None, after_calls=after, point=point)
        winners = len(self.winners)
        try:
            self._do(self._engine(faulty), op)
        except SimulatedCrash:
            del self.winners[winners:]  # a crashed caller was told nothing

    @invariant()
    def one_outcome_that_never_changes(self) -> None:
        stored = self.store.get(keys.outcome_key(self.wait_id))
        if stored is not None:
            assert self.first_outcome is None or stored == self.first_outcome
            self.first_outcome = stored

    @invariant()
    def one_winner_never_lost_never_applied_twice(self) -> None:
        assert len(self.winners) <= 1
        newest = self._engine(self.store).show(self.run_id)
        applied = [e for e in newest["journal"] if e["type"] == "answer_applied"]
        assert len(applied) <= 1
        if self.winners:
            output = newest["steps"]["approval"]["output"] or {}
            in_run = output.get("signal", {}).get("id") == self.winners[0]
            in_outcome = self.winners[0].encode() in (
                self.store.get(keys.outcome_key(self.wait_id)) or b"")
            assert in_run or in_outcome

    @invariant()
    def bad_payloads_are_never_stored(self) -> None:
        for key in self.store.list(""):
            assert BAD_MARK.encode() not in (self.store.get(key) or b"")


TestWaitMachine = WaitMachine.TestCase
TestWaitMachine.settings = settings(max_examples=40, stateful_step_count=12, deadline=None,
                                    suppress_health_check=[HealthCheck.too_slow])
