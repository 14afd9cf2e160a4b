"""Every call a test's store handles answer, recorded below the test's own wrappers.

The judge wraps each handle the store's factory returns while a test runs, so a
``FaultyStore``, a gate or a ``PrefixedStore`` the test puts around it sits *above* the
record: what is recorded is what the store itself answered. A call that raised is recorded
as indeterminate (C-LOST-1): it may or may not have happened.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dw_testing.history import Operation
from dw_testing.history.events import OpName
from dw_testing.kit.wrappers import StoreWrapper


@dataclass(frozen=True)
class ListCall:
    """One ``list`` call: ``keys`` is its answer, ``None`` when it raised."""

    handle: str
    prefix: str
    keys: tuple[str, ...] | None
    call: int
    ret: int | None


class TrialLog:
    """The calls of one test, from all its handles and threads; stamps are monotonic ns."""

    def __init__(self, clock: Callable[[], int] = time.monotonic_ns) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self.ops: list[Operation] = []
        self.lists: list[ListCall] = []
        self.opened: list[tuple[str, int]] = []
        self.closed: list[tuple[str, int]] = []
        self._numbers = itertools.count(1)
        self.sealed = False
        self.unrecorded = ""

    def next_handle(self) -> str:
        name = f"h{next(self._numbers)}"
        with self._lock:
            self.opened.append((name, self.clock()))
        return name

    def add(self, op: Operation | ListCall) -> None:
        with self._lock:
            if self.sealed:
                return
            if isinstance(op, ListCall):
                self.lists.append(op)
            else:
                self.ops.append(op)

    def add_close(self, handle: str) -> None:
        with self._lock:
            if not self.sealed:
                self.closed.append((handle, self.clock()))

    def seal(self) -> None:
        """Stop recording: the test is over, and fixture teardown is bookkeeping."""
        with self._lock:
            self.sealed = True

    @property
    def calls(self) -> int:
        return len(self.ops) + len(self.lists)


class JudgedHandle(StoreWrapper):
    """A store handle whose every call (``list`` and ``close`` included) lands in ``log``."""

    def __init__(self, inner: Any, log: TrialLog) -> None:
        super().__init__(inner)
        self.log = log
        self.name = log.next_handle()

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        # A test (the author's own, too) may check what kind of handle its factory made:
        # ``isinstance(handle, AsyncStoreAdapter)`` answers for the store's own handle.
        return type(self.inner)

    def __getattr__(self, name: str) -> Any:
        # A test may use what its store offers beyond the contract (an async adapter's race):
        # those calls are not recorded, so the judge cannot vouch for the history.
        found = getattr(self.inner, name)
        if callable(found) and not name.startswith("_"):
            self.log.unrecorded = f"not judged: the test called {name}(), beyond the contract"
        return found

    def put(self, key: str, data: bytes) -> None:
        self._record("put", key, bytes(data), lambda: self.inner.put(key, data))

    def _put_if_absent(self, key: str, data: bytes) -> bool:
        created: bool = self._record("put_if_absent", key, bytes(data),
                                     lambda: self.inner.put_if_absent(key, data))
        return created

    def get(self, key: str) -> bytes | None:
        found: bytes | None = self._record("get", key, None, lambda: self.inner.get(key))
        return found

    def delete(self, key: str) -> None:
        self._record("delete", key, None, lambda: self.inner.delete(key))

    def list(self, prefix: str) -> list[str]:
        clock = self.log.clock
        started = clock()
        try:
            keys = self.inner.list(prefix)
        except BaseException:
            self.log.add(ListCall(self.name, prefix, None, started, None))
            raise
        finished = clock()
        try:
            answer = tuple(keys)
        except TypeError:
            return keys  # type: ignore[no-any-return]  # not a list: the suite's tests say so
        if all(isinstance(k, str) for k in answer):
            self.log.add(ListCall(self.name, prefix, answer, started, finished))
        return keys  # type: ignore[no-any-return]

    def close(self) -> None:
        self.log.add_close(self.name)
        super().close()

    def _record(self, op: OpName, key: str, value: bytes | None, run: Callable[[], Any]) -> Any:
        clock = self.log.clock
        started = clock()
        try:
            result = run()
        except BaseException as exc:
            self.log.add(Operation(self.name, op, key, value, None, started, None,
                                   type(exc).__name__))
            raise
        finished = clock()
        if op == "put_if_absent":
            if not isinstance(result, bool):
                # Not a boolean (C-CREATE-1's own tests say so): it may have written.
                self.log.add(Operation(self.name, op, key, value, None, started, None,
                                       "NotABoolean"))
                return result
            recorded: bool | bytes | None = result
        elif op == "get":
            if result is not None and not isinstance(result, bytes | bytearray | memoryview):
                return result  # not bytes: C-GET-1's own tests say so
            recorded = None if result is None else bytes(result)
        else:
            recorded = None
        self.log.add(Operation(self.name, op, key, value, recorded, started, finished))
        return result


def unjudged(handle: Any) -> Any:
    """The store's own handle beneath the judge's recording wrapper, if there is one."""
    return handle.inner if isinstance(handle, JudgedHandle) else handle
