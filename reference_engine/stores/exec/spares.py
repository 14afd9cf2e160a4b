"""Children started ahead of need, for a command this process opens again and again.

Starting a runtime (Python, Deno, Node) takes tens of milliseconds: a test that opens two
handles per Hypothesis example would spend most of its time waiting for children to
start. From the second open of a command on, the pool keeps ``DW_EXEC_SPARES`` (default 2)
children of that command started and past their handshake, so the next open takes one at
once. A process that opens a command only once (a racing child of the suite) starts no
spare. Spares are ended at interpreter exit, and end themselves if this process dies
(their stdin closes). ``DW_EXEC_SPARES=0`` starts every child on demand, for a store that
must not be opened before it is needed.
"""

from __future__ import annotations

import atexit
import collections
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Final, Generic, Protocol, TypeVar

from reference_engine.errors import StoreUnavailable

SPARES_ENV: Final = "DW_EXEC_SPARES"
DEFAULT_SPARES: Final = 2


class Killable(Protocol):
    def kill(self) -> None: ...


T = TypeVar("T", bound=Killable)


def spares_from_env() -> int:
    """``$DW_EXEC_SPARES``, or the default; a bad value is refused."""
    raw = os.environ.get(SPARES_ENV, "")
    if not raw:
        return DEFAULT_SPARES
    if not raw.isdigit():
        raise StoreUnavailable(f"{SPARES_ENV} must be a whole number of children (0 turns "
                               f"spares off), e.g. {SPARES_ENV}=2", op="open")
    return int(raw)


class SparePool(Generic[T]):
    """Started children, queued per key; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._opened: collections.Counter[object] = collections.Counter()
        self._ready: dict[object, collections.deque[Future[T]]] = {}
        self._exit_hook = False

    def take(self, key: object, start: Callable[[], T], spares: int) -> T:
        """A started child for ``key``: a spare if one is queued, else ``start()`` now."""
        with self._lock:
            self._opened[key] += 1
            queue = self._ready.setdefault(key, collections.deque())
            spare = queue.popleft() if queue else None
            wanted = spares - len(queue) if self._opened[key] >= 2 else 0
            for _ in range(max(0, wanted)):
                queue.append(self._start_in_background(start))
        if spare is not None:
            try:
                return spare.result()
            except Exception:
                pass  # a spare that failed to start: start one now, to raise its own error
        return start()

    def _start_in_background(self, start: Callable[[], T]) -> Future[T]:
        if not self._exit_hook:
            atexit.register(self.drain)
            self._exit_hook = True
        future: Future[T] = Future()

        def run() -> None:
            try:
                future.set_result(start())
            except BaseException as exc:
                future.set_exception(exc)

        threading.Thread(target=run, name="dw-exec-spare", daemon=True).start()
        return future

    def drain(self) -> None:
        """End every queued spare (at exit, and in tests)."""
        with self._lock:
            queued = [f for queue in self._ready.values() for f in queue]
            self._ready.clear()
            self._opened.clear()
        for future in queued:
            try:
                future.result(timeout=60).kill()
            except Exception:
                continue  # it never started, or already failed: nothing to end
