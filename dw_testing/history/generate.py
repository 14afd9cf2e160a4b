"""Synthetic concurrent histories that are linearizable by construction.

Each simulated process issues calls one after another; every call takes effect at one
instant inside its interval, and results come from applying the calls to the one-key
model in that order. Used by the checker's property tests and by the benchmark.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from dw_testing.history.events import Operation, OpName

_OPS: tuple[OpName, ...] = ("put", "put_if_absent", "get", "delete")
_WEIGHTS = (2, 3, 4, 1)


@dataclass
class _Pending:
    process: str
    op: OpName
    key: str
    value: bytes | None
    call: int
    point: int
    ret: int
    indeterminate: bool
    applies: bool


def simulated_history(rng: random.Random, *, operations: int, keys: Sequence[str],
                      processes: int = 4, overlap: int = 3,
                      indeterminate_rate: float = 0.0) -> list[Operation]:
    """``operations`` calls over ``keys`` from ``processes`` processes.

    ``overlap`` scales how long a call lasts relative to the gap between calls, so larger
    values mean more concurrency. An indeterminate call applies or not at random.
    """
    pending: list[_Pending] = []
    per_process = [operations // processes + (1 if p < operations % processes else 0)
                   for p in range(processes)]
    for p, count in enumerate(per_process):
        clock = rng.randrange(1, 1000)
        for i in range(count):
            op = rng.choices(_OPS, _WEIGHTS)[0]
            value = f"p{p}-{i}".encode() if op in ("put", "put_if_absent") else None
            if value is not None and rng.random() < 0.05:
                value = b""
            call = clock + rng.randrange(1, 100)
            length = rng.randrange(1, 100 * overlap + 2)
            point = call + rng.randrange(0, length)
            ret = call + length
            clock = ret
            indeterminate = rng.random() < indeterminate_rate
            pending.append(_Pending(f"p{p}", op, rng.choice(keys), value, call, point, ret,
                                    indeterminate, not indeterminate or rng.random() < 0.5))
    state: dict[str, bytes | None] = {}
    history: list[Operation] = []
    # Distinct linearization instants: ties broken by a random order, fixed per history.
    tiebreak = {id(p): rng.random() for p in pending}
    for item in sorted(pending, key=lambda p: (p.point, tiebreak[id(p)])):
        current = state.get(item.key)
        result: bool | bytes | None = None
        if item.applies:
            if item.op == "put":
                state[item.key] = item.value
            elif item.op == "put_if_absent":
                result = current is None
                if current is None:
                    state[item.key] = item.value
            elif item.op == "get":
                result = current
            else:
                state[item.key] = None
        history.append(Operation(
            item.process, item.op, item.key, item.value,
            None if item.indeterminate else result, item.call,
            None if item.indeterminate else item.ret,
            "TransientStoreError" if item.indeterminate else None,
        ))
    history.sort(key=lambda op: op.call)
    return history
