"""``HistoryRecorder``: a store wrapper that records every call's invocation and response."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dw_testing.history.events import Operation, OpName, dump_jsonl
from dw_testing.kit.wrappers import StoreWrapper


class HistoryLog:
    """The shared, thread-safe list that several recorders append to.

    Stamps come from ``time.monotonic_ns`` (system-wide on Linux, see ``events``), so a log
    filled in a child process merges with the parent's by stamp. Two calls that share a
    stamp count as concurrent, which can only hide a violation, never invent one.
    """

    def __init__(self, clock: Callable[[], int] = time.monotonic_ns) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._ops: list[Operation] = []

    def stamp(self) -> int:
        return self._clock()

    def append(self, op: Operation) -> None:
        with self._lock:
            self._ops.append(op)

    def operations(self) -> list[Operation]:
        """A snapshot, ordered by invocation stamp."""
        with self._lock:
            return sorted(self._ops, key=lambda op: (op.call, op.process))

    def dump(self, path: Path) -> None:
        dump_jsonl(self.operations(), path)


class HistoryRecorder(StoreWrapper):
    """Wraps ``store`` and records put/put_if_absent/get/delete into ``log``.

    A call that raises is recorded as INDETERMINATE (``ret=None``) and the exception is
    re-raised unchanged. ``list`` passes through unrecorded: the checker's model is one key.
    """

    def __init__(self, store: Any, *, process_id: str, log: HistoryLog | None = None) -> None:
        super().__init__(store)
        self.process_id = process_id
        self.log = log if log is not None else HistoryLog()

    @property
    def store(self) -> Any:
        """The wrapped store (``inner``)."""
        return self.inner

    @property
    def history(self) -> list[Operation]:
        return self.log.operations()

    def put(self, key: str, data: bytes) -> None:
        self._record("put", key, bytes(data), lambda: self.inner.put(key, data))

    def _put_if_absent(self, key: str, data: bytes) -> bool:
        return bool(self._record("put_if_absent", key, bytes(data),
                                 lambda: self.inner.put_if_absent(key, data)))

    def get(self, key: str) -> bytes | None:
        result: bytes | None = self._record("get", key, None, lambda: self.inner.get(key))
        return result

    def delete(self, key: str) -> None:
        self._record("delete", key, None, lambda: self.inner.delete(key))

    def _record(self, op: OpName, key: str, value: bytes | None, call: Callable[[], Any]) -> Any:
        started = self.log.stamp()
        try:
            result = call()
        except BaseException as exc:
            self.log.append(Operation(self.process_id, op, key, value, None, started, None,
                                      type(exc).__name__))
            raise
        finished = self.log.stamp()
        recorded = bool(result) if op == "put_if_absent" else result if op == "get" else None
        self.log.append(Operation(self.process_id, op, key, value, recorded, started, finished))
        return result
