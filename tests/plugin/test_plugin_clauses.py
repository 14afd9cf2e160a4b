"""A ``dw_clause`` marker must name a clause of docs/contract.md; a typo stops the run."""

from __future__ import annotations

import pytest

from dw_testing.plugin.clauses import known_clause_ids

OWN_TESTS = """
import pytest


@pytest.mark.dw_clause("C-CREATE-2")
def test_cites_a_real_clause(dw_store):
    assert dw_store.put_if_absent("k", b"v") is True


@pytest.mark.dw_clause({cited!r})
def test_cites_another(dw_store):
    assert dw_store.get("nothing") is None
"""


def test_the_shipped_contract_defines_the_clauses_the_suite_cites() -> None:
    assert {"C-CREATE-2", "C-CREATE-3", "C-KEY-3", "C-ERR-2"} <= known_clause_ids()


def test_a_marker_naming_no_clause_is_a_usage_error_with_close_matches(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_own=OWN_TESTS.format(cited="C-CREATE-22"))
    result = pytester.runpytest("test_own.py", "--dw-store=memory")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "*test_own.py::test_cites_another[[]memory[]]: @pytest.mark.dw_clause('C-CREATE-22') "
        "names no clause of docs/contract.md (close matches: C-CREATE-2*",
    ])


def test_markers_naming_real_clauses_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_own=OWN_TESTS.format(cited="C-GET-1"))
    result = pytester.runpytest("test_own.py", "--dw-store=memory")
    result.assert_outcomes(passed=2)
