"""Small async stores for the adapter's tests (a module, so import paths can name them)."""

from __future__ import annotations

import asyncio
import threading
import types
from collections.abc import Generator

from dw_testing.kit.doubles import NoCreateStore
from reference_engine.stores.keys import is_under, validate_key, validate_prefix


@types.coroutine
def yield_to_the_loop() -> Generator[None, None, None]:
    """One real suspension point, like a network round trip: other tasks run meanwhile."""
    yield


class AsyncDictStore:
    """A correct async store: each step under a thread lock that no ``await`` crosses."""

    def __init__(self, records: dict[str, bytes] | None = None) -> None:
        self.records: dict[str, bytes] = {} if records is None else records
        self.lock = threading.Lock()
        self.closed_on: str = ""

    async def put(self, key: str, data: bytes) -> None:
        validate_key(key, op="put")
        await yield_to_the_loop()
        with self.lock:
            self.records[key] = bytes(data)

    async def put_if_absent(self, key: str, data: bytes) -> bool:
        validate_key(key, op="put_if_absent")
        await yield_to_the_loop()
        with self.lock:
            if key in self.records:
                return False
            self.records[key] = bytes(data)
            return True

    async def get(self, key: str) -> bytes | None:
        validate_key(key, op="get")
        await yield_to_the_loop()
        with self.lock:
            return self.records.get(key)

    async def delete(self, key: str) -> None:
        validate_key(key, op="delete")
        with self.lock:
            self.records.pop(key, None)

    async def list(self, prefix: str) -> list[str]:
        base = validate_prefix(prefix)
        with self.lock:
            return sorted(k for k in self.records if is_under(k, base))

    async def close(self) -> None:
        self.closed_on = threading.current_thread().name


class AsyncCheckThenWrite(AsyncDictStore):
    """Awaits a round trip between its check and its write: coroutines can all win."""

    async def put_if_absent(self, key: str, data: bytes) -> bool:
        validate_key(key, op="put_if_absent")
        with self.lock:
            exists = key in self.records
        if exists:
            return False
        await yield_to_the_loop()
        with self.lock:
            self.records[key] = bytes(data)
        return True


class AsyncWithoutCreate(AsyncDictStore):
    """No ``put_if_absent`` at all."""

    put_if_absent = None  # type: ignore[assignment]


class HalfAsync(AsyncDictStore):
    """``get`` and ``list`` were left synchronous."""

    def get(self, key: str) -> bytes | None:  # type: ignore[override]
        return self.records.get(key)

    def list(self, prefix: str) -> list[str]:  # type: ignore[override]
        return sorted(self.records)


class SyncWithAsyncClose(NoCreateStore):
    """Synchronous methods, but ``async def close``."""

    async def close(self) -> None: ...


class BlocksItsLoop(AsyncDictStore):
    """``put_if_absent`` makes a synchronous wait inside ``async def`` until released."""

    def __init__(self) -> None:
        super().__init__()
        self.blocking = threading.Event()
        self.release = threading.Event()

    async def put_if_absent(self, key: str, data: bytes) -> bool:
        self.blocking.set()
        self.release.wait()  # the defect: a blocking call on the event loop's thread
        return await super().put_if_absent(key, data)


class SlowButAwaiting(AsyncDictStore):
    """``get`` awaits a reply that a slow server sends ``delay`` seconds later."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    async def get(self, key: str) -> bytes | None:
        reply = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_later(self.delay, reply.set_result, b"late")
        found: bytes = await reply
        return found


class WaitsForAPut(AsyncDictStore):
    """``get`` of a missing key waits until some ``put`` lands, on the same loop."""

    def __init__(self) -> None:
        super().__init__()
        self.landed: asyncio.Event | None = None

    def _event(self) -> asyncio.Event:
        if self.landed is None:
            self.landed = asyncio.Event()
        return self.landed

    async def get(self, key: str) -> bytes | None:
        await self._event().wait()
        return await super().get(key)

    async def put(self, key: str, data: bytes) -> None:
        await super().put(key, data)
        self._event().set()


_SHARED: dict[str, bytes] = {}


def async_factory() -> AsyncDictStore:
    """What an import path points at: every handle shares one dict."""
    return AsyncDictStore(_SHARED)


def half_async_factory() -> HalfAsync:
    return HalfAsync()


async def async_def_factory() -> AsyncDictStore:
    """The mistake: a factory that must be awaited."""
    return AsyncDictStore()
