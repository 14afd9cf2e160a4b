"""A violation marks the fault, never a call that is legal in the full history.

Definitions (``dw_testing.history.explain``), for the calls ``H`` of one key:

* a sub-history ``S ⊆ H`` is *legal* when some order of it respects real time and the
  model, its indeterminate calls being optional (the brute force below, on every order);
* the marked calls ``F`` *cannot be placed together*: no legal ``S`` has ``F ⊆ S ⊆ H``;
* each marked call is *needed*: for every ``f`` in ``F``, some legal ``S ⊆ H`` holds
  ``F - {f}`` (so one call is marked alone only when it has no legal place at all);
* when some call has no legal place, the fault is one such call alone;
* the unmarked calls ``E`` *explain*: every marked call that has a legal place in ``H`` has
  one within ``{f}`` and ``E``.

Every report is checked against these, on hand-written histories and on random ones.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from itertools import combinations

import pytest
from history_calls import TORN_READ, create, delete, get, put
from hypothesis import given, settings
from test_history_bruteforce import brute_force, small_histories
from test_history_checker import ILLEGAL

from dw_testing.history import HistoryViolation, assert_linearizable
from dw_testing.history.budget import Budget, Meter
from dw_testing.history.checker import CheckResult, check_history
from dw_testing.history.events import Operation
from dw_testing.history.generate import simulated_history
from dw_testing.history.search import KeyHistory


def legal_subsets(history: Sequence[Operation]) -> set[frozenset[int]]:
    """Every legal sub-history of ``history``, as sets of indices (brute force)."""
    indices = range(len(history))
    return {frozenset(chosen) for size in range(len(history) + 1)
            for chosen in combinations(indices, size)
            if brute_force([history[i] for i in chosen])}


def reported(history: Sequence[Operation], result: CheckResult) -> tuple[set[int], set[int]]:
    """The marked calls and the unmarked ones, as indices into ``history``."""
    assert result.verdict == "violation"
    free = list(range(len(history)))
    places = []
    for op in result.violation:
        place = next(i for i in free if history[i] == op)
        free.remove(place)
        places.append(place)
    marked = {places[n] for n in result.marked}
    return marked, set(places) - marked


def assert_report_points_at_the_fault(history: Sequence[Operation]) -> None:
    keys = {op.key for op in history}
    assert len(keys) == 1, "one key at a time: the report is per key"
    result = check_history(history)
    fault, explainers = reported(history, result)
    legal = legal_subsets(history)
    assert fault, "a violation marks at least one call"
    assert all(not history[f].indeterminate for f in fault), \
        "an indeterminate call may be left out, so it is never the fault"
    assert not any(fault <= s for s in legal), "the marked calls can be placed together"
    for f in fault:
        assert any(fault - {f} <= s for s in legal), (
            f"marked call {history[f]} is not needed: the others cannot be placed without it")
    placeless = [c for c in range(len(history)) if not any(c in s for s in legal)]
    if placeless:
        assert len(fault) == 1 and fault <= set(placeless), (
            "a call with no legal place exists; it alone is the fault")
    for f in fault:
        if any(f in s for s in legal):
            assert any(f in s and s <= {f} | explainers for s in legal), (
                f"the unmarked calls do not explain how {history[f]} has a legal place")


@settings(max_examples=300, deadline=None)
@given(small_histories())
def test_every_report_points_at_the_fault(history: list[Operation]) -> None:
    if not brute_force(history):
        assert_report_points_at_the_fault(history)


@pytest.mark.parametrize("name", sorted(ILLEGAL))
def test_reports_of_the_illegal_histories_point_at_the_fault(name: str) -> None:
    assert_report_points_at_the_fault(ILLEGAL[name])


# (history, marked processes, unmarked processes)
NAMED = {
    "torn read beside a slow winning create and a losing create": (
        TORN_READ, {"B"}, {"A"}),
    "double winner, one after the other": (
        [create("A", b"v1", True, 0, 1), create("B", b"v2", True, 2, 3)], {"A", "B"}, set()),
    "double winner, overlapping, with a read of each": (
        [create("A", b"v1", True, 0, 5), create("B", b"v2", True, 1, 6),
         get("C", b"v1", 7, 8), get("D", b"v2", 9, 10)], {"A", "B"}, set()),
    "read of a deleted value": (
        [create("A", b"v1", True, 0, 1), delete("B", 2, 3), get("C", b"v1", 4, 5)],
        {"B", "C"}, {"A"}),
    "lost write: a completed create, then nothing there": (
        [create("A", b"v1", True, 0, 1), get("B", None, 2, 3)], {"A", "B"}, set()),
    "lost write: an overwritten value read back": (
        [put("A", b"v1", 0, 1), put("B", b"v2", 2, 3), get("C", b"v1", 4, 5)],
        {"B", "C"}, {"A"}),
    "a read of a value written only afterwards": (
        [get("A", b"v1", 0, 1), create("B", b"v1", True, 2, 3)], {"A"}, {"B"}),
    "a torn read after a losing create whose winner came long before": (
        [create("W", b"w", True, 0, 1), *(get(f"R{i}", b"w", 2 + 2 * i, 3 + 2 * i)
                                          for i in range(5)),
         create("L", b"x", False, 20, 21), get("T", b"ghost", 22, 23)],
        {"T"}, set()),
}


@pytest.mark.parametrize("name", sorted(NAMED))
def test_named_histories_mark_the_fault_and_show_what_explains_it(name: str) -> None:
    history, marked, plain = NAMED[name]
    result = check_history(history)
    assert result.verdict == "violation"
    assert {result.violation[i].process for i in result.marked} == marked
    assert {op.process for n, op in enumerate(result.violation)
            if n not in result.marked} == plain
    assert_report_points_at_the_fault(history)


def test_the_torn_read_is_the_fault_not_the_losing_create() -> None:
    with pytest.raises(HistoryViolation) as caught:
        assert_linearizable(TORN_READ)
    violation = caught.value
    assert [violation.ops[i].op for i in violation.marked] == ["get"]
    assert all(op.op != "put_if_absent" or op.result is not False for op in violation.ops)
    marked_rows = [line for line in str(violation).splitlines() if line.startswith(("▶", "*"))]
    assert len(marked_rows) == 1 and " get " in marked_rows[0]
    assert "the marked call has no legal place" in str(violation)
    assert "1 unmarked call ran while it did" in str(violation)


def test_the_message_says_the_marked_calls_cannot_be_placed_together() -> None:
    history, _, _ = NAMED["read of a deleted value"]
    with pytest.raises(HistoryViolation) as caught:
        assert_linearizable(history)
    text = str(caught.value)
    assert "the 2 marked calls cannot be placed together" in text
    assert "the 1 unmarked call shows how each marked call has a legal place" in text
    rows = [line for line in text.splitlines() if line[:1] in ("▶", "*", " ")]
    assert sum(line.startswith(("▶", "*")) for line in rows) == 2


def test_the_message_names_the_late_writer_of_a_read_value() -> None:
    history, _, _ = NAMED["a read of a value written only afterwards"]
    with pytest.raises(HistoryViolation) as caught:
        assert_linearizable(history)
    assert "the unmarked call after it wrote the value it read, but too late" in str(caught.value)


@pytest.mark.parametrize("beside", [8, 9])
def test_a_call_with_no_legal_place_shows_at_most_eight_calls_beside_it(beside: int) -> None:
    ghost = get("G", b"ghost", 100, 200)
    history = [ghost, *(put(f"W{i}", f"v{i}".encode(), 100 + i, 300 + i)
                        for i in range(beside))]
    result = check_history(history)
    assert [result.violation[i] for i in result.marked] == [ghost]
    plain = [op.process for n, op in enumerate(result.violation) if n not in result.marked]
    assert plain == [f"W{i}" for i in range(min(beside, 8))], "the nearest starts are kept"


def _oracle_checks_the_report(history: list[Operation]) -> None:
    """On a key too long for brute force, the plain search (checked against brute force
    on small keys) is the oracle: the fault is a conflict, each marked call is needed, and
    the unmarked calls explain each marked one."""
    result = check_history(history)
    assert result.verdict == "violation"
    calls = KeyHistory(history)
    index = {op: i for i, op in enumerate(calls.ops)}
    fault = [index[result.violation[n]] for n in result.marked]
    plain = [index[op] for n, op in enumerate(result.violation) if n not in result.marked]

    def placed(required: list[int], include: list[int] | None = None) -> bool:
        meter = Meter(Budget(max_steps=None, max_seconds=None))
        return calls.place(meter, required=calls.mask(required),
                           include=None if include is None else calls.mask(include))

    assert not placed(fault), "the marked calls can be placed together"
    for f in fault:
        assert placed([g for g in fault if g != f]), "a marked call is not needed"
        if len(fault) > 1:
            assert placed([f], [f, *plain]), "the unmarked calls do not explain a marked one"


@pytest.mark.parametrize("operations", [120, 400])
def test_reports_on_long_keys_point_at_the_fault(operations: int) -> None:
    rng = random.Random(f"long-key/{operations}")
    history = simulated_history(rng, operations=operations, keys=("k",), processes=6,
                                overlap=3)
    losers = [i for i, op in enumerate(history) if op.op == "put_if_absent"
              and op.result is False]
    # A loser told it won, late in the key (past the 256 calls up to which the checker first
    # tries a minimal violating sub-history): a second winner, unless a delete beside it
    # makes room (then try the next loser).
    for i in losers[len(losers) * 3 // 4:]:
        broken = list(history)
        broken[i] = Operation(history[i].process, "put_if_absent", "k", history[i].value,
                              True, history[i].call, history[i].ret)
        if check_history(broken).verdict == "violation":
            break
    else:
        pytest.fail("no second winner made this history illegal; change the seed")
    _oracle_checks_the_report(broken)
