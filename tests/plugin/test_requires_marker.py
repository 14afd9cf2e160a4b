"""A dw_requires marker that names a capability the suite does not know stops the run."""

from __future__ import annotations

import pytest

MISSPELT = """
import pytest

@pytest.mark.dw_requires("cross_procss")
def test_needs_processes(dw_store):
    pass
"""


def test_a_misspelt_capability_is_a_usage_error_naming_the_test_and_the_known_names(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_mine=MISSPELT)
    result = pytester.runpytest("test_mine.py", "--dw-store=memory", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "*test_mine.py::test_needs_processes*dw_requires names unknown capability "
        "cross_procss; known: *cross_process*Fix the marker*",
    ])
    result.assert_outcomes()


def test_a_known_capability_runs_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mine=MISSPELT.replace("cross_procss", "cross_handle"))
    result = pytester.runpytest("test_mine.py", "--dw-store=memory", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
