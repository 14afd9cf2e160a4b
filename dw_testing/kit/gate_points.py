"""The pieces of a :class:`~dw_testing.kit.gates.GatedStore` script: a gate that parks
calls, a hook that runs an action inside a call, and a spawned call on its own thread."""

from __future__ import annotations

import threading
from collections.abc import Callable
from fnmatch import fnmatchcase
from typing import Generic, NamedTuple, Protocol, TypeVar

STORE_OPS = ("put", "put_if_absent", "get", "delete", "list")
POINTS = ("before", "after_commit")
DEFAULT_TIMEOUT = 10.0

T = TypeVar("T")


class GateOwner(Protocol):
    """What a gate needs of the store that made it."""

    _cond: threading.Condition
    calls: list[CallEvent]

    def _thread_summary(self) -> str: ...


class GateTimeout(AssertionError):
    """A gate or spawned call waited longer than its timeout: the script deadlocked.

    An ``AssertionError`` so pytest shows it as a test failure with its message.
    """


class GateMisuse(ValueError):
    """The test used a gate in a way that cannot mean what it intends."""


class CallEvent(NamedTuple):
    """One entry of :attr:`GatedStore.calls`.

    ``point`` is ``"before"``, ``"after_commit"`` or ``"raised"`` (the inner store raised).
    """

    op: str
    key: str
    point: str


def check_op(op: str, inner: object, *, who: str) -> None:
    """Refuse an operation name that the wrapped store cannot receive."""
    if op not in STORE_OPS:
        raise GateMisuse(f"{who}: unknown operation {op!r}; use one of {', '.join(STORE_OPS)}")
    if op == "put_if_absent" and not callable(getattr(inner, "put_if_absent", None)):
        raise GateMisuse(
            f"{who}: the wrapped store has no put_if_absent, so no call can ever reach "
            "this; script put instead, or wrap a store that offers the create"
        )


class CallMatcher:
    """What a gate or a hook watches for: calls of ``op`` at ``point`` whose key matches
    ``key`` (a glob; ``None``: any key), counted from 1 so that ``nth`` picks one."""

    def __init__(self, op: str, point: str, key: str | None, nth: int) -> None:
        self.op = op
        self.point = point
        self.key = key
        self.nth = nth
        self.matched = 0  # matching calls seen

    def _matches(self, op: str, point: str, key: str) -> bool:
        return (op == self.op and point == self.point
                and (self.key is None or fnmatchcase(key, self.key)))

    def _describe(self, kind: str, extra: str = "") -> str:
        key = "any key" if self.key is None else f"key={self.key!r}"
        nth = "" if self.nth == 1 else f", nth={self.nth}"
        return f"<{kind} {self.op} {self.point} {key}{nth}{extra}>"


class Gate(CallMatcher):
    """One pause point. Made by :meth:`GatedStore.pause`; do not build it directly.

    The gate counts the calls that match ``op``, ``point`` and ``key``. Counting from
    1, calls ``nth``, ``nth + 1``, ... park, ``times`` of them in all (``None``: every one
    from ``nth`` on). A parked call waits until :meth:`release` or :meth:`open`.
    """

    def __init__(self, owner: GateOwner, op: str, point: str, key: str | None, nth: int,
                 times: int | None, timeout: float) -> None:
        super().__init__(op, point, key, nth)
        self._owner = owner
        self.times = times
        self.timeout = timeout
        self.arrivals: list[CallEvent] = []   # calls that parked here, in arrival order
        self._parked: list[threading.Event] = []
        self._released = 0
        self._opened = False
        self.failures: list[str] = []   # parked calls nobody released; self-parking
        self._scripter = threading.get_ident()  # the thread that made the gate

    def __repr__(self) -> str:
        return self._describe("gate", "" if self.times == 1 else f", times={self.times}")

    @property
    def reached(self) -> bool:
        """Whether at least one call has parked here (it may since have been released)."""
        with self._owner._cond:
            return bool(self.arrivals)

    @property
    def parked(self) -> int:
        """How many calls are parked here right now."""
        with self._owner._cond:
            return len(self._parked)

    def wait_reached(self, count: int = 1, *, timeout: float | None = None) -> CallEvent:
        """Block until ``count`` calls have parked here in all; return the ``count``-th.

        Raises :class:`GateTimeout` after ``timeout`` (default: the gate's), saying which
        call never arrived and what the store did see instead.
        """
        if count < 1:
            raise GateMisuse(f"{self!r}: wait_reached(count={count}); count from 1")
        limit = self.timeout if timeout is None else timeout
        cond = self._owner._cond
        with cond:
            if not cond.wait_for(lambda: len(self.arrivals) >= count, timeout=limit):
                raise GateTimeout(self._never_arrived(count, limit))
            return self.arrivals[count - 1]

    def release(self, count: int | None = None) -> None:
        """Let parked calls continue: all of them, or the ``count`` that arrived first.

        Releasing when nothing is parked is a script error (GateMisuse): call
        :meth:`wait_reached` first, or :meth:`open` to let every call through.
        """
        if count is not None and count < 1:
            raise GateMisuse(f"{self!r}: release(count={count}) must release at least 1")
        with self._owner._cond:
            waiting = len(self._parked)
            if waiting == 0 or (count is not None and count > waiting):
                raise GateMisuse(self._nothing_to_release(count))
            chosen = waiting if count is None else count
            for wake in self._parked[:chosen]:
                wake.set()
            del self._parked[:chosen]
            self._released += chosen

    def open(self) -> None:
        """Release every parked call and let all later matching calls through unparked."""
        with self._owner._cond:
            self._opened = True
            for event in self._parked:
                event.set()
            self._released += len(self._parked)
            self._parked.clear()

    # -- called by GatedStore with the condition held -----------------------------------

    def _selects_next(self) -> bool:
        """Count one matching call; whether it must park."""
        self.matched += 1
        if self._opened or self.matched < self.nth:
            return False
        return self.times is None or self.matched < self.nth + self.times

    def _park(self, event: CallEvent) -> threading.Event:
        wake = threading.Event()
        self.arrivals.append(event)
        self._parked.append(wake)
        return wake

    def _give_up(self, wake: threading.Event, event: CallEvent) -> str:
        if wake in self._parked:
            self._parked.remove(wake)
        message = (
            f"{event.op}({event.key!r}) parked at {self!r} for {self.timeout} s and nobody "
            "released it; the test never called gate.release() (or it waits on something "
            "this call blocks: a deadlock in the script)"
        )
        self.failures.append(message)
        return message

    def _self_parked(self, event: CallEvent) -> str:
        return (
            f"{event.op}({event.key!r}) would park at {self!r} on the thread that made the "
            "gate, which is the thread that must release it: a certain deadlock. Run the "
            "gated call with gated.spawn(...), or narrow the gate with key=, nth= or times="
        )

    def _never_arrived(self, count: int, limit: float) -> str:
        which = "a matching call" if count == 1 else f"{count} matching calls"
        seen = [c for c in self._owner.calls if c.op == self.op and c.point == self.point]
        if seen:
            shown = ", ".join(repr(c.key) for c in seen[-5:])
            hint = f"calls to {self.op} at {self.point} did arrive, with keys {shown}"
        else:
            hint = f"no call to {self.op} reached {self.point} at all"
        threads = self._owner._thread_summary()
        if self._opened:
            threads += " The gate was opened, so matching calls pass without parking."
        return (
            f"{self!r} was not reached within {limit} s: waited for {which} "
            f"(counting {self.matched} matching so far, parking from #{self.nth}); {hint}."
            f"{threads} Check the op, point and key pattern, and that the operation you "
            "spawned really makes this call."
        )

    def _nothing_to_release(self, count: int | None) -> str:
        if self._released and not self._parked:
            return (f"{self!r} was already released and no call is parked there now; "
                    "release each parked call once")
        if count is not None and self._parked:
            return (f"{self!r}: release(count={count}) but only {len(self._parked)} "
                    "call(s) are parked; wait_reached(count) first")
        return (f"release() on {self!r} but no call is parked there; call "
                "gate.wait_reached() first, or gate.open() to let calls through unparked")


