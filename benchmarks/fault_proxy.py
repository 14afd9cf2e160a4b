"""What the fault proxy costs with no fault set, and whether it holds 200 connections.

In one run, side by side: the round trip of a small request on a kept-open connection to a
loopback echo server, direct and through :class:`dw_testing.FaultProxy` (median, p99, and
the proxy's added time per round trip); the same for a ``get`` of the S3 store on a moto
server, direct and proxied; then 200 connections held open through the proxy at once, each
making round trips, with how many answered. Budget: under 0.5 ms added per round trip.

    python benchmarks/fault_proxy.py [--round-trips 3000] [--connections 200] [--no-s3]
"""

from __future__ import annotations

import argparse
import socket
import socketserver
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from dw_testing.kit.fault_proxy import FaultProxy

BUDGET_MS = 0.5
PAYLOAD = b"x" * 64


class _Echo(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024


class _EchoHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while data := self.request.recv(65536):
            self.request.sendall(data)


@contextmanager
def echo_server() -> Iterator[tuple[str, int]]:
    server = _Echo(("127.0.0.1", 0), _EchoHandler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield str(host), int(port)
    finally:
        server.shutdown()
        server.server_close()


def echo_round_trips(address: tuple[str, int], count: int) -> list[float]:
    """Seconds of each of ``count`` round trips on one kept-open connection."""
    times = []
    with socket.create_connection(address, timeout=30) as conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(count):
            started = time.perf_counter()
            conn.sendall(PAYLOAD)
            got = 0
            while got < len(PAYLOAD):
                got += len(conn.recv(65536))
            times.append(time.perf_counter() - started)
    return times


def timed(call: Callable[[], object], count: int) -> list[float]:
    times = []
    for _ in range(count):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return times


def row(name: str, direct: list[float], proxied: list[float]) -> str:
    d, p = statistics.median(direct) * 1e3, statistics.median(proxied) * 1e3
    d99 = statistics.quantiles(direct, n=100)[98] * 1e3
    p99 = statistics.quantiles(proxied, n=100)[98] * 1e3
    added = p - d
    verdict = "within budget" if added < BUDGET_MS else "OVER BUDGET"
    return (f"{name:<22} {d:>9.3f} {d99:>9.3f} {p:>9.3f} {p99:>9.3f} {added:>9.3f}  {verdict}")


def concurrent(proxy: FaultProxy, connections: int, round_trips: int) -> tuple[int, float]:
    """Open ``connections`` at once through the proxy, then let each make round trips."""
    conns = [socket.create_connection(proxy.address, timeout=30) for _ in range(connections)]
    answered = [0] * connections
    start = threading.Barrier(connections + 1)

    def work(n: int) -> None:
        start.wait()
        for _ in range(round_trips):
            conns[n].sendall(PAYLOAD)
            got = 0
            while got < len(PAYLOAD):
                part = conns[n].recv(65536)
                if not part:
                    return
                got += len(part)
            answered[n] += 1

    threads = [threading.Thread(target=work, args=(n,)) for n in range(connections)]
    for thread in threads:
        thread.start()
    started = time.perf_counter()
    start.wait()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    held = proxy.counters["connections"]
    for conn in conns:
        conn.close()
    return sum(1 for n in answered if n == round_trips) if held >= connections else 0, elapsed


def s3_rows(count: int) -> list[str]:
    from dw_testing.emulators.moto import FAKE_CREDENTIALS, REGION, serve_moto
    from reference_engine.stores.s3 import S3Store

    with serve_moto("serialized") as endpoint:
        direct = S3Store("bench", "p", endpoint_url=endpoint, region=REGION,
                         client_kwargs=FAKE_CREDENTIALS)
        direct._client.create_bucket(Bucket="bench")
        direct.put("k", b"v" * 100)
        host, port = endpoint.removeprefix("http://").split(":")
        with FaultProxy((host, int(port))) as proxy:
            proxied = S3Store("bench", "p", endpoint_url=proxy.url(), region=REGION,
                              client_kwargs=FAKE_CREDENTIALS)
            timed(lambda: direct.get("k"), 20)  # warm the pools
            timed(lambda: proxied.get("k"), 20)
            # Interleaved, so a slower stretch of the machine falls on both.
            d: list[float] = []
            p: list[float] = []
            for _ in range(count // 10):
                d += timed(lambda: direct.get("k"), 10)
                p += timed(lambda: proxied.get("k"), 10)
            return [row("S3 get (moto)", d, p)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--round-trips", type=int, default=3000)
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--no-s3", action="store_true")
    args = parser.parse_args()
    print(f"{'round trip':<22} {'direct':>9} {'p99':>9} {'proxied':>9} {'p99':>9} "
          f"{'added':>9}  (ms, median; budget {BUDGET_MS} ms added)")
    with echo_server() as address, FaultProxy(address) as proxy:
        echo_round_trips(address, 200)
        echo_round_trips(proxy.address, 200)
        direct: list[float] = []
        proxied: list[float] = []
        for _ in range(10):
            direct += echo_round_trips(address, args.round_trips // 10)
            proxied += echo_round_trips(proxy.address, args.round_trips // 10)
        print(row("TCP echo, 64 B", direct, proxied))
        if not args.no_s3:
            for line in s3_rows(max(200, args.round_trips // 5)):
                print(line)
        whole, elapsed = concurrent(proxy, args.connections, 50)
        print(f"\n{args.connections} connections open at once through the proxy, 50 round "
              f"trips each: {whole} of {args.connections} answered every round trip in "
              f"{elapsed:.2f} s ({args.connections * 50 / elapsed:,.0f} round trips/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
