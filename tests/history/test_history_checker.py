"""The checker on hand-written histories: illegal ones naive checks would pass, legal ones
with overlap and indeterminate calls, the budget, and the violation printout."""

from __future__ import annotations

import pytest

from dw_testing.history import checker
from dw_testing.history.checker import (
    Budget,
    BudgetExhausted,
    assert_linearizable,
    check_history,
)
from dw_testing.history.events import Operation


def create(process: str, value: bytes, won: bool, call: int, ret: int | None,
           key: str = "k") -> Operation:
    return Operation(process, "put_if_absent", key, value, None if ret is None else won,
                     call, ret, "TransientStoreError" if ret is None else None)


def put(process: str, value: bytes, call: int, ret: int | None, key: str = "k") -> Operation:
    return Operation(process, "put", key, value, None, call, ret,
                     "TransientStoreError" if ret is None else None)


def get(process: str, seen: bytes | None, call: int, ret: int | None,
        key: str = "k") -> Operation:
    return Operation(process, "get", key, None, seen, call, ret,
                     "TransientStoreError" if ret is None else None)


def delete(process: str, call: int, ret: int | None, key: str = "k") -> Operation:
    return Operation(process, "delete", key, None, None, call, ret,
                     "TransientStoreError" if ret is None else None)


# Each of these has exactly one winner per create "round" and only ever reads values that a
# winner wrote, so "one winner, readers see the winner" would call them fine.
ILLEGAL = {
    "old value read after a later delete and re-create": [
        create("A", b"v1", True, 0, 1), delete("B", 2, 3), create("C", b"v2", True, 4, 5),
        get("D", b"v1", 6, 7),
    ],
    "two creates both win, one after the other": [
        create("A", b"v1", True, 0, 1), create("B", b"v2", True, 2, 3),
    ],
    "two overlapping creates both win": [
        create("A", b"v1", True, 0, 5), create("B", b"v2", True, 1, 6),
    ],
    "a read returns a value nobody wrote": [
        create("A", b"v1", True, 0, 1), get("B", b"ghost", 2, 3),
    ],
    "a read sees nothing after a completed create, with no delete": [
        create("A", b"v1", True, 0, 1), get("B", None, 2, 3),
    ],
    "a stale read after a put": [
        put("A", b"v1", 0, 1), put("A", b"v2", 2, 3), get("B", b"v1", 4, 5),
    ],
    "a create loses on an empty key": [
        create("A", b"v1", False, 0, 1), get("B", None, 2, 3),
    ],
    "the winner is told False, no fault involved": [
        create("A", b"v1", False, 0, 1), get("B", b"v1", 2, 3),
    ],
    "reads go backwards during one long put": [
        put("A", b"v1", 0, 10), get("B", b"v1", 1, 2), get("B", None, 3, 4),
    ],
    "an indeterminate create cannot apply before it was invoked": [
        get("B", b"v1", 0, 1), create("A", b"v1", True, 2, None),
    ],
    "an indeterminate delete applies at most once": [
        create("A", b"v1", True, 0, 1), delete("B", 2, None), get("C", b"v1", 3, 4),
        get("C", None, 5, 6), get("C", b"v1", 7, 8),
    ],
    "a create wins over a record written by put": [
        put("A", b"v1", 0, 1), create("B", b"v2", True, 2, 3),
    ],
}

LEGAL = {
    "overlapping create and reads either side of it": [
        create("A", b"v1", True, 0, 5), get("B", None, 1, 2), get("B", b"v1", 3, 4),
    ],
    "two overlapping creates, one winner, read of the winner": [
        create("A", b"v1", False, 0, 5), create("B", b"v2", True, 1, 6), get("C", b"v2", 7, 8),
    ],
    "the later-invoked overlapping create may win": [
        create("A", b"v1", True, 2, 6), create("B", b"v2", False, 0, 5),
        get("C", b"v1", 7, 8),
    ],
    "an indeterminate create that did apply": [
        create("A", b"v1", True, 0, None), get("B", b"v1", 2, 3), create("C", b"v2", False, 4, 5),
    ],
    "an indeterminate create that did not apply": [
        create("A", b"v1", True, 0, None), get("B", None, 2, 3), create("C", b"v2", True, 4, 5),
        get("B", b"v2", 6, 7),
    ],
    "an indeterminate create that applied late, after a delete": [
        create("A", b"v1", True, 0, None), get("B", None, 1, 2), delete("C", 3, 4),
        get("B", b"v1", 5, 6),
    ],
    "an indeterminate delete that applied": [
        create("A", b"v1", True, 0, 1), delete("B", 2, None), get("C", b"v1", 3, 4),
        get("C", None, 5, 6),
    ],
    "delete and re-create read in order": [
        create("A", b"v1", True, 0, 1), get("B", b"v1", 2, 3), delete("A", 4, 5),
        get("B", None, 6, 7), create("C", b"v2", True, 8, 9), get("B", b"v2", 10, 11),
    ],
    "empty values are records, not absence": [
        create("A", b"", True, 0, 1), get("B", b"", 2, 3), create("C", b"x", False, 4, 5),
    ],
    "keys are independent": [
        create("A", b"v1", True, 0, 1, key="a"), create("B", b"v1", True, 2, 3, key="a/b"),
        get("C", None, 4, 5, key="b"),
    ],
    "a delete of a missing key, then a create": [
        delete("A", 0, 1), create("B", b"v", True, 2, 3),
    ],
    "calls that touch end to start count as concurrent": [
        create("A", b"v1", True, 0, 3), get("B", None, 3, 4),
    ],
}


