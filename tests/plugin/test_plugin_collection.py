"""--dw-store parametrization, collection of the suite, and the no-op without --dw-store."""

from __future__ import annotations

import pytest

STORE_TESTS = """
import pytest

def test_plain():
    pass

def test_shares_records_across_handles(dw_store, dw_open_handle, dw_spec):
    dw_store.put("k", b"v")
    assert dw_open_handle().get("k") == b"v"
    assert dw_spec.factory().list("") != []
"""


def test_without_dw_store_the_run_is_untouched(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mine=STORE_TESTS)
    result = pytester.runpytest("-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_mine.py::test_shares_records_across_handles PASSED*"])
    result.stdout.no_fnmatch_line("*[[]memory[]]*")
    result.stdout.no_fnmatch_line("dw-testing:*")
    result.stdout.no_fnmatch_line("*dw-testing capabilities*")
    result.stdout.no_fnmatch_line("*conformance*")


def test_each_store_gets_its_own_copy_named_in_the_test_id(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mine=STORE_TESTS)
    result = pytester.runpytest(
        "-v", "test_mine.py", "--dw-store=memory", "--dw-store=file", "--dw-store=sqlite",
        "--dw-store=memory://", "--dw-store=file",
    )
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines_random([
        "*test_shares_records_across_handles[[]memory[]] PASSED*",
        "*test_shares_records_across_handles[[]file[]] PASSED*",
        "*test_shares_records_across_handles[[]sqlite[]] PASSED*",
        "*test_shares_records_across_handles[[]memory-2[]] PASSED*",
        "*test_plain PASSED*",
    ])


@pytest.mark.parametrize(("options", "left_out", "collected"), [
    (["test_mine.py"], "*test_store_*", "*2 tests collected*"),
    (["--dw-suite-only"], "*test_mine.py*", "*test_store_create.py::*"),
], ids=["explicit-paths-leave-out-the-suite", "suite-only-leaves-out-the-run-s-own-paths"])
def test_a_run_collects_either_its_own_paths_or_the_suite(
    pytester: pytest.Pytester, options: list[str], left_out: str, collected: str,
) -> None:
    pytester.makepyfile(test_mine=STORE_TESTS)
    result = pytester.runpytest("--co", "-q", "--dw-store=memory", *options)
    result.stdout.no_fnmatch_line(left_out)
    result.stdout.fnmatch_lines([collected])


def test_no_paths_add_the_whole_suite(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--co", "-q", "--dw-store=memory")
    result.stdout.fnmatch_lines(["*test_store_create.py::*[[]memory[]]*"])
    assert result.ret == 0


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_an_empty_directory_runs_the_suite(pytester: pytest.Pytester, workers: list[str]) -> None:
    result = pytester.runpytest_subprocess(
        "--dw-store=memory://", "-p", "no:cacheprovider", "-k", "test_store_create", *workers
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) >= 2, result.stdout.str()
    assert "failed" not in outcomes and "error" not in outcomes
    left = sorted(p.name for p in pytester.path.iterdir()
                  if p.name not in ("stdout", "stderr") and not p.name.startswith("runpytest-"))
    assert left == [], "a conformance run must leave no files in the user's directory"


def test_markers_are_registered_for_strict_markers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_marks="""
        import pytest

        @pytest.mark.dw_store_contract
        @pytest.mark.dw_engine
        @pytest.mark.dw_requires("put_if_absent")
        def test_marked():
            pass
    """)
    pytester.runpytest("--strict-markers").assert_outcomes(passed=1)


def test_the_suite_s_helper_modules_get_rewritten_asserts(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_rewrite="""
        import importlib
        from pathlib import Path

        import conformance
        from _pytest.assertion.rewrite import AssertionRewritingHook

        def test_helpers_are_rewritten():
            folder = Path(conformance.__file__).parent
            helpers = sorted(p.stem for p in folder.glob("*.py")
                             if not p.stem.startswith(("test_", "__")))
            assert helpers, "the suite has helper modules"
            module = importlib.import_module(f"conformance.{helpers[0]}")
            assert isinstance(module.__loader__, AssertionRewritingHook)
    """)
    result = pytester.runpytest_subprocess(
        "--dw-store=memory", "-p", "no:cacheprovider", "-k", "helpers_are_rewritten"
    )
    result.assert_outcomes(passed=1)
