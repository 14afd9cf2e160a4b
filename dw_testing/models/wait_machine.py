"""The wait-level state machine (docs/reference/kit.md): the engine's wait lifecycle on any store.

Rules: open a wait (its owner runs to suspension, or stays parked mid-level with the
sibling job still running), a valid signal and an invalid one, a typed answer, advancing
the clock, a look (lazy timeouts fire), cancel, resume, the owner's mid-level save, a
crash at any store call of any operation (the handle is poisoned, as in a killed process)
and the owner's crash. Every later operation runs on a fresh engine, which is a restart.

After every step, one invariant method per promise of docs/reference/kit.md:

- a wait has at most one outcome, and it never changes;
- only the winner is told it won;
- no accepted signal is ever lost;
- nothing is applied twice (and nothing applied is ever taken back);
- a bad payload is never stored.

Import :class:`WaitStateMachine`, hand it a store (and, for an engine of your own, a
builder) and run it like any Hypothesis machine::

    TestWaits = WaitStateMachine.for_store(make_store).TestCase

A failure shrinks to a short program such as::

    state = WaitStateMachine()
    runs_0 = state.open_wait(parked=True)
    state.signal(run=runs_0, payload='{"approved": true}')
    state.resume(run=runs_0)
    state.owner_save(run=runs_0)
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, precondition, rule

from dw_testing.kit.clock import FakeClock
from dw_testing.kit.faults import FaultyStore, SimulatedCrash
from dw_testing.kit.prefixed import PrefixedStore
from dw_testing.models.wait_actors import (
    AMBIGUOUS_FAULTS,
    BAD_MARK,
    BAD_PAYLOADS,
    CRASH_POINTS,
    CRASHABLE,
    MAX_RUNS,
    REREAD,
    VALID_PAYLOADS,
    WRITES,
    BuildEngine,
    ParkedOwner,
    Snapshot,
    WaitFacts,
    accepted_sender,
    machine_workflow,
)
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.records.decoding import Found
from reference_engine.records.registration import decode_registration
from reference_engine.records.run import WAITING
from reference_engine.records.run_store import newest_revision
from reference_engine.refusals import Refusal
from reference_engine.stores.contract import close_store


class WaitStateMachine(RuleBasedStateMachine):
    """The engine's wait lifecycle on the store under test; every promise after every step.

    Hand it a store with :meth:`for_store`, or subclass it and define :meth:`open_handle`
    (and :meth:`build_engine` for an engine other than the reference engine); a subclass may
    add rules of its own. Two handles are opened once per class and shared by every program:
    the first serves the machine's own reads and most operations; parked owners, crashing
    actors (each behind its own ``FaultyStore``, the "process" that dies) and ambiguous
    signals use the second, so every outcome crosses handles. Each program works in a fresh
    sub-prefix, so none depends on what an earlier one left. Close the handles with
    :meth:`close_handles`. The short default lease keeps a takeover of a parked or crashed
    owner's claim to a few polls.
    """

    runs = Bundle("runs")
    lease_ttl_ms: ClassVar[int] = 3_000
    _opened: ClassVar[list[Any]] = []

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._opened = []  # each machine class shares its own two handles

    def open_handle(self) -> Any:
        """A new handle on the store under test; define it, or use :meth:`for_store`."""
        raise NotImplementedError(
            f"{type(self).__name__} has no store: use WaitStateMachine.for_store(open_handle) "
            "or subclass WaitStateMachine and define open_handle(self)")

    def build_engine(self, store: Any, clock: Any, **kwargs: Any) -> Any:
        """The engine under test on ``store``; the reference engine unless overridden."""
        return Engine(store, clock, **kwargs)

    @classmethod
    def for_store(cls, open_handle: Callable[[], Any], build: BuildEngine | None = None, *,
                  lease_ttl_ms: int = 3_000) -> type[WaitStateMachine]:
        """A subclass on ``open_handle``'s store, building engines with ``build``."""
        members: dict[str, Any] = {
            "open_handle": lambda self: open_handle(), "lease_ttl_ms": lease_ttl_ms}
        if build is not None:
            members["build_engine"] = lambda self, store, clock, **kw: build(store, clock, **kw)
        return type(cls.__name__, (cls,), members)

    @classmethod
    def close_handles(cls) -> None:
        for handle in cls._opened:
            close_store(handle)
        cls._opened.clear()

    def __init__(self) -> None:
        super().__init__()
        if not self._opened:
            self._opened.extend([self.open_handle(), self.open_handle()])
        space = f"w-{uuid.uuid4().hex[:12]}"
        self.clock = FakeClock()
        self.store = PrefixedStore(self._opened[0], space)
        self.other = PrefixedStore(self._opened[1], space)
        self.facts: dict[str, WaitFacts] = {}
        self.owners: dict[str, ParkedOwner] = {}
        self._scanned: set[str] = set()
        self._snapshot = Snapshot({}, {})

    def teardown(self) -> None:
        for owner in self.owners.values():
            owner.stop()

    # -- helpers ---------------------------------------------------------------------

    def _engine(self, store: Any | None = None, **kwargs: Any) -> Any:
        kwargs.setdefault("sleeper", self.clock.advance)
        kwargs.setdefault("lease_ttl_ms", self.lease_ttl_ms)
        return self.build_engine(self.store if store is None else store, self.clock, **kwargs)

    def _wait_id(self, run_id: str) -> str | None:
        facts = self.facts[run_id]
        if facts.wait_id is None:
            newest = newest_revision(self.store, run_id)
            if isinstance(newest.decoded, Found):
                step = newest.decoded.record.steps.get("approval")
                if step is not None and step.wait is not None:
                    facts.wait_id = step.wait.id
            if facts.wait_id is None:  # registered, never saved waiting (a crash)
                for key in self.store.list(keys.waits_root()):
                    wait_id = keys.wait_id_from_key(key) or ""
                    reg = decode_registration(self.store.get(key), wait_id)
                    if isinstance(reg, Found) and reg.record.run_id == run_id:
                        facts.wait_id = wait_id
        return facts.wait_id

    def _deliver(self, engine: Any, run_id: str, payload: str, *, answer: bool) -> None:
        wait_id = self._wait_id(run_id)
        if wait_id is None:
            return
        facts = self.facts[run_id]
        sender = f"sender-{sum(len(f.senders) for f in self.facts.values()) + 1}"
        facts.senders[sender] = "crashed"  # until the call returns
        try:
            if answer:
                delivery = engine.answer(run_id, wait_id, payload, submitted_by=sender)
            else:
                delivery = engine.signal(wait_id, payload, submitted_by=sender)
        except Refusal:
            facts.senders[sender] = "refused"
            return
        facts.senders[sender] = "won"
        facts.told_won.append(delivery.receipt.id)

    def _do(self, engine: Any, op: str, run_id: str) -> None:
        try:
            if op == "open":
                engine.run(machine_workflow(), run_id=run_id)
            elif op == "signal":
                self._deliver(engine, run_id, VALID_PAYLOADS[0], answer=False)
            elif op == "answer":
                self._deliver(engine, run_id, VALID_PAYLOADS[0], answer=True)
            elif op == "look":
                engine.open_waits()
            elif op == "cancel":
                engine.cancel(run_id)
            elif op == "resume":
                engine.resume(run_id)
        except Refusal:
            pass

    def _new_run_id(self) -> str:
        run_id = f"r{len(self.facts) + 1}"
        self.facts[run_id] = WaitFacts()
        return run_id

    # -- rules -----------------------------------------------------------------------

    @precondition(lambda self: len(self.facts) < MAX_RUNS)
    @rule(target=runs, parked=st.booleans())
    def open_wait(self, parked: bool) -> str:
        run_id = self._new_run_id()
        if parked:
            self.owners[run_id] = ParkedOwner(self.build_engine, self.clock, self.other, run_id)
        else:
            self._do(self._engine(), "open", run_id)
        return run_id

    @rule(run=runs, payload=st.sampled_from(VALID_PAYLOADS))
    def signal(self, run: str, payload: str) -> None:
        self._deliver(self._engine(), run, payload, answer=False)

    @rule(run=runs, payload=st.sampled_from(BAD_PAYLOADS))
    def bad_signal(self, run: str, payload: str) -> None:
        wait_id = self._wait_id(run)
        if wait_id is None:
            return
        try:
            self._engine().signal(wait_id, payload)
        except Refusal:
            return
        raise AssertionError(f"a bad payload was accepted for wait {wait_id} of run {run}")

    @rule(run=runs, payload=st.sampled_from(VALID_PAYLOADS))
    def answer(self, run: str, payload: str) -> None:
        self._deliver(self._engine(), run, payload, answer=True)

    @rule(seconds=st.sampled_from([1, 300, 700]))
    def advance_clock(self, seconds: int) -> None:
        self.clock.advance(seconds)

    @rule()
    def look(self) -> None:
        self._engine().open_waits()

    @rule(run=runs)
    def cancel(self, run: str) -> None:
        self._do(self._engine(), "cancel", run)

    @rule(run=runs)
    def resume(self, run: str) -> None:
        self._do(self._engine(), "resume", run)

    @precondition(lambda self: any(o.parked for o in self.owners.values()))
    @rule(run=runs)
    def owner_save(self, run: str) -> None:
        owner = self.owners.get(run)
        if owner is not None and owner.parked:
            owner.save()

    @precondition(lambda self: any(o.parked for o in self.owners.values()))
    @rule(run=runs)
    def owner_crash(self, run: str) -> None:
        owner = self.owners.get(run)
        if owner is not None and owner.parked:
            owner.crash()

    def _faulty(self) -> FaultyStore:
        return FaultyStore(self.other)

    def _crash_run(self, faulty: FaultyStore, op: str, run: str) -> None:
        told = len(self.facts[run].told_won)
        try:
            self._do(self._engine(faulty), op, run)
        except SimulatedCrash:
            del self.facts[run].told_won[told:]  # a killed caller was told nothing

    @rule(op=st.sampled_from(CRASHABLE), run=runs,
          after=st.integers(min_value=0, max_value=40),
          point=st.sampled_from(CRASH_POINTS))
    def crash_during(self, op: str, run: str, after: int, point: str) -> None:
        """Crash at the store call number ``after + 1`` of ``op``."""
        faulty = self._faulty()
        faulty.crash(None, after_calls=after, point=point)
        self._crash_run(faulty, op, run)

    @rule(op=st.sampled_from(CRASHABLE), run=runs, record=st.sampled_from(sorted(WRITES)),
          nth=st.integers(min_value=1, max_value=3), point=st.sampled_from(CRASH_POINTS))
    def crash_at_write(self, op: str, run: str, record: str, nth: int, point: str) -> None:
        """Crash at ``op``'s ``nth`` create of a ``record`` (the consume is resume's
        first revision)."""
        faulty = self._faulty()
        faulty.crash("put_if_absent", after_calls=nth - 1, point=point, key=WRITES[record])
        self._crash_run(faulty, op, run)

    @rule(run=runs, point=st.sampled_from(CRASH_POINTS))
    def crash_at_consume(self, run: str, point: str) -> None:
        """A resume crashes at its consume, the first revision it creates
        (docs/explanation/answers.md)."""
        faulty = self._faulty()
        faulty.crash("put_if_absent", point=point, key=WRITES["revision"])
        self._crash_run(faulty, "resume", run)

    @rule(run=runs, fault=st.sampled_from(AMBIGUOUS_FAULTS))
    def ambiguous_signal(self, run: str, fault: str) -> None:
        """A signal whose outcome create answers ambiguously (C-LOST-1, C-CREATE-6)."""
        faulty = self._faulty()
        faulty.inject("put_if_absent", fault, key=WRITES["outcome"])
        self._deliver(self._engine(faulty), run, VALID_PAYLOADS[0], answer=False)

    # -- the promises, checked after every step --------------------------------------

    @invariant()
    def every_promise_holds(self) -> None:
        """Read the store once after the step, then check each promise against it."""
        self._snapshot = self._read()
        self.an_outcome_is_written_once_and_never_changes()
        self.only_the_winner_is_told_it_won()
        self.no_accepted_signal_is_lost()
        self.nothing_is_applied_twice()
        self.a_bad_payload_is_never_stored()

    def _read(self) -> Snapshot:
        outcomes: dict[str, bytes | None] = {}
        newest: dict[str, Any] = {}
        for run_id in self.facts:
            wait_id = self._wait_id(run_id)
            outcomes[run_id] = (None if wait_id is None
                                else self.store.get(keys.outcome_key(wait_id)))
            decoded = newest_revision(self.store, run_id).decoded
            newest[run_id] = decoded.record if isinstance(decoded, Found) else None
        return Snapshot(outcomes, newest)

    def _outcome(self, run_id: str) -> bytes | None:
        return self._snapshot.outcomes.get(run_id)

    def _newest_step(self, run_id: str) -> tuple[Any, Any]:
        record = self._snapshot.newest.get(run_id)
        if record is None:
            return None, None
        return record, record.steps.get("approval")

    def an_outcome_is_written_once_and_never_changes(self) -> None:
        for run_id, facts in self.facts.items():
            stored = self._outcome(run_id)
            if stored is None:
                continue
            if facts.first_outcome is None:
                facts.first_outcome = stored
            assert stored == facts.first_outcome, (
                f"the outcome of run {run_id}'s wait changed after it was settled")

    def only_the_winner_is_told_it_won(self) -> None:
        for run_id, facts in self.facts.items():
            assert len(facts.told_won) <= 1, (
                f"{len(facts.told_won)} deliveries to run {run_id}'s wait were told "
                "they won; at most one may be")
            stored = self._outcome(run_id)
            accepted = accepted_sender(stored)
            if accepted is None:
                continue
            if facts.told_won:
                assert stored is not None and facts.told_won[0].encode() in stored, (
                    f"run {run_id}: the stored answer is not the one told it won")
            verdict = facts.senders.get(accepted, "unknown")
            assert verdict in ("won", "crashed"), (
                f"run {run_id}: {accepted}'s answer is the stored outcome, but "
                f"{accepted} was {verdict}: the winner must be told it won")

    def no_accepted_signal_is_lost(self) -> None:
        for run_id, facts in self.facts.items():
            if not facts.told_won:
                continue
            receipt = facts.told_won[0]
            if receipt.encode() in (self._outcome(run_id) or b""):
                continue
            _record, step = self._newest_step(run_id)
            output = step.output if step is not None and isinstance(step.output, dict) \
                else {}
            kept = (output.get("signal") or {}).get("id")
            assert kept == receipt, (
                f"run {run_id}: signal {receipt} was told it won, but neither the "
                "outcome nor the run record holds it any more")

    def nothing_is_applied_twice(self) -> None:
        for run_id, facts in self.facts.items():
            record, step = self._newest_step(run_id)
            if record is None:
                continue
            applied = [e for e in record.journal if e.get("type") == "answer_applied"]
            assert len(applied) <= 1, (
                f"run {run_id}: its answer was journaled applied {len(applied)} times")
            assert len(applied) >= facts.applied_max, (
                f"run {run_id}: an applied answer vanished from the newest revision")
            facts.applied_max = len(applied)
            if applied and step is not None:
                assert step.status != WAITING, (
                    f"run {run_id}: answer journaled applied but its step still waits")

    def a_bad_payload_is_never_stored(self) -> None:
        mark = BAD_MARK.encode()
        for key in self.store.list(""):
            # Revisions and leases are read once: a revision is never rewritten and a
            # lease carries no payload. Registrations and outcomes are read each step.
            if key in self._scanned:
                continue
            if key.startswith(REREAD):
                pass
            elif keys.parse_revision_key(key) or keys.parse_claim_key(key):
                self._scanned.add(key)
            assert mark not in (self.store.get(key) or b""), (
                f"{key} holds a payload that was refused")
