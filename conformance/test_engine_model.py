"""SPEC §6.5: the wait lifecycle, driven by a Hypothesis state machine on the store under
test, keeps every promise after every step.

Effort follows the active dw profile (``--dw-profile``, see docs/profiles.md). A failure
prints the shortest program of rules (open, signal, answer, look, cancel, resume, an
owner's save, a crash) that breaks a promise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pytest
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from conformance.engine_support import engine_builder, engine_variant_fixture  # noqa: F401
from dw_testing.engine_variants import EngineVariant
from dw_testing.models.wait_machine import wait_machine
from dw_testing.profiles import active_profile, active_settings, seeded

pytestmark = [pytest.mark.dw_engine, pytest.mark.dw_requires("put_if_absent", "cross_handle")]

# A step of this machine runs whole engine operations (tens of store calls), so it takes
# fewer examples than the store machine; steps per example follow the profile itself.
# docs/profiles.md has the resulting step counts and the measured steps per second.
EXAMPLES = {"quick": 5, "ci": 15, "thorough": 300}


def test_the_wait_lifecycle_keeps_its_promises_after_every_step(
    dw_open_handle: Callable[[], Any], engine_variant: EngineVariant | None,
) -> None:
    machine = wait_machine(dw_open_handle, engine_builder(engine_variant))
    factory = cast(type[RuleBasedStateMachine], seeded(machine))
    examples = EXAMPLES.get(active_profile(), EXAMPLES["ci"])
    run_state_machine_as_test(factory, settings=active_settings(max_examples=examples))
