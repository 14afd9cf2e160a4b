"""Builders for hand-written one-key histories (stamps are small integers)."""

from __future__ import annotations

from hypothesis import strategies as st

from dw_testing.history.events import Operation

RAISED = "TransientStoreError"


def create(process: str, value: bytes, won: bool, call: int, ret: int | None,
           key: str = "k") -> Operation:
    return Operation(process, "put_if_absent", key, value, None if ret is None else won,
                     call, ret, RAISED if ret is None else None)


def put(process: str, value: bytes, call: int, ret: int | None, key: str = "k") -> Operation:
    return Operation(process, "put", key, value, None, call, ret,
                     RAISED if ret is None else None)


def get(process: str, seen: bytes | None, call: int, ret: int | None,
        key: str = "k") -> Operation:
    return Operation(process, "get", key, None, seen, call, ret,
                     RAISED if ret is None else None)


def delete(process: str, call: int, ret: int | None, key: str = "k") -> Operation:
    return Operation(process, "delete", key, None, None, call, ret,
                     RAISED if ret is None else None)


# The three small histories the timeline's golden files draw, with their marked calls.
TORN_READ = [create("A", b"v1", True, 0, 10), get("B", b"", 1, 2),
             create("C", b"v2", False, 3, 4)]
DOUBLE_WINNER = [create("A", b"v1", True, 0, 1), create("B", b"v2", True, 2, 3)]
NEVER_RETURNED = [get("B", b"v1", 0, 1), create("A", b"v1", True, 2, None)]
GOLDEN = {
    "torn_read": (TORN_READ, (1,)),
    "double_winner": (DOUBLE_WINNER, (0, 1)),
    "never_returned": (NEVER_RETURNED, (0, 1)),
}


@st.composite
def one_key_histories(draw: st.DrawFn, *, calls: int, last_call: int, raised_one_in: int,
                      lengths: tuple[int, int], values: tuple[bytes, ...]) -> list[Operation]:
    """Up to ``calls`` calls on one key, begun by ``last_call``, lasting ``lengths``, over
    ``values``; one in ``raised_one_in`` raised, and a raised write sometimes copied, as a
    retry under C-LOST-1 leaves it."""
    history: list[Operation] = []
    for i in range(draw(st.integers(0, calls))):
        op = draw(st.sampled_from(["put", "put_if_absent", "get", "delete"]))
        call = draw(st.integers(0, last_call))
        raised = draw(st.integers(0, raised_one_in - 1)) == 0
        ret = None if raised else call + draw(st.integers(*lengths))
        value = draw(st.sampled_from(values)) if op in ("put", "put_if_absent") else None
        result: bool | bytes | None = None
        if ret is not None and op == "put_if_absent":
            result = draw(st.booleans())
        elif ret is not None and op == "get":
            result = draw(st.sampled_from([None, *values]))
        made = Operation(f"p{i}", op, "k", value, result, call, ret,  # type: ignore[arg-type]
                         RAISED if raised else None)
        history.append(made)
        if raised and op != "get" and draw(st.integers(0, 3)) == 0:
            history.append(made)
    return history
