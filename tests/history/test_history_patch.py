"""Patching calls with unknown results keeps every verdict: on small random histories,
violations included, the patched history is linearizable exactly when the recorded one is,
by a reference that tries every order of every subset. Weakening any one patch rule makes
the property fail (the slow kill matrix at the end)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest
from history_calls import one_key_histories
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from dw_testing.history import patch
from dw_testing.history.checker import check_history
from dw_testing.history.events import Operation
from dw_testing.history.patch import patch_key
from dw_testing.history.search import KeyHistory


def _legal(order: Sequence[tuple[Operation, bool]]) -> bool:
    """The one-key model; a call whose result is unknown is checked for its effect only."""
    state: bytes | None = None
    for op, unknown in order:
        if op.op == "put":
            state = op.value
        elif op.op == "delete":
            state = None
        elif op.op == "get":
            if op.result != state:
                return False
        else:
            won = state is None
            if not unknown and op.result != won:
                return False
            if won:
                state = op.value
    return True


def _in_real_time(order: Sequence[tuple[Operation, bool]]) -> bool:
    return not any(later.ret is not None and later.ret < earlier.call
                   for i, (earlier, _) in enumerate(order) for later, _ in order[i + 1:])


def reference(ops: Sequence[Operation], optional: Sequence[bool] = ()) -> bool:
    """Some subset of the optional calls (raised, or flagged) plus all the others has a
    legal order that respects real time."""
    flags = list(optional) or [False] * len(ops)
    calls = [(op, op.ret is None or flag) for op, flag in zip(ops, flags, strict=True)]
    required = [call for call in calls if not call[1]]
    maybe = [call for call in calls if call[1]]
    for size in range(len(maybe) + 1):
        for chosen in itertools.combinations(maybe, size):
            for order in itertools.permutations([*required, *chosen]):
                if _in_real_time(order) and _legal(order):
                    return True
    return False


def raised_histories() -> st.SearchStrategy[list[Operation]]:
    """Up to 6 calls on one key over 2 values, a third of them raised, some writes copied
    as a retry under C-LOST-1 leaves them."""
    return one_key_histories(calls=6, last_call=10, raised_one_in=3, lengths=(1, 5),
                             values=(b"x", b"y"))


def patched_agrees(history: list[Operation]) -> bool:
    patched = patch_key(history)
    return reference(history) == reference(patched.ops, patched.optional)


@settings(max_examples=250, deadline=None)
@given(raised_histories())
def test_patching_keeps_the_verdict_of_every_order(history: list[Operation]) -> None:
    patched = patch_key(history)
    expected = reference(history)
    assert reference(patched.ops, patched.optional) == expected
    # And the checker, which searches the patched history, agrees with the reference.
    assert check_history(history).verdict == ("ok" if expected else "violation")


def test_patching_leaves_no_write_unbounded_and_bounds_by_the_last_observer() -> None:
    # p1's raised put of x is observed by the gets of x that return at 9 and 20.
    history = [Operation("p1", "put", "k", b"x", None, 0, None, "E"),
               Operation("p0", "put", "k", b"x", None, 1, 2),
               Operation("p2", "get", "k", None, b"x", 5, 9),
               Operation("p3", "get", "k", None, b"x", 15, 20),
               Operation("p4", "put", "k", b"y", None, 16, None, "E")]  # nobody reads y
    patched = patch_key(history)
    assert [(op.process, op.ret, flag) for op, flag in
            zip(patched.ops, patched.optional, strict=True)] == [
        ("p1", 20, True), ("p0", 2, False), ("p2", 9, False), ("p3", 20, False)]
    assert KeyHistory(patched.ops, patched.optional).bounded == [0]


def test_a_read_value_with_one_raised_writer_makes_it_a_winner_ending_at_the_read() -> None:
    history = [Operation("p1", "put_if_absent", "k", b"x", None, 0, None, "E"),
               Operation("p2", "get", "k", None, b"x", 5, 9),
               Operation("p3", "get", "k", None, b"x", 3, 12)]
    patched = patch_key(history)
    assert patched.ops[0] == replace(history[0], result=True, ret=9)
    assert patched.optional == [False, False, False]


def _writes_forget_creates_told_false(value: bytes, read_end: dict[object, float],
                                      told_false_end: float) -> float:
    return read_end.get(value, -1)


def _writes_forget_reads(value: bytes, read_end: dict[object, float],
                         told_false_end: float) -> float:
    return told_false_end


def _deletes_forget_reads_of_nothing(read_end: dict[object, float],
                                     absent_end: float) -> float:
    return absent_end


def _deletes_forget_creates(read_end: dict[object, float], absent_end: float) -> float:
    return read_end.get(None, -1)


def _bounded_but_required(op: Operation, end: float) -> tuple[Operation, bool] | None:
    return None if end < op.call else (replace(op, ret=int(end)), False)


def _bounded_by_its_own_call(op: Operation, end: float) -> tuple[Operation, bool] | None:
    return None if end < op.call else (replace(op, ret=op.call), True)


def _any_writer(writers: set[Any]) -> bool:
    return True


def _applied_before_the_read_began(read: Operation) -> int:
    return read.call


WEAKENED: dict[str, tuple[str, Callable[..., Any]]] = {
    "rules 1-2: a create told False does not observe a write":
        ("_write_seen_until", _writes_forget_creates_told_false),
    "rules 1-2: a get of the value does not observe a write":
        ("_write_seen_until", _writes_forget_reads),
    "rules 1-2: a get of nothing does not observe a delete":
        ("_delete_seen_until", _deletes_forget_reads_of_nothing),
    "rules 1-2: a create does not observe a delete":
        ("_delete_seen_until", _deletes_forget_creates),
    "rule 2: a bounded call must apply": ("_bounded", _bounded_but_required),
    "rule 2: bounded by its invocation, not its last observer":
        ("_bounded", _bounded_by_its_own_call),
    "rule 3: any writer of a read value applied": ("_only_writer", _any_writer),
    "rule 3: applied before the first read began, not ended":
        ("_applied_until", _applied_before_the_read_began),
}


@pytest.mark.slow
@pytest.mark.parametrize("weakening", sorted(WEAKENED))
def test_weakening_any_patch_rule_breaks_the_property(
        weakening: str, monkeypatch: pytest.MonkeyPatch) -> None:
    name, weaker = WEAKENED[weakening]
    monkeypatch.setattr(patch, name, weaker)
    found = find(raised_histories(), lambda history: not patched_agrees(history),
                 settings=settings(max_examples=20_000, deadline=None, database=None,
                                   suppress_health_check=list(HealthCheck)))
    assert not patched_agrees(found)
