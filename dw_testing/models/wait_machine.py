"""The wait-level state machine (SPEC §6.5): the engine's wait lifecycle on any store.

Rules: open a wait (its owner runs to suspension, or stays parked mid-level with the
sibling job still running), a valid signal and an invalid one, a typed answer, advancing
the clock, a look (lazy timeouts fire), cancel, resume, the owner's mid-level save, a
crash at any store call of any operation (the handle is poisoned, as in a killed process)
and the owner's crash. Every later operation runs on a fresh engine, which is a restart.

After every step, one invariant method per promise of SPEC §6.5:

- a wait has at most one outcome, and it never changes;
- only the winner is told it won;
- no accepted signal is ever lost;
- nothing is applied twice (and nothing applied is ever taken back);
- a bad payload is never stored.

Build it with :func:`wait_machine` and run it with ``run_state_machine_as_test``. A failure
shrinks to a short program such as::

    state = WaitMachine()
    runs_0 = state.open_wait(parked=True)
    state.signal(run=runs_0, payload='{"approved": true}')
    state.resume(run=runs_0)
    state.owner_save(run=runs_0)
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, precondition, rule

from dw_testing.kit.clock import FakeClock
from dw_testing.kit.faults import FaultyStore, SimulatedCrash
from reference_engine.records import keys
from reference_engine.records.decoding import Found
from reference_engine.records.registration import decode_registration
from reference_engine.records.run import WAITING
from reference_engine.records.run_store import newest_revision
from reference_engine.refusals import Refusal
from reference_engine.stores.contract import close_store
from reference_engine.workflows.loader import parse_workflow
from reference_engine.workflows.model import Workflow

# ``build(store, clock, **engine_kwargs)`` -> an Engine (the reference or a variant).
BuildEngine = Callable[..., Any]

BAD_MARK = "NEVER-STORED-7f3a"
VALID_PAYLOADS = ('{"approved": true}', '{"approved": false}')
BAD_PAYLOADS = (
    json.dumps({"approved": BAD_MARK}),                      # fails the schema
    json.dumps({"approved": True, "token": BAD_MARK}),       # a secret-named field
    json.dumps({"approved": True, "note": "AKIA" + "ABCDEFGHIJKLMNOP", "m": BAD_MARK}),
    '{"approved": true, "approved": false, "m": "' + BAD_MARK + '"}',  # duplicate key
    "{" + BAD_MARK,                                          # not JSON
)
CRASHABLE = ("open", "signal", "answer", "look", "cancel", "resume")
CRASH_POINTS = ("before", "after_commit")
WRITES = {"revision": f"{keys.runs_root()}/*/rev/*", "outcome": f"{keys.outcomes_root()}/*",
          "registration": f"{keys.waits_root()}/*", "claim": f"{keys.claims_prefix('*')}/*"}
REREAD = (f"{keys.waits_root()}/", f"{keys.outcomes_root()}/")
AMBIGUOUS_FAULTS = ("false-to-winner", "drop-response-after-commit", "conflict-409-once")
WAIT_TIMEOUT = 600
MAX_RUNS = 4
PARK_TIMEOUT_SECONDS = 10.0
SCHEMA = {"type": "object", "required": ["approved"],
          "properties": {"approved": {"type": "boolean"}}}


def machine_workflow() -> Workflow:
    """A wait beside a sibling job of two sleeps (each ends with an owner save)."""
    return parse_workflow({"name": "machine", "jobs": {
        "build": {"steps": [{"name": "compile", "log": "compiling"}]},
        "approve": {"depends_on": ["build"], "steps": [
            {"name": "approval",
             "wait_for_signal": {"timeout": WAIT_TIMEOUT, "schema": SCHEMA}}]},
        "checks": {"depends_on": ["build"], "steps": [
            {"name": "soak", "sleep": 1}, {"name": "settle", "sleep": 1}]},
        "ship": {"depends_on": ["approve", "checks"],
                 "when": "steps.approval.outputs.payload.approved",
                 "steps": [{"name": "deploy", "log": "deploying"}]},
        "rollback": {"depends_on": ["approve"], "when": "failed('approve')",
                     "steps": [{"name": "notify", "log": "no approval"}]},
    }})


def _job_waiting(data: bytes, job: str) -> bool:
    try:
        record = json.loads(data)
    except ValueError:
        return False
    jobs = record.get("jobs") if isinstance(record, dict) else None
    return isinstance(jobs, dict) and jobs.get(job) == "waiting"


def _accepted_sender(stored: bytes | None) -> str | None:
    """``receipt.submittedBy`` of an accepted outcome, else ``None``."""
    if stored is None:
        return None
    try:
        outcome = json.loads(stored)
    except ValueError:
        return None
    if not isinstance(outcome, dict) or outcome.get("kind") != "accepted":
        return None
    receipt = outcome.get("receipt")
    sender = receipt.get("submittedBy") if isinstance(receipt, dict) else None
    return sender if isinstance(sender, str) else None


class _WaitingWatch:
    """Passes calls through; sets ``opened`` once a revision shows the wait's job waiting."""

    def __init__(self, inner: Any, opened: threading.Event) -> None:
        self.inner = inner
        self.opened = opened

    def put(self, key: str, data: bytes) -> None:
        self.inner.put(key, data)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        created: bool = self.inner.put_if_absent(key, data)
        if keys.parse_revision_key(key) is not None and _job_waiting(data, "approve"):
            self.opened.set()
        return created

    def get(self, key: str) -> bytes | None:
        found: bytes | None = self.inner.get(key)
        return found

    def delete(self, key: str) -> None:
        self.inner.delete(key)

    def list(self, prefix: str) -> list[str]:
        listed: list[str] = self.inner.list(prefix)
        return listed


