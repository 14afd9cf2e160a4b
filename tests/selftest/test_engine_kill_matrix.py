"""``dw conformance --self-test``'s engine part: the variants x engine-level tests matrix."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from dw_testing.selftest import engine_matrix
from dw_testing.selftest.engine_matrix import run_engine_kill_matrix
from dw_testing.selftest.killmatrix import KillMatrix


def test_the_engine_kill_matrix_names_the_test_that_killed_a_variant() -> None:
    matrix = run_engine_kill_matrix(["resume_ignores_fence"])
    assert matrix.mutants == ["resume_ignores_fence"] and matrix.survivors() == []
    killers = [t.rpartition("::")[2] for t in matrix.killed_by("resume_ignores_fence")]
    assert any(k.startswith("test_a_resume_paused_past_its_lease_is_fenced_off") for k in killers)
    assert len(matrix.tests) > 20, "the engine-level suite was not collected whole"


def test_the_self_test_fails_when_a_variant_survives(monkeypatch: pytest.MonkeyPatch) -> None:
    survived = KillMatrix(["replay_journals_twice"], ["conformance/t.py::test_x"],
                          {("replay_journals_twice", "conformance/t.py::test_x"): "PASS"})
    monkeypatch.setattr(engine_matrix, "run_engine_kill_matrix", lambda: survived)
    out = io.StringIO()
    assert engine_matrix.engine_self_test(Console(file=out, width=200)) == 1
    assert "replay_journals_twice: SURVIVED" in out.getvalue()
