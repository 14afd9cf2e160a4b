"""Drive a store whose methods are ``async def`` from synchronous callers, in any thread.

Every test, the engine and ``dw`` call a store synchronously, often from several threads at
once. :func:`adapt_if_async` leaves a synchronous store as it is and wraps an async one in an
:class:`AsyncStoreAdapter`: the handle gets an event loop of its own, run in one daemon
thread, and each call submits its coroutine to that loop and waits for the result. Calls from
several threads become concurrent tasks on that one loop, as in an async program, so a race
between coroutines is still a race.

While a call waits, a watchdog checks that the loop still runs callbacks. A loop that does not
answer within ``blocked_after`` seconds is stuck in a synchronous call inside an ``async def``:
the waiting call fails with :class:`EventLoopBlocked`, which names the method and the line,
instead of hanging the caller until some outer timeout.
"""

from __future__ import annotations

import asyncio
import builtins
import concurrent.futures
import inspect
import os
import sys
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from types import FrameType
from typing import Any, TypeVar

from reference_engine.errors import EventLoopBlocked, MixedSyncAsyncStore, StoreUnavailable

T = TypeVar("T")

STORE_METHODS = ("put", "put_if_absent", "get", "delete", "list")
# A loop that runs no callback for this long is blocked, not busy: awaiting a slow server
# leaves the loop free, so only a synchronous call inside ``async def`` can trip it.
BLOCKED_LOOP_SECONDS = 5.0
# How long a call may wait before the watchdog first checks the loop.
POLL_SECONDS = 0.25
_TASK_PREFIX = "dw-store:"


def method_kinds(store: object) -> tuple[list[str], list[str]]:
    """``(async names, sync names)`` among the contract methods ``store`` has."""
    present = [name for name in STORE_METHODS if callable(getattr(store, name, None))]
    coroutines = [name for name in present if inspect.iscoroutinefunction(getattr(store, name))]
    return coroutines, [name for name in present if name not in coroutines]


def adapt_if_async(
    store: Any, *, label: str = "", blocked_after: float = BLOCKED_LOOP_SECONDS
) -> Any:
    """``store`` itself when it is synchronous; an :class:`AsyncStoreAdapter` when it is async.

    Raises :class:`MixedSyncAsyncStore` when some contract methods are ``async def`` and
    others are not: such a store cannot be driven either way.
    """
    if inspect.iscoroutine(store):
        store.close()  # never started, so it never warns "was never awaited"
        raise StoreUnavailable(
            f"store factory {label or store.__qualname__!r} is `async def`, so calling it gave "
            "a coroutine, not a store; make the factory a plain `def` that returns the store, "
            "and open connections lazily in the store's first call (docs/how-to/async-store.md)",
            op="open",
        )
    name = label or type(store).__qualname__
    coroutines, plain = method_kinds(store)
    close = getattr(store, "close", None)
    if coroutines and plain:
        raise MixedSyncAsyncStore(
            f"store {name!r} mixes async and sync methods: {', '.join(coroutines)} "
            f"{'is' if len(coroutines) == 1 else 'are'} `async def` but {', '.join(plain)} "
            f"{'is' if len(plain) == 1 else 'are'} not; make all of put, put_if_absent, get, "
            "delete and list `async def` (an async store) or none of them (a sync store)",
            op="open",
        )
    if not coroutines:
        if callable(close) and inspect.iscoroutinefunction(close):
            raise MixedSyncAsyncStore(
                f"store {name!r} has an `async def close` but synchronous "
                f"{', '.join(plain) or 'methods'}; make close synchronous too, or make every "
                "method `async def`",
                op="open",
            )
        return store
    return AsyncStoreAdapter(store, label=name, blocked_after=blocked_after)


def adapting(factory: Callable[[], Any], *, label: str = "") -> Callable[[], Any]:
    """``factory`` whose every handle goes through :func:`adapt_if_async`."""

    def open_handle() -> Any:
        return adapt_if_async(factory(), label=label)

    return open_handle


