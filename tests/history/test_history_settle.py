"""The first pass (:mod:`dw_testing.history.settle`): every order it returns is legal, by a
replay that knows nothing of how the order was built; on the histories the checker meets it
finds one; where it finds none the checker still decides."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from history_calls import create, delete, get, one_key_histories, put
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from dw_testing.history import settle as settle_module
from dw_testing.history.checker import check_history, partition_by_key
from dw_testing.history.events import Operation
from dw_testing.history.generate import simulated_history
from dw_testing.history.patch import patch_key
from dw_testing.history.settle import settle


def broken_promise(ops: Sequence[Operation], optional: Sequence[bool],
                   order: Sequence[int]) -> str | None:
    """The first way ``order`` is not a legal order of ``ops``, or None."""
    flags = list(optional) or [False] * len(ops)
    if len(set(order)) != len(order):
        return "a call placed twice"
    placed = set(order)
    for n, op in enumerate(ops):
        if n not in placed and op.ret is not None and not flags[n]:
            return f"call {n} ({op.op}) returned an answer and was left out"
    state: bytes | None = None
    for n in order:
        op = ops[n]
        unknown = op.ret is None or flags[n]
        if op.op == "put":
            state = op.value
        elif op.op == "delete":
            state = None
        elif op.op == "get":
            if not unknown and op.result != state:
                return f"call {n} (get) answered {op.result!r} where the state was {state!r}"
        else:
            won = state is None
            if not unknown and op.result != won:
                return f"call {n} (put_if_absent) answered {op.result!r} on a key that was " + (
                    "absent" if won else "present")
            if won:
                state = op.value
    position = {n: k for k, n in enumerate(order)}
    for a in order:
        for b in order:
            end = ops[a].ret
            if end is not None and end < ops[b].call and position[a] > position[b]:
                return f"call {b} placed before call {a}, which returned before {b} began"
    return None


def histories() -> st.SearchStrategy[list[Operation]]:
    """Up to 9 calls on one key over 3 values; about one in six raised, some retried."""
    return one_key_histories(calls=9, last_call=14, raised_one_in=6, lengths=(0, 6),
                             values=(b"", b"x", b"y"))


@settings(max_examples=400, deadline=None)
@given(histories())
def test_every_order_it_returns_is_legal_and_it_never_passes_a_violation(
        history: list[Operation]) -> None:
    verdict = check_history(history).verdict
    patched = patch_key(history)
    for ops, optional in ((history, ()), (patched.ops, patched.optional)):
        order = settle(ops, optional)
        if order is not None:
            assert broken_promise(ops, optional, order) is None
            assert verdict == "ok"


@pytest.mark.parametrize(("processes", "overlap", "raised"),
                         [(4, 1, 0.0), (16, 10, 0.0), (16, 10, 0.05)])
def test_it_settles_nearly_every_key_of_the_histories_the_benchmark_checks(
        processes: int, overlap: int, raised: float) -> None:
    settled = searched = 0
    for seed in range(4):
        # 20 keys of about 300 calls each, as contended as the benchmark's keys.
        history = simulated_history(random.Random(seed), operations=6000,
                                    keys=[f"k{n}" for n in range(20)], processes=processes,
                                    overlap=overlap, indeterminate_rate=raised)
        for ops in partition_by_key(history).values():
            optional: list[bool] = []
            order = settle(ops)
            if order is None:  # as the checker does: patched, then once more
                patched = patch_key(ops)
                ops, optional = patched.ops, patched.optional
                order = settle(ops, optional)
            if order is None:
                searched += 1
                continue
            settled += 1
            assert broken_promise(ops, optional, order) is None
    assert searched <= (settled + searched) // 20, (
        f"{searched} keys of {settled + searched} were left to the search")


def test_the_replay_catches_each_broken_promise() -> None:
    history = [put("A", b"x", 0, 2), get("B", b"x", 3, 4), create("C", b"y", False, 5, 6),
               delete("D", 7, 8), get("E", None, 9, 10)]
    assert broken_promise(history, (), [0, 1, 2, 3, 4]) is None
    assert "twice" in str(broken_promise(history, (), [0, 1, 1, 2, 3, 4]))
    assert "left out" in str(broken_promise(history, (), [0, 1, 2, 3]))
    assert "get) answered" in str(broken_promise(history, (), [1, 0, 2, 3, 4]))
    assert "began" in str(broken_promise(history, (), [0, 2, 1, 3, 4]))
    assert "put_if_absent) answered" in str(broken_promise(history, (), [0, 1, 3, 2, 4]))


def test_where_it_finds_no_order_the_checker_still_decides() -> None:
    # Calls that begin and end at one stamp, all concurrent: the delete ending at 1 must
    # go between the two winning creates; the pass never takes that choice back (it only
    # reorders writes due together, or puts one in flight before them). Found by
    # Hypothesis; the search finds the order.
    history = [delete("p0", 0, 0), delete("p1", 0, 0), delete("p2", 0, 0),
               delete("p3", 0, 1), create("p4", b"", True, 1, 1), put("p5", b"", 1, 1),
               create("p6", b"", True, 1, 1), put("p7", b"", 1, 1)]
    assert settle(history) is None
    assert check_history(history).verdict == "ok"


def test_a_legal_history_with_concurrent_writes_due_together_is_settled() -> None:
    # A and B are due together before C begins; C reads A's value, so B goes first.
    history = [put("A", b"x", 0, 5), put("B", b"y", 1, 6), get("C", b"x", 7, 8)]
    order = settle(history)
    assert order is not None and order.index(1) < order.index(0)
    assert broken_promise(history, (), order) is None


def test_a_read_of_a_value_no_call_writes_ends_the_pass_without_going_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    went_back: list[int] = []
    monkeypatch.setattr(settle_module._Choice, "restore",
                        lambda self, run: went_back.append(1))
    # Two puts due together (a choice to go back to), then a read of a value nobody wrote.
    history = [put("A", b"x", 0, 5), put("B", b"y", 1, 6), get("C", b"x", 7, 8),
               get("D", b"never", 9, 10)]
    assert settle(history) is None
    assert went_back == []
    assert check_history(history).verdict == "violation"


def contended_keys() -> st.SearchStrategy[list[Operation]]:
    """One key of 20 to 120 calls from 3 to 8 processes overlapping heavily: the pass goes
    back there, where the small histories above rarely make it."""
    return st.builds(
        lambda seed, calls, processes, raised: simulated_history(
            random.Random(seed), operations=calls, keys=["k"], processes=processes,
            overlap=6, indeterminate_rate=raised),
        st.integers(0, 10**6), st.integers(20, 120), st.integers(3, 8),
        st.sampled_from([0.0, 0.05]))


def _wrong_order(history: list[Operation]) -> bool:
    """The pass returned an order the replay rejects."""
    for ops, optional in ((history, []), (patch_key(history).ops, patch_key(history).optional)):
        order = settle(ops, optional)
        if order is not None and broken_promise(ops, optional, order) is not None:
            return True
    return False


def _creates_on_a_held_key(self: Any, j: int, due: list[int], *, absent: bool = False) -> int:
    return _HELPER(self, j, due, absent=True)


def _due_calls_left_out(self: Any, due: list[int], writes: tuple[int, ...]) -> None:
    for j in due:
        self.done[j] = 1


def _going_back_keeps_the_state(self: Any, run: Any) -> None:
    state = run.state
    _RESTORE(self, run)
    run.state = state


def _going_back_keeps_what_was_placed(self: Any, run: Any) -> None:
    order, skipped, done = list(run.order), list(run.skipped), bytes(run.done)
    _RESTORE(self, run)
    run.order[:], run.skipped[:], run.done[:] = order, skipped, done


_HELPER = settle_module._Pass.helper
_RESTORE = settle_module._Choice.restore
WEAKENED: dict[str, tuple[Any, str, Callable[..., Any]]] = {
    "a create told True goes in on a held key": (
        settle_module._Pass, "helper", _creates_on_a_held_key),
    "calls due before the next one are left out": (
        settle_module._Pass, "flush", _due_calls_left_out),
    "going back keeps the calls placed since": (
        settle_module._Choice, "restore", _going_back_keeps_what_was_placed),
    "going back keeps the state it left": (
        settle_module._Choice, "restore", _going_back_keeps_the_state),
}


@pytest.mark.slow
@pytest.mark.parametrize("weakening", sorted(WEAKENED))
def test_weakening_the_pass_is_caught_by_the_replay(
        weakening: str, monkeypatch: pytest.MonkeyPatch) -> None:
    owner, name, weaker = WEAKENED[weakening]
    monkeypatch.setattr(owner, name, weaker)
    found = find(st.one_of(histories(), contended_keys()), _wrong_order,
                 settings=settings(max_examples=20_000, deadline=None, database=None,
                                   suppress_health_check=list(HealthCheck)))
    assert _wrong_order(found)
