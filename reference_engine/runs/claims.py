"""The run claim: a lease built on ``put_if_absent`` alone (docs/explanation/engine.md).

Staleness is judged on the taker's own monotonic clock: a lease is stale when its
bytes stayed unchanged for ``ttl + grace``. That needs two looks at the same bytes, so a
:class:`ClaimBook` remembers ``(generation, bytes, first seen)`` per run for the life of
the engine. With ``patience`` a taker that sees an unknown lease waits for it (through
the injected ``sleeper``, so a test passes ``FakeClock.advance``), looking every
``min(ttl/3, 1 s)``: a beat proves the holder alive (``busy``), unchanged bytes for
``ttl + grace`` prove it dead (take over). A clock that does not move across a sleep
(a ``DW_CLOCK`` file nobody advances) ends the wait with ``busy``.

The holder beats at every save point (:meth:`Claim.ensure_held`) and, while a long step
runs, from a :meth:`Claim.keep_alive` thread. It stops, writing nothing more, once
``g+1`` exists or its last beat is older than ``ttl - grace``.
"""

from __future__ import annotations

import contextlib
import math
import os
import platform
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from reference_engine.clock import Clock, SystemClock
from reference_engine.records import keys
from reference_engine.records.claim import Lease, decode_lease
from reference_engine.records.decoding import Found
from reference_engine.records.io import create_then_read
from reference_engine.records.run_store import run_key_numbers
from reference_engine.refusals import Refusal
from reference_engine.runs.claim_looks import Looks

GRACE_FRACTION = 5  # grace = ttl / 5
POLL_SECONDS = 1.0  # a patient taker looks at a lease at least this often


def _generations(store: Any, run_id: str) -> list[int]:
    return run_key_numbers(store, keys.claims_prefix(run_id), keys.parse_claim_key, run_id)


def _busy(run_id: str, detail: str, next_step: str) -> Refusal:
    return Refusal("busy", f"Run {run_id} is busy: {detail}. {next_step}",
                   {"runId": run_id})


