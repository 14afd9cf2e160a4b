"""The kit's WaitStateMachine over one memory store: deliveries, time, looks, cancel, resume,
an owner's saves and crashes at any store call; every promise after every step
(docs/reference/kit.md). It must also catch an engine that breaks one."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from dw_testing.models.wait_machine import WaitStateMachine
from dw_testing.selftest.engine_variants import variant_named
from reference_engine.stores.memory import MemoryStore

QUICK = settings(max_examples=40, stateful_step_count=12, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow])
# A fixed sequence of programs, so that catching the broken engine is not luck.
DERANDOMIZED = settings(QUICK, max_examples=200, derandomize=True, database=None)


def _machine_on_one_store(build: Any = None) -> type[WaitStateMachine]:
    store = MemoryStore()
    return WaitStateMachine.for_store(lambda: store, build)


def test_the_reference_engine_keeps_every_promise() -> None:
    machine = _machine_on_one_store()
    try:
        run_state_machine_as_test(machine, settings=QUICK)
    finally:
        machine.close_handles()


def test_an_engine_that_trusts_the_creates_boolean_is_caught() -> None:
    variant = variant_named("boolean_decision")
    machine = _machine_on_one_store(variant.engine)
    try:
        with variant.installed(), pytest.raises(AssertionError, match="must be told it won"):
            run_state_machine_as_test(machine, settings=DERANDOMIZED)
    finally:
        machine.close_handles()
