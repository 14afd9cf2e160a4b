"""Engine fixtures for the engine-level suites (``-m dw_engine``), provided by the plugin.

``dw_make_engine(store)`` builds the engine under test on any handle of the store under test:
the reference engine, or whatever a ``pytest_dw_engine_under_test`` hook returns (the
self-test's engine variants). Its clock is the test's ``dw_clock`` and its sleeper
advances that clock, so a ``sleep:`` step or a wait for a dead claim holder costs no wall
time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from dw_testing.kit.clock import FakeClock
from dw_testing.plugin.hookspecs import EngineUnderTest
from reference_engine.engine import Engine

LEASE_TTL_MS = 30_000

MakeEngine = Callable[..., Engine]
BuildEngine = Callable[..., Engine]


@pytest.fixture
def dw_engine_variant(request: pytest.FixtureRequest) -> Iterator[EngineUnderTest | None]:
    """The engine under test when it is not the reference engine, installed for this test."""
    variant: EngineUnderTest | None = request.config.hook.pytest_dw_engine_under_test(
        config=request.config)
    if variant is None:
        yield None
        return
    with variant.installed():
        yield variant


@pytest.fixture
def dw_make_engine(dw_clock: FakeClock,
                   dw_engine_variant: EngineUnderTest | None) -> MakeEngine:
    """``dw_make_engine(store, **kwargs)``: the engine under test on ``store``."""
    return engine_factory(dw_clock, dw_engine_variant)


def engine_factory(clock: FakeClock, variant: EngineUnderTest | None) -> MakeEngine:
    """``make(store, **kwargs)`` on ``clock``, with a fake sleeper and the suite's lease."""
    def make(store: Any, **kwargs: Any) -> Engine:
        kwargs.setdefault("sleeper", clock.advance)
        kwargs.setdefault("lease_ttl_ms", LEASE_TTL_MS)
        return engine_builder(variant)(store, clock, **kwargs)

    return make


def engine_builder(variant: EngineUnderTest | None) -> BuildEngine:
    """``build(store, clock, **kwargs)``: the engine under test, for the state machines."""
    return variant.engine if variant is not None else Engine
