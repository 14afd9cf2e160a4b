"""A small run of ``benchmarks/soak.py`` in the slow lane: zero answers lost, applied twice
or to the wrong run, and no run left unfinished, on the memory, file and SQLite stores,
in process (crashes after random store calls) and with ``kill -9`` (file store); and the
judge itself catches an engine that applies an answer twice."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from dw_testing.selftest.engine_variants import variant_named
from reference_engine.stores.memory import MemoryStore

pytestmark = pytest.mark.slow

SOAK_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "soak.py"


@pytest.fixture(scope="module")
def soak() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dw_soak", SOAK_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["dw_soak"] = module
    spec.loader.exec_module(module)
    return module


def _clean(tally: Any) -> None:
    assert (tally.lost, tally.twice, tally.wrong_run, tally.unfinished) == (0, 0, 0, 0), \
        tally.failures[:5]
    assert tally.acknowledged > 0 and tally.crashes > 0  # it did deliver and did crash


@pytest.mark.parametrize("kind", ["memory", "file", "sqlite"])
def test_a_small_in_process_soak_loses_nothing(soak: ModuleType, kind: str) -> None:
    tally, _seconds = soak.soak_inprocess(kind, 40, seed=7, crash_rate=0.3,
                                          progress=lambda _line: None)
    assert tally.schedules == 40
    _clean(tally)


def test_a_small_kill_9_soak_loses_nothing(soak: ModuleType) -> None:
    tally, _seconds = soak.soak_kill("file", 6, seed=11, progress=lambda _line: None)
    assert tally.schedules == 6
    _clean(tally)


@pytest.mark.parametrize("variant", ["replay_journals_twice", "consume_in_two_saves"])
def test_the_judge_catches_an_engine_that_applies_an_answer_twice(
    soak: ModuleType, variant: str
) -> None:
    total = soak.Tally()
    with variant_named(variant).installed():
        for seed in range(60):
            total.add(soak.inprocess_schedule(MemoryStore(), seed, crash_rate=0.4))
    assert total.twice > 0, f"the soak judged the broken engine {variant} clean"
