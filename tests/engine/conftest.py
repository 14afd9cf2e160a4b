"""Fixtures for the engine tests: a store, a fake clock and engines that never sleep."""

from __future__ import annotations

from typing import Any

import pytest
from engine_helpers import MakeEngine

from dw_testing.clock import FakeClock
from reference_engine.engine import Engine
from reference_engine.stores.memory import MemoryStore


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def make_engine(clock: FakeClock) -> MakeEngine:
    """An engine on a given store; sleeps advance the fake clock, so nothing sleeps."""

    def make(store: Any, **kwargs: Any) -> Engine:
        kwargs.setdefault("sleeper", clock.advance)
        kwargs.setdefault("lease_ttl_ms", 30_000)
        return Engine(store, clock, **kwargs)

    return make


@pytest.fixture
def engine(store: MemoryStore, make_engine: MakeEngine) -> Engine:
    return make_engine(store)
