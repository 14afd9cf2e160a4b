"""The actors and payloads of the wait-level state machine: a parked run owner on its own
thread, what the machine saw of each wait, and the workflow every run follows."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dw_testing.kit.clock import FakeClock
from dw_testing.kit.faults import FaultyStore
from dw_testing.kit.workflows import approval_workflow
from dw_testing.kit.wrappers import StoreWrapper
from reference_engine.records import keys
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
WRITES = {"revision": f"{keys.runs_root()}*/rev/*", "outcome": f"{keys.outcomes_root()}*",
          "registration": f"{keys.waits_root()}*", "claim": f"{keys.claims_prefix('*')}*"}
REREAD = (keys.waits_root(), keys.outcomes_root())
AMBIGUOUS_FAULTS = ("false-to-winner", "drop-response-after-commit", "conflict-409-once")
WAIT_TIMEOUT = 600
MAX_RUNS = 4
PARK_TIMEOUT_SECONDS = 10.0


def machine_workflow() -> Workflow:
    """A wait beside a sibling job of two sleeps (each ends with an owner save)."""
    return approval_workflow(name="machine", timeout=WAIT_TIMEOUT, siblings=[
        {"name": "soak", "sleep": 1}, {"name": "settle", "sleep": 1}])


def _job_waiting(data: bytes, job: str) -> bool:
    try:
        record = json.loads(data)
    except ValueError:
        return False
    jobs = record.get("jobs") if isinstance(record, dict) else None
    return isinstance(jobs, dict) and jobs.get(job) == "waiting"


def accepted_sender(stored: bytes | None) -> str | None:
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


class _WaitingWatch(StoreWrapper):
    """Passes calls through; sets ``opened`` once a revision shows the wait's job waiting."""

    def __init__(self, inner: Any, opened: threading.Event) -> None:
        super().__init__(inner)
        self.opened = opened

    def _put_if_absent(self, key: str, data: bytes) -> bool:
        created = super()._put_if_absent(key, data)
        if keys.parse_revision_key(key) is not None and _job_waiting(data, "approve"):
            self.opened.set()
        return created


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
class Snapshot:
    """What the invariants read after one step, read once for all of them."""

    outcomes: dict[str, bytes | None]
    newest: dict[str, Any]
