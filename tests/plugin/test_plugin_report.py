"""--dw-report, capabilities per test, UNKNOWN, known deviations and the leftover-key check."""

from __future__ import annotations

import fnmatch
import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from dw_testing.plugin.deviations import KNOWN_DEVIATIONS, KnownDeviation, from_pyproject
from dw_testing.report.schema import REPORT_SCHEMA, worst
from dw_testing.report.writer import ReportBuilder

MIXED = """
import pytest
from dw_testing.history.checker import BudgetExhausted, CheckResult

DW_CAPABILITY = "put_if_absent"

@pytest.mark.dw_requires("cross_handle")
def test_passes(dw_store):
    dw_store.put("k", b"v")

@pytest.mark.dw_requires("cross_handle")
def test_fails_on_file(dw_store, dw_spec):
    assert dw_spec.name != "file", "file is broken here"

def test_module_default(dw_store):
    pass

@pytest.mark.dw_requires("put_if_absent", "cross_process")
def test_last_capability_counts(dw_store):
    pass

@pytest.mark.dw_engine
def test_engine_level(dw_store):
    pass

@pytest.mark.dw_requires("durable_reopen")
@pytest.mark.xfail(reason="documented gap", strict=True)
def test_expected_failure(dw_store):
    assert False

def test_out_of_budget(dw_store, dw_spec):
    if dw_spec.name == "memory":
        raise BudgetExhausted(CheckResult(verdict="unknown", detail="budget of 10 steps spent"))
"""


def _report(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    result = pytester.runpytest("test_mixed.py", "--dw-report=out/report.json", *args)
    return result, json.loads((pytester.path / "out" / "report.json").read_text())


def _outcomes(report: dict[str, Any], store: str) -> dict[str, str]:
    return {t["nodeid"].split("::")[1].split("[")[0]: t["outcome"]
            for t in report["tests"] if t["store"] == store}


def test_the_report_matches_its_schema_and_folds_outcomes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mixed=MIXED)
    result, report = _report(pytester, "--dw-store=memory", "--dw-store=file", "--dw-seed=7")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    jsonschema.validate(report, REPORT_SCHEMA)
    assert report["store"] == ["memory", "file"] and report["stores"] == ["memory", "file"]
    assert (report["profile"], report["seed"]) == ("ci", 7)
    assert _outcomes(report, "memory") == {
        "test_passes": "PASS", "test_fails_on_file": "PASS", "test_module_default": "PASS",
        "test_last_capability_counts": "SKIP", "test_engine_level": "PASS",
        "test_expected_failure": "SKIP", "test_out_of_budget": "UNKNOWN",
    }
    assert _outcomes(report, "file")["test_fails_on_file"] == "FAIL"
    assert _outcomes(report, "file")["test_expected_failure"] == "XFAIL"
    capability = {t["nodeid"].split("::")[1].split("[")[0]: t["capability"]
                  for t in report["tests"]}
    assert capability["test_passes"] == "cross_handle"
    assert capability["test_module_default"] == "put_if_absent"
    assert capability["test_last_capability_counts"] == "cross_process"
    assert capability["test_engine_level"] == "engine"
    by_store = report["by_store"]
    assert by_store["memory"]["cross_handle"]["outcome"] == "PASS"
    assert by_store["file"]["cross_handle"] == {
        "outcome": "FAIL", "failing": ["test_mixed.py::test_fails_on_file[file]"]}
    assert by_store["memory"]["put_if_absent"]["outcome"] == "UNKNOWN"
    assert by_store["memory"]["durable_reopen"]["outcome"] == "SKIP"
    assert by_store["file"]["durable_reopen"]["outcome"] == "XFAIL"
    assert report["capabilities"]["cross_handle"]["outcome"] == "FAIL"
    markdown = (pytester.path / "out" / "report.md").read_text()
    assert "| cross_handle | PASS | FAIL |" in markdown
    assert "- file: 1 FAIL, 5 PASS, 1 XFAIL" in markdown
    assert "UNKNOWN `test_mixed.py::test_out_of_budget[memory]`" in markdown


def test_unknown_fails_the_run_unless_allowed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mixed=MIXED)
    failing, _ = _report(pytester, "--dw-store=memory", "-k", "out_of_budget")
    assert failing.ret == pytest.ExitCode.TESTS_FAILED
    allowed, report = _report(pytester, "--dw-store=memory", "-k", "out_of_budget",
                              "--dw-allow-unknown", "-rs")
    assert allowed.ret == pytest.ExitCode.OK
    allowed.stdout.fnmatch_lines(["*UNKNOWN: *budget of 10 steps spent*"])
    assert [t["outcome"] for t in report["tests"]] == ["UNKNOWN"]


