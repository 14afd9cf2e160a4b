"""The store suite can fail: every store mutant is killed, and every test kills something.

One pytest subprocess runs the store-level suite against all mutants (quick profile);
the assertions share it through a module-scoped fixture.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dw_testing.kit.spec import StoreSpec
from dw_testing.selftest.killmatrix import (
    KillMatrix,
    build_matrix,
    run_kill_matrix,
    short_name,
    split_nodeid,
    unkillable_tests,
    unlisted_useless_tests,
)
from dw_testing.selftest.mutants import GENERATED_MUTANTS, STORE_MUTANTS
from reference_engine.stores.async_adapter import adapt_if_async
from reference_engine.stores.contract import close_store
from reference_engine.stores.registry import load_object

ROOT = Path(__file__).resolve().parents[2]
UNKILLABLE = ROOT / "docs" / "unkillable.md"
# Hand-broken stores and a test that must catch each (by test name prefix).
HAND_BROKEN = {
    "check_then_write_create": "test_threads_racing_to_create_one_key_on_one_handle",
    "in_place_create": "test_a_reader_during_a_large_create_sees_nothing_or_the_whole",
    "name_prefix_list": "test_list_never_returns_a_name_prefixed_sibling",
    "async_check_then_write_create":
        "test_coroutines_racing_to_create_one_key_on_one_loop_have_exactly_one_winner",
}
# Defects the suite once let through (issue 13), and the test that now catches each.
BLIND_SPOTS = {
    "glob_matched_list": "test_list_treats_matcher_syntax_in_a_prefix_literally",
    "empty_prefix_lists_nothing": "test_the_stores_own_list_of_the_empty_prefix_includes_every",
    "first_page_list": "test_list_returns_every_key_under_a_prefix_holding_over_two_backend",
    "truncated_long_segments": "test_segments_of_exactly_200_bytes_are_accepted_and_kept_apart",
    "cannot_nest_keys": "test_a_key_and_keys_beneath_it_coexist",
    # Corners of the input space (issue 34): a character or byte at one position only.
    "drops_trailing_percent":
        "test_keys_with_url_path_and_shell_characters_at_every_position_are_kept_exactly",
    "drops_leading_ff": "test_values_of_every_byte_class_at_every_position_read_back_byte_for",
}


@pytest.fixture(scope="module")
def matrix(record_testsuite_property: Callable[[str, object], None]) -> Iterator[KillMatrix]:
    built = run_kill_matrix()
    median = built.median_time_to_kill()
    # The figures land in --junit-xml output, and in the terminal with -s.
    record_testsuite_property("dw_self_test_wall_seconds", round(built.wall_seconds, 2))
    record_testsuite_property("dw_median_suite_seconds_to_kill", median)
    yield built
    print(f"\nkill matrix: {len(built.mutants)} mutants x {len(built.tests)} tests in "
          f"{built.wall_seconds:.1f} s; median suite time to kill a mutant "
          f"{'n/a' if median is None else f'{median:.3f} s'}")


def test_every_store_mutant_is_killed(matrix: KillMatrix) -> None:
    known = {**STORE_MUTANTS, **GENERATED_MUTANTS}
    assert set(matrix.mutants) == set(known)
    survivors = matrix.survivors()
    assert not survivors, "the store suite let these mutants pass:\n" + "\n".join(
        f"- {name}: {known[name].defect_doc}" for name in survivors
    )


@pytest.mark.parametrize("name", sorted({**STORE_MUTANTS, **GENERATED_MUTANTS}))
def test_the_first_line_of_a_red_run_names_the_cause_of_each_mutant(
    matrix: KillMatrix, name: str,
) -> None:
    # The diagnosis's first cause, or the first failure told when the judge explained none:
    # the clause of the defect's cause, not of the symptom a test happened to see.
    info = {**STORE_MUTANTS, **GENERATED_MUTANTS}[name]
    assert {info.cause_clause, *info.also_causes} <= set(info.clauses)
    blamed = matrix.blamed_clause(name)
    assert blamed in (info.cause_clause, *info.also_causes), (
        f"{name} ({info.defect_doc}) was first blamed on {blamed or 'no clause'}, not on the "
        f"clause of its cause, {info.cause_clause}"
    )


def test_every_generated_family_is_in_the_matrix_and_killed_by_the_model(
    matrix: KillMatrix,
) -> None:
    model = ("conformance/test_store_differential.py::"
             "test_every_answer_of_the_store_matches_the_model")
    families = {info.family for info in GENERATED_MUTANTS.values()}
    assert families == {"gen_key", "gen_list", "gen_value"}
    spared = [name for name in GENERATED_MUTANTS if matrix.outcomes.get((name, model)) != "FAIL"]
    assert not spared, f"the differential model let these generated mutants pass: {spared}"


def test_every_store_level_test_kills_a_mutant_or_is_listed_as_unkillable(
    matrix: KillMatrix,
) -> None:
    idle = unlisted_useless_tests(matrix, unkillable_tests(UNKILLABLE))
    assert not idle, (
        "these store-level tests failed on no mutant; add a mutant they catch, or list them "
        "in docs/unkillable.md with the reason no store defect can make them fail:\n"
        + "\n".join(idle)
    )


def test_the_suite_ran_every_test_on_every_mutant(matrix: KillMatrix) -> None:
    missing = [(m, short_name(t)) for m in matrix.mutants for t in matrix.tests
               if (m, t) not in matrix.outcomes]
    assert not missing, f"some tests never reported for some mutants: {missing[:5]}"
    assert len(matrix.tests) >= 25, "the store-level suite shrank or was not collected"


@pytest.mark.parametrize("mutant", sorted(HAND_BROKEN))
def test_a_hand_broken_store_fails_the_suite_where_expected(
    matrix: KillMatrix, mutant: str,
) -> None:
    killers = [short_name(t) for t in matrix.killed_by(mutant)]
    assert any(name.startswith(HAND_BROKEN[mutant]) for name in killers), (
        f"{mutant} was killed only by {killers}; {HAND_BROKEN[mutant]} must catch it"
    )


@pytest.mark.parametrize("mutant", sorted(BLIND_SPOTS))
def test_a_former_blind_spot_is_caught_by_its_test(matrix: KillMatrix, mutant: str) -> None:
    killers = [short_name(t) for t in matrix.killed_by(mutant)]
    assert any(name.startswith(BLIND_SPOTS[mutant]) for name in killers), (
        f"{mutant} was killed only by {killers}; {BLIND_SPOTS[mutant]} must catch it"
    )


def test_list_is_checked_on_a_store_that_cannot_nest_keys(matrix: KillMatrix) -> None:
    # The list tests write no key beneath another, so they judge list itself: on a store
    # whose only defect is nesting, every one of them passes.
    list_tests = [t for t in matrix.tests if t.startswith("conformance/test_store_list.py")]
    assert len(list_tests) >= 9
    failed = [short_name(t) for t in list_tests
              if matrix.outcomes.get(("cannot_nest_keys", t)) != "PASS"]
    assert not failed, f"these list tests depend on nested keys: {failed}"


def test_every_test_listed_as_unkillable_exists(matrix: KillMatrix) -> None:
    known = {short_name(t) for t in matrix.tests} | set(matrix.tests)
    stale = [t for t in unkillable_tests(UNKILLABLE) if t not in known
             and short_name(t) not in known]
    assert not stale, f"docs/unkillable.md lists tests that no longer exist: {stale}"


# -- the pieces, without a run ------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(STORE_MUTANTS))
def test_every_registered_mutant_is_a_provider_yielding_its_spec(name: str) -> None:
    info = STORE_MUTANTS[name]
    assert info.target == f"dw_testing.mutants:{name}"
    assert info.defect_doc and info.section in {"Create", "Read and write", "Delete", "List",
                                                "Keys"}
    with load_object(info.target)() as spec:
        assert isinstance(spec, StoreSpec)
        assert spec.name == name
        # As the plugin does: an async mutant's handles are driven on a loop of their own.
        first, second = adapt_if_async(spec.factory()), adapt_if_async(spec.factory())
        try:
            first.put("probe/k", b"v")
            assert first.get("probe/k") == b"v"
            second.delete("probe/k")
        finally:
            close_store(first)
            close_store(second)


def test_each_mutant_class_documents_its_one_defect() -> None:
    from dw_testing.selftest import mutants

    for name in STORE_MUTANTS:
        assert inspect.getdoc(getattr(mutants, name)), f"{name} has no docstring"


def test_split_nodeid_removes_only_the_store_part() -> None:
    base = "conformance/test_store_list.py::test_x"
    assert split_nodeid(f"{base}[name_prefix_list]", "name_prefix_list") == base
    assert split_nodeid(f"{base}[name_prefix_list-no-slash]", "name_prefix_list") == (
        f"{base}[no-slash]"
    )
    assert split_nodeid(f"{base}[no-slash-file]", "file") == f"{base}[no-slash]"


def test_build_matrix_finds_survivors_first_kills_and_idle_tests() -> None:
    report = {"tests": [
        {"nodeid": "c/t.py::test_b[m1]", "store": "m1", "outcome": "FAIL"},
        {"nodeid": "c/t.py::test_a[m1]", "store": "m1", "outcome": "FAIL"},
        {"nodeid": "c/t.py::test_a[m2]", "store": "m2", "outcome": "PASS"},
        {"nodeid": "c/t.py::test_b[m2]", "store": "m2", "outcome": "SKIP"},
        {"nodeid": "c/t.py::test_c[m1]", "store": "m1", "outcome": "PASS"},
        {"nodeid": "c/t.py::test_c[other]", "store": "other", "outcome": "FAIL"},
    ]}
    built = build_matrix(report, ["m1", "m2"], durations={"t::test_a[m1]": 0.5,
                                                        "t::test_b[m1]": 0.25})
    assert built.tests == ["c/t.py::test_a", "c/t.py::test_b", "c/t.py::test_c"]
    assert built.survivors() == ["m2"]
    assert built.first_kill("m1") == "c/t.py::test_a"
    assert built.tests_killing_nothing() == ["c/t.py::test_c"]
    assert built.time_to_kill("m1") == 0.25
    assert built.time_to_first_kill("m1") == 0.5
    assert unlisted_useless_tests(built, {"test_c": "why"}) == []


def test_build_matrix_maps_renamed_stores_by_their_order() -> None:
    report = {"stores": ["m-one", "m-two"], "tests": [
        {"nodeid": "c/t.py::test_a[m-one]", "store": "m-one", "outcome": "FAIL"},
        {"nodeid": "c/t.py::test_a[m-two]", "store": "m-two", "outcome": "PASS"},
    ]}
    built = build_matrix(report, ["m_one", "m_two"])
    assert built.tests == ["c/t.py::test_a"]
    assert built.survivors() == ["m_two"]


def test_unkillable_doc_entries_are_parsed(tmp_path: Path) -> None:
    doc = tmp_path / "unkillable.md"
    doc.write_text("# x\n\n- `a.py::test_q`: outside the entries section\n\n## Entries\n\n"
                   "Prose mentioning `b.py::test_r` is not an entry.\n"
                   "- `conformance/test_store_x.py::test_y`: no store defect can reach it\n"
                   "- `test_z[file]` - bare names work too\n\n## Notes\n\n- `test_n`: no\n")
    assert unkillable_tests(doc) == {
        "conformance/test_store_x.py::test_y": "no store defect can reach it",
        "test_z[file]": "bare names work too",
    }
