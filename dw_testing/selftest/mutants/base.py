"""A small correct store that each store mutant alters in exactly one place.

The mutants must differ from a correct store by one defect only, so the base is a
plain, obviously-right dict-behind-a-lock store with overridable steps. Records live
in a :class:`Backing` shared by every handle a provider hands out.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from contextlib import AbstractContextManager, contextmanager

from dw_testing.kit.spec import StoreSpec
from reference_engine.stores.keys import is_under, validate_key, validate_prefix

# A real backend has a network or disk round trip between the steps of a call; the
# mutants widen that gap so a race the defect allows actually happens in a test run.
RACE_WINDOW_SECONDS = 0.002

# Memory mutants keep records for as long as the provider is entered, so "reopen" is
# meaningful for them: declare it, and the durable-reopen test runs against each one.
MEMORY_CAPABILITIES: Mapping[str, bool] = {
    "cross_handle": True,
    "cross_process": False,
    "durable_reopen": True,
    "large_values": True,
    "distinguishes_conflict": True,
    # The correct store lists like the built-in stores, so the list mutants are judged on
    # whole segments and order too.
    "segment_prefixes": True,
    "sorted_list": True,
    # And it keeps the two key promises the built-in stores keep, so the key mutants are
    # held to them in full.
    "refuses_bad_keys": True,
    "nested_keys": True,
}

Provider = Callable[[], AbstractContextManager[StoreSpec]]


def widen_race_window() -> None:
    """Give other threads the GIL for a moment, as a backend round trip would."""
    time.sleep(RACE_WINDOW_SECONDS)


class Backing:
    """The records every handle of one mutant store shares, and the lock guarding them."""

    def __init__(self) -> None:
        self.records: MutableMapping[str, bytes] = {}
        # Re-entrant: a mutant may call the correct step while holding the lock.
        self.lock: AbstractContextManager[object] = threading.RLock()
        # Shared bookkeeping some defects need: calls in flight per key, marked keys,
        # and writes not yet made durable.
        self.in_flight: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self.marked: defaultdict[str, set[str]] = defaultdict(set)
        self.unsynced: dict[str, bytes] = {}


class CorrectStore:
    """A correct store over a :class:`Backing`; subclasses change one step."""

    def __init__(self, backing: Backing) -> None:
        self.backing = backing

    # -- key checks (the Keys mutants alter these) --
    def checked_key(self, key: str, op: str) -> str:
        """The backing key for ``key``, after the key rules."""
        return validate_key(key, op=op)

    def checked_prefix(self, prefix: str) -> str:
        return validate_prefix(prefix)

    # -- the contract --
    def put(self, key: str, data: bytes) -> None:
        name = self.checked_key(key, "put")
        with self.backing.lock:
            self.backing.records[name] = bytes(data)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        name = self.checked_key(key, "put_if_absent")
        with self.backing.lock:
            if name in self.backing.records:
                return False
            self.backing.records[name] = bytes(data)
            return True

    def get(self, key: str) -> bytes | None:
        name = self.checked_key(key, "get")
        with self.backing.lock:
            return self.backing.records.get(name)

    def delete(self, key: str) -> None:
        name = self.checked_key(key, "delete")
        with self.backing.lock:
            self.backing.records.pop(name, None)

    def list(self, prefix: str) -> list[str]:
        normalised = self.checked_prefix(prefix)
        with self.backing.lock:
            return sorted(k for k in self.backing.records if is_under(k, normalised))

    def close(self) -> None:
        """Records outlive handles, as on a server."""


def memory_provider(
    name: str,
    store_class: Callable[[Backing], object],
    *,
    shared: bool = True,
    capabilities: Mapping[str, bool] = MEMORY_CAPABILITIES,
) -> Provider:
    """A provider whose factory hands out ``store_class`` handles on one fresh backing.

    ``store_class`` may be an async store: the plugin adapts its handles, as it would a user's.

    ``shared=False`` gives every handle its own backing (the unshared-handles defect).
    """

    @contextmanager
    def provide() -> Iterator[StoreSpec]:
        backing = Backing()

        def factory() -> object:
            return store_class(backing if shared else Backing())

        yield StoreSpec(factory=factory, uri=None, capabilities=dict(capabilities), name=name)

    provide.__name__ = name
    provide.__qualname__ = name
    provide.__doc__ = store_class.__doc__
    return provide