def test_engine_tests_report_under_the_engine_capability(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mixed="""
        import pytest

        @pytest.mark.dw_engine
        @pytest.mark.dw_requires("put_if_absent")
        def test_engine(dw_store):
            pass

        @pytest.mark.dw_store_contract
        def test_contract(dw_store):
            pass
    """)
    _, report = _report(pytester, "--dw-store=memory")
    assert sorted(report["capabilities"]) == ["contract", "engine"]
    assert report["store"] == "memory"


def test_under_xdist_the_controller_writes_the_whole_report(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mixed=MIXED)
    result = pytester.runpytest_subprocess(
        "test_mixed.py", "--dw-report=report.json", "--dw-store=memory", "--dw-store=file",
        "-n", "2", "-p", "no:cacheprovider",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    report = json.loads((pytester.path / "report.json").read_text())
    jsonschema.validate(report, REPORT_SCHEMA)
    assert len(report["tests"]) == 14
    assert report["by_store"]["file"]["cross_handle"]["outcome"] == "FAIL"
    assert set(report["leftovers"].values()) == {0}


@pytest.mark.parametrize(("store", "warning", "left"), [
    ("leaky_factory", "WARNING: store leaky_factory left 2 dwc- key(s) under dwc-*", 2),
    ("stubborn_provider", "WARNING: a store provider failed to stop: RuntimeError", 0),
], ids=["keys-a-store-fails-to-delete", "a-provider-that-fails-to-stop"])
def test_what_goes_wrong_at_the_end_is_a_warning_and_the_report_is_still_written(
    stores_module: pytest.Pytester, store: str, warning: str, left: int,
) -> None:
    stores_module.makepyfile(test_leak="""
        def test_writes(dw_store):
            dw_store.put("a/b", b"x")
            dw_store.put("c", b"y")
    """)
    result = stores_module.runpytest("test_leak.py", f"--dw-store=dwstores:{store}",
                                     "--dw-report=r.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([warning])
    assert json.loads((stores_module.path / "r.json").read_text())["leftovers"] == {store: left}


def test_each_test_gets_its_own_prefix_cleared_at_teardown(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_iso="""
        seen = []

        def test_first(dw_store, dw_raw_store):
            dw_store.put("k", b"1")
            seen.append(dw_store.prefix)
            assert dw_raw_store.list(dw_store.prefix) == [dw_store.prefix + "/k"]

        def test_second(dw_store, dw_raw_store):
            assert dw_store.prefix != seen[0]
            assert dw_store.prefix.rsplit("/", 1)[0] == seen[0].rsplit("/", 1)[0]
            assert seen[0].startswith("dwc-") and seen[0].split("/")[0].endswith("-main")
            assert dw_raw_store.list(seen[0]) == []
    """)
    pytester.runpytest("test_iso.py", "--dw-store=sqlite").assert_outcomes(passed=2)


# -- known deviations ------------------------------------------------------------------------


DEVIATING = """
def test_known_broken(dw_store):
    assert False, "the emulator overwrites"

def test_fixed_upstream(dw_store):
    pass

def test_unaffected(dw_store):
    pass
"""


def _deviation_toml(store: str, test: str, *, issue: int = 5, reason: str = "r",
                    **more: str | bool) -> str:
    """One ``[[tool.dw-testing.known-deviations]]`` table; ``more`` adds package, versions..."""
    fields = {"store": store, "test": test, "reference": f"https://example.org/issues/{issue}",
              "reason": reason, **more}
    # json.dumps writes these strings and booleans exactly as TOML wants them.
    return "\n[[tool.dw-testing.known-deviations]]\n" + "".join(
        f"{name} = {json.dumps(value)}\n" for name, value in fields.items())


def test_a_recorded_deviation_is_a_strict_xfail(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(
        _deviation_toml("memory", "test_dev::test_known_broken", issue=1, reason="overwrites")
        + _deviation_toml("memory", "*::test_fixed_upstream", issue=2, reason="was broken",
                          package="pytest", versions=">=1")
        + _deviation_toml("memory", "*::test_unaffected", issue=3,
                          reason="only on an old pytest", package="pytest", versions="<1"))
    pytester.makepyfile(test_dev=DEVIATING)
    result = pytester.runpytest("test_dev.py", "--dw-store=memory", "--dw-store=file", "-rfxX")
    result.assert_outcomes(passed=3, xfailed=1, failed=2)
    result.stdout.fnmatch_lines_random([
        "*test_known_broken[[]memory[]]*known deviation of memory: overwrites*issues/1*",
        "*FAILED*test_fixed_upstream[[]memory[]]*",
        "*FAILED*test_known_broken[[]file[]]*",
    ])


def test_a_malformed_deviation_entry_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[[tool.dw-testing.known-deviations]]\nstore = "memory"\n')
    result = pytester.runpytest("--dw-store=memory")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*missing reason, reference, test*"])


def test_deviation_entries_are_tied_to_an_installed_version() -> None:
    pinned = KnownDeviation(store="s", test="m::t*", reference="r", reason="x",
                            package="pytest", versions="<1")
    unpinned = KnownDeviation(store="s", test="m::t*", reference="r", reason="x")
    absent = KnownDeviation(store="s", test="m::t*", reference="r", reason="x",
                            package="no-such-distribution-dw")
    assert unpinned.applies_to("s", "m::test_a", "x.py::test_a[s]")
    assert not unpinned.applies_to("other", "m::test_a", "x.py::test_a[other]")
    assert not unpinned.applies_to("s", "m::other", "x.py::other[s]")
    assert not pinned.applies_to("s", "m::test_a", "x.py::test_a[s]")
    assert not absent.applies_to("s", "m::test_a", "x.py::test_a[s]")


def test_the_built_in_registry_names_known_stores_and_upstream_references() -> None:
    from dw_testing.plugin.catalogue import builtin_names

    assert {d.store for d in KNOWN_DEVIATIONS} <= set(builtin_names())
    for deviation in KNOWN_DEVIATIONS:
        assert deviation.reference.startswith("https://")
        if deviation.package is None:  # a service's own limit, not a bug of a version
            assert "1024 bytes" in deviation.reason and "test_keys_of_exactly_1024" in (
                deviation.test)
        else:
            # An emulator's bug is keyed on its probe, not on a version string, which a
            # patch release that keeps the bug would make stop applying.
            assert deviation.probe is not None and not deviation.versions.startswith("=="), (
                deviation)
    assert from_pyproject(None) == []


PROBED_PROVIDER = """
import contextlib, os
from reference_engine.stores.memory import MemoryStore
from dw_testing.kit.spec import StoreSpec

@contextlib.contextmanager
def provider():
    # The fake emulator's probe answer comes from the environment.
    shown = frozenset(filter(None, os.environ.get("FAKE_PROBE", "").split(",")))
    yield StoreSpec(factory=lambda: MemoryStore("probed"), name="probed", emulator_bugs=shown)
"""


@pytest.mark.parametrize("bug_shown", [True, False])
def test_a_probed_deviation_applies_exactly_when_its_probe_shows_the_bug(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, bug_shown: bool,
) -> None:
    pytester.makepyprojecttoml(
        _deviation_toml("probed", "test_dev::test_known_broken", issue=7, reason="overwrites",
                        probe="fake-overwrite")
        + _deviation_toml("probed", "test_dev::test_fixed_upstream", issue=8,
                          reason="was broken", probe="fake-overwrite"))
    pytester.makepyfile(test_dev=DEVIATING, probed=PROBED_PROVIDER)
    pytester.syspathinsert()
    monkeypatch.setenv("FAKE_PROBE", "fake-overwrite" if bug_shown else "other-bug")
    result = pytester.runpytest("test_dev.py", "--dw-store=probed:provider", "-rfxX")
    if bug_shown:  # the broken test is excused; the passing one is a strict XPASS: red
        result.assert_outcomes(xfailed=1, failed=1, passed=1)
        result.stdout.fnmatch_lines_random([
            "*test_known_broken*shown by probe fake-overwrite*issues/7*",
            "*FAILED*test_fixed_upstream*XPASS(strict)*"])
    else:  # the probe says the bug is gone: nothing is excused
        result.assert_outcomes(failed=1, passed=2)
        result.stdout.fnmatch_lines(["*FAILED*test_known_broken*"])


# -- the report builder alone ------------------------------------------------------------------


def test_a_capability_takes_the_worst_outcome_in_the_documented_order() -> None:
    assert worst(["SKIP", "XFAIL"]) == "XFAIL"
    assert worst(["XFAIL", "PASS", "SKIP"]) == "PASS"
    assert worst(["PASS", "UNKNOWN"]) == "UNKNOWN"
    assert worst(["UNKNOWN", "FAIL", "PASS"]) == "FAIL"
    builder = ReportBuilder()
    builder.record("t", "s", "c", "PASS", "")
    builder.record("t", "s", "c", "FAIL", "teardown broke")
    builder.record("t", "s", "c", "PASS", "")
    assert [(r.outcome, r.reason) for r in builder.results] == [("FAIL", "teardown broke")]


def test_a_markdown_report_path_does_not_overwrite_itself(tmp_path: Path) -> None:
    from dw_testing.report.writer import write

    report = ReportBuilder().build(stores=["m"], profile="ci", seed=None)
    md = write(report, tmp_path / "r.md")
    assert md != tmp_path / "r.md"
    assert json.loads((tmp_path / "r.md").read_text())["schema"] == 1


def test_an_intermittent_deviation_tolerates_a_lucky_pass(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(_deviation_toml(
        "memory", "*::test_*", issue=4, reason="shows up under some thread timings",
        intermittent=True))
    pytester.makepyfile(test_dev=DEVIATING)
    result = pytester.runpytest("test_dev.py", "--dw-store=memory", "-rxX")
    result.assert_outcomes(xpassed=2, xfailed=1)
    result.stdout.fnmatch_lines(["*caught on some runs only*"])


def test_every_intermittent_bug_is_also_caught_strictly_somewhere() -> None:
    strict = {(d.store, d.reason) for d in KNOWN_DEVIATIONS if not d.intermittent}
    for deviation in KNOWN_DEVIATIONS:
        assert (deviation.store, deviation.reason) in strict, deviation


# No suite test creates through copy_object yet; the entry waits for one.
AWAITING_A_TEST = {"conformance.*::*copy_object*"}


def test_every_built_in_deviation_names_a_test_the_suite_has(pytester: pytest.Pytester) -> None:
    items, _ = pytester.inline_genitems("--dw-store=memory", "--dw-suite-only")
    functions = [item for item in items if isinstance(item, pytest.Function)]
    keys = {f"{item.module.__name__}::{item.originalname}" for item in functions}
    assert keys, "the suite collected nothing"
    for deviation in KNOWN_DEVIATIONS:
        if deviation.test in AWAITING_A_TEST:
            continue
        assert fnmatch.filter(keys, deviation.test), (
            f"{deviation.store} deviation {deviation.test!r} matches no suite test; a suite "
            "test was renamed, so update dw_testing/plugin/deviations.py")


def test_a_deviation_naming_no_suite_test_is_a_usage_error_with_close_matches(
    pytester: pytest.Pytester,
) -> None:
    # One letter off the real name: the entry would silently never apply.
    pytester.makepyprojecttoml(_deviation_toml(
        "memory", "conformance.test_store_create::test_create_after_delete_creates_the_kye_again"))
    result = pytester.runpytest("--dw-store=memory", "--dw-suite-only", "--co", "-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "*known-deviations entry #1 in pyproject.toml: test "
        "'conformance.test_store_create::test_create_after_delete_creates_the_kye_again' "
        "matches no test; close matches: "
        "conformance.test_store_create::test_create_after_delete_creates_the_key_again*",
    ])


def test_a_deviation_naming_no_store_is_a_usage_error_with_close_matches(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyprojecttoml(_deviation_toml("memroy", "conformance.test_store_create::*"))
    result = pytester.runpytest("--dw-store=memory", "--dw-suite-only", "--co", "-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*store 'memroy' is no known store; close matches: memory*"])


def test_a_deviation_matching_a_suite_test_or_a_collected_test_is_accepted(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyprojecttoml(
        _deviation_toml("memory", "conformance.test_store_create::test_create_after_*")
        + _deviation_toml("memory", "test_dev::test_known_broken"))
    pytester.makepyfile(test_dev=DEVIATING)
    result = pytester.runpytest("test_dev.py", "--dw-store=memory",
                                "-W", "error::pytest.PytestConfigWarning")
    result.assert_outcomes(passed=2, xfailed=1)


def test_a_deviation_for_an_uncollected_own_test_only_warns(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(_deviation_toml("memory", "tests.test_elsewhere::test_x"))
    pytester.makepyfile(test_dev=DEVIATING)
    result = pytester.runpytest("test_dev.py", "--dw-store=memory")
    result.stdout.fnmatch_lines(["*PytestConfigWarning*'tests.test_elsewhere::test_x' matches "
                                 "no test*"])


def test_a_race_failure_on_an_emulator_known_to_race_names_the_serialized_fixture(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytester.makepyfile(probed=PROBED_PROVIDER, test_race="""
        import pytest

        @pytest.mark.dw_clause("C-CREATE-2")
        def test_two_winners(dw_store):
            assert False, "2 of 2 concurrent creates returned True"
    """)
    pytester.syspathinsert()
    monkeypatch.setenv("FAKE_PROBE", "moto-dynamodb-race")
    result = pytester.runpytest("test_race.py", "--dw-store=probed:provider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*dw-testing emulator*",
        "*DynamoDB PutItem checks its ConditionExpression*serve_moto('serialized', service)*"])
    # No probe showed a race and no moto in this process: the store alone is blamed.
    monkeypatch.setenv("FAKE_PROBE", "")
    monkeypatch.delitem(sys.modules, "moto", raising=False)
    quiet = pytester.runpytest("test_race.py", "--dw-store=probed:provider")
    quiet.assert_outcomes(failed=1)
    assert "dw-testing emulator" not in quiet.stdout.str()
