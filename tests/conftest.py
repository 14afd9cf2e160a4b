"""Fixtures shared by the engine-level unit tests: a memory store, a fake clock, and
engines whose sleeps advance that clock, so nothing in a test ever sleeps."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

# cel_expr_python's C extension registers its types once per process: imported here, it
# stays in sys.modules when a pytester in-process run restores its module snapshot, and a
# second in-process run does not import it again ("_InternalArena is already registered").
import cel_expr_python.cel  # noqa: F401
import pytest
from hypothesis import settings
from support import answer_steps

from dw_testing.kit.clock import FakeClock
from reference_engine.engine import Engine
from reference_engine.stores.memory import MemoryStore

# The project's own property tests share two cores with subprocess-heavy tests under -n 2;
# a wall-clock deadline there measures the machine, not the code, and fails by luck.
settings.register_profile("dw-project-tests", deadline=None)
settings.load_profile("dw-project-tests")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def make_engine(clock: FakeClock) -> Callable[..., Engine]:
    """An engine on a given store; its sleeps advance the fake clock."""

    def make(store: Any, **kwargs: Any) -> Engine:
        kwargs.setdefault("sleeper", clock.advance)
        kwargs.setdefault("lease_ttl_ms", 30_000)
        return Engine(store, clock, **kwargs)

    return make


@pytest.fixture
def engine(store: MemoryStore, make_engine: Callable[..., Engine]) -> Engine:
    return make_engine(store)


@pytest.fixture(autouse=True)
def _fresh_step_observations() -> Iterator[None]:
    """The python steps in ``support.answer_steps`` record what they saw; start each test
    with nothing recorded."""
    answer_steps.reset()
    yield
    answer_steps.reset()
