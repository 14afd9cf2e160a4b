"""The kill matrix through ``exec:``: broken stores behind the protocol are still caught.

Each mutant runs unchanged over records in shared files, one ``dw-store/1`` child per handle
(:mod:`dw_testing.selftest.mutants.over_exec`), so a pass would mean the parent side of the
protocol (pipelining, error kinds, handshake capabilities) hid a defect. The control, the
correct store over the same files and children, must pass the same tests.

The default run takes, per mutant, the test that kills it in the plain kill matrix; the
slow run takes the whole store-level suite.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dw_testing.selftest.killmatrix import KILLED, KillMatrix, build_matrix, run_matrix, short_name
from dw_testing.selftest.mutants import STORE_MUTANTS
from dw_testing.selftest.mutants.over_exec import CONTROL

OVER_EXEC = "dw_testing.selftest.mutants.over_exec"
# Each mutant, the part of the protocol path its defect crosses, and a test that must kill it.
EXEC_KILLS = {
    # Creates pipelined on one handle race in the child's threads; two handles are two
    # children racing on one file store.
    "check_then_write_create": "test_handles_racing_to_create_one_key_have_exactly_one_winner",
    # A false False must come back as false, not be smoothed over by the parent.
    "false_to_winner":
        "test_threads_racing_to_create_one_key_on_one_handle_have_exactly_one_winner",
    # The prefix travels as JSON text: matcher syntax must reach the store unchanged.
    "glob_matched_list": "test_list_treats_matcher_syntax_in_a_prefix_literally",
    # A reply of over a thousand keys, one line: a short list must not be padded or split.
    "first_page_list":
        "test_list_returns_every_key_under_a_prefix_holding_over_two_backend_pages",
    # A plain ValueError in the child is an error of no known kind: never invalid_key.
    "plain_value_error_for_bad_keys":
        "test_every_refused_key_shape_raises_invalid_key_on_every_operation",
    # An empty record is "" in base64, a missing one null: the two must stay apart.
    "empty_value_as_none": "test_missing_key_reads_none_and_an_empty_record_reads_empty_bytes",
}
# pytest's exit status when tests failed; any other non-zero status is a broken run.
TESTS_FAILED = 1


def target(name: str) -> str:
    return f"{OVER_EXEC}:{name}"


def rerun(name: str, test: str | None = None) -> str:
    """The command that reruns ``name`` behind exec: (on ``test`` only, if given)."""
    only = f" -k {test}" if test else " -m dw_store_contract"
    return f"pytest --dw-suite-only -p no:cacheprovider --dw-store={target(name)}{only}"


def run(names: list[str], *extra: str) -> KillMatrix:
    built = run_matrix({name: target(name) for name in names}, workers=None, extra=extra)
    assert built.exit_code in (0, TESTS_FAILED), (
        f"the suite run itself went wrong (pytest exit {built.exit_code}), so it proves "
        f"nothing; rerun it to see why: {' '.join(built.command)}"
    )
    return built


def survivors_message(matrix: KillMatrix, expected: dict[str, str]) -> str:
    lines = []
    for name, test in expected.items():
        outcomes = {matrix.outcomes.get((name, t)) for t in matrix.tests
                    if short_name(t).startswith(test)}
        if KILLED not in outcomes:
            lines.append(f"- {name} ({STORE_MUTANTS[name].defect_doc}) survived {test} "
                         f"behind exec: (outcomes {sorted(map(str, outcomes))}); rerun: "
                         f"{rerun(name, test)}")
    return "\n".join(lines)


def assert_control_passes(matrix: KillMatrix) -> None:
    outcomes = {short_name(t): matrix.outcomes.get((CONTROL, t)) for t in matrix.tests}
    bad = {t: o for t, o in outcomes.items() if o not in ("PASS", "SKIP")}
    assert not bad, (
        f"the correct store behind exec: did not pass {bad}: the harness, not a defect, "
        f"fails these tests, so the kills prove nothing; rerun: {rerun(CONTROL)}"
    )
    assert "PASS" in outcomes.values(), f"no test ran on the control: {outcomes}"


@pytest.fixture(scope="module")
def quick_matrix() -> Iterator[KillMatrix]:
    pattern = " or ".join(sorted(set(EXEC_KILLS.values())))
    built = run([CONTROL, *EXEC_KILLS], "-k", pattern)
    yield built
    print(f"\nexec kill matrix: {len(built.mutants)} stores x {len(built.tests)} tests "
          f"in {built.wall_seconds:.1f} s")


def test_each_mutant_behind_exec_fails_the_test_that_catches_it(
    quick_matrix: KillMatrix,
) -> None:
    assert {short_name(t).partition("[")[0] for t in quick_matrix.tests} == set(
        EXEC_KILLS.values()
    ), "the -k selection no longer matches the killing tests: a suite test was renamed"
    survivors = survivors_message(quick_matrix, EXEC_KILLS)
    assert not survivors, "these mutants passed behind exec:\n" + survivors


def test_the_correct_store_behind_exec_passes_the_same_tests(quick_matrix: KillMatrix) -> None:
    assert_control_passes(quick_matrix)


@pytest.mark.slow
def test_the_whole_store_suite_behind_exec_kills_every_mutant_and_passes_the_control() -> None:
    built = run([CONTROL, *EXEC_KILLS])
    assert_control_passes(built)
    survivors = [name for name in EXEC_KILLS if not built.killed_by(name)]
    assert not survivors, "these mutants passed the whole suite behind exec:\n" + "\n".join(
        f"- {name}: {STORE_MUTANTS[name].defect_doc}; rerun: {rerun(name)}"
        for name in survivors
    )


def test_a_survivor_or_a_harness_failure_is_reported_with_its_rerun_command() -> None:
    name, test = "glob_matched_list", EXEC_KILLS["glob_matched_list"]
    # UNKNOWN (the store or harness broke) is no kill: only a failing suite test is.
    report = {"tests": [
        {"nodeid": f"c/t.py::{test}[{name}]", "store": name, "outcome": "UNKNOWN"},
        {"nodeid": f"c/t.py::{test}[{CONTROL}]", "store": CONTROL, "outcome": "FAIL"},
    ]}
    built = build_matrix(report, [name, CONTROL])
    message = survivors_message(built, {name: test})
    assert f"- {name} " in message and "['UNKNOWN']" in message
    assert rerun(name, test) in message
    with pytest.raises(AssertionError, match=f"did not pass .*{test}.*FAIL"):
        assert_control_passes(built)
