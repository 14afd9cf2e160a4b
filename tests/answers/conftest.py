"""Fixtures for the typed-answer tests: a memory store, a fake clock, engines that never sleep."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import answer_steps
import pytest
from answer_helpers import MakeEngine

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
    """An engine on a given store; its sleeps advance the fake clock, so nothing sleeps."""

    def make(store: Any, **kwargs: Any) -> Engine:
        kwargs.setdefault("sleeper", clock.advance)
        kwargs.setdefault("lease_ttl_ms", 30_000)
        return Engine(store, clock, **kwargs)

    return make


@pytest.fixture
def engine(store: MemoryStore, make_engine: MakeEngine) -> Engine:
    return make_engine(store)


@pytest.fixture(autouse=True)
def _fresh_step_observations() -> Iterator[None]:
    answer_steps.reset()
    yield
    answer_steps.reset()
