"""Each key is checked with a budget of its own: a key that runs out is UNKNOWN, and the
keys after it are still checked, so their violations are still reported.

The budget bounds the search; the first pass (:mod:`dw_testing.history.settle`) settles these
wide keys without one, so it is turned off here.
"""

from __future__ import annotations

import pytest
from history_calls import create, get

from dw_testing.history import checker
from dw_testing.history.budget import Budget
from dw_testing.history.checker import check_history
from dw_testing.history.events import Operation


@pytest.fixture(autouse=True)
def search_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checker, "settle", lambda ops, optional=(), columns=None: None)


def wide(key: str, calls: int = 12) -> list[Operation]:
    """Every create overlaps every other: many orders to consider, all legal."""
    history = [create(f"W{i}", f"v{i}".encode(), False, i, 10_000 + i, key=key)
               for i in range(calls)]
    history.append(create("Z", b"z", True, calls, 20_000, key=key))
    return history


def double_winner(key: str, reads: int) -> list[Operation]:
    history = [create("A", b"v1", True, 0, 1, key=key), create("B", b"v2", True, 2, 3, key=key)]
    history += [get(f"R{i}", b"v2", 4 + 2 * i, 5 + 2 * i, key=key) for i in range(reads)]
    return history


def steps_for(history: list[Operation]) -> int:
    result = check_history(history, budget=Budget(max_steps=None, max_seconds=None))
    assert result.verdict == "ok"
    return result.steps


def test_a_violation_after_an_exhausted_key_is_still_reported() -> None:
    # The wide key has fewer calls, so it is checked first, and runs out.
    history = [*wide("a"), *double_winner("b", reads=20)]
    result = check_history(history, budget=Budget(max_steps=20, max_seconds=None))
    assert result.verdict == "violation"
    assert result.key == "b"
    assert "key 'a'" in result.detail and "ran out of budget" in result.detail


def test_the_budget_is_per_key_at_the_limit_and_just_past_it() -> None:
    per_key = steps_for(wide("a"))
    history = [*wide("a"), *wide("b")]
    assert steps_for(history) == 2 * per_key
    at_limit = check_history(history, budget=Budget(max_steps=per_key, max_seconds=None))
    assert at_limit.verdict == "ok", "each key may spend the whole budget"
    past = check_history(history, budget=Budget(max_steps=per_key - 1, max_seconds=None))
    assert past.verdict == "unknown"
    assert "key 'a'" in past.detail and "key 'b'" in past.detail, (
        "both keys ran out, and both are named")


def test_unknown_keys_never_hide_behind_an_ok() -> None:
    history = [*wide("a"), get("C", None, 0, 1, key="b")]
    result = check_history(history, budget=Budget(max_steps=5, max_seconds=None))
    assert result.verdict == "unknown"
    assert "key 'a'" in result.detail and "key 'b'" not in result.detail