class Hook(CallMatcher):
    """Runs an action inline when a matching call reaches a point. Made by :meth:`GatedStore.at`.

    The action runs once, on the thread of the ``nth`` matching call, while that call
    waits; then the call goes on. No second thread is needed: "cancel runs right after the
    signal's create commits" is one hook. What the action returns or raises is kept for
    :meth:`result`; it never leaks into the call that triggered it.
    """

    def __init__(self, op: str, point: str, key: str | None, nth: int,
                 action: Callable[[], object]) -> None:
        super().__init__(op, point, key, nth)
        self.action = action
        self.fired_by: CallEvent | None = None
        self._value: object = None
        self._error: BaseException | None = None
        self._observed = False

    def __repr__(self) -> str:
        return self._describe("hook")

    @property
    def fired(self) -> bool:
        return self.fired_by is not None

    def result(self) -> object:
        """What the action returned; re-raises what it raised. Refused if it never ran."""
        if self.fired_by is None:
            raise GateMisuse(f"{self!r} never fired ({self.matched} matching call(s) seen); "
                             "check the op, point and key pattern")
        self._observed = True
        if self._error is not None:
            raise self._error
        return self._value

    def _selects_next(self) -> bool:
        if self.fired_by is not None:
            return False
        self.matched += 1
        return self.matched == self.nth

    def _run(self) -> None:
        try:
            self._value = self.action()
        except BaseException as exc:  # kept for result(), even SimulatedCrash
            self._error = exc


class Spawned(Generic[T]):
    """A callable running in a daemon thread; :meth:`result` returns or re-raises its outcome."""

    def __init__(self, fn: Callable[[], T], name: str, timeout: float,
                 describe_parked: Callable[[], str] | None = None) -> None:
        self.name = name
        self.timeout = timeout
        self._value: T | None = None
        self._error: BaseException | None = None
        self._done = threading.Event()
        self._describe_parked = describe_parked
        self._observed = False  # result() or exception() has handed out the outcome
        self.thread = threading.Thread(target=self._run, args=(fn,), name=name, daemon=True)

    def _run(self, fn: Callable[[], T]) -> None:
        try:
            self._value = fn()
        except BaseException as exc:  # handed to result(), even SimulatedCrash
            self._error = exc
        finally:
            self._done.set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread to end; whether it did within ``timeout``."""
        return self._done.wait(self.timeout if timeout is None else timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """The exception the callable raised, or ``None``; waits like :meth:`result`."""
        self._wait(timeout)
        self._observed = True
        return self._error

    def result(self, timeout: float | None = None) -> T:
        """The callable's return value; re-raises what it raised.

        Raises :class:`GateTimeout` if it has not finished after ``timeout`` (default:
        the store's), naming the gates where calls are still parked.
        """
        self._wait(timeout)
        self._observed = True
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # set whenever no error was raised

    def _wait(self, timeout: float | None) -> None:
        limit = self.timeout if timeout is None else timeout
        if not self._done.wait(limit):
            raise GateTimeout(
                f"spawned call {self.name!r} did not finish within {limit} s; "
                f"{self._parked_hint()}"
            )

    def _parked_hint(self) -> str:
        parked = self._describe_parked() if self._describe_parked else ""
        return parked or "it may be blocked on something the test thread holds"
