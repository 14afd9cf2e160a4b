"""``GatedStore``: park store calls at named points, so a test scripts an interleaving.

A test that needs "signal commits its outcome, *then* the timeout runs, *then* the signal
returns" writes exactly that, with no ``sleep``::

    gated = GatedStore(store)
    gate = gated.pause("put_if_absent", point="after_commit", key="wait-outcomes/*")
    signal = gated.spawn(lambda: engine.signal(wait_id, "{}"), name="signal")
    gate.wait_reached()          # the signal's create committed and is parked
    engine.open_waits()          # the competing operation, on this thread
    gate.release()               # the signal now sees its result
    delivery = signal.result()   # re-raises whatever the signal raised
    gated.assert_all_gates_used()

When the competing operation can simply run *inside* the gated call's pause, a hook
does it on one thread, with no release to forget::

    gated.at("put_if_absent", point="after_commit", key="wait-outcomes/*",
             do=lambda: other_engine.cancel(run_id))
    engine.signal(wait_id, "{}")     # the cancel runs between the commit and the return

Points: ``"before"`` (the call has not reached the inner store) and ``"after_commit"``
(the inner store returned; the caller has not seen the result). Every operation has both,
``list`` included. Key patterns are :func:`fnmatch.fnmatchcase` globs on the key as the
caller wrote it (for ``list``, on the prefix); ``*`` also matches ``/``.

A deadlock fails loudly: a parked call that nobody releases raises :class:`GateTimeout`
in its own thread after the gate's timeout, and :meth:`Gate.wait_reached` and
:meth:`Spawned.result` raise :class:`GateTimeout` naming the gate or call that never came.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fnmatch import fnmatchcase
from types import TracebackType
from typing import Any, Generic, NamedTuple, TypeVar

from dw_testing.kit.wrappers import StoreWrapper

__all__ = ["CallEvent", "Gate", "GateMisuse", "GateTimeout", "GatedStore", "Hook", "Spawned"]

STORE_OPS = ("put", "put_if_absent", "get", "delete", "list")
POINTS = ("before", "after_commit")
DEFAULT_TIMEOUT = 10.0

T = TypeVar("T")


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


class Gate:
    """One pause point. Made by :meth:`GatedStore.pause`; do not build it directly.

    The gate counts the calls that match ``op``, ``point`` and ``key``. Counting from
    1, calls ``nth``, ``nth + 1``, ... park, ``times`` of them in all (``None``: every one
    from ``nth`` on). A parked call waits until :meth:`release` or :meth:`open`.
    """

    def __init__(self, owner: GatedStore, op: str, point: str, key: str | None, nth: int,
                 times: int | None, timeout: float) -> None:
        self._owner = owner
        self.op = op
        self.point = point
        self.key = key
        self.nth = nth
        self.times = times
        self.timeout = timeout
        self.matched = 0            # matching calls seen, parked or not
        self.arrivals: list[CallEvent] = []   # calls that parked here, in arrival order
        self._parked: list[threading.Event] = []
        self._released = 0
        self._opened = False
        self.failures: list[str] = []   # parked calls nobody released; self-parking
        self._scripter = threading.get_ident()  # the thread that made the gate

    def __repr__(self) -> str:
        key = "any key" if self.key is None else f"key={self.key!r}"
        extra = "" if self.nth == 1 else f", nth={self.nth}"
        extra += "" if self.times == 1 else f", times={self.times}"
        return f"<gate {self.op} {self.point} {key}{extra}>"

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

    def _matches(self, op: str, point: str, key: str) -> bool:
        return (op == self.op and point == self.point
                and (self.key is None or fnmatchcase(key, self.key)))

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


class Hook:
    """Runs an action inline when a matching call reaches a point. Made by :meth:`GatedStore.at`.

    The action runs once, on the thread of the ``nth`` matching call, while that call
    waits; then the call goes on. No second thread is needed: "cancel runs right after the
    signal's create commits" is one hook. What the action returns or raises is kept for
    :meth:`result`; it never leaks into the call that triggered it.
    """

    def __init__(self, op: str, point: str, key: str | None, nth: int,
                 action: Callable[[], object]) -> None:
        self.op = op
        self.point = point
        self.key = key
        self.nth = nth
        self.action = action
        self.matched = 0
        self.fired_by: CallEvent | None = None
        self._value: object = None
        self._error: BaseException | None = None
        self._observed = False

    def __repr__(self) -> str:
        key = "any key" if self.key is None else f"key={self.key!r}"
        extra = "" if self.nth == 1 else f", nth={self.nth}"
        return f"<hook {self.op} {self.point} {key}{extra}>"

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

    def _matches(self, op: str, point: str, key: str) -> bool:
        return (op == self.op and point == self.point
                and (self.key is None or fnmatchcase(key, self.key)))

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


class GatedStore(StoreWrapper):
    """Wraps any store and parks calls at scripted gates (see the module docstring).

    ``put_if_absent`` exists only when ``inner`` has it, so :func:`supports_create`
    answers as it would for ``inner``. ``timeout`` bounds every wait, so a wrong
    script fails in seconds rather than hanging the run.
    """

    def __init__(self, inner: Any, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        super().__init__(inner)
        self.timeout = timeout
        self.calls: list[CallEvent] = []
        self.gates: list[Gate] = []
        self.hooks: list[Hook] = []
        self._stops: list[Gate | Hook] = []   # gates and hooks, in the order they were made
        self.spawned: list[Spawned[Any]] = []
        self._cond = threading.Condition()

    # -- scripting --------------------------------------------------------------------

    def pause(self, op: str, *, point: str = "before", key: str | None = None, nth: int = 1,
              times: int | None = 1, timeout: float | None = None) -> Gate:
        """Add a gate: park the ``nth`` call to ``op`` whose key matches ``key`` at ``point``.

        ``times`` parks that many matching calls from the ``nth`` on (``None``: all of
        them). ``timeout`` overrides the store's for this gate.
        """
        check_op(op, self.inner, who="GatedStore.pause")
        if point not in POINTS:
            raise GateMisuse(
                f"GatedStore.pause: unknown point {point!r}; use 'before' (the call has not "
                "reached the store) or 'after_commit' (it returned; the caller has not seen it)"
            )
        if nth < 1:
            raise GateMisuse(f"GatedStore.pause: nth={nth}; calls are counted from 1")
        if times is not None and times < 1:
            raise GateMisuse(f"GatedStore.pause: times={times}; use at least 1, or None")
        gate = Gate(self, op, point, key, nth, times,
                    self.timeout if timeout is None else timeout)
        with self._cond:
            self.gates.append(gate)
            self._stops.append(gate)
        return gate

    def at(self, op: str, *, point: str = "before", key: str | None = None, nth: int = 1,
           do: Callable[[], object]) -> Hook:
        """Add a hook: run ``do()`` inline when the ``nth`` matching call reaches ``point``.

        Use it to slip a competing operation between two steps of another without threads,
        e.g. ``gated.at("put_if_absent", point="after_commit", key="wait-outcomes/*",
        do=lambda: other_engine.cancel(run_id))``. Calls that ``do`` makes through this
        store pass the other gates and hooks as usual.
        """
        check_op(op, self.inner, who="GatedStore.at")
        if point not in POINTS:
            raise GateMisuse(f"GatedStore.at: unknown point {point!r}; use 'before' or "
                             "'after_commit'")
        if nth < 1:
            raise GateMisuse(f"GatedStore.at: nth={nth}; calls are counted from 1")
        if not callable(do):
            raise GateMisuse("GatedStore.at: do= must be a zero-argument callable")
        hook = Hook(op, point, key, nth, do)
        with self._cond:
            self.hooks.append(hook)
            self._stops.append(hook)
        return hook

    def spawn(self, fn: Callable[[], T], *, name: str | None = None) -> Spawned[T]:
        """Run ``fn`` in a daemon thread now; keep the handle to read its result."""
        spawned = Spawned(fn, name or f"spawned-{len(self.spawned) + 1}", self.timeout,
                          self._describe_parked)
        with self._cond:
            self.spawned.append(spawned)
        spawned.thread.start()
        return spawned

    def open_all(self) -> None:
        """Open every gate, so nothing parks any more (teardown, or after a failure)."""
        for gate in list(self.gates):
            gate.open()

    def assert_all_gates_used(self) -> None:
        """Raise AssertionError naming every gate never reached, still parked, or timed out,
        and every hook that never fired or whose action raised unread."""
        problems: list[str] = []
        with self._cond:
            for gate in self.gates:
                if not gate.arrivals:
                    problems.append(f"{gate!r} was never reached "
                                    f"({gate.matched} matching call(s) seen)")
                elif gate._parked:
                    problems.append(f"{gate!r} still holds {len(gate._parked)} parked "
                                    "call(s) nobody released")
                problems.extend(gate.failures)
            for hook in self.hooks:
                if hook.fired_by is None:
                    problems.append(f"{hook!r} never fired ({hook.matched} matching call(s) "
                                    "seen)")
                elif hook._error is not None and not hook._observed:
                    problems.append(f"{hook!r} action raised {type(hook._error).__name__}: "
                                    f"{hook._error} (read it with hook.result())")
        if problems:
            raise AssertionError("GatedStore script did not run as written:\n  "
                                 + "\n  ".join(problems))

    def __enter__(self) -> GatedStore:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        """Open every gate and join spawned threads; if the body passed, check the script.

        The check is :meth:`assert_all_gates_used`, plus: every spawned call finished, and
        none raised without the test reading it through ``result()`` or ``exception()``.
        """
        self.open_all()
        for spawned in list(self.spawned):
            spawned.join()
        if exc_type is not None:
            return
        self.assert_all_gates_used()
        loose = []
        for spawned in self.spawned:
            if not spawned.done:
                loose.append(f"spawned call {spawned.name!r} is still running")
            elif spawned._error is not None and not spawned._observed:
                error = spawned._error
                loose.append(f"spawned call {spawned.name!r} raised {type(error).__name__}: "
                             f"{error} and the test never called result()")
        if loose:
            raise AssertionError("GatedStore: " + "; ".join(loose))

    # -- machinery --------------------------------------------------------------------

    def _call(self, op: str, key: str, run: Callable[[], T]) -> T:
        with self._gated(op, key):
            result = run()
        return result

    @contextmanager
    def _gated(self, op: str, key: str) -> Iterator[None]:
        self._checkpoint(op, key, "before")
        try:
            yield
        except BaseException:
            with self._cond:
                self.calls.append(CallEvent(op, str(key), "raised"))
            raise
        self._checkpoint(op, key, "after_commit")

    def _checkpoint(self, op: str, key: str, point: str) -> None:
        event = CallEvent(op, str(key), point)
        with self._cond:
            self.calls.append(event)
            stops = list(self._stops)
        # Gates and hooks are passed one after another, in the order the test made them.
        for stop in stops:
            if isinstance(stop, Hook):
                with self._cond:
                    due = stop._matches(op, point, event.key) and stop._selects_next()
                    if due:
                        stop.fired_by = event
                if due:
                    stop._run()
                continue
            self._pass_gate(stop, event)

    def _pass_gate(self, gate: Gate, event: CallEvent) -> None:
        with self._cond:
            if not (gate._matches(event.op, event.point, event.key) and gate._selects_next()):
                return
            if threading.get_ident() == gate._scripter:
                message = gate._self_parked(event)
                gate.failures.append(message)  # reported even if the caller swallows it
                raise GateMisuse(message)
            wake = gate._park(event)
            self._cond.notify_all()
        if wake.wait(gate.timeout):
            return
        with self._cond:
            if wake.is_set():  # released just as the wait ran out
                return
            message = gate._give_up(wake, event)
        raise GateTimeout(message)

    def _describe_parked(self) -> str:
        with self._cond:
            held = [f"{len(g._parked)} call(s) parked at {g!r}" for g in self.gates if g._parked]
        return ("; ".join(held) + " (release them)") if held else ""

    def _thread_summary(self) -> str:
        finished = [s for s in self.spawned if s.done]
        if not finished:
            return ""
        parts = []
        for spawned in finished:
            error = spawned._error
            outcome = ("returned" if error is None
                       else f"raised {type(error).__name__}: {error}")
            parts.append(f"{spawned.name!r} already {outcome}")
        return " Spawned: " + "; ".join(parts) + "."
