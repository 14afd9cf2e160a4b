"""Correct stores pass the store-level suite with the judge on, over 20 seeds each: the
built-in stores, the async store of docs/how-to/async-store.md, the DynamoDB example adapter
on moto (no server to install) and the TypeScript example ``fs_store.ts`` under Deno.

A correct store must never be blamed: each seed is its own ``pytest --dw-suite-only
--dw-profile=ci -m dw_store_contract --dw-seed=N`` (the judge is on by default), and a red
seed is reported with its diagnosis and the command that replays it.
``pytest -m slow tests/slow/test_correct_stores_over_seeds.py``; the figures of a run are in
``benchmarks/seeds.py --marker dw_store_contract``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = ROOT / "examples" / "adapters"
ASYNC_DOC = ROOT / "docs" / "how-to" / "async-store.md"
TYPESCRIPT_STORE = ROOT / "examples" / "typescript" / "fs_store.ts"
SEEDS = range(1, 21)
TIMEOUT_SECONDS = 900


@dataclass(frozen=True)
class Trial:
    """Where a store is run from, and what it needs there."""

    store: str
    cwd: Path | None = None
    python_path: Path | None = None
    env: tuple[tuple[str, str], ...] = ()


def _async_example(directory: Path) -> Trial:
    """The page's store as ``async_sqlite_store.py``, as a reader copies it."""
    blocks = re.findall(r"```python\n(.*?)\n```", ASYNC_DOC.read_text(encoding="utf-8"), re.S)
    store = next(b for b in blocks if "def factory() -> AsyncSqliteStore" in b)
    (directory / "async_sqlite_store.py").write_text(store + "\n", encoding="utf-8")
    return Trial("async_sqlite_store:factory", cwd=directory, python_path=directory,
                 env=(("ASYNC_STORE_DB", str(directory / "async-store.db")),))


def _dynamodb_example(_directory: Path) -> Trial:
    missing = [name for name in ("boto3", "moto") if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}: pip install '.[test,slow]'")
    return Trial("dynamodb_store:dynamodb_server", cwd=ADAPTERS, python_path=ADAPTERS)


def _typescript_example(directory: Path) -> Trial:
    deno = shutil.which("deno")
    if deno is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but deno is not installed; pip install '.[test]' installs it",
                        pytrace=False)
        pytest.skip("deno is not installed here; pip install '.[test]' installs it")
    return Trial(f"exec:{deno} run -A {TYPESCRIPT_STORE} {directory / 'records'}")


TRIALS = {
    "memory": lambda _d: Trial("memory"),
    "file": lambda _d: Trial("file"),
    "sqlite": lambda _d: Trial("sqlite"),
    "async-example": _async_example,
    "dynamodb-example": _dynamodb_example,
    "typescript-fs-store": _typescript_example,
}


def _run_seed(trial: Trial, seed: int, directory: Path) -> tuple[bool, int, str]:
    """(passed, calls the judge checked, the diagnosis or output tail of a red seed)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(dict(trial.env))
    if trial.python_path is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(trial.python_path), env.get("PYTHONPATH", "")) if p)
    report = directory / f"report-{seed}.json"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--no-header",
               f"--dw-store={trial.store}", "--dw-suite-only", "--dw-profile=ci",
               f"--dw-seed={seed}", "-m", "dw_store_contract", "--dw-judge=on",
               f"--dw-report={report}"]
    finished = subprocess.run(command, cwd=trial.cwd or directory, env=env,
                              capture_output=True, text=True, timeout=TIMEOUT_SECONDS,
                              check=False)
    tail = "\n".join((finished.stdout + finished.stderr).strip().splitlines()[-30:])
    if not report.is_file():
        return False, 0, tail
    built = json.loads(report.read_text(encoding="utf-8"))
    diagnosis = built.get("diagnosis") or {}
    told = "\n".join(diagnosis.get("lines") or []) or tail
    return finished.returncode == 0, int(diagnosis.get("calls_judged", 0)), told


@pytest.mark.parametrize("name", sorted(TRIALS))
def test_a_correct_store_passes_with_the_judge_on_over_20_seeds(
    name: str, tmp_path: Path,
) -> None:
    trial = TRIALS[name](tmp_path)
    red: dict[int, str] = {}
    judged = 0
    for seed in SEEDS:
        passed, calls, told = _run_seed(trial, seed, tmp_path)
        judged += calls
        if not passed:
            red[seed] = told
    assert not red, f"{name} was blamed on {len(red)} of {len(SEEDS)} seeds:\n" + "\n".join(
        f"--- seed {seed} (replay: pytest --dw-store={trial.store} --dw-suite-only "
        f"--dw-profile=ci -m dw_store_contract --dw-seed={seed})\n{told}"
        for seed, told in red.items())
    # The judge looked: every seed's store-level tests made calls it checked.
    assert judged > 1000 * len(SEEDS), f"the judge checked only {judged} calls"
