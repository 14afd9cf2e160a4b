"""Concurrent random workloads that record a history against a real store.

Racers start together on a ``Barrier``. While threads race, the interpreter's switch
interval is shortened so threads interleave inside store calls far more often; that widens
the window in which a non-atomic store can be caught, without sleeping anywhere.
"""

from __future__ import annotations

import base64
import functools
import random
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from dw_testing.history.events import Operation, OpName, merge_histories
from dw_testing.history.recorder import HistoryLog, HistoryRecorder
from dw_testing.kit.procs import ChildTarget, run_in_children
from dw_testing.kit.together import run_together
from reference_engine.errors import StoreError

Step = tuple[OpName, str, bytes | None]
DEFAULT_KEYS: tuple[str, ...] = ("k0", "k1", "k2")


def plan(seed: int | str, process_id: str, count: int, keys: Sequence[str]) -> list[Step]:
    """A racer's calls, fixed by ``seed``. Every written value is unique (or ``b""``)."""
    rng = random.Random(f"{seed}/{process_id}")
    steps: list[Step] = []
    for i in range(count):
        op: OpName = rng.choices(("put_if_absent", "get", "put", "delete"), (4, 4, 1, 1))[0]
        value = None
        if op in ("put", "put_if_absent"):
            value = b"" if rng.random() < 0.05 else f"{process_id}:{i}".encode()
        steps.append((op, rng.choice(keys), value))
    return steps


def execute(store: HistoryRecorder, steps: Sequence[Step]) -> None:
    """Run ``steps``; a StoreError is already recorded as indeterminate, so carry on."""
    for op, key, value in steps:
        try:
            if op == "put":
                store.put(key, value or b"")
            elif op == "put_if_absent":
                store.put_if_absent(key, value or b"")
            elif op == "get":
                store.get(key)
            else:
                store.delete(key)
        except StoreError:
            continue


@contextmanager
def stressed_switching(interval: float = 1e-6) -> Iterator[None]:
    """Switch threads every ``interval`` seconds while inside the block."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(interval)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


def run_threads(open_handle: Callable[[], Any], *, racers: int = 4, calls: int = 40,
                keys: Sequence[str] = DEFAULT_KEYS, seed: int | str = 0) -> list[Operation]:
    """``racers`` threads, each on its own handle, run their planned calls at once.

    Handles come from ``open_handle`` and stay open: whoever hands out handles closes them
    (``dw_open_handle`` does at teardown).
    """
    log = HistoryLog()
    recorders = [HistoryRecorder(open_handle(), process_id=f"t{i}", log=log)
                 for i in range(racers)]
    racing = [functools.partial(execute, recorder, plan(seed, recorder.process_id, calls, keys))
              for recorder in recorders]
    with stressed_switching():
        run_together(racing)
    return log.operations()


def record_steps(store: Any, process_id: str, steps: Sequence[Sequence[Any]]) -> list[Any]:
    """Child-process side: run JSON-encoded ``steps`` on ``store``; the history as JSON rows."""
    decoded: list[Step] = [(op, key, None if value is None else base64.b64decode(value))
                           for op, key, value in steps]
    log = HistoryLog()
    execute(HistoryRecorder(store, process_id=process_id, log=log), decoded)
    return [op.to_json() for op in log.operations()]


def _encoded(steps: Sequence[Step]) -> list[list[Any]]:
    return [[op, key, None if value is None else base64.b64encode(value).decode("ascii")]
            for op, key, value in steps]


def run_processes(target: ChildTarget, *, racers: int = 3, calls: int = 40,
                  keys: Sequence[str] = DEFAULT_KEYS, seed: int | str = 0) -> list[Operation]:
    """``racers`` child processes, each on its own handle, start their calls together.

    Children run :func:`record_steps` through :mod:`dw_testing.kit.procs`; their rows are merged
    by stamp. Stamps are ``time.monotonic_ns``: one clock for the whole host on Linux.
    """
    args = [[f"c{i}", _encoded(plan(seed, f"c{i}", calls, keys))] for i in range(racers)]
    rows = run_in_children(target, record_steps, args)
    return merge_histories(*([Operation.from_json(row) for row in child] for child in rows))
