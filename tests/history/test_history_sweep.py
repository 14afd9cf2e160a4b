"""The sweep over reachable configurations decides exactly what every order decides.

On small histories with raised calls (copies of retried writes included), before and after
patching, it agrees with the brute-force reference (every order of every subset of the
optional calls), violations included; on larger random histories, raised calls and a changed
answer included, it agrees with the depth-first search it replaced as the verdict.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from test_history_patch import raised_histories, reference
from test_history_search import changed

from dw_testing.history.budget import Budget, Meter
from dw_testing.history.checker import check_history
from dw_testing.history.events import Operation
from dw_testing.history.generate import simulated_history
from dw_testing.history.patch import patch_key
from dw_testing.history.search import KeyHistory
from dw_testing.history.sweep import sweep

UNLIMITED = Budget(max_steps=None, max_seconds=None)


@settings(max_examples=300, deadline=None)
@given(raised_histories())
def test_the_sweep_agrees_with_every_order(history: list[Operation]) -> None:
    expected = reference(history)
    assert sweep(KeyHistory(history), Meter(UNLIMITED)) == expected
    patched = patch_key(history)
    assert sweep(KeyHistory(patched.ops, patched.optional), Meter(UNLIMITED)) == expected


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from([8, 20, 60]), st.integers(1, 8),
       st.integers(1, 10), st.sampled_from([0.0, 0.1, 0.3]), st.booleans())
def test_the_sweep_agrees_with_the_search_on_larger_histories(
        seed: int, size: int, processes: int, overlap: int, raised: float,
        change: bool) -> None:
    rng = random.Random(seed)
    history = simulated_history(rng, operations=size, keys=("k",), processes=processes,
                                overlap=overlap, indeterminate_rate=raised)
    if change:
        history = changed(history, rng)
    for calls in (KeyHistory(history),
                  KeyHistory(patch_key(history).ops, patch_key(history).optional)):
        assert sweep(calls, Meter(UNLIMITED)) == calls.place(Meter(UNLIMITED))


def test_a_hot_key_with_raised_calls_gets_a_verdict_with_the_default_budget() -> None:
    """10^3 calls on one key from 16 processes overlapping heavily, 5 % raised: linearizable
    by construction, so the default budget must say so (it once said UNKNOWN at 10^4)."""
    history = simulated_history(random.Random(2), operations=1000, keys=("k",),
                                processes=16, overlap=10, indeterminate_rate=0.05)
    assert check_history(history).verdict == "ok"


def test_a_failed_sweep_says_where_every_order_broke_down() -> None:
    history = [
        Operation("p0", "put", "k", b"a", None, 0, 1),
        Operation("p1", "get", "k", None, b"a", 2, 3),
        Operation("p0", "put", "k", b"b", None, 4, 5),
        Operation("p1", "get", "k", None, b"a", 6, 7),  # a is gone by then
        Operation("p0", "get", "k", None, b"b", 8, 9),
    ]
    calls = KeyHistory(history)
    progress: list[int] = []
    assert not sweep(calls, Meter(UNLIMITED), progress=progress)
    assert progress == [3], "the fourth call to return is where every order broke down"