class AsyncStoreAdapter:
    """A synchronous, thread-safe handle on an async store, with an event loop of its own.

    ``put_if_absent`` exists only when the async store has it, so ``supports_create`` sees
    the same answer through the adapter.
    """

    def __init__(
        self, store: Any, *, label: str = "", blocked_after: float = BLOCKED_LOOP_SECONDS,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        if blocked_after <= 0:
            raise ValueError(f"blocked_after must be a positive number of seconds, not "
                             f"{blocked_after!r}")
        self.store = store
        self.label = label or type(store).__qualname__
        self.blocked_after = blocked_after
        self._poll_seconds = min(poll_seconds, blocked_after)
        self._closed = False
        self._reported_blocked = False
        self._pid = os.getpid()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=_serve, args=(self._loop,), daemon=True,
                                        name=f"dw-async-store:{self.label}")
        self._thread.start()
        # A handle nobody closed still stops its loop when it is collected.
        self._stop = weakref.finalize(self, _stop_loop, self._loop, self._thread, blocked_after)
        self._stop.atexit = False  # daemon threads end with the interpreter anyway
        if callable(getattr(store, "put_if_absent", None)):
            self.put_if_absent = self._put_if_absent

    def __repr__(self) -> str:
        return f"AsyncStoreAdapter({self.label})"

    # -- the contract ---------------------------------------------------------------------

    def put(self, key: str, data: bytes) -> None:
        self._call("put", key, data)

    def _put_if_absent(self, key: str, data: bytes) -> bool:
        # Passed on untouched, so a store returning a non-bool is seen by the suite.
        created: bool = self._call("put_if_absent", key, data)
        return created

    def get(self, key: str) -> bytes | None:
        found: bytes | None = self._call("get", key)
        return found

    def delete(self, key: str) -> None:
        self._call("delete", key)

    def list(self, prefix: str) -> list[str]:
        keys: list[str] = self._call("list", prefix)
        return keys

    def close(self) -> None:
        """Await the store's own ``close`` (async or not) on its loop, then stop the loop."""
        if self._closed:
            return
        self._closed = True
        if self._reported_blocked and not self._loop_answers(POLL_SECONDS):
            # Still stuck: the store's close could not run, and waiting again for a loop
            # already reported would only slow every teardown. Its daemon thread is left.
            self._stop.detach()
            _stop_loop(self._loop, self._thread, join_seconds=0)
            return
        try:
            close = getattr(self.store, "close", None)
            if callable(close):
                self._wait("close", "", self._submit("close", _awaitable_call(close)))
        finally:
            self._stop()

    # -- coroutines racing on the one loop --------------------------------------------------

    def race(self, method: str, calls: Sequence[tuple[Any, ...]]) -> builtins.list[Any]:
        """Start ``store.method(*args)`` for every ``args`` as tasks on this loop at once.

        Every task is created before any of them runs, so each runs up to its first real
        ``await`` before any other goes on: a check-then-write create that awaits between
        its check and its write lets every racer pass the check. Results come in order.
        """
        if method not in STORE_METHODS or not callable(getattr(self.store, method, None)):
            raise ValueError(f"store {self.label} has no contract method {method!r} to race")
        bound = getattr(self.store, method)
        self._check_open(method)

        async def together() -> builtins.list[Any]:
            return builtins.list(await asyncio.gather(*(_named(method, bound(*a)) for a in calls)))

        future = asyncio.run_coroutine_threadsafe(together(), self._loop)
        return self._wait(method, "", future)

    # -- machinery --------------------------------------------------------------------------

    def _check_open(self, method: str) -> None:
        if os.getpid() != self._pid:
            # A forked child has the loop but not the thread that runs it.
            raise StoreUnavailable(
                f"async store {self.label}: {method} in a process forked after the handle "
                "was opened; its event loop runs only in the parent. Open a new handle in "
                "the child process",
                op=method,
            )
        if self._closed:
            raise StoreUnavailable(
                f"async store {self.label}: {method} called after close(); open a new handle",
                op=method,
            )

    def _call(self, method: str, key: str, *args: Any) -> Any:
        self._check_open(method)
        coroutine = getattr(self.store, method)(key, *args)
        return self._wait(method, key, self._submit(method, coroutine))

    def _submit(
        self, method: str, coroutine: Coroutine[Any, Any, T]
    ) -> concurrent.futures.Future[T]:
        named = _named(method, coroutine)
        try:
            return asyncio.run_coroutine_threadsafe(named, self._loop)
        except RuntimeError:  # another thread closed the handle since _check_open
            named.close()
            coroutine.close()
            self._closed = True
            self._check_open(method)
            raise

    def _wait(self, method: str, key: str, future: concurrent.futures.Future[T]) -> T:
        """The call's result; :class:`EventLoopBlocked` if the loop stops answering."""
        while True:
            done, _ = concurrent.futures.wait([future], timeout=self._poll_seconds)
            if done or self._loop_answers():
                if future.done():
                    return future.result()
                continue
            if future.done():
                return future.result()
            message = self._blocked_message(method)
            self._reported_blocked = True
            future.cancel()  # lands when the loop runs again; nobody waits for the answer
            raise EventLoopBlocked(message, op=method, key=key)

    def _loop_answers(self, within: float | None = None) -> bool:
        """Whether the loop runs a callback within ``within`` (``blocked_after``) seconds."""
        answered = threading.Event()
        try:
            self._loop.call_soon_threadsafe(answered.set)
        except RuntimeError:  # the loop is closed: it will never answer
            return False
        return answered.wait(self.blocked_after if within is None else within)

    def _blocked_message(self, method: str) -> str:
        task = asyncio.current_task(self._loop)
        name = task.get_name() if task is not None else ""
        inside = name.removeprefix(_TASK_PREFIX) if name.startswith(_TASK_PREFIX) else method
        where = _innermost_coroutine_line(sys._current_frames().get(self._thread.ident or -1))
        at = f" at {where}" if where else ""
        return (
            f"async store {self.label} blocked its event loop inside {inside}{at} for more "
            f"than {self.blocked_after:g} s: a synchronous call inside `async def` stops every "
            "other call on that loop. Await an async client instead, or move the blocking "
            "call off the loop with `await asyncio.to_thread(...)`"
        )


