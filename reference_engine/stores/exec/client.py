"""Store handles served by child processes: :class:`ExecStore` and how one is opened.

One handle is one child, spoken to over a :class:`ChildConnection` (see there for what
breaks one); from the second open of a command on, children are started ahead of need
(:mod:`reference_engine.stores.exec.spares`).
"""

from __future__ import annotations

import os
import shlex
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

from reference_engine.errors import StoreUnavailable
from reference_engine.stores.exec.connection import (
    DEFAULT_TIMEOUT_S,
    TIMEOUT_ENV,
    ChildConnection,
    ChildProcess,
    ExecChildError,
    Spawn,
    popen,
)
from reference_engine.stores.exec.protocol import Handshake
from reference_engine.stores.exec.spares import SparePool, spares_from_env

__all__ = ["DEFAULT_TIMEOUT_S", "TIMEOUT_ENV", "ExecChildError", "ExecCreatingStore", "ExecStore",
           "end_spares", "open_exec", "start_child", "timeout_from_env"]


class ExecStore:
    """A store handle served by a child process over ``dw-store/1``; see :func:`open_exec`."""

    def __init__(self, conn: ChildConnection, hello: Handshake) -> None:
        self._conn = conn
        self.command = conn.label
        self.store_name = hello.store
        self.capabilities: dict[str, bool] = dict(hello.capabilities)
        # Ends the child if the handle is dropped without close(), and at interpreter exit.
        self._finalizer = weakref.finalize(self, conn.kill)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.command!r}, store={self.store_name!r})"

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self._conn.proc.pid

    def put(self, key: str, data: bytes) -> None:
        self._conn.call("put", key=key, data=bytes(data))

    def get(self, key: str) -> bytes | None:
        result: bytes | None = self._conn.call("get", key=key)
        return result

    def delete(self, key: str) -> None:
        self._conn.call("delete", key=key)

    def list(self, prefix: str) -> list[str]:
        result: list[str] = self._conn.call("list", prefix=prefix)
        return result

    def close(self) -> None:
        """Send ``close``, wait for the child to exit (killing it past a grace period)."""
        self._conn.close()
        self._finalizer.detach()


class ExecCreatingStore(ExecStore):
    """An :class:`ExecStore` whose child announced the write-once create."""

    def put_if_absent(self, key: str, data: bytes) -> bool:
        result: bool = self._conn.call("put_if_absent", key=key, data=bytes(data))
        return result


@dataclass(frozen=True)
class _Started:
    """A child past its handshake, not yet wrapped in a handle."""

    conn: ChildConnection
    hello: Handshake

    def kill(self) -> None:
        self.conn.kill()

    def handle(self) -> ExecStore:
        return (ExecCreatingStore if self.hello.put_if_absent else ExecStore)(
            self.conn, self.hello)


def _forking(argv: Sequence[str]) -> Spawn:
    """Fork ``python -m <module>`` from a warm server (:mod:`.forkserver`), else start it."""
    from reference_engine.stores.exec.forkserver import forkable_module, server_for

    module = forkable_module(argv)
    if module is None:
        return popen

    def spawn(argv: Sequence[str]) -> ChildProcess:
        try:
            return server_for(module).spawn(argv)
        except OSError:
            return popen(argv)  # no server to fork from: start the command as written

    return spawn


def _start(argv: Sequence[str], label: str, timeout: float, fork: bool = False) -> _Started:
    if not argv:
        raise StoreUnavailable("exec store: empty command; write exec:<command line>, "
                               "e.g. exec:deno run -A store.ts", op="open")
    conn = ChildConnection(argv, label, timeout, _forking(argv) if fork else popen)
    try:
        return _Started(conn, conn.handshake())
    except BaseException:
        conn.kill()
        raise


def start_child(argv: Sequence[str], *, label: str | None = None,
                timeout: float = DEFAULT_TIMEOUT_S) -> ExecStore:
    """Start ``argv`` now, read its handshake and return the handle (no spares)."""
    return _start(argv, shlex.join(argv) if label is None else label, timeout).handle()


_SPARES: SparePool[_Started] = SparePool()


def end_spares() -> None:
    """End every spare child started ahead of need."""
    _SPARES.drain()


def timeout_from_env() -> float:
    """``$DW_EXEC_TIMEOUT`` seconds, or the default; a bad value is refused."""
    raw = os.environ.get(TIMEOUT_ENV, "")
    if not raw:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise StoreUnavailable(f"{TIMEOUT_ENV} must be a number of seconds above 0, e.g. "
                               f"{TIMEOUT_ENV}=30", op="open")
    return value


def open_exec(command_line: str, *, timeout: float | None = None,
              fork: bool = False) -> ExecStore:
    """A handle on a child running ``command_line`` (shell words, no shell).

    From the second open of a command on, children are started ahead of need: see
    :mod:`reference_engine.stores.exec.spares`. ``fork=True`` (for a ``python -m <module>``
    command of this interpreter whose module is safe to fork, such as the stock child)
    forks each child from a warm process instead (:mod:`.forkserver`) unless
    ``DW_EXEC_FORK=0``; the child, its pipes and its protocol are the same.
    """
    try:
        argv = shlex.split(command_line)
    except ValueError as exc:
        raise StoreUnavailable(f"exec store: cannot split the command line ({exc}); check "
                               "its quotes", op="open") from None
    seconds = timeout_from_env() if timeout is None else timeout
    label = command_line.strip()
    if fork:
        from reference_engine.stores.exec.forkserver import fork_from_env

        fork = fork_from_env()
    key = (tuple(argv), seconds, os.getcwd(), fork)
    started = _SPARES.take(key, lambda: _start(argv, label, seconds, fork), spares_from_env())
    return started.handle()
