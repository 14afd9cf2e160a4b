"""The store, driven through two handles by a Hypothesis state machine, behaves
like a dict under put, put_if_absent, get, delete and list.

Effort follows the active dw profile (``--dw-profile``); a failure prints the shortest
program of store calls that shows the difference.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pytest
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from dw_testing.models.store_machine import StoreStateMachine
from dw_testing.plugin.profiles import active_settings, seeded

pytestmark = [pytest.mark.dw_store_contract]


@pytest.mark.dw_clause("C-GET-1", "C-PUT-1", "C-DEL-1", "C-CREATE-1", "C-LIST-3", "C-LIST-4",
                       "C-LIST-5", "C-HANDLE-1")
def test_the_store_behaves_like_a_dict_across_two_handles(
    dw_open_handle: Callable[[], Any], dw_caps: dict[str, bool],
) -> None:
    machine = StoreStateMachine.for_store(
        dw_open_handle, two_handles=dw_caps.get("cross_handle", True), capabilities=dw_caps)
    # ``seeded`` returns the class wrapped with the session seed, still a factory of machines.
    factory = cast(type[RuleBasedStateMachine], seeded(machine))
    run_state_machine_as_test(factory, settings=active_settings())
