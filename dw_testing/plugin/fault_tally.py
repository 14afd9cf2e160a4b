"""What the faults on the wire provoked in a store (``--dw-network``), green or red.

Each handle of a routed store is wrapped so the suite sees what the store answered while
faults were on: how many calls raised, by operation; how many creates answered ``False``
although the bytes they wrote are the ones stored (a retried create meeting its own first
attempt, legal under C-LOST-1); with the proxy's own count of the faults it played (replies
lost, replies cut short mid-body, connections reset). The report shows it per store, so an
author learns what their engine must survive (read back after every create) and where the
store leaves retries to its caller.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from reference_engine.errors import InvalidKey
from reference_engine.stores.contract import close_store

FAULT_COUNTERS = {"lost-reply": "replies lost", "cut-reply": "replies cut short",
                  "reset-before": "connections reset"}


class FaultTally:
    """One store's tally over the run (this process's share of it under xdist)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.raised: Counter[str] = Counter()
        self.false_creates: list[tuple[str, bytes]] = []
        self.own_bytes_false = 0

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {"raised": dict(self.raised), "false_to_own_write": self.own_bytes_false}

    def settle(self, factory: Callable[[], Any]) -> None:
        """With the faults off: which creates that answered ``False`` hold their own bytes."""
        with self.lock:
            pending, self.false_creates = self.false_creates, []
        if not pending:
            return
        handle = factory()
        try:
            found = sum(1 for key, data in pending if handle.get(key) == data)
        except Exception:  # the heal phase judges a store still broken; this only counts
            found = 0
        finally:
            close_store(handle)
        with self.lock:
            self.own_bytes_false += found


class Tallied:
    """A handle whose answers are tallied; every attribute is the handle's own."""

    def __init__(self, inner: Any, tally: FaultTally) -> None:
        self.inner = inner
        self._tally = tally

    def _call(self, op: str, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except InvalidKey:  # a refusal of the caller's key, no fault
            raise
        except Exception:
            with self._tally.lock:
                self._tally.raised[op] += 1
            raise

    def put(self, key: str, data: bytes) -> None:
        self._call("put", lambda: self.inner.put(key, data))

    def get(self, key: str) -> bytes | None:
        found: bytes | None = self._call("get", lambda: self.inner.get(key))
        return found

    def delete(self, key: str) -> None:
        self._call("delete", lambda: self.inner.delete(key))

    def list(self, prefix: str) -> list[str]:
        listed: list[str] = self._call("list", lambda: self.inner.list(prefix))
        return listed

    def __getattr__(self, name: str) -> Any:
        if name == "put_if_absent":
            create = self.inner.put_if_absent  # AttributeError if the store has none

            def put_if_absent(key: str, data: bytes) -> bool:
                created: bool = self._call("put_if_absent", lambda: create(key, data))
                if created is False:
                    with self._tally.lock:
                        self._tally.false_creates.append((key, bytes(data)))
                return created

            return put_if_absent
        return getattr(self.inner, name)


def tallied(factory: Callable[[], Any], tally: FaultTally) -> Callable[[], Any]:
    return lambda: Tallied(factory(), tally)


def merge(into: dict[str, Any], part: Mapping[str, Any]) -> None:
    """Add one test's (or one worker's) tally ``part`` to ``into``."""
    for name, value in part.items():
        if isinstance(value, Mapping):
            merge(into.setdefault(name, {}), value)
        elif isinstance(value, int):
            into[name] = into.get(name, 0) + value


def delta(after: Mapping[str, Any], before: Mapping[str, Any]) -> dict[str, Any]:
    """``after - before``, key by key (nested), leaving out zeros."""
    out: dict[str, Any] = {}
    for name, value in after.items():
        if isinstance(value, Mapping):
            inner = delta(value, before.get(name) or {})
            if inner:
                out[name] = inner
        elif isinstance(value, int) and value - int(before.get(name, 0) or 0):
            out[name] = value - int(before.get(name, 0) or 0)
    return out


def describe(met: Mapping[str, Any]) -> str:
    """One line: ``3 creates answered False ...; calls raised: get 4, list 1; ...``."""
    parts = []
    played = met.get("played") or {}
    faults = ", ".join(f"{played[k]} {what}" for k, what in FAULT_COUNTERS.items()
                       if played.get(k))
    parts.append(f"faults played: {faults or 'none'}")
    own = int(met.get("false_to_own_write", 0))
    parts.append(f"{own} create(s) answered False while their own bytes were stored "
                 "(read back after every create)")
    raised = met.get("raised") or {}
    calls = ", ".join(f"{op} {n}" for op, n in sorted(raised.items()))
    parts.append(f"calls raised: {calls or 'none'}"
                 + (" (retries the store left to its caller)" if calls else ""))
    return "; ".join(parts)
