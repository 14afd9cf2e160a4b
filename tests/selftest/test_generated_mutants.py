"""Each registered generated mutant proves something new: it passes the store suite as it
was before the differential model (every store-level test but the model's), under ci."""

from __future__ import annotations

import pytest

from dw_testing.selftest.killmatrix import run_kill_matrix
from dw_testing.selftest.mutants import GENERATED_MUTANTS

MODEL_TEST = "test_store_differential.py"


@pytest.mark.slow
def test_every_registered_generated_mutant_passes_the_suite_without_the_model() -> None:
    matrix = run_kill_matrix(list(GENERATED_MUTANTS), profile="ci",
                             extra=["--deselect", f"conformance/{MODEL_TEST}", "-k",
                                    "not differential"], timeout=1800.0)
    caught = {name: matrix.killed_by(name) for name in matrix.mutants if matrix.killed_by(name)}
    assert not caught, (
        "these generated mutants are caught without the model, so they prove nothing new: "
        f"add them to CAUGHT_WITHOUT_THE_MODEL in dw_testing/selftest/mutants/generated.py: "
        f"{caught}")
