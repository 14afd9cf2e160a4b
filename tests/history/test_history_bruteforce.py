"""The checker agrees with a brute-force search over every order on small random histories,
legal or not."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from dw_testing.history.checker import check_history
from dw_testing.history.events import Operation


def _legal_order(order: tuple[Operation, ...]) -> bool:
    state: bytes | None = None
    for op in order:
        if op.op == "put":
            state = op.value
        elif op.op == "delete":
            state = None
        elif op.op == "get":
            if not op.indeterminate and op.result != state:
                return False
        else:
            won = state is None
            if not op.indeterminate and op.result != won:
                return False
            if won:
                state = op.value
    return True


def _respects_real_time(order: tuple[Operation, ...]) -> bool:
    return not any(later.ret is not None and later.ret < earlier.call
                   for i, earlier in enumerate(order) for later in order[i + 1:])


def brute_force(history: list[Operation]) -> bool:
    """Some subset of the indeterminate calls plus all the others has a legal order."""
    required = [op for op in history if not op.indeterminate]
    optional = [op for op in history if op.indeterminate]
    for size in range(len(optional) + 1):
        for chosen in itertools.combinations(optional, size):
            for order in itertools.permutations([*required, *chosen]):
                if _respects_real_time(order) and _legal_order(order):
                    return True
    return False


@st.composite
def small_histories(draw: st.DrawFn) -> list[Operation]:
    history = []
    for i in range(draw(st.integers(0, 6))):
        op = draw(st.sampled_from(["put", "put_if_absent", "get", "delete"]))
        call = draw(st.integers(0, 12))
        ret = None if draw(st.integers(0, 5)) == 0 else call + draw(st.integers(1, 6))
        value = draw(st.sampled_from([b"", b"x", b"y"])) if op in ("put", "put_if_absent") \
            else None
        result: bool | bytes | None = None
        if ret is not None and op == "put_if_absent":
            result = draw(st.booleans())
        elif ret is not None and op == "get":
            result = draw(st.sampled_from([None, b"", b"x", b"y"]))
        history.append(Operation(f"p{i}", op, "k", value, result, call, ret,  # type: ignore[arg-type]
                                 "E" if ret is None else None))
    return history


@settings(max_examples=300, deadline=None)
@given(small_histories())
def test_checker_agrees_with_brute_force(history: list[Operation]) -> None:
    expected = "ok" if brute_force(history) else "violation"
    assert check_history(history).verdict == expected
