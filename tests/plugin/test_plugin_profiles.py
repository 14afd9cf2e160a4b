"""--dw-profile and --dw-seed: per-test Hypothesis settings, never the user's global profile."""

from __future__ import annotations

import pytest
from hypothesis import settings

from dw_testing.plugin import profiles

COUNTING = """
from hypothesis import given, settings, strategies as st

calls = {"store": 0, "plain": 0}

@given(st.integers())
def test_store_property(dw_store, n):
    calls["store"] += 1

@given(st.integers())
def test_plain_property(n):
    calls["plain"] += 1

def test_counts():
    print("COUNTS", calls["store"], calls["plain"], settings._current_profile)
"""


@pytest.mark.parametrize("profile, examples", [("quick", 10), ("ci", 50)])
def test_the_profile_sets_the_effort_of_store_tests_only(
    pytester: pytest.Pytester, profile: str, examples: int
) -> None:
    pytester.makepyfile(test_counting=COUNTING)
    result = pytester.runpytest("-s", "-p", "no:randomly", "test_counting.py",
                                "--dw-store=memory", f"--dw-profile={profile}")
    result.assert_outcomes(passed=3)
    # The user's own @given test keeps Hypothesis' default of 100 and whatever profile was
    # current before (Hypothesis itself loads its "ci" profile when CI is set).
    users_profile = settings._current_profile
    result.stdout.fnmatch_lines([f"*COUNTS {examples} 100 {users_profile}*"])


def test_an_explicit_settings_decorator_wins(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_explicit="""
        from hypothesis import given, settings, strategies as st
        from dw_testing.plugin.profiles import dw_settings

        calls = []

        @settings(max_examples=3)
        @given(st.integers())
        def test_own(dw_spec, n):
            calls.append("own")

        @dw_settings(max_examples=4)
        @given(st.integers())
        def test_inherits(dw_store, n):
            calls.append("inherits")

        def test_counts():
            print("COUNTS", calls.count("own"), calls.count("inherits"))
    """)
    result = pytester.runpytest("-s", "test_explicit.py", "--dw-store=memory",
                                "--dw-profile=quick")
    result.stdout.fnmatch_lines(["*COUNTS 3 4*"])


SEEDED = """
import random
from hypothesis import given, strategies as st
from dw_testing.plugin.profiles import rng

@given(st.integers())
def test_record(dw_store, n):
    with open("drawn.txt", "a") as out:
        out.write(f"{n}\\n")

def test_rng(dw_store):
    with open("drawn.txt", "a") as out:
        out.write(f"rng {rng('x').random()} global {random.random()}\\n")
"""


def _drawn(pytester: pytest.Pytester, *args: str) -> str:
    drawn = pytester.path / "drawn.txt"
    drawn.unlink(missing_ok=True)
    pytester.runpytest("test_seeded.py", "--dw-store=memory", "--dw-profile=quick",
                       *args).assert_outcomes(passed=2)
    return drawn.read_text()


def test_a_seed_reproduces_the_examples_and_the_suite_s_randomness(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_seeded=SEEDED)
    first = _drawn(pytester, "--dw-seed=1234")
    assert first == _drawn(pytester, "--dw-seed=1234")
    assert first != _drawn(pytester, "--dw-seed=99")


def test_the_header_names_the_seed_to_reproduce_with(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_seeded=SEEDED)
    result = pytester.runpytest("test_seeded.py", "--dw-store=memory", "--dw-seed=55")
    result.stdout.fnmatch_lines(["dw-testing: stores memory; profile ci; seed 55 *--dw-seed=55*"])


def test_profiles_are_registered_under_dw_names_without_loading_them() -> None:
    from hypothesis import settings

    before = settings._current_profile
    profiles.register()
    assert settings.get_profile("dw-quick").max_examples == 10
    assert settings.get_profile("dw-thorough").max_examples > settings.get_profile(
        "dw-ci").max_examples
    assert settings.get_profile("dw-ci").database is None
    assert settings._current_profile == before


def test_methods_of_test_classes_get_the_profile_too(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_cls="""
        from hypothesis import given, strategies as st

        calls = []

        class TestStore:
            @given(st.integers())
            def test_property(self, dw_store, n):
                calls.append(n)

        def test_count():
            print("COUNT", len(calls))
    """)
    result = pytester.runpytest("-s", "test_cls.py", "--dw-store=memory", "--dw-profile=quick")
    result.stdout.fnmatch_lines(["*COUNT 10*"])
