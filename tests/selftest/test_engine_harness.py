"""The engine suite's harness blames only the engine: on a store that answers False to the
create that won (C-LOST-1 lets the engine meet one), the ambiguous-create tests
pass, with no "FaultyStore: these faults were never hit" from their teardown."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from dw_testing.selftest.runner import SuiteRun

PROVIDER = '''
from dw_testing.selftest.mutants.base import CorrectStore, memory_provider


class FalseToEveryWinner(CorrectStore):
    def put_if_absent(self, key, data):
        super().put_if_absent(key, data)
        return False


false_to_every_winner = memory_provider("false_to_every_winner", FalseToEveryWinner)
'''


def test_ambiguous_create_tests_pass_on_a_store_that_answers_false_to_every_winner(
    tmp_path: Path,
) -> None:
    (tmp_path / "winner_told_false.py").write_text(PROVIDER, encoding="utf-8")
    workdir = tmp_path / "run"
    workdir.mkdir()
    run = SuiteRun(rootdir=workdir, stores=["winner_told_false:false_to_every_winner"],
                   report=workdir / "report.json", marker="dw_engine", traceback="line",
                   # The engine's harness is under test, not the store: the judge, which
                   # rightly blames this store for C-CREATE-3, is off.
                   extra=["-k", "ambiguous", "--dw-judge=off"])
    env = run.environment()
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(tmp_path), env.get("PYTHONPATH", "")) if p)
    finished = subprocess.run(run.command(), cwd=workdir, env=env, capture_output=True,
                              text=True, timeout=300, check=False)
    output = finished.stdout + finished.stderr
    assert "never hit" not in output, output[-3000:]
    assert finished.returncode == 0, output[-3000:]
    assert "6 passed" in output, output[-1500:]
