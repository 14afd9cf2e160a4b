"""Async store mutants: ``async def`` methods, driven by the plugin on a loop per handle."""

from __future__ import annotations

import asyncio

from dw_testing.selftest.mutants.base import Backing, CorrectStore


async def round_trip() -> None:
    """Yield to the event loop once, as awaiting a backend reply would."""
    await asyncio.sleep(0)


class AsyncCorrectStore:
    """A correct async store: each method awaits a round trip, then runs CorrectStore's step."""

    def __init__(self, backing: Backing) -> None:
        self.backing = backing
        self.steps = CorrectStore(backing)

    async def put(self, key: str, data: bytes) -> None:
        await round_trip()
        self.steps.put(key, data)

    async def put_if_absent(self, key: str, data: bytes) -> bool:
        await round_trip()
        return self.steps.put_if_absent(key, data)

    async def get(self, key: str) -> bytes | None:
        await round_trip()
        return self.steps.get(key)

    async def delete(self, key: str) -> None:
        await round_trip()
        self.steps.delete(key)

    async def list(self, prefix: str) -> list[str]:
        await round_trip()
        return self.steps.list(prefix)

    async def close(self) -> None:
        """Records outlive handles, as on a server."""


class AsyncCheckThenWriteCreate(AsyncCorrectStore):
    """Create awaits a round trip between its check and its write, under a thread lock.

    The lock keeps other threads, and so other handles, out; but it is re-entrant, and
    every coroutine on one event loop runs on the loop's one thread, so creates racing as
    tasks on one loop all pass the check and all win.
    """

    async def put_if_absent(self, key: str, data: bytes) -> bool:
        name = self.steps.checked_key(key, "put_if_absent")
        with self.backing.lock:
            if name in self.backing.records:
                return False
            await round_trip()
            self.backing.records[name] = bytes(data)
            return True