class ParkedOwner:
    """A run's owner on its own thread, parked inside the sibling job's ``sleep`` steps.

    Each :meth:`save` lets one sleep return, so the owner saves the step and parks at the
    next sleep (or drains the level and suspends). :meth:`crash` kills it at its next
    store call. The owner parks only once its wait's job is saved ``waiting``, so every
    program replays the same store calls.
    """

    def __init__(self, build: BuildEngine, clock: FakeClock, handle: Any, run_id: str) -> None:
        self.run_id = run_id
        self._opened = threading.Event()
        self.faulty = FaultyStore(_WaitingWatch(handle, self._opened))
        self._cond = threading.Condition()
        self._parked = False
        self._go = 0
        self.done = False
        self.error: BaseException | None = None
        engine = build(self.faulty, clock, sleeper=self._sleep)
        self._thread = threading.Thread(target=self._run, args=(engine,),
                                        name=f"owner-{run_id}", daemon=True)
        self._thread.start()
        self._settle()

    def _run(self, engine: Any) -> None:
        try:
            engine.run(machine_workflow(), run_id=self.run_id)
        except BaseException as exc:  # kept for the machine; a crash ends the owner
            self.error = exc
        finally:
            with self._cond:
                self.done = True
                self._cond.notify_all()

    def _sleep(self, _seconds: float) -> None:
        if not self._opened.wait(PARK_TIMEOUT_SECONDS):
            raise AssertionError(f"owner of {self.run_id}: the wait's job never got saved "
                                 "waiting while its sibling slept")
        with self._cond:
            self._parked = True
            self._cond.notify_all()
            if not self._cond.wait_for(lambda: self._go > 0, PARK_TIMEOUT_SECONDS):
                raise AssertionError(f"owner of {self.run_id} parked and was never released")
            self._go -= 1
            self._parked = False

    def _settle(self) -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: self._parked or self.done,
                                       PARK_TIMEOUT_SECONDS):
                raise AssertionError(f"owner of {self.run_id} neither parked nor finished")

    @property
    def parked(self) -> bool:
        with self._cond:
            return self._parked and not self.done

    def save(self) -> None:
        """Let the sibling's current sleep return: the owner saves, then parks or ends."""
        with self._cond:
            self._go += 1
            self._parked = False
            self._cond.notify_all()
        self._settle()

    def crash(self) -> None:
        """Kill the owner at its next store call (its handle is poisoned from then on)."""
        if not self.faulty.crashed and not self.faulty.pending():
            self.faulty.crash(None, point="before")
        self.save()

    def stop(self) -> None:
        while not self.done:
            self.crash()
        self._thread.join(PARK_TIMEOUT_SECONDS)


@dataclass
class WaitFacts:
    """What the machine saw of one run's wait."""

    wait_id: str | None = None
    first_outcome: bytes | None = None
    told_won: list[str] = field(default_factory=list)
    # sender name -> "won", "refused" or "crashed" (a killed caller learns nothing)
    senders: dict[str, str] = field(default_factory=dict)
    applied_max: int = 0


@dataclass
class _Snapshot:
    """What the invariants read after one step, read once for all of them."""

    outcomes: dict[str, bytes | None]
    newest: dict[str, Any]


