"""``--dw-network``: a store's NetworkRoute is served through a fault proxy, faulted tests
meet the profile's faults, and a faulted test that met none of them fails."""

from __future__ import annotations

import pytest

from dw_testing.kit.spec import NetworkRoute, StoreSpec
from reference_engine.stores.memory import MemoryStore

PROVIDER = '''
import contextlib, socket, socketserver, threading, uuid
from reference_engine.stores.memory import MemoryStore
from dw_testing.kit.spec import NetworkRoute, StoreSpec

NAME = "net-" + uuid.uuid4().hex


class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while data := self.request.recv(65536):
            self.request.sendall(data)


class EndpointStore(MemoryStore):
    """A memory store that remembers the endpoint its factory was given."""

    def __init__(self, endpoint):
        super().__init__(NAME)
        self.endpoint = endpoint


@contextlib.contextmanager
def routed():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield StoreSpec(factory=lambda: EndpointStore(url), name="routed",
                        network=NetworkRoute(url, EndpointStore))
    finally:
        server.shutdown()
        server.server_close()
'''

TESTS = '''
import socket
import pytest


def round_trips(endpoint, count):
    host, port = endpoint.removeprefix("http://").split(":")
    answered = 0
    for n in range(count):
        try:
            with socket.create_connection((host, int(port)), timeout=10) as conn:
                conn.sendall(b"x")
                answered += conn.recv(1) == b"x"
        except OSError:
            pass
    return answered


def test_the_factory_gets_the_proxy_address(dw_spec, dw_fault_proxy):
    assert dw_spec.factory().endpoint == dw_fault_proxy.url()


@pytest.mark.dw_network
def test_quiet(dw_store):
    dw_store.put("k", b"v")  # a memory call: nothing crosses the wire


@pytest.mark.dw_network
def test_busy(dw_spec, dw_fault_proxy):
    assert round_trips(dw_spec.factory().endpoint, 20) >= 1
    assert dw_fault_proxy.faults_hit() >= {"reset-before", "lost-reply", "cut-reply"}
'''


def test_a_routed_store_meets_the_profile_and_an_idle_faulted_test_fails(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(netstores=PROVIDER, test_net=TESTS)
    pytester.syspathinsert()
    result = pytester.runpytest("test_net.py", "--dw-store=netstores:routed",
                                "--dw-network=lossy")
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["*the lossy network profile played no cut-reply, lost-reply, "
                                 "reset-before during this test*"])


def test_without_a_network_profile_there_is_no_proxy_and_no_fault(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(netstores=PROVIDER, test_none="""
        def test_direct(dw_spec, dw_fault_proxy):
            assert dw_fault_proxy is None
            assert dw_spec.factory().endpoint.startswith("http://127.0.0.1:")
    """)
    pytester.syspathinsert()
    pytester.runpytest("test_none.py", "--dw-store=netstores:routed").assert_outcomes(passed=1)


def test_a_route_needs_a_host_and_port_and_keeps_the_scheme() -> None:
    with pytest.raises(ValueError, match="needs a host and a port"):
        NetworkRoute("http://127.0.0.1", MemoryStore)
    route = NetworkRoute("https://127.0.0.1:9000/base", MemoryStore)
    assert route.upstream == ("127.0.0.1", 9000)
    assert route.via(("127.0.0.1", 4242)) == "https://127.0.0.1:4242/base"
    spec = StoreSpec(factory=lambda: MemoryStore("x"), network=route)
    assert spec.network is route
