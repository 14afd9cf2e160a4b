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
from types import TracebackType
from typing import Any, TypeVar

from dw_testing.kit.gate_points import (
    DEFAULT_TIMEOUT,
    POINTS,
    CallEvent,
    Gate,
    GateMisuse,
    GateTimeout,
    Hook,
    Spawned,
    check_op,
)
from dw_testing.kit.wrappers import StoreWrapper

__all__ = ["CallEvent", "Gate", "GateMisuse", "GateTimeout", "GatedStore", "Hook", "Spawned"]

T = TypeVar("T")


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
