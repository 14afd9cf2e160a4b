"""Parity with swamp's own conformance check, both ways (issue 27).

A store that lists as swamp's in-memory ``ControlPlaneStore`` does (every key starting with
the prefix string, in write order, declaring neither ``segment_prefixes`` nor
``sorted_list``) must pass the ``ci`` profile: in Python
(:mod:`dw_testing.selftest.swamp_like`) and in TypeScript through ``exec:``
(``examples/typescript/map_store.ts``). Our own TypeScript equivalents of the broken
stores swamp's self-test uses (``examples/typescript/broken/``: a create that overwrites;
a create that checks, yields, then writes; handles that do not share records; a list that
drops the trailing ``/`` and matches the name) must each fail it.

The default run keeps one fast representative of each side: the correct TypeScript store
and the slash-dropping list on the headline list test, and the Python store on the list
module. The slow run takes, per broken store, the test that kills it (the correct store on
the same tests), the Python store on the whole store-level suite, and everything on the
whole suite.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from dw_testing.selftest.killmatrix import KILLED, KillMatrix, run_matrix, short_name

ROOT = Path(__file__).resolve().parents[2]
TYPESCRIPT = ROOT / "examples" / "typescript"
CORRECT = "map_store"
SWAMP_LIKE = "dw_testing.selftest.swamp_like:swamp_like_store"
# Each broken TypeScript store, and a test that must kill it.
BROKEN = {
    "overwriting_create": "test_create_returns_true_once_then_false_and_never_the_value",
    "check_yield_write": "test_handles_racing_to_create_one_key_have_exactly_one_winner",
    "unshared_handles": "test_a_write_on_one_handle_is_read_at_once_on_another",
    "name_prefix_list":
        "test_list_of_a_slash_ending_prefix_returns_every_key_under_it_in_full",
}
TESTS_FAILED = 1


def script(name: str) -> Path:
    return TYPESCRIPT / (f"{name}.ts" if name == CORRECT else f"broken/{name}.ts")


def deno() -> str:
    import shutil

    found = shutil.which("deno")
    if found is None:
        pytest.skip("deno is not installed here; pip install '.[test]' installs it from PyPI")
    return found


def targets(root: Path) -> dict[str, str]:
    """Each TypeScript store as an ``exec:`` target over a fresh directory of its own."""
    binary = deno()
    return {name: "exec:" + shlex.join([binary, "run", "-A", str(script(name)),
                                        str(root / name)])
            for name in (CORRECT, *BROKEN)}


def run(stores: dict[str, str], *extra: str, profile: str = "ci") -> KillMatrix:
    built = run_matrix(stores, profile=profile, extra=extra)
    assert built.exit_code in (0, TESTS_FAILED), (
        f"the suite run itself went wrong (pytest exit {built.exit_code}), so it proves "
        f"nothing; rerun it: {' '.join(built.command)}")
    return built


def not_passed(matrix: KillMatrix, name: str) -> dict[str, str]:
    outcomes = {short_name(t): matrix.outcomes.get((name, t), "MISSING") for t in matrix.tests}
    assert "PASS" in outcomes.values(), f"no test ran on {name}: {outcomes}"
    return {t: o for t, o in outcomes.items() if o not in ("PASS", "SKIP")}


def survivors(matrix: KillMatrix) -> list[str]:
    return [f"- {name} survived {test}" for name, test in BROKEN.items()
            if not any(matrix.outcomes.get((name, t)) == KILLED
                       for t in matrix.tests if short_name(t).startswith(test))]


@pytest.fixture(scope="module")
def quick_matrix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KillMatrix]:
    stores = targets(tmp_path_factory.mktemp("ts-parity"))
    built = run(stores, "-k", " or ".join(sorted(set(BROKEN.values()))))
    yield built
    print(f"\nTypeScript parity: {len(built.mutants)} stores x {len(built.tests)} tests in "
          f"{built.wall_seconds:.1f} s")


def test_swamps_list_passes_and_a_slash_dropping_list_fails_through_exec(
    tmp_path: Path,
) -> None:
    stores = {name: target for name, target in targets(tmp_path).items()
              if name in (CORRECT, "name_prefix_list")}
    built = run(stores, "-k", BROKEN["name_prefix_list"])
    assert not not_passed(built, CORRECT), f"{script(CORRECT)} failed the core list clause"
    assert built.killed_by("name_prefix_list"), "a list matching 'r/list' for 'r/list/' passed"


def test_a_python_store_with_swamps_list_passes_the_list_tests_at_ci() -> None:
    built = run({"swamp_like_store": SWAMP_LIKE}, "-k", "test_store_list")
    assert not not_passed(built, "swamp_like_store")


@pytest.mark.slow
def test_each_broken_typescript_store_fails_the_test_that_catches_it(
    quick_matrix: KillMatrix,
) -> None:
    assert {short_name(t).partition("[")[0] for t in quick_matrix.tests} == set(
        BROKEN.values()), "the -k selection no longer matches the killing tests"
    left = survivors(quick_matrix)
    assert not left, "these broken stores passed through exec:\n" + "\n".join(left)


@pytest.mark.slow
def test_the_correct_typescript_store_passes_the_same_tests(quick_matrix: KillMatrix) -> None:
    bad = not_passed(quick_matrix, CORRECT)
    assert not bad, f"{script(CORRECT)} (swamp's list semantics) failed {bad}"


@pytest.mark.slow
def test_a_python_store_with_swamps_list_passes_the_store_suite_at_ci() -> None:
    built = run({"swamp_like_store": SWAMP_LIKE})
    bad = not_passed(built, "swamp_like_store")
    assert not bad, (
        f"a store listing by the raw prefix string, in write order, failed {bad}: the suite "
        "asks of it more than the core clause C-LIST-3")
    skipped = [short_name(t) for t in built.tests
               if built.outcomes.get(("swamp_like_store", t)) == "SKIP"]
    assert any("whole_segments" in t for t in skipped), (
        "the segment tests must skip on a store without segment_prefixes")


@pytest.mark.slow
def test_the_whole_suite_at_ci_passes_swamps_list_in_python_and_fails_each_broken_double(
    tmp_path: Path,
) -> None:
    built = run({**targets(tmp_path), "swamp_like_store": SWAMP_LIKE}, "-m", "")
    for name in (CORRECT, "swamp_like_store"):
        bad = not_passed(built, name)
        assert not bad, f"{name} failed {bad}"
    left = [name for name in BROKEN if not built.killed_by(name)]
    assert not left, f"these broken TypeScript stores passed the whole suite: {left}"
