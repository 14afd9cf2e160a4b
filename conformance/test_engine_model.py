"""The wait lifecycle, driven by a Hypothesis state machine on the store under
test, keeps every promise after every step.

Effort follows the active dw profile (``--dw-profile``, see docs/explanation/profiles.md). A failure
prints the shortest program of rules (open, signal, answer, look, cancel, resume, an
owner's save, a crash) that breaks a promise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pytest
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from conformance.engine_support import (
    FAST_ROUND_TRIP,
    round_trip_seconds,
)
from dw_testing.models.wait_machine import WaitStateMachine
from dw_testing.plugin.engine_fixtures import engine_builder
from dw_testing.plugin.hookspecs import EngineUnderTest
from dw_testing.plugin.profiles import active_profile, active_settings, seeded

pytestmark = [pytest.mark.dw_engine, pytest.mark.dw_requires("put_if_absent", "cross_handle")]

# A step of this machine runs whole engine operations (tens of store calls), so it takes
# fewer examples than the store machine; steps per example follow the profile itself.
# Under quick and ci, a store whose round trip is slower than FAST_ROUND_TRIP runs
# proportionally fewer programs (at least MIN_EXAMPLES), so an emulated or remote store
# costs seconds, not minutes; thorough never scales down. docs/explanation/profiles.md has the
# counts
# and the measured steps per second.
EXAMPLES = {"quick": 5, "ci": 15, "thorough": 300}
MIN_EXAMPLES = 3


def _examples(profile: str, handle: Any) -> int:
    wanted = EXAMPLES.get(profile, EXAMPLES["ci"])
    if profile == "thorough":
        return wanted
    round_trip = round_trip_seconds(handle)
    if round_trip <= FAST_ROUND_TRIP:
        return wanted
    return max(MIN_EXAMPLES, int(wanted * FAST_ROUND_TRIP / round_trip))


@pytest.mark.dw_clause("C-ENGINE-2")
def test_the_wait_lifecycle_keeps_its_promises_after_every_step(
    dw_open_handle: Callable[[], Any], dw_engine_variant: EngineUnderTest | None,
) -> None:
    machine = WaitStateMachine.for_store(dw_open_handle, engine_builder(dw_engine_variant))
    factory = cast(type[RuleBasedStateMachine], seeded(machine))
    examples = _examples(active_profile(), dw_open_handle())
    try:
        run_state_machine_as_test(factory, settings=active_settings(max_examples=examples))
    finally:
        machine.close_handles()
