"""``FaultyStore``: queued store faults and a crash that kills the handle like a process.

Faults wait in a first-in-first-out queue per operation. A call takes the first queued
fault of its operation whose key pattern matches (an :func:`fnmatch.fnmatchcase` glob on
the key as the caller wrote it; for ``list``, on the prefix)::

    faulty = FaultyStore(store)
    faulty.inject("put_if_absent", "drop-response-after-commit", key="wait-outcomes/*")
    ...                          # the create lands, the caller sees TransientStoreError
    faulty.assert_all_hit()      # teardown: a fault never hit means the test proved nothing

The faults (docs/reference/kit.md):

``raise-before``
    raise ``StoreError`` without calling the inner store.
``drop-response-after-commit``
    call the inner store, then raise ``TransientStoreError``: the ambiguous outcome.
``transient-once``
    raise ``TransientStoreError`` without calling the inner store.
``conflict-409-once``
    ``put_if_absent`` only: raise ``TransientStoreError`` for a competing create that was
    in flight (S3's 409), without calling the inner store.
``false-to-winner``
    ``put_if_absent`` only: the first matching create that *wins* returns ``False``. It
    stays queued past creates that lose, so it always lands on a real winner. This is what
    a create retried after a lost response can answer (contract C-LOST-1); a store that
    answers it with no fault breaks C-CREATE-3, and the store-level suite fails it. A
    store that already answers ``False`` to a winner does the fault's work itself: a
    ``False`` whose own bytes are then stored under the key counts as the hit
    (``hit_by_store``), so the test is judged on what the code under test did, not on a
    fault the store left nothing for.

A crash (:meth:`FaultyStore.crash`) raises :class:`SimulatedCrash` and poisons the
handle: every later call raises it too, so no ``finally`` or ``except`` in the code under
test can write after the crash, just as in a killed process. Explore every crash point
of an operation by counting its calls once, then crashing after each in turn::

    total = count_calls_of(operation)          # run once on a FaultyStore; .call_count
    for n in range(1, total + 1):
        faulty = FaultyStore(shared_store_handle())
        faulty.crash_after_call(n)
        with pytest.raises(SimulatedCrash):
            operation(faulty)
        check_recovery(shared_store_handle())  # a fresh handle: a new process
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, NamedTuple, TypeVar

from dw_testing.kit.wrappers import StoreWrapper
from reference_engine.errors import StoreError, TransientStoreError

__all__ = ["CrashPlan", "FaultMisuse", "FaultyStore", "InjectedFault", "SimulatedCrash",
           "StoreCall"]

STORE_OPS = ("put", "put_if_absent", "get", "delete", "list")
FAULTS = ("raise-before", "drop-response-after-commit", "transient-once",
          "conflict-409-once", "false-to-winner")
CREATE_ONLY_FAULTS = ("conflict-409-once", "false-to-winner")
CRASH_POINTS = ("before", "after_commit")

T = TypeVar("T")


class SimulatedCrash(BaseException):
    """The process died here. A ``BaseException``, like ``KeyboardInterrupt``.

    Engine code that catches ``Exception`` to record a failure must not swallow a crash
    and carry on writing, since a killed process writes nothing more. Catch it by name in
    tests: ``pytest.raises(SimulatedCrash)``. (Hypothesis does not shrink through a
    ``BaseException``; catch it inside the test body.)
    """


class FaultMisuse(ValueError):
    """The test asked for a fault or crash that cannot mean what it intends."""


class StoreCall(NamedTuple):
    """One entry of :attr:`FaultyStore.calls`: the operation and the key (list: prefix)."""

    op: str
    key: str


@dataclass
class InjectedFault:
    """A queued fault; ``hit`` turns ``True`` when a call takes it (``hit_key``: its key).

    ``hit_by_store``: a ``false-to-winner`` the store itself played, answering ``False`` to
    a create whose bytes it stored.
    """

    op: str
    fault: str
    key: str | None = None
    hit: bool = False
    hit_key: str | None = None
    hit_by_store: bool = False
    _claimed: bool = False  # taken by a call in flight

    def matches(self, op: str, key: str) -> bool:
        return (op == self.op and not self.hit and not self._claimed
                and (self.key is None or fnmatchcase(key, self.key)))

    def __str__(self) -> str:
        where = "any key" if self.key is None else f"key={self.key!r}"
        return f"{self.fault} on {self.op} ({where})"


@dataclass
class CrashPlan:
    """An armed crash: the matching call number ``after_calls + 1`` crashes at ``point``."""

    op: str | None
    after_calls: int
    point: str
    key: str | None
    matched: int = 0
    fired_at: StoreCall | None = None

    def matches(self, op: str, key: str) -> bool:
        return ((self.op is None or op == self.op)
                and (self.key is None or fnmatchcase(key, self.key)))

    def __str__(self) -> str:
        op = "any call" if self.op is None else self.op
        where = "" if self.key is None else f" key={self.key!r}"
        return f"crash at {self.point} of {op}{where} #{self.after_calls + 1}"


class FaultyStore(StoreWrapper):
    """Wraps any store; injects queued faults and crashes (see the module docstring).

    ``put_if_absent`` exists only when ``inner`` has it. The wrapper is thread-safe.
    ``close()`` always reaches ``inner``, even after a crash: a killed process's
    connections close too, and the test harness must be able to clean up.
    """

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.calls: list[StoreCall] = []
        self.faults: list[InjectedFault] = []
        self.crash_plan: CrashPlan | None = None
        self._crashed_at: StoreCall | None = None
        self._lock = threading.Lock()

    # -- scripting --------------------------------------------------------------------

    def inject(self, op: str, fault: str, *, key: str | None = None) -> InjectedFault:
        """Queue ``fault`` for the next call to ``op`` whose key matches ``key`` (a glob)."""
        self._check_op(op, who="FaultyStore.inject")
        if fault not in FAULTS:
            raise FaultMisuse(f"FaultyStore.inject: unknown fault {fault!r}; use one of "
                              f"{', '.join(FAULTS)}")
        if fault in CREATE_ONLY_FAULTS and op != "put_if_absent":
            raise FaultMisuse(f"FaultyStore.inject: {fault} only makes sense on "
                              f"put_if_absent, not {op}")
        injected = InjectedFault(op, fault, key)
        with self._lock:
            self.faults.append(injected)
        return injected

    def crash(self, op: str | None = None, *, after_calls: int | None = None,
              point: str = "before", key: str | None = None) -> CrashPlan:
        """Arm one crash: let ``after_calls`` matching calls pass, crash on the next one.

        ``op=None`` matches every operation. ``point="before"``: the crashing call never
        reaches the inner store. ``point="after_commit"``: it reaches it (and commits, if
        it succeeds), then the caller gets :class:`SimulatedCrash` instead of the result.
        """
        if op is not None:
            self._check_op(op, who="FaultyStore.crash")
        if point not in CRASH_POINTS:
            raise FaultMisuse(f"FaultyStore.crash: unknown point {point!r}; use 'before' or "
                              "'after_commit'")
        count = 0 if after_calls is None else after_calls
        if count < 0:
            raise FaultMisuse(f"FaultyStore.crash: after_calls={after_calls} must be >= 0")
        with self._lock:
            if self._crashed_at is not None:
                raise FaultMisuse("FaultyStore.crash: this handle already crashed; wrap a new "
                                  "handle in a new FaultyStore to crash again")
            if self.crash_plan is not None and self.crash_plan.fired_at is None:
                raise FaultMisuse(f"FaultyStore.crash: {self.crash_plan} is already armed; "
                                  "a process dies once, so arm one crash per handle")
            self.crash_plan = CrashPlan(op, count, point, key)
            return self.crash_plan

    def crash_after_call(self, n: int) -> CrashPlan:
        """Crash right after the ``n``-th store call of any kind (counting from 1) returns."""
        if n < 1:
            raise FaultMisuse(f"FaultyStore.crash_after_call({n}): calls are counted from 1")
        return self.crash(None, after_calls=n - 1, point="after_commit")

    @property
    def crashed(self) -> bool:
        """Whether the crash fired; from then on every call raises :class:`SimulatedCrash`."""
        return self._crashed_at is not None

    @property
    def crashed_at(self) -> StoreCall | None:
        """The call that crashed, or ``None``."""
        return self._crashed_at

    @property
    def call_count(self) -> int:
        """Store calls made through this wrapper, the crashing one included (calls refused
        on the poisoned handle afterwards are not counted)."""
        with self._lock:
            return len(self.calls)

    def pending(self) -> list[str]:
        """Every queued fault not yet hit, and an armed crash that has not fired."""
        with self._lock:
            left = [str(f) for f in self.faults if not f.hit]
            if self.crash_plan is not None and self.crash_plan.fired_at is None:
                left.append(str(self.crash_plan))
        return left

    def assert_all_hit(self) -> None:
        """Raise AssertionError listing every fault never hit (call it at teardown)."""
        left = self.pending()
        if left:
            raise AssertionError(
                "FaultyStore: these faults were never hit, so the test did not exercise "
                "them (check the op and key pattern):\n  " + "\n  ".join(left)
            )

    def _put_if_absent(self, key: str, data: bytes) -> bool:
        # The bytes go along, so a false-to-winner can tell the store already played it.
        created: bool = self._call("put_if_absent", key,
                                   lambda: self.inner.put_if_absent(key, data), data)
        return created

    # -- machinery --------------------------------------------------------------------

    def _check_op(self, op: str, *, who: str) -> None:
        if op not in STORE_OPS:
            raise FaultMisuse(f"{who}: unknown operation {op!r}; use one of "
                              f"{', '.join(STORE_OPS)}")
        if op == "put_if_absent" and not callable(getattr(self.inner, "put_if_absent", None)):
            raise FaultMisuse(f"{who}: the wrapped store has no put_if_absent, so no call "
                              "can ever reach this")

    def _call(self, op: str, key: str, run: Callable[[], T], data: bytes | None = None) -> T:
        call = StoreCall(op, str(key))
        with self._lock:
            if self._crashed_at is not None:
                raise SimulatedCrash(
                    f"{op}({call.key!r}) on a crashed handle: the process died at "
                    f"{self._crashed_at.op}({self._crashed_at.key!r}); a killed process "
                    "makes no more calls, open a new handle to play the next one"
                )
            self.calls.append(call)
            crash_here = self._crash_due(call)
            if crash_here and self.crash_plan is not None and self.crash_plan.point == "before":
                self._die(call)
                raise SimulatedCrash(f"simulated crash before {op}({call.key!r}) reached "
                                     "the store")
            fault = next((f for f in self.faults if f.matches(op, call.key)), None)
            if fault is not None and fault.fault != "false-to-winner":
                fault._claimed = True  # one call per fault; false-to-winner is shared
        try:
            result = self._apply(fault, call, run, data)
        except Exception as exc:
            if crash_here:
                with self._lock:
                    self._die(call)
                raise SimulatedCrash(f"simulated crash after {op}({call.key!r}) "
                                     "returned") from exc
            raise
        if crash_here:
            with self._lock:
                self._die(call)
            raise SimulatedCrash(f"simulated crash after {op}({call.key!r}) committed, "
                                 "before the caller saw the result")
        return result

    def _crash_due(self, call: StoreCall) -> bool:
        plan = self.crash_plan
        if plan is None or plan.fired_at is not None or not plan.matches(call.op, call.key):
            return False
        plan.matched += 1
        return plan.matched == plan.after_calls + 1

    def _die(self, call: StoreCall) -> None:
        """Poison the handle; the caller holds the lock."""
        if self.crash_plan is not None:
            self.crash_plan.fired_at = call
        self._crashed_at = call

    def _apply(self, fault: InjectedFault | None, call: StoreCall, run: Callable[[], T],
               data: bytes | None) -> T:
        if fault is None:
            return run()
        kind = fault.fault
        if kind == "false-to-winner":
            result = run()
            played_by_store = (not result and not fault.hit and data is not None
                               and self.inner.get(call.key) == data)
            with self._lock:
                # Concurrent creates may all hold this fault; only the first winner takes it.
                hide = bool(result) and not fault.hit
                if hide or (played_by_store and not fault.hit):
                    self._mark_hit(fault, call)
                    fault.hit_by_store = not hide
            return False if hide else result  # type: ignore[return-value]  # bool op only
        with self._lock:
            self._mark_hit(fault, call)
        where = f"{call.op}({call.key!r})"
        if kind == "raise-before":
            raise StoreError(f"injected fault: {where} failed before reaching the store",
                             op=call.op, key=call.key)
        if kind == "transient-once":
            raise TransientStoreError(f"injected fault: {where} failed transiently before "
                                      "reaching the store; a retry may succeed",
                                      op=call.op, key=call.key)
        if kind == "conflict-409-once":
            raise TransientStoreError(f"injected fault: {where} met a competing create in "
                                      "flight (409 ConditionalRequestConflict); nothing "
                                      "landed, retry", op=call.op, key=call.key)
        # drop-response-after-commit: the write happened, the answer got lost.
        run()
        raise TransientStoreError(f"injected fault: {where} reached the store but the "
                                  "response was lost; it may or may not have committed",
                                  op=call.op, key=call.key)

    @staticmethod
    def _mark_hit(fault: InjectedFault, call: StoreCall) -> None:
        fault.hit = True
        fault.hit_key = call.key
        fault._claimed = False
