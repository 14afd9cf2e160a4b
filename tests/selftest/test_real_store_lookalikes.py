"""Strict where the engine needs it, no stricter: TypeScript look-alikes of real stores
written by others (issue 35), through ``exec:``.

- ``examples/typescript/dir_store.ts``: a directory-mapped filesystem store that checks no
  key and cannot hold ``a`` beside ``a/b``;
- ``examples/typescript/map_store.ts``: a flat map that checks no key;
- ``examples/typescript/http_store.ts``: a store over an HTTP object API
  (:mod:`dw_testing.selftest.http_objects`) whose first call and cut reads are not retried.

Under the defaults (no ``refuses_bad_keys``, no ``nested_keys``) all three pass ``ci``; the
HTTP one passes the faulted engine and history tests under ``--dw-network=lossy``, and its
report shows what the faults provoked. Declaring nesting or key refusal makes the directory
store fail, with a message naming the clause. The default run keeps the cheap declaration
check; the whole-suite runs are in the slow lane (minutes each: every handle is a child).
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from dw_testing.selftest.killmatrix import KillMatrix, run_matrix, short_name
from dw_testing.selftest.runner import SuiteRun

ROOT = Path(__file__).resolve().parents[2]
TYPESCRIPT = ROOT / "examples" / "typescript"
HTTP = "dw_testing.selftest.http_objects:http_store"
TESTS_FAILED = 1
NESTING_TEST = "test_a_key_and_keys_beneath_it_coexist"
REFUSAL_TEST = "test_every_refused_key_shape_raises_invalid_key_on_every_operation"


def deno() -> str:
    found = shutil.which("deno")
    if found is None:
        pytest.skip("deno is not installed here; pip install '.[test]' installs it from PyPI")
    return found


def exec_target(script: str, *args: str) -> str:
    return "exec:" + shlex.join([deno(), "run", "-A", str(TYPESCRIPT / script), *args])


def run(stores: dict[str, str], *extra: str, profile: str = "ci") -> KillMatrix:
    built = run_matrix(stores, profile=profile, extra=extra, timeout=1800)
    assert built.exit_code in (0, TESTS_FAILED), (
        f"the suite run itself went wrong (pytest exit {built.exit_code}); rerun it: "
        f"{' '.join(built.command)}")
    return built


def not_passed(matrix: KillMatrix, name: str) -> dict[str, str]:
    outcomes = {short_name(t): matrix.outcomes.get((name, t), "MISSING") for t in matrix.tests}
    assert "PASS" in outcomes.values(), f"no test ran on {name}: {outcomes}"
    return {t: o for t, o in outcomes.items() if o not in ("PASS", "SKIP")}


def test_the_directory_store_is_held_to_nesting_and_refusals_only_when_it_declares_them(
    tmp_path: Path,
) -> None:
    stores = [exec_target("dir_store.ts", str(tmp_path / "a")),
              exec_target("dir_store.ts", str(tmp_path / "b"),
                          "--declare=nested_keys,refuses_bad_keys")]
    suite = SuiteRun(rootdir=tmp_path, stores=stores, report=tmp_path / "report.json",
                     profile="quick", scratch=tmp_path,
                     extra=("-k", f"{NESTING_TEST} or {REFUSAL_TEST}"))
    done = subprocess.run(suite.command(), cwd=tmp_path, env=suite.environment(),
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode in (0, TESTS_FAILED), done.stdout[-2000:]
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert report["stores"] == ["dir-ts", "dir-ts-2"], (
        "an exec: store is named by its handshake's store name")
    by_store: dict[str, dict[str, dict[str, str]]] = {}
    for test in report["tests"]:
        name = test["nodeid"].partition("::")[2].partition("[")[0]
        by_store.setdefault(test["store"], {})[name] = test
    undeclared = {n: t["outcome"] for n, t in by_store["dir-ts"].items()}
    assert undeclared == {NESTING_TEST: "SKIP", REFUSAL_TEST: "SKIP"}, (
        f"a store declaring neither promise was asked for them: {undeclared}")
    declared = by_store["dir-ts-2"]
    assert {n: t["outcome"] for n, t in declared.items()} == {
        NESTING_TEST: "FAIL", REFUSAL_TEST: "FAIL"}, (
        "a directory store declaring nesting and refusals must fail both tests")
    for test, clause, capability in ((NESTING_TEST, "C-KEY-3", "nested_keys"),
                                      (REFUSAL_TEST, "C-KEY-1", "refuses_bad_keys")):
        message = declared[test].get("message", "")
        assert clause in message and capability in message, (
            f"{test}: the failure must name {clause} and the declaration {capability}: "
            f"{message[:300]}")


@pytest.mark.slow
def test_the_three_lookalikes_pass_ci_under_the_defaults() -> None:
    with tempfile.TemporaryDirectory(prefix="dw-lookalikes-") as temp:
        stores = {"dir": exec_target("dir_store.ts", f"{temp}/dir"),
                  "map": exec_target("map_store.ts", f"{temp}/map"),
                  "http": HTTP}
        built = run(stores, "-m", "")
    for name in stores:
        bad = not_passed(built, name)
        assert not bad, (
            f"the {name} look-alike failed {bad}: the suite asks more than the engine needs")


@pytest.mark.slow
def test_the_http_store_passes_the_faulted_engine_and_history_tests_and_the_report_shows_the_faults(
    tmp_path: Path,
) -> None:
    run_ = SuiteRun(rootdir=tmp_path, stores=[HTTP], report=tmp_path / "report.json",
                    profile="ci", scratch=tmp_path,
                    extra=("--dw-network=lossy", "-k", "test_engine or histories"))
    done = subprocess.run(run_.command(), cwd=tmp_path, env=run_.environment(),
                          capture_output=True, text=True, timeout=3000, check=False)
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    bad = {t["nodeid"]: t["outcome"] for t in report["tests"]
           if t["outcome"] not in ("PASS", "SKIP")}
    assert not bad and done.returncode == 0, f"under lossy the HTTP store failed {bad}"
    met = report.get("faults_met", {}).get("http-ts", {})
    played = met.get("played", {})
    assert {"lost-reply", "cut-reply", "reset-before"} <= set(played), (
        f"the report does not show the faults met: {met}")
    assert sum(met.get("raised", {}).values()) > 0, (
        f"the HTTP store leaves its first call and cut reads unretried, yet no raised "
        f"call was reported: {met}")
    assert "calls raised" in done.stdout, "the terminal summary does not show the faults met"