def wait_machine(open_handle: Callable[[], Any], build: BuildEngine, *,
                 lease_ttl_ms: int = 3_000) -> type[RuleBasedStateMachine]:
    """A machine class over two handles from ``open_handle`` (the test's prefix), opened
    once and shared by every program; engines come from ``build(store, clock, **kwargs)``.

    The first handle serves the machine's own reads and most operations; parked owners,
    crashing actors (each behind its own ``FaultyStore``, the "process" that dies) and
    ambiguous signals use the second, so every outcome crosses handles. Close them with
    ``WaitMachine.close_handles()``. The short default lease keeps a takeover of a parked
    or crashed owner's claim to a few polls (each a list and a get).
    """
    opened: list[Any] = []

    def handles() -> tuple[Any, Any]:
        if not opened:
            opened.extend([open_handle(), open_handle()])
        return opened[0], opened[1]

    class WaitMachine(RuleBasedStateMachine):
        runs = Bundle("runs")

        def __init__(self) -> None:
            super().__init__()
            self.clock = FakeClock()
            self.store, self.other = handles()
            for key in self.store.list(""):  # programs share the prefix: start empty
                self.store.delete(key)
            self.facts: dict[str, WaitFacts] = {}
            self.owners: dict[str, ParkedOwner] = {}
            self._snapshot: _Snapshot | None = None
            self._scanned: set[str] = set()

        @staticmethod
        def close_handles() -> None:
            for handle in opened:
                close_store(handle)
            opened.clear()

        def teardown(self) -> None:
            for owner in self.owners.values():
                owner.stop()

        def check_invariants(self, settings: Any, output: Any, runtimes: Any) -> None:
            self._snapshot = None  # a step happened: read the store again, once
            super().check_invariants(settings, output, runtimes)

        # -- helpers ---------------------------------------------------------------------

        def _engine(self, store: Any | None = None, **kwargs: Any) -> Any:
            kwargs.setdefault("sleeper", self.clock.advance)
            kwargs.setdefault("lease_ttl_ms", lease_ttl_ms)
            return build(self.store if store is None else store, self.clock, **kwargs)

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
                self.owners[run_id] = ParkedOwner(build, self.clock, self.other, run_id)
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
            """A resume crashes at its consume, the first revision it creates (SPEC §4.6)."""
            faulty = self._faulty()
            faulty.crash("put_if_absent", point=point, key=WRITES["revision"])
            self._crash_run(faulty, "resume", run)

        @rule(run=runs, fault=st.sampled_from(AMBIGUOUS_FAULTS))
        def ambiguous_signal(self, run: str, fault: str) -> None:
            """A signal whose outcome create answers ambiguously (SPEC §2.1 clauses 7, 8)."""
            faulty = self._faulty()
            faulty.inject("put_if_absent", fault, key=WRITES["outcome"])
            self._deliver(self._engine(faulty), run, VALID_PAYLOADS[0], answer=False)

        # -- invariants (SPEC §6.5) ------------------------------------------------------

        def _snap(self) -> _Snapshot:
            if self._snapshot is None:
                outcomes: dict[str, bytes | None] = {}
                newest: dict[str, Any] = {}
                for run_id in self.facts:
                    wait_id = self._wait_id(run_id)
                    outcomes[run_id] = (None if wait_id is None
                                        else self.store.get(keys.outcome_key(wait_id)))
                    decoded = newest_revision(self.store, run_id).decoded
                    newest[run_id] = decoded.record if isinstance(decoded, Found) else None
                self._snapshot = _Snapshot(outcomes, newest)
            return self._snapshot

        def _outcome(self, run_id: str) -> bytes | None:
            return self._snap().outcomes.get(run_id)

        def _newest_step(self, run_id: str) -> tuple[Any, Any]:
            record = self._snap().newest.get(run_id)
            if record is None:
                return None, None
            return record, record.steps.get("approval")

        @invariant()
        def an_outcome_is_written_once_and_never_changes(self) -> None:
            for run_id, facts in self.facts.items():
                stored = self._outcome(run_id)
                if stored is None:
                    continue
                if facts.first_outcome is None:
                    facts.first_outcome = stored
                assert stored == facts.first_outcome, (
                    f"the outcome of run {run_id}'s wait changed after it was settled")

        @invariant()
        def only_the_winner_is_told_it_won(self) -> None:
            for run_id, facts in self.facts.items():
                assert len(facts.told_won) <= 1, (
                    f"{len(facts.told_won)} deliveries to run {run_id}'s wait were told "
                    "they won; at most one may be")
                stored = self._outcome(run_id)
                accepted = _accepted_sender(stored)
                if accepted is None:
                    continue
                if facts.told_won:
                    assert stored is not None and facts.told_won[0].encode() in stored, (
                        f"run {run_id}: the stored answer is not the one told it won")
                verdict = facts.senders.get(accepted, "unknown")
                assert verdict in ("won", "crashed"), (
                    f"run {run_id}: {accepted}'s answer is the stored outcome, but "
                    f"{accepted} was {verdict}: the winner must be told it won")

        @invariant()
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

        @invariant()
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

        @invariant()
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

    return WaitMachine
