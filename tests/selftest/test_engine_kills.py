"""The engine-level suite can fail: every engine variant and every store mutant that can
hurt a wait is killed by ``-m dw_engine``, and a store that answers False to the winner
passes it (C-ENGINE-1) while failing the store-level suite.

The runs are pytest subprocesses on a clean directory, started together and shared by the
assertions through a module-scoped fixture: one per engine variant (the variant selected
with DW_ENGINE_VARIANT, on the memory store), one of the whole engine suite against
``false_to_winner``, and one against every other store mutant. The variant and mutant
runs leave out the state machine and the parallel batches: the scripted tests kill every
one of them, and a generated failure costs seconds of shrinking that prove nothing more
here (``dw conformance --self-test`` runs them too).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from dw_testing.selftest.engine_matrix import engine_suite_run, failures_by_store
from dw_testing.selftest.engine_variants import ENGINE_UNKILLABLE_STORE_MUTANTS, ENGINE_VARIANTS
from dw_testing.selftest.mutants import STORE_MUTANTS

TIMEOUT_SECONDS = 600
FALSE_TO_WINNER = STORE_MUTANTS["false_to_winner"].target
WITHOUT_SLOW_FINDERS = ["-k", "not wait_lifecycle and not concurrent_signals"]


@dataclass(frozen=True)
class FinishedRun:
    returncode: int
    failures: dict[str, list[str]]
    tail: str


def _start(workdir: Path, stores: list[str], variant: str | None,
           extra: list[str]) -> subprocess.Popen[str]:
    workdir.mkdir(parents=True)
    run = engine_suite_run(workdir, stores, variant=variant, extra=extra)
    return subprocess.Popen(run.command(), cwd=workdir, env=run.environment(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _finish(child: subprocess.Popen[str], workdir: Path) -> FinishedRun:
    output, _ = child.communicate(timeout=TIMEOUT_SECONDS)
    report = workdir / "report.json"
    tail = "\n".join(output.strip().splitlines()[-20:])
    assert report.is_file(), f"the engine suite wrote no report:\n{tail}"
    failures = failures_by_store(json.loads(report.read_text(encoding="utf-8")))
    return FinishedRun(child.returncode, failures, tail)


@pytest.fixture(scope="module")
def runs() -> Iterator[dict[str, FinishedRun]]:
    with tempfile.TemporaryDirectory(prefix="dw-engine-kills-") as temp:
        root = Path(temp)
        killable = [m.target for name, m in STORE_MUTANTS.items()
                    if name != "false_to_winner"]
        started = {f"variant:{name}": _start(root / name, ["memory"], name,
                                             WITHOUT_SLOW_FINDERS)
                   for name in ENGINE_VARIANTS}
        started["false_to_winner"] = _start(root / "ftw", [FALSE_TO_WINNER], None, [])
        started["store_mutants"] = _start(root / "mutants", killable, None,
                                          WITHOUT_SLOW_FINDERS)
        dirs = {key: root / (key.split(":", 1)[1] if ":" in key else
                             "ftw" if key == "false_to_winner" else "mutants")
                for key in started}
        yield {key: _finish(child, dirs[key]) for key, child in started.items()}


@pytest.mark.parametrize("variant", sorted(ENGINE_VARIANTS))
def test_every_engine_variant_is_killed_by_an_engine_level_test(
    runs: dict[str, FinishedRun], variant: str,
) -> None:
    run = runs[f"variant:{variant}"]
    killers = [test for tests in run.failures.values() for test in tests]
    assert killers, (f"engine variant {variant} ({ENGINE_VARIANTS[variant].defect_doc}) "
                     f"passed the whole engine suite:\n{run.tail}")


def test_false_to_the_winner_passes_the_engine_suite(runs: dict[str, FinishedRun]) -> None:
    run = runs["false_to_winner"]
    failed = [test for tests in run.failures.values() for test in tests]
    assert run.returncode == 0 and not failed, (
        f"the engine suite failed on a store that answers False to the winner, which the "
        f"engine must tolerate (C-ENGINE-1): {failed}\n{run.tail}")


def test_every_store_mutant_that_can_hurt_a_wait_is_killed_at_engine_level(
    runs: dict[str, FinishedRun],
) -> None:
    failures = runs["store_mutants"].failures
    names = {m.target: name for name, m in STORE_MUTANTS.items()}
    by_mutant = {_mutant_of(store, names): tests for store, tests in failures.items()}
    survivors = sorted(name for name, tests in by_mutant.items()
                       if not tests and name not in ENGINE_UNKILLABLE_STORE_MUTANTS)
    assert not survivors, (
        "these store mutants pass every engine-level test; add a test or explain them in "
        "ENGINE_UNKILLABLE_STORE_MUTANTS:\n" + "\n".join(
            f"- {n}: {STORE_MUTANTS[n].defect_doc}" for n in survivors))
    now_killed = sorted(name for name, tests in by_mutant.items()
                        if tests and name in ENGINE_UNKILLABLE_STORE_MUTANTS)
    assert not now_killed, f"listed as unkillable at engine level but killed: {now_killed}"


def test_the_unkillable_list_names_only_known_store_mutants() -> None:
    assert set(ENGINE_UNKILLABLE_STORE_MUTANTS) <= set(STORE_MUTANTS)


def _mutant_of(store: str, names: dict[str, str]) -> str:
    """The mutant a report store name stands for (the report uses the provider's name)."""
    if store in STORE_MUTANTS:
        return store
    return names.get(store, store)
