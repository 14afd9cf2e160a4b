"""``FakeClock``: deadlines and lease ages that a test moves by hand."""

from __future__ import annotations

import math
import threading
from pathlib import Path

DEFAULT_EPOCH = 1_767_225_600.0  # 2026-01-01T00:00:00Z: far from 0 so bugs with 0 show up


class FakeClock:
    """Implements ``reference_engine.clock.Clock``; time moves only when a test says so.

    ``mirror_to`` keeps a ``DW_CLOCK`` file in step, so CLI processes started with
    ``DW_CLOCK=file:PATH`` see the same time.
    """

    def __init__(self, start: float = DEFAULT_EPOCH, *, mirror_to: Path | None = None) -> None:
        if not math.isfinite(start):
            raise ValueError(f"FakeClock(start={start}) needs a finite epoch time, "
                             "like 1767225600.0")
        self._now = float(start)
        self._lock = threading.Lock()
        self.mirror_to = mirror_to
        with self._lock:
            self._mirror()

    def now(self) -> float:
        with self._lock:
            return self._now

    def monotonic(self) -> float:
        return self.now()

    def advance(self, seconds: float) -> float:
        """Move time forward and return the new time; going back is refused."""
        if not seconds >= 0 or not math.isfinite(seconds):  # also refuses NaN
            raise ValueError(
                f"FakeClock.advance({seconds}) must move time forward by a finite amount; "
                "a monotonic clock never goes back. Build a new FakeClock(start=...) instead"
            )
        with self._lock:
            self._now += seconds
            # Under the lock, so concurrent advances reach the file in order.
            self._mirror()
            return self._now

    def _mirror(self) -> None:
        if self.mirror_to is not None:
            tmp = self.mirror_to.with_name(self.mirror_to.name + ".tmp")
            tmp.write_text(repr(self._now), encoding="utf-8")
            tmp.replace(self.mirror_to)

    @property
    def env(self) -> dict[str, str]:
        """The environment entry that makes a CLI process read this clock."""
        if self.mirror_to is None:
            raise RuntimeError(
                "FakeClock.env needs a file to share; build it as FakeClock(mirror_to=path)"
            )
        return {"DW_CLOCK": f"file:{self.mirror_to}"}
