"""The store, call by call, against a model of the contract over the whole key and value space.

Sequences of put, put_if_absent, get, delete and list over two handles, with handles closed
and reopened between them, on keys, prefixes and values drawn from the contract's grammar
(:mod:`dw_testing.strategies`). Effort follows the active dw profile; a failure names the
clause, what the model expected and what came back, then the shrunk program of calls.
"""

from __future__ import annotations

from typing import cast

import pytest
from hypothesis import Phase
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from dw_testing.kit.spec import StoreSpec
from dw_testing.models.differential import DifferentialStoreMachine
from dw_testing.plugin.profiles import active_profile, active_settings, seeded, session_seed

pytestmark = [pytest.mark.dw_store_contract]
PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink)


@pytest.mark.dw_clause("C-KEY-2", "C-KEY-3", "C-VAL-1", "C-GET-1", "C-PUT-1", "C-DEL-1",
                       "C-CREATE-1", "C-CREATE-3", "C-LIST-3", "C-LIST-4", "C-LIST-5", "C-HANDLE-1",
                       "C-HANDLE-3")
def test_every_answer_of_the_store_matches_the_model(
    dw_spec: StoreSpec, dw_caps: dict[str, bool], _dw_prefix: str,
) -> None:
    seed = session_seed()
    note = (f"replay: rerun this test with --dw-seed={seed}" if seed is not None else
            "replay: rerun with --dw-seed=<n> to draw the same calls")
    machine = DifferentialStoreMachine.for_store(
        dw_spec.factory, capabilities=dw_caps, namespace=f"{_dw_prefix}/model",
        seed_note=note)
    factory = cast(type[RuleBasedStateMachine], seeded(machine))
    # No explain phase: it traces coverage over hundreds of replays (tens of seconds) to
    # annotate the program, which the clause in the message already explains. Under the
    # quick profile (a first look, and the kill matrix's) a failure is not shrunk either:
    # shrinking costs seconds, and ci or thorough shrink it to the shortest program.
    phases = PHASES if active_profile() != "quick" else PHASES[:-1]
    run_state_machine_as_test(factory, settings=active_settings(phases=phases))


