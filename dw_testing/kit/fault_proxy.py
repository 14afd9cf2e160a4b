"""``FaultProxy``: a TCP proxy on loopback that breaks the wire between a client and a server.

It listens on a free loopback port, forwards every connection to an upstream address and
applies the faults a test sets, and changes, while it runs::

    with FaultProxy(("127.0.0.1", 5000), seed=7) as proxy:
        store = S3Store("bucket", endpoint_url=proxy.url())
        proxy.set_faults(Faults(lost_reply=0.1, reset_before=0.1))
        ...                               # calls meet lost replies and resets
        proxy.fail_next(3, "reset-before")  # the next three request chunks are reset
        proxy.clear()                     # faults stop; traffic flows again
        assert proxy.counters["lost-reply"] > 0

The faults, per chunk of request bytes read from the client:

``reset-before``
    reset the client's connection before the chunk is forwarded: the server never sees the
    request. Played only on a chunk that starts a request (no reply is awaited on the
    connection), so no server ever acts on a request cut short.
``lost-reply``
    forward the chunk, then reset the connection when the reply comes: the server acted,
    the client never hears it.
``cut-reply``
    forward the chunk, pass on half of the reply's first chunk, then reset.
``blackhole``
    read the chunk and everything after it, forward nothing, answer nothing, until the
    client gives up (also only where a request starts).

and on every chunk in either direction: ``latency_s`` plus up to ``jitter_s`` of delay, and
a ``bandwidth_bps`` cap. Which chunk meets which fault comes from the seed, the
connection's index and the chunk's index (``random.Random(f"{seed}:{connection}:{chunk}")``),
so the same run meets the same faults on the same connections. :attr:`FaultProxy.counters`
counts what the proxy did and :attr:`FaultProxy.events` lists each fault it played, with a
``time.monotonic_ns`` stamp that the history timeline places among the recorded calls.

The proxy runs its own asyncio loop on a daemon thread, so synchronous tests use it as they
would any server; :meth:`FaultProxy.stop` closes every connection it holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Literal

__all__ = ["AMBIGUOUS_FAULTS", "FAULT_KINDS", "FaultEvent", "FaultKind", "FaultProxy",
           "FaultProxyError", "Faults"]

FaultKind = Literal["reset-before", "lost-reply", "cut-reply", "blackhole"]
FAULT_KINDS: tuple[FaultKind, ...] = ("reset-before", "lost-reply", "cut-reply", "blackhole")
#: Faults after which the server may have acted on a request whose reply the client lost:
#: a call that met one may have been retried by its client (contract C-LOST-1).
AMBIGUOUS_FAULTS: frozenset[str] = frozenset({"lost-reply", "cut-reply"})
_REFUSALS: frozenset[str] = frozenset({"reset-before", "blackhole"})
CHUNK = 65536
START_TIMEOUT_S = 10.0


class FaultProxyError(RuntimeError):
    """The proxy could not start, or was asked for a fault it does not know."""


@dataclass(frozen=True)
class Faults:
    """What the proxy does to traffic: a probability per request chunk for each fault kind,
    and delays on every chunk. ``Faults()`` forwards everything untouched."""

    reset_before: float = 0.0
    lost_reply: float = 0.0
    cut_reply: float = 0.0
    blackhole: float = 0.0
    latency_s: float = 0.0
    jitter_s: float = 0.0
    bandwidth_bps: int | None = None

    def __post_init__(self) -> None:
        for name, p in self.probabilities().items():
            if not 0.0 <= p <= 1.0:
                raise FaultProxyError(f"Faults {name} probability must be in [0, 1], not {p}")
        if sum(self.probabilities().values()) > 1.0:
            raise FaultProxyError("Faults probabilities add up to more than 1; lower them")
        if self.latency_s < 0 or self.jitter_s < 0:
            raise FaultProxyError("Faults latency_s and jitter_s cannot be negative")
        if self.bandwidth_bps is not None and self.bandwidth_bps <= 0:
            raise FaultProxyError("Faults bandwidth_bps must be positive, or None for no cap")

    def probabilities(self) -> dict[FaultKind, float]:
        """Fault kind -> its probability per request chunk."""
        return {"reset-before": self.reset_before, "lost-reply": self.lost_reply,
                "cut-reply": self.cut_reply, "blackhole": self.blackhole}

    def kinds(self) -> list[FaultKind]:
        """The fault kinds this schedule can play (probability above zero)."""
        return [kind for kind, p in self.probabilities().items() if p > 0]


@dataclass(frozen=True)
class FaultEvent:
    """One fault the proxy played: its kind, the connection and request chunk it hit, and
    the ``time.monotonic_ns`` stamp at which it struck."""

    kind: FaultKind
    connection: int
    chunk: int
    stamp: int

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "connection": self.connection, "chunk": self.chunk,
                "stamp": self.stamp}


@dataclass
class _Shared:
    """State the test thread and the loop thread both touch, under one lock."""

    faults: Faults = field(default_factory=Faults)
    queued: list[FaultKind] = field(default_factory=list)
    counters: Counter[str] = field(default_factory=Counter)
    events: list[FaultEvent] = field(default_factory=list)


class FaultProxy:
    """A loopback TCP proxy to ``upstream`` that plays seeded faults (see the module doc).

    Use it as a context manager, or call :meth:`start` and :meth:`stop`.
    """

    def __init__(self, upstream: tuple[str, int], *, seed: int = 0,
                 host: str = "127.0.0.1", faults: Faults | None = None) -> None:
        self.upstream = upstream
        self.seed = seed
        self.host = host
        self._lock = threading.Lock()
        self._shared = _Shared(faults=faults or Faults())
        self._connections = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.Task[None]] = set()
        self._port = 0

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> FaultProxy:
        """Listen on a free port of ``host`` and serve on a daemon thread (idempotent)."""
        if self._thread is not None:
            return self
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                self._server = loop.run_until_complete(
                    asyncio.start_server(self._serve, self.host, 0, backlog=1024))
                self._port = self._server.sockets[0].getsockname()[1]
            except BaseException as exc:  # reported to start()'s caller below
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="dw-fault-proxy", daemon=True)
        self._thread.start()
        if not ready.wait(START_TIMEOUT_S) or failure:
            self._thread = None
            reason = type(failure[0]).__name__ if failure else "timeout"
            raise FaultProxyError(f"the fault proxy could not listen on {self.host} ({reason}); "
                                  "check loopback networking is available")
        return self

    def stop(self) -> None:
        """Close the listener and every connection, and end the loop thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return

        async def shut() -> None:
            if self._server is not None:
                self._server.close()
            for task in list(self._open):
                task.cancel()
            await asyncio.gather(*self._open, return_exceptions=True)

        with contextlib.suppress(RuntimeError, TimeoutError):
            asyncio.run_coroutine_threadsafe(shut(), loop).result(START_TIMEOUT_S)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(START_TIMEOUT_S)
        self._thread = None
        self._loop = None

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- where it listens ---------------------------------------------------------------------

    @property
    def address(self) -> tuple[str, int]:
        """(host, port) the proxy listens on; raises until it is started."""
        if not self._port:
            raise FaultProxyError("the fault proxy is not started; use it as a context "
                                  "manager or call start() first")
        return self.host, self._port

    def url(self, scheme: str = "http") -> str:
        """``http://127.0.0.1:<port>``: the upstream's URL as a client should now use it."""
        host, port = self.address
        return f"{scheme}://{host}:{port}"

    # -- what it does -------------------------------------------------------------------------

    def set_faults(self, faults: Faults) -> None:
        """Play ``faults`` from the next chunk on (connections open now included)."""
        with self._lock:
            self._shared.faults = faults

    @property
    def faults(self) -> Faults:
        """The fault rates and delays in force now."""
        with self._lock:
            return self._shared.faults

    def fail_next(self, count: int, kind: FaultKind) -> None:
        """The next ``count`` request chunks meet ``kind``, ahead of the probabilities."""
        if kind not in FAULT_KINDS:
            raise FaultProxyError(f"unknown fault {kind!r}; known: {', '.join(FAULT_KINDS)}")
        with self._lock:
            self._shared.queued.extend([kind] * count)

    def clear(self) -> None:
        """No more faults: forget queued ones and forward everything (counters are kept)."""
        with self._lock:
            self._shared.faults = Faults()
            self._shared.queued.clear()

    @contextlib.contextmanager
    def playing(self, faults: Faults) -> Iterator[FaultProxy]:
        """``with proxy.playing(Faults(...)):`` faults inside the block, none after it."""
        self.set_faults(faults)
        try:
            yield self
        finally:
            self.clear()

    @property
    def counters(self) -> Mapping[str, int]:
        """``connections``, ``chunks`` (request chunks read), ``delayed`` and one count per
        fault kind played."""
        with self._lock:
            return dict(self._shared.counters)

    @property
    def events(self) -> list[FaultEvent]:
        """Every fault played so far, in the order it struck."""
        with self._lock:
            return list(self._shared.events)

    def faults_hit(self) -> set[str]:
        """The fault kinds played at least once so far."""
        return {kind for kind in FAULT_KINDS if self.counters.get(kind, 0) > 0}

    # -- the loop thread ----------------------------------------------------------------------

    def _count(self, name: str) -> None:
        with self._lock:
            self._shared.counters[name] += 1

    def _decide(self, connection: int, chunk: int,
                starts_request: bool) -> tuple[FaultKind | None, float, Faults]:
        """The fault (if any) and the delay for request chunk ``chunk`` of ``connection``;
        a chunk that continues a request is never refused (reset-before, blackhole)."""
        with self._lock:
            faults = self._shared.faults
            queue = self._shared.queued
            queued = None
            if queue and (starts_request or queue[0] not in _REFUSALS):
                queued = queue.pop(0)
            self._shared.counters["chunks"] += 1
        draw = random.Random(f"{self.seed}:{connection}:{chunk}")
        roll, delay_roll = draw.random(), draw.random()
        kind: FaultKind | None = queued
        if kind is None:
            edge = 0.0
            for candidate, p in faults.probabilities().items():
                edge += p
                if roll < edge:
                    kind = candidate
                    break
            if kind in _REFUSALS and not starts_request:
                kind = None
        return kind, faults.latency_s + faults.jitter_s * delay_roll, faults

    def _played(self, kind: FaultKind, connection: int, chunk: int) -> None:
        with self._lock:
            self._shared.counters[kind] += 1
            self._shared.events.append(
                FaultEvent(kind, connection, chunk, time.monotonic_ns()))

    async def _serve(self, client_r: asyncio.StreamReader,
                     client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._open.add(task)
        with self._lock:
            connection = self._connections
            self._connections += 1
            self._shared.counters["connections"] += 1
        try:
            try:
                upstream_r, upstream_w = await asyncio.open_connection(*self.upstream)
            except OSError:
                self._count("upstream-refused")
                _reset(client_w)
                return
            await _Pipe(self, connection, client_r, client_w, upstream_r, upstream_w).run()
        except asyncio.CancelledError:
            _reset(client_w)
        finally:
            self._open.discard(task)


class _Pipe:
    """One proxied connection: request chunks upstream, reply chunks back, faults between."""

    def __init__(self, proxy: FaultProxy, connection: int,
                 client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter,
                 upstream_r: asyncio.StreamReader, upstream_w: asyncio.StreamWriter) -> None:
        self.proxy = proxy
        self.connection = connection
        self.client_r, self.client_w = client_r, client_w
        self.upstream_r, self.upstream_w = upstream_r, upstream_w
        self.pending_reply: tuple[FaultKind, int] | None = None  # lost-reply or cut-reply
        self.reply_draw = random.Random(f"{proxy.seed}:{connection}:replies")
        self.awaiting_reply = False  # request bytes went upstream and no reply came yet

    async def run(self) -> None:
        up = asyncio.ensure_future(self._requests())
        down = asyncio.ensure_future(self._replies())
        try:
            await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (up, down):
                task.cancel()
            await asyncio.gather(up, down, return_exceptions=True)
            _close(self.upstream_w)
            _close(self.client_w)

    async def _requests(self) -> None:
        chunk = 0
        while True:
            data = await self.client_r.read(CHUNK)
            if not data:
                with contextlib.suppress(OSError):
                    self.upstream_w.write_eof()
                await asyncio.Event().wait()  # the reply side ends the pipe
            kind, delay, faults = self.proxy._decide(self.connection, chunk,
                                                     not self.awaiting_reply)
            if kind == "reset-before":
                self.proxy._played(kind, self.connection, chunk)
                _reset(self.client_w)
                return
            if kind == "blackhole":
                self.proxy._played(kind, self.connection, chunk)
                while await self.client_r.read(CHUNK):  # swallow until the client gives up
                    pass
                _reset(self.client_w)
                return
            if kind is not None:
                self.pending_reply = (kind, chunk)
            await _shape(len(data), delay, faults, self.proxy)
            self.awaiting_reply = True
            self.upstream_w.write(data)
            await self.upstream_w.drain()
            chunk += 1

    async def _replies(self) -> None:
        while True:
            data = await self.upstream_r.read(CHUNK)
            if not data:
                return
            self.awaiting_reply = False
            if self.pending_reply is not None:
                kind, chunk = self.pending_reply
                self.proxy._played(kind, self.connection, chunk)
                if kind == "cut-reply" and len(data) > 1:
                    self.client_w.write(data[: len(data) // 2])
                    with contextlib.suppress(ConnectionError):
                        await self.client_w.drain()
                _reset(self.client_w)
                return
            faults = self.proxy.faults
            delay = faults.latency_s + faults.jitter_s * self.reply_draw.random()
            await _shape(len(data), delay, faults, self.proxy)
            self.client_w.write(data)
            await self.client_w.drain()


async def _shape(size: int, delay: float, faults: Faults, proxy: FaultProxy) -> None:
    """Sleep the chunk's latency and what the bandwidth cap costs for ``size`` bytes."""
    if faults.bandwidth_bps:
        delay += size / faults.bandwidth_bps
    if delay > 0:
        proxy._count("delayed")
        await asyncio.sleep(delay)


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP RST (SO_LINGER 0), as a dropped connection looks to the client."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def _close(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(Exception):
        writer.close()
