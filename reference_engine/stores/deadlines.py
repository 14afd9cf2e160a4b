"""Deadlines for the object stores' calls: how long one call may take, all retries included.

A store call that meets a dead or blackholed endpoint must end with one clear error within
a bound the user can set (``deadline=`` in an ``s3://`` or ``gs://`` URI), not after a client
library's minutes of retries. Each attempt may take at most half the deadline to answer
(plus a short connect), which is far longer than any answer from a live server on a loaded
machine, so a correct store never fails by timing alone.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Iterator

from reference_engine.errors import StoreUnavailable

DEFAULT_DEADLINE_S = 20.0
MAX_CONNECT_S = 5.0


class DeadlinePassed(Exception):
    """Raised inside a client library's hook: no time is left for another attempt."""


def checked_deadline(value: float, service: str) -> float:
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise StoreUnavailable(
            f"{service} store deadline must be a positive number of seconds, e.g. deadline=20",
            op="open")
    return float(value)


def parse_deadline(text: str | None, service: str) -> float:
    """The ``deadline=`` URI option in seconds (default :data:`DEFAULT_DEADLINE_S`)."""
    if text is None:
        return DEFAULT_DEADLINE_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    return checked_deadline(value, service)


def attempt_read_s(deadline: float) -> float:
    """How long one attempt waits for an answer: half the deadline."""
    return deadline / 2


def attempt_connect_s(deadline: float) -> float:
    """How long one attempt waits to connect: a quarter of the deadline, at most 5 s."""
    return min(MAX_CONNECT_S, deadline / 4)


class CallDeadlines:
    """The deadline of the call each thread is in (calls on one handle may run in parallel)."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self._local = threading.local()

    @contextlib.contextmanager
    def started(self) -> Iterator[None]:
        """The deadline runs from here; a nested call keeps the outer call's deadline."""
        outer = getattr(self._local, "ends", None)
        if outer is None:
            self._local.ends = time.monotonic() + self.deadline
        try:
            yield
        finally:
            if outer is None:
                self._local.ends = None

    def remaining(self) -> float:
        """Seconds left for this thread's call (the whole deadline outside a call)."""
        ends = getattr(self._local, "ends", None)
        return self.deadline if ends is None else ends - time.monotonic()
