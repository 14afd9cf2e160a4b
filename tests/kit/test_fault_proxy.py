"""The fault proxy forwards untouched with no fault set, and plays each fault as documented."""

from __future__ import annotations

import socket
import socketserver
import threading
from collections.abc import Iterator

import pytest

from dw_testing import FaultProxy
from dw_testing.kit.fault_proxy import FaultProxyError, Faults

BLACKHOLE_WAIT_S = 0.3  # how long a client listens to a blackhole; it never answers anyway


class _Echo(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _EchoHandler)
        self.received: list[bytes] = []
        self.lock = threading.Lock()


class _EchoHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        server = self.server
        assert isinstance(server, _Echo)
        while data := self.request.recv(65536):
            with server.lock:
                server.received.append(data)
            self.request.sendall(b"echo:" + data)


@pytest.fixture
def echo() -> Iterator[_Echo]:
    server = _Echo()
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def proxy(echo: _Echo) -> Iterator[FaultProxy]:
    with FaultProxy(echo.server_address[:2], seed=11) as running:  # type: ignore[arg-type]
        yield running


def _round_trip(proxy: FaultProxy, data: bytes, *, timeout: float = 10.0) -> bytes:
    """Send ``data`` on a new connection and read until the reply is whole or the
    connection ends; a reset ends it as ``b""`` plus what came before."""
    with socket.create_connection(proxy.address, timeout=timeout) as conn:
        conn.sendall(data)
        want = len(b"echo:" + data)
        got = b""
        try:
            while len(got) < want:
                part = conn.recv(65536)
                if not part:
                    break
                got += part
        except ConnectionResetError:
            pass
        return got


def test_with_no_fault_set_every_byte_passes_both_ways(proxy: FaultProxy, echo: _Echo) -> None:
    assert _round_trip(proxy, b"hello") == b"echo:hello"
    assert echo.received == [b"hello"]
    assert proxy.counters["connections"] == 1
    assert proxy.faults_hit() == set()


def test_a_reset_before_forwarding_never_reaches_the_server(proxy: FaultProxy,
                                                            echo: _Echo) -> None:
    proxy.fail_next(1, "reset-before")
    assert _round_trip(proxy, b"lost") == b""
    assert echo.received == []
    assert proxy.counters["reset-before"] == 1
    assert _round_trip(proxy, b"next") == b"echo:next"


def test_a_lost_reply_reaches_the_server_and_the_client_hears_nothing(
    proxy: FaultProxy, echo: _Echo,
) -> None:
    proxy.fail_next(1, "lost-reply")
    assert _round_trip(proxy, b"applied") == b""
    assert echo.received == [b"applied"]
    assert [e.kind for e in proxy.events] == ["lost-reply"]


def test_a_cut_reply_passes_half_of_the_reply_then_resets(proxy: FaultProxy,
                                                          echo: _Echo) -> None:
    proxy.fail_next(1, "cut-reply")
    got = _round_trip(proxy, b"abcdefgh")
    assert got == b"echo:abcdefgh"[: len(b"echo:abcdefgh") // 2]
    assert echo.received == [b"abcdefgh"]


def test_a_blackhole_reads_and_never_answers(proxy: FaultProxy, echo: _Echo) -> None:
    proxy.set_faults(Faults(blackhole=1.0))
    with socket.create_connection(proxy.address, timeout=BLACKHOLE_WAIT_S) as conn:
        conn.sendall(b"anyone?")
        with pytest.raises(TimeoutError):
            conn.recv(10)
    assert echo.received == []
    assert proxy.counters["blackhole"] == 1


def test_the_schedule_comes_from_the_seed_connection_and_chunk(echo: _Echo) -> None:
    def played(seed: int) -> list[tuple[str, int]]:
        with FaultProxy(echo.server_address[:2], seed=seed,  # type: ignore[arg-type]
                        faults=Faults(reset_before=0.3, lost_reply=0.3)) as proxy:
            for n in range(20):
                _round_trip(proxy, b"call %d" % n)
            return [(e.kind, e.connection) for e in proxy.events]

    first = played(5)
    assert first == played(5)
    assert first != played(6)
    assert {kind for kind, _ in first} == {"reset-before", "lost-reply"}


def test_faults_change_while_it_runs_and_stop_when_cleared(proxy: FaultProxy) -> None:
    with proxy.playing(Faults(reset_before=1.0)):
        assert _round_trip(proxy, b"x") == b""
        assert _round_trip(proxy, b"y") == b""
    assert _round_trip(proxy, b"z") == b"echo:z"
    assert proxy.counters["reset-before"] == 2


def test_latency_and_a_bandwidth_cap_delay_but_deliver(proxy: FaultProxy) -> None:
    proxy.set_faults(Faults(latency_s=0.001, jitter_s=0.001, bandwidth_bps=10_000_000))
    assert _round_trip(proxy, b"slow") == b"echo:slow"
    assert proxy.counters["delayed"] >= 2  # the request and the reply


def test_many_connections_at_once_are_all_forwarded(proxy: FaultProxy) -> None:
    conns = [socket.create_connection(proxy.address, timeout=10) for _ in range(50)]
    try:
        for n, conn in enumerate(conns):
            conn.sendall(b"%03d" % n)
        assert [conn.recv(64) for conn in conns] == [b"echo:%03d" % n for n in range(50)]
    finally:
        for conn in conns:
            conn.close()


def test_an_unknown_fault_or_an_impossible_rate_is_refused(proxy: FaultProxy) -> None:
    with pytest.raises(FaultProxyError, match="unknown fault"):
        proxy.fail_next(1, "gremlins")  # type: ignore[arg-type]
    with pytest.raises(FaultProxyError, match="more than 1"):
        Faults(reset_before=0.6, lost_reply=0.6)


def test_an_unstarted_proxy_says_how_to_start_it(echo: _Echo) -> None:
    with pytest.raises(FaultProxyError, match="context manager"):
        FaultProxy(echo.server_address[:2]).url()  # type: ignore[arg-type]
