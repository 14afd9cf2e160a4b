"""The start-up check: a store declared cross_process that a fresh interpreter cannot open
stops the run before any test, with one error naming the store and what to do."""

from __future__ import annotations

import pytest

STORES = '''
import contextlib
from reference_engine.stores.memory import MemoryStore
from dw_testing.kit.spec import StoreSpec


@contextlib.contextmanager
def _spec(uri):
    yield StoreSpec(factory=lambda: MemoryStore("startup-check"), uri=uri,
                    capabilities={"cross_process": True})


def misspelt_uri():
    return _spec("no_such_adapter:factory")


def no_uri():
    return _spec(None)


def secret_uri():
    return _spec("redis://user:hunter2@127.0.0.1:1/0")
'''


@pytest.mark.parametrize(("provider", "expected"), [
    ("misspelt_uri", "cannot open 'no_such_adapter:factory': "
                     "reference_engine.errors.StoreUnavailable: cannot import store"),
    ("no_uri", "its StoreSpec has no uri"),
    ("secret_uri", "cannot open its redis:// URI: "
                   "reference_engine.errors.StoreUnavailable: unknown store scheme 'redis'"),
])
def test_a_store_no_child_can_open_stops_the_run_with_one_error(
    pytester: pytest.Pytester, provider: str, expected: str,
) -> None:
    pytester.makepyfile(startup_stores=STORES)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--dw-store=startup_stores:{provider}", "--dw-suite-only",
        "--dw-profile=quick", "-k", "processes_racing_to_create or create_after_delete")
    output = "\n".join(result.outlines + result.errlines)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output[-2000:]
    assert output.count("declares cross_process") == 1, output[-2000:]
    assert f"store {provider}" in output and expected in output, output[-2000:]
    assert "hunter2" not in output
    assert " passed" not in output and " failed" not in output  # no test ran


def test_the_check_stays_out_of_a_run_without_cross_process_tests(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(startup_stores=STORES)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--dw-store=startup_stores:misspelt_uri", "--dw-suite-only",
        "--dw-profile=quick", "-k", "create_after_delete")
    result.assert_outcomes(passed=1)
