"""Time, passed in. ``Clock`` gives wall time for records and monotonic time for leases."""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    def now(self) -> float:
        """Wall-clock time in epoch seconds, for deadlines and timestamps."""

    def monotonic(self) -> float:
        """A clock that never goes back, for lease ages on this host."""


class SystemClock:
    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


class FileClock:
    """Reads the current epoch seconds from a file on every call (``DW_CLOCK=file:PATH``).

    Tests move time for CLI processes by rewriting the file. Monotonic time follows the
    same reading but never goes back, even if the file is rewritten with an earlier time.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._latest = -math.inf
        self._lock = threading.Lock()

    def now(self) -> float:
        try:
            value = float(self.path.read_text(encoding="utf-8").strip())
        except (OSError, ValueError) as exc:
            raise ClockError(
                f"DW_CLOCK file {self.path} must hold epoch seconds, like 1767225600; "
                "write one, or unset DW_CLOCK"
            ) from exc
        if not math.isfinite(value):
            raise ClockError(
                f"DW_CLOCK file {self.path} holds a non-finite time; write epoch seconds, "
                "like 1767225600"
            )
        return value

    def monotonic(self) -> float:
        reading = self.now()
        with self._lock:
            self._latest = max(self._latest, reading)
            return self._latest


class ClockError(RuntimeError):
    """``DW_CLOCK`` names something that is not a readable clock file."""


def clock_from_env(environ: Mapping[str, str] | None = None) -> Clock:
    """The clock for a CLI process: ``DW_CLOCK=file:PATH``, else the system clock.

    The file is read once here, so a bad ``DW_CLOCK`` fails before any work starts.
    """
    env = os.environ if environ is None else environ
    spec = env.get("DW_CLOCK", "")
    if not spec:
        return SystemClock()
    if not spec.startswith("file:") or spec == "file:":
        raise ClockError("DW_CLOCK must look like file:/path/to/clock; unset it for real time")
    clock = FileClock(Path(spec[len("file:"):]))
    clock.now()
    return clock
