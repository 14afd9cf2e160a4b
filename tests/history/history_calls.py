"""Builders for hand-written one-key histories (stamps are small integers)."""

from __future__ import annotations

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