class Claim:
    """A held claim on one run, generation ``generation``."""

    def __init__(self, store: Any, clock: Clock, run_id: str, generation: int,
                 lease: Lease, beat_at: float) -> None:
        self.store = store
        self.clock = clock
        self.run_id = run_id
        self.generation = generation
        self.lease = lease
        self._last_beat = beat_at
        self._lock = threading.Lock()
        self.lost = False

    @property
    def ttl(self) -> float:
        return self.lease.ttl_ms / 1000.0

    @property
    def grace(self) -> float:
        return self.ttl / GRACE_FRACTION

    def _lose(self, why: str) -> Refusal:
        self.lost = True
        return _busy(self.run_id, f"this process lost its claim ({why}) and stopped writing",
                     f"See where the run stands: dw show {self.run_id}")

    def ensure_held(self) -> None:
        """Raise ``busy`` when the claim is lost; beat when a beat is due."""
        with self._lock:
            if self.lost:
                raise self._lose("lost earlier")
            age = self.clock.monotonic() - self._last_beat
            if age > self.ttl - self.grace:
                raise self._lose(f"no beat for {age:.1f}s")
            if any(g > self.generation for g in _generations(self.store, self.run_id)):
                raise self._lose("a newer generation took over")
            if age >= self.ttl / 3:
                self._beat_locked()

    def beat(self) -> None:
        with self._lock:
            if not self.lost:
                self._beat_locked()

    def _beat_locked(self) -> None:
        started = self.clock.monotonic()
        self.lease = self.lease.next_beat()
        self.store.put(keys.claim_key(self.run_id, self.generation), self.lease.encode())
        self._last_beat = started

    def release(self) -> None:
        """Mark the lease released, unless a newer generation already took the run."""
        with self._lock:
            if self.lost:
                return
            if any(g > self.generation for g in _generations(self.store, self.run_id)):
                self.lost = True
                return
            self.lease = self.lease.as_released()
            self.store.put(keys.claim_key(self.run_id, self.generation), self.lease.encode())
            self.lost = True  # released: nothing more may be written under it

    @contextlib.contextmanager
    def keep_alive(self) -> Iterator[None]:
        """Beat every ttl/3 of real time while a long step runs in this thread."""
        stop = threading.Event()

        def loop() -> None:
            while not stop.wait(self.ttl / 3):
                try:
                    self.beat()
                except Exception:  # the next save point reports the loss
                    return

        thread = threading.Thread(target=loop, name=f"beat-{self.run_id}", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()


class ClaimBook:
    """Takes claims for one engine and remembers the leases it has looked at."""

    def __init__(self, store: Any, clock: Clock, *, host: str | None = None,
                 ttl_ms: int = 30_000, sleeper: Callable[[float], object] | None = None,
                 patience: bool = True, looks_path: Path | None = None) -> None:
        if ttl_ms <= 0:
            raise ValueError(f"lease ttl {ttl_ms} ms must be positive")
        self.store = store
        self.clock = clock
        # platform.node() is the host name gethostname() gives, without importing socket
        # (a few ms of every dw resume); platform is loaded already (uuid imports it).
        self.host = host or platform.node()
        self.ttl_ms = ttl_ms
        self.sleeper = sleeper
        self.patience = patience and sleeper is not None
        self._looks = Looks(looks_path,
                            wall_clock_check=isinstance(clock, SystemClock) and
                            looks_path is not None)

    @property
    def ttl(self) -> float:
        return self.ttl_ms / 1000.0

    @property
    def grace(self) -> float:
        return self.ttl / GRACE_FRACTION

    def take(self, run_id: str, *, patience: bool | None = None) -> Claim:
        """Take the claim on ``run_id`` or refuse ``busy``."""
        wait = self.patience if patience is None else (patience and self.sleeper is not None)
        # Poll often enough to see a beat (every ttl/3) and no longer than a dead lease
        # needs to go stale, plus one beat interval of slack.
        interval = min(self.ttl / 3, POLL_SECONDS)
        polls = math.ceil((self.ttl + self.grace + self.ttl / 3) / interval) + 1
        for _ in range(polls + 3):
            generations = _generations(self.store, run_id)
            if not generations:
                return self._create(run_id, 1)
            g = generations[-1]
            raw = self.store.get(keys.claim_key(run_id, g))
            if raw is None:  # released and pruned between list and get; look again
                continue
            decoded = decode_lease(raw)
            if isinstance(decoded, Found) and decoded.record.released:
                return self._create(run_id, g + 1)
            verdict = self._judge(run_id, g, raw)
            if verdict == "stale":
                return self._create(run_id, g + 1)
            holder = decoded.record.host if isinstance(decoded, Found) else "an unknown host"
            refusal = _busy(run_id, f"another process on {holder} holds its claim",
                            f"Try again once it finishes, or after {self.ttl + self.grace:g}s "
                            "if that process died.")
            if verdict == "alive" or not wait or polls <= 0:
                raise refusal
            polls -= 1
            assert self.sleeper is not None
            before = self.clock.monotonic()
            self.sleeper(interval)
            if self.clock.monotonic() <= before:
                # A frozen clock (a DW_CLOCK file nobody moves) can never age a lease.
                raise refusal
        raise _busy(run_id, "its claim kept changing hands", "Try again.")

    def _judge(self, run_id: str, g: int, raw: bytes) -> str:
        return self._looks.judge(run_id, g, raw, self.clock.monotonic(),
                                 self.ttl + self.grace)

    def _create(self, run_id: str, g: int) -> Claim:
        lease = Lease(holder=str(uuid.uuid4()), host=self.host, pid=os.getpid(),
                      ttl_ms=self.ttl_ms)
        started = self.clock.monotonic()
        stored = create_then_read(self.store, keys.claim_key(run_id, g), lease.encode())
        decoded = decode_lease(stored)
        if isinstance(decoded, Found) and decoded.record.holder == lease.holder:
            self._looks.forget(run_id)
            return Claim(self.store, self.clock, run_id, g, lease, started)
        raise _busy(run_id, "another process took its claim at the same moment",
                    "Try again once it finishes.")
