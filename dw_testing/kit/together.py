"""Start calls together: on threads (:func:`run_together`), or in child processes that
each open their own handle (:func:`run_in_children`, from :mod:`dw_testing.kit.procs`); and
watch a key while another thread writes it (:func:`observe_while`)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from dw_testing.kit.procs import run_in_children

__all__ = ["observe_while", "run_in_children", "run_together"]

T = TypeVar("T")
JOIN_TIMEOUT_SECONDS = 120.0


def run_together(calls: Sequence[Callable[[], T]]) -> list[T]:
    """Run every call on its own thread, released at once by a barrier; results in order.

    The first exception a call raised is re-raised here, after every thread ended.
    """
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)
    errors: list[BaseException] = []

    def runner(index: int, call: Callable[[], T]) -> None:
        try:
            barrier.wait()
            results[index] = call()
        except BaseException as exc:  # handed back to the test thread below
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=runner, args=(i, call), daemon=True)
               for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN_TIMEOUT_SECONDS)
    stuck = sum(thread.is_alive() for thread in threads)
    if stuck:
        raise AssertionError(f"{stuck} racing call(s) did not return within "
                             f"{JOIN_TIMEOUT_SECONDS:.0f} s; the store may deadlock")
    real = [e for e in errors if not isinstance(e, threading.BrokenBarrierError)]
    if real or errors:
        raise (real or errors)[0]
    return results


def observe_while(
    read: Callable[[], bytes | None],
    write: Callable[[], object],
    describe: Callable[[bytes | None], str],
) -> Counter[str]:
    """Read in a loop on one thread while ``write`` runs on another; how often each
    ``describe(value)`` was seen.

    The reader starts first and keeps reading until the write returned, then reads
    once more, so a write that leaves a wrong final record is seen too. Values are
    described as they arrive, so a long write never piles up copies of large records.
    """
    started = threading.Event()
    done = threading.Event()
    seen: Counter[str] = Counter()

    def reader() -> None:
        try:
            seen[describe(read())] += 1
        finally:
            started.set()
        while not done.is_set():
            seen[describe(read())] += 1

    def writer() -> None:
        started.wait(JOIN_TIMEOUT_SECONDS)
        try:
            write()
        finally:
            done.set()

    run_together([reader, writer])
    seen[describe(read())] += 1
    return seen
