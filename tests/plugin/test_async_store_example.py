"""The async store of docs/how-to/async-store.md, copied from the page: it passes the ``ci``
profile through the plugin, runs the engine demo through ``dw``, and its racy variant from
the same page is caught by the one-loop race."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from reference_engine.stores.async_adapter import STORE_METHODS, method_kinds

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "how-to" / "async-store.md"
MODULE = "async_sqlite_store"
ONE_LOOP_TEST = "test_coroutines_racing_to_create_one_key_on_one_loop_have_exactly_one_winner"
TIMEOUT_SECONDS = 600


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)\n```", DOC.read_text(encoding="utf-8"), flags=re.S)


@pytest.fixture
def example(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """The page's store as ``async_sqlite_store.py``, plus its racy variant, in an empty dir."""
    blocks = _python_blocks()
    store = next(b for b in blocks if "def factory() -> AsyncSqliteStore" in b)
    racy = next(b for b in blocks if "class RacyAsyncSqliteStore" in b)
    pytester.makepyfile(**{MODULE: store + "\n\n\n" + racy + "\n\n\ndef racy_factory():\n"
                           "    return RacyAsyncSqliteStore(os.environ['ASYNC_STORE_DB'])\n"})
    monkeypatch.setenv("ASYNC_STORE_DB", str(pytester.path / "async-store.db"))
    return pytester


def test_every_contract_method_of_the_doc_s_example_is_a_coroutine_function() -> None:
    namespace: dict[str, object] = {}
    exec(next(b for b in _python_blocks() if "def factory()" in b), namespace)
    assert method_kinds(namespace["AsyncSqliteStore"]) == (list(STORE_METHODS), [])


def test_the_doc_s_async_store_passes_the_ci_profile(example: pytest.Pytester) -> None:
    result = example.runpytest_subprocess(
        f"--dw-store={MODULE}:factory", "--dw-suite-only", "--dw-profile=ci",
        "-p", "no:cacheprovider", "-rs", timeout=TIMEOUT_SECONDS,
    )
    outcomes = result.parseoutcomes()
    assert result.ret == 0, result.stdout.str()[-3000:]
    # The one skip allowed: the outage test, which needs --dw-network and a NetworkRoute.
    skips = [line for line in result.stdout.lines if line.startswith("SKIPPED")]
    assert outcomes.get("passed", 0) > 50 and outcomes.get("skipped", 0) == len(skips), outcomes
    assert all("needs --dw-network" in line for line in skips), skips
    assert not outcomes.get("failed") and not outcomes.get("errors")
    result.stdout.fnmatch_lines([
        "factory: contract PASS, cross_handle PASS, cross_process PASS, distinguishes_conflict "
        "PASS, durable_reopen PASS, engine PASS, large_values PASS, nested_keys PASS, "
        "put_if_absent PASS, refuses_bad_keys PASS, segment_prefixes PASS, sorted_list PASS",
    ])


def test_the_doc_s_racy_variant_fails_the_one_loop_race(example: pytest.Pytester) -> None:
    result = example.runpytest_subprocess(
        f"--dw-store={MODULE}:racy_factory", "--dw-suite-only", "-k", "one_loop",
        "-p", "no:cacheprovider", timeout=TIMEOUT_SECONDS,
    )
    result.assert_outcomes(failed=1, deselected=result.parseoutcomes()["deselected"])
    result.stdout.fnmatch_lines([
        "E * of 8 creates of one key, started together as tasks on one event loop, *",
        f"FAILED *{ONE_LOOP_TEST}*",
    ])


def test_dw_demo_runs_the_engine_on_the_doc_s_async_store(example: pytest.Pytester) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(example.path), os.environ.get("PYTHONPATH", "")])}
    finished = subprocess.run(
        [sys.executable, "-m", "reference_engine", "demo", "--store", f"{MODULE}:factory"],
        cwd=example.path, env=env, capture_output=True, text=True, timeout=TIMEOUT_SECONDS,
        check=False,
    )
    assert finished.returncode == 0, finished.stdout[-2000:] + finished.stderr[-2000:]
    assert re.search(r"demo finished: run \S+ succeeded", finished.stdout), finished.stdout
