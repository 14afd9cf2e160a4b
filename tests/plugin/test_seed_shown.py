"""Under ``-q`` (no header) the seed still shows: in the capability summary, and beside
every failure of a store test, with the options that replay it."""

from __future__ import annotations

import pytest

FAILING = """
def test_fails(dw_store):
    dw_store.put("k", b"v")
    assert dw_store.get("k") == b"other"

def test_passes(dw_store):
    dw_store.put("k", b"v")
"""


def test_the_seed_and_its_replay_options_show_under_quiet(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_seeded=FAILING)
    result = pytester.runpytest("-q", "test_seeded.py", "--dw-store=memory", "--dw-seed=4242",
                                "--dw-profile=quick")
    result.assert_outcomes(passed=1, failed=1)
    replay = "seed 4242, profile quick: replay with --dw-seed=4242 --dw-profile=quick"
    output = result.stdout.str()
    assert "dw-testing seed" in output  # the failure's own section
    assert output.count(replay) == 2, output  # beside the failure, and in the summary
    result.stdout.fnmatch_lines(["*dw-testing capabilities*", replay, "memory: contract FAIL"])


def test_a_passing_run_shows_the_seed_once_in_the_summary(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_seeded=FAILING)
    result = pytester.runpytest("-q", "test_seeded.py::test_passes", "--dw-store=memory",
                                "--dw-seed=7")
    result.assert_outcomes(passed=1)
    assert result.stdout.str().count("replay with --dw-seed=7 --dw-profile=ci") == 1