@pytest.mark.parametrize("name", sorted(ILLEGAL))
def test_illegal_history_is_a_violation(name: str) -> None:
    result = check_history(ILLEGAL[name])
    assert result.verdict == "violation", name


@pytest.mark.parametrize("name", sorted(LEGAL))
def test_legal_history_passes(name: str) -> None:
    result = check_history(LEGAL[name])
    assert result.verdict == "ok", name


def test_violation_is_shrunk_to_the_calls_that_matter() -> None:
    noise = [get(f"N{i}", None, 100 + 2 * i, 101 + 2 * i, key=f"other{i}") for i in range(20)]
    noise += [get("R", b"v1", 10 + 2 * i, 11 + 2 * i) for i in range(10)]
    history = [create("A", b"v1", True, 0, 1), create("B", b"v2", True, 40, 41), *noise]
    result = check_history(history)
    assert result.verdict == "violation"
    assert result.key == "k"
    assert {(op.process, op.op) for op in result.violation} == {
        ("A", "put_if_absent"), ("B", "put_if_absent")}


def test_shrinking_keeps_the_writer_of_a_stale_read() -> None:
    history = [put("A", b"v1", 0, 1), delete("B", 2, 3), put("C", b"v2", 4, 5),
               get("D", b"v1", 6, 7)]
    result = check_history(history)
    assert result.verdict == "violation"
    kept = {op.process for op in result.violation}
    # Without A the stale read would only look like a read of a value nobody wrote.
    assert {"A", "D"} <= kept


def test_printout_has_one_line_per_call_and_hides_values() -> None:
    secret = b"do-not-print-me"
    history = [create("proc-A", secret, True, 0, 1), create("proc-B", b"v2", True, 2, None),
               get("proc-C", None, 3, 4)]
    with pytest.raises(AssertionError) as caught:
        assert_linearizable(history)
    text = str(caught.value)
    assert "do-not-print-me" not in text
    lines = [line for line in text.splitlines() if "proc-" in line]
    assert len(lines) == 2
    assert any("proc-A" in line and "put_if_absent" in line and "True" in line
               and "[0, 1]" in line for line in lines)
    assert any("proc-C" in line and "get" in line and "None" in line for line in lines)


def test_printout_marks_indeterminate_calls() -> None:
    history = [get("B", b"v1", 0, 1), create("A", b"v1", True, 2, None)]
    with pytest.raises(AssertionError) as caught:
        assert_linearizable(history)
    assert "inf]" in str(caught.value)
    assert "raised TransientStoreError" in str(caught.value)


def _wide_legal_history(calls: int) -> list[Operation]:
    # Every call overlaps every other and every read sees nothing, so a search must
    # consider many orders of the creates.
    history = [create(f"W{i}", f"v{i}".encode(), False, i, 10_000 + i) for i in range(calls)]
    history.append(create("Z", b"z", True, calls, 20_000))
    return history


@pytest.fixture
def search_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The budget belongs to the search: skip the first pass, which settles these keys."""
    monkeypatch.setattr(checker, "settle", lambda ops, optional=(), columns=None: None)


def test_the_first_pass_settles_the_wide_history_without_a_search() -> None:
    result = check_history(_wide_legal_history(12), budget=Budget(max_steps=0))
    assert result.verdict == "ok"
    assert result.steps == 13  # one a call, placed in order


@pytest.mark.usefixtures("search_only")
def test_exhausted_budget_is_unknown_never_ok() -> None:
    result = check_history(_wide_legal_history(12), budget=Budget(max_steps=5))
    assert result.verdict == "unknown"
    assert "5 steps" in result.describe()


@pytest.mark.usefixtures("search_only")
def test_exhausted_budget_raises_budget_exhausted() -> None:
    with pytest.raises(BudgetExhausted) as caught:
        assert_linearizable(_wide_legal_history(12), budget=Budget(max_steps=5))
    assert caught.value.result.verdict == "unknown"
    assert not isinstance(caught.value, AssertionError)


@pytest.mark.usefixtures("search_only")
def test_time_budget_also_gives_unknown() -> None:
    result = check_history(_wide_legal_history(14), budget=Budget(max_steps=None,
                                                                   max_seconds=0.0))
    assert result.verdict in ("unknown", "ok")  # a tiny search may finish before the first read
    big = [create(f"W{i}", f"v{i}".encode(), False, i, 10_000 + i) for i in range(2000)]
    big.append(get("R", None, 0, 30_000))
    assert check_history(big, budget=Budget(max_steps=None, max_seconds=0.0)).verdict == "unknown"


@pytest.mark.usefixtures("search_only")
def test_the_same_wide_history_passes_with_enough_budget() -> None:
    assert check_history(_wide_legal_history(12)).verdict == "ok"


def test_empty_history_is_linearizable() -> None:
    assert check_history([]).verdict == "ok"
