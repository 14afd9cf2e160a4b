"""The network-only mutants: each is caught under ``--dw-network`` and missed without it;
the correct S3 store on the same moto server passes both ways.

The default run takes the one test that refuses every request; the slow run takes the whole
store-level suite, with the network profile and without.
"""

from __future__ import annotations

import pytest

from dw_testing.kit.spec import StoreSpec
from dw_testing.plugin.clauses import known_clause_ids
from dw_testing.selftest.mutants.network import CONTROL, NETWORK_MUTANTS, network_provider
from dw_testing.selftest.network_matrix import run_network_kill_matrix

OUTAGE_TEST = "test_while_no_request_reaches_the_server_every_call_raises_and_nothing_changes"


def test_every_network_mutant_names_its_defect_and_known_clauses() -> None:
    known = set(known_clause_ids())
    assert len(NETWORK_MUTANTS) == 4
    for name, info in NETWORK_MUTANTS.items():
        assert info.defect_doc and info.section == "Network"
        assert set(info.clauses) <= known, (name, info.clauses)
        assert info.target.endswith(f":{name}")
    with pytest.raises(KeyError):
        network_provider("no_such_mutant")
    assert callable(network_provider(CONTROL))


def test_each_network_mutant_fails_the_outage_test_and_the_control_passes() -> None:
    matrix = run_network_kill_matrix(tests=OUTAGE_TEST, without=False)
    assert not matrix.problems(), "\n".join(matrix.problems())
    for name in NETWORK_MUTANTS:
        assert matrix.with_faults.first_kill(name), name


@pytest.mark.slow
def test_the_whole_store_suite_catches_each_only_with_faults_on_the_wire() -> None:
    matrix = run_network_kill_matrix()
    assert not matrix.problems(), "\n".join(matrix.problems())


def test_the_network_spec_keeps_its_children_on_the_correct_store() -> None:
    with network_provider("swallows_failed_writes")() as spec:
        assert isinstance(spec, StoreSpec)
        assert spec.uri is None and spec.network is not None
        assert type(spec.factory()).__name__ == "SwallowsFailedWrites"