async def _named(method: str, awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` in a task named after the store method, for the watchdog."""
    task = asyncio.current_task()
    if task is not None:
        task.set_name(f"{_TASK_PREFIX}{method}")
    return await awaitable


async def _awaitable_call(function: Callable[[], Any]) -> Any:
    """Call ``function`` on the loop's thread; await its result when it is awaitable."""
    result = function()
    if inspect.isawaitable(result):
        result = await result
    return result


def _innermost_coroutine_line(frame: FrameType | None) -> str:
    """``file:line in name`` of the innermost ``async def`` on a thread's stack, or ``""``."""
    while frame is not None:
        code = frame.f_code
        if code.co_flags & inspect.CO_COROUTINE and code.co_name != _named.__name__:
            return f"{code.co_filename}:{frame.f_lineno} in {code.co_qualname}"
        frame = frame.f_back
    return ""


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    """The loop thread: run until stopped, then cancel what is left and close the loop."""
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        try:
            leftovers = asyncio.all_tasks(loop)
            for task in leftovers:
                task.cancel()
            if leftovers:
                loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


def _stop_loop(
    loop: asyncio.AbstractEventLoop, thread: threading.Thread, join_seconds: float
) -> None:
    try:
        loop.call_soon_threadsafe(loop.stop)
    except RuntimeError:  # already closed
        return
    if thread is not threading.current_thread():
        # A loop still blocked by its store is left to its daemon thread.
        thread.join(join_seconds)


__all__ = [
    "BLOCKED_LOOP_SECONDS",
    "AsyncStoreAdapter",
    "adapt_if_async",
    "adapting",
    "method_kinds",
]
