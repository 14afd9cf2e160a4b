"""Serve any store reference as a ``dw-store/1`` child: one process, one handle.

    python -m reference_engine.stores.exec.child memory://
    python -m reference_engine.stores.exec.child file:///tmp/dw --capability large_values=false

Requests run on a small thread pool, so replies may come back out of order and a slow call
does not hold up the others, as the protocol allows. ``close`` (or the end of stdin) waits
for the calls in flight, closes the store and exits 0. Diagnostics go to stderr only.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from reference_engine.stores.contract import close_store, supports_create
from reference_engine.stores.exec.protocol import (
    Handshake,
    ProtocolViolation,
    Reply,
    Request,
    error_kind,
)

# What the suite cannot guess from a reference served by another process.
# The built-in stores list by whole segments, sorted (segment_prefixes, sorted_list), refuse
# bad key shapes (refuses_bad_keys) and hold nested records (nested_keys).
_BUILTIN_LIST = {"segment_prefixes": True, "sorted_list": True, "refuses_bad_keys": True,
                 "nested_keys": True}
_SCHEME_CAPABILITIES: dict[str, dict[str, bool]] = {
    # memory:// lives in this process alone: a second child is a second, empty store.
    "memory": {"cross_handle": False, "cross_process": False, "durable_reopen": False,
               **_BUILTIN_LIST},
    "file": {"cross_handle": True, "cross_process": True, "durable_reopen": True,
             **_BUILTIN_LIST},
    "sqlite": {"cross_handle": True, "cross_process": True, "durable_reopen": True,
               **_BUILTIN_LIST},
    # A factory is taken to reach one shared backing store; its list promises nothing more.
    "factory": {"cross_handle": True, "cross_process": True, "durable_reopen": True},
    "s3": dict(_BUILTIN_LIST),
    "gs": dict(_BUILTIN_LIST),
}
# What a child forked from a warm server imports before its fork (see .forkserver).
FORK_PRELOAD = ("reference_engine.stores.fs", "reference_engine.stores.sqlite",
                "reference_engine.stores.memory", "reference_engine.errors")
_IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def scheme_of(reference: str) -> str:
    """``memory`` for ``memory://x``; ``file`` for a bare path; ``factory`` for an import path."""
    if "://" in reference:
        return reference.split("://", 1)[0].lower()
    return "factory" if _IMPORT_PATH.match(reference) else "file"


def default_capabilities(reference: str) -> dict[str, bool]:
    """What the suite should assume of a reference served from a child process.

    A factory's own ``.capabilities`` are read when it is opened (see :func:`main`); by
    default it is taken to reach one shared backing store, like a file or a database.
    """
    scheme = scheme_of(reference)
    return dict(_SCHEME_CAPABILITIES.get(scheme, {}))


def declared_capabilities(reference: str) -> dict[str, bool]:
    """A factory's own ``.capabilities`` (import paths only), as a Python run would read them."""
    if scheme_of(reference) != "factory":
        return {}
    from reference_engine.stores.registry import load_object

    declared = getattr(load_object(reference), "capabilities", None) or {}
    return {str(k): bool(v) for k, v in dict(declared).items()}


def parse_capability(text: str) -> tuple[str, bool]:
    import argparse

    name, sep, value = text.partition("=")
    flags = {"true": True, "1": True, "false": False, "0": False}
    if not sep or not name or value.lower() not in flags:
        raise argparse.ArgumentTypeError(
            f"--capability takes NAME=true or NAME=false, e.g. cross_process=true; got {text!r}")
    return name, flags[value.lower()]


class Server:
    """Reads requests from ``inp``, runs them on ``store``, writes replies to ``out``.

    Up to ``workers`` threads take turns reading (leader and followers): the thread that
    reads a request answers it itself, while an idle thread (started if none is) reads the
    next. So a lone call crosses no thread, and calls in flight together run at once.
    The main thread is one of them, and the one that closes the store at the end.
    """

    def __init__(self, store: Any, out: IO[bytes], *, workers: int = 8) -> None:
        self.store = store
        self.out = out
        self._write_lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._workers = max(1, workers)
        self._threads: list[threading.Thread] = []
        self._idle = 1  # threads not answering a call: the main thread, at first
        self._end: tuple[int, Request | None] | None = None

    def send(self, line: str) -> None:
        data = line.encode("utf-8") + b"\n"
        with self._write_lock:
            self.out.write(data)
            self.out.flush()

    def answer(self, request: Request) -> None:
        try:
            result = self._run(request)
        except Exception as exc:
            reply = Reply(id=request.id, error_kind=error_kind(exc),
                          error_message=str(exc) or type(exc).__name__)
        else:
            reply = Reply(id=request.id, result=result)
        self.send(reply.encode())

    def _run(self, request: Request) -> Any:
        store, op = self.store, request.op
        if op == "put":
            store.put(request.key, request.data)
            return None
        if op == "put_if_absent":
            if not supports_create(store):
                raise NotImplementedError("this store offers no put_if_absent")
            return bool(store.put_if_absent(request.key, request.data))
        if op == "get":
            return store.get(request.key)
        if op == "delete":
            store.delete(request.key)
            return None
        return list(store.list(request.prefix))

    def serve(self, inp: IO[bytes]) -> int:
        """Answer until ``close`` or the end of ``inp``; the exit code."""
        self._take_turns(inp)
        for thread in list(self._threads):  # each ends at its next turn to read
            thread.join()
        assert self._end is not None
        code, closing = self._end
        close_store(self.store)
        if closing is not None:
            self.send(Reply(id=closing.id).encode())  # answered last, the store closed
        return code

    def _take_turns(self, inp: IO[bytes]) -> None:
        while True:
            with self._read_lock:
                if self._end is not None:
                    return
                request = self._read(inp)
                if request is None:
                    return
                with self._state_lock:
                    self._idle -= 1
                    if self._idle == 0 and len(self._threads) + 1 < self._workers:
                        self._idle += 1  # the new thread reads the next request
                        thread = threading.Thread(target=self._take_turns, args=(inp,),
                                                  name=f"dw-child-{len(self._threads)}",
                                                  daemon=True)
                        self._threads.append(thread)
                        thread.start()
            self.answer(request)
            with self._state_lock:
                self._idle += 1

    def _read(self, inp: IO[bytes]) -> Request | None:
        """The next request; ``None`` (the end recorded) at ``close``, a bad line or EOF."""
        raw = inp.readline()
        if not raw:
            self._end = (0, None)
            return None
        try:
            request = Request.decode(raw)
        except ProtocolViolation as exc:
            print(f"dw-store child: bad request line ({exc}); stopping", file=sys.stderr)
            self._end = (2, None)
            return None
        if request.op == "close":
            self._end = (0, request)
            return None
        return request


@dataclass(frozen=True)
class ChildArgs:
    """What the child's command line asks for."""

    store: str
    name: str | None = None
    capability: list[tuple[str, bool]] = field(default_factory=list)
    workers: int = 8


def parse_args(argv: Sequence[str] | None) -> ChildArgs:
    """The child's arguments. A lone reference (the usual command) is read without
    ``argparse``, whose import is a tenth of a child's start."""
    words = list(sys.argv[1:] if argv is None else argv)
    if len(words) == 1 and not words[0].startswith("-"):
        return ChildArgs(store=words[0])
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m reference_engine.stores.exec.child",
        description="Serve a store reference (memory://, file:///..., sqlite:///..., "
        "package.module:factory) as a dw-store/1 child on stdin/stdout.")
    parser.add_argument("store", help="what open_store() accepts")
    parser.add_argument("--name", default=None, help="the store name in the handshake")
    parser.add_argument("--capability", action="append", type=parse_capability, default=[],
                        metavar="NAME=BOOL", help="declare or override a capability")
    parser.add_argument("--workers", type=int, default=8, help="calls served at once")
    parsed = parser.parse_args(words)
    return ChildArgs(store=parsed.store, name=parsed.name, capability=parsed.capability,
                     workers=parsed.workers)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)

    from reference_engine.errors import StoreError
    from reference_engine.stores.registry import open_store

    try:
        store = open_store(args.store)
    except StoreError as exc:
        print(f"dw-store child: cannot open {args.store!r}: {exc}", file=sys.stderr)
        return 1
    capabilities = {**default_capabilities(args.store), **declared_capabilities(args.store),
                    **dict(args.capability)}
    return serve_stdio(store, args.name or scheme_of(args.store), capabilities,
                       workers=args.workers)


def serve_stdio(store: Any, name: str, capabilities: dict[str, bool], *,
                workers: int = 8) -> int:
    """Serve an open ``store`` on stdin/stdout: the handshake, then requests; the exit code.

    For a child that builds its store itself rather than from a reference.
    """
    hello = Handshake(store=name, put_if_absent=supports_create(store),
                      capabilities=capabilities)
    # stdout carries protocol lines only: a store's own print() goes to the log instead.
    protocol_out = sys.stdout.buffer
    sys.stdout = sys.stderr
    server = Server(store, protocol_out, workers=max(1, workers))
    server.send(hello.encode())
    return server.serve(sys.stdin.buffer)


if __name__ == "__main__":
    exit_code = main()
    sys.stderr.flush()
    # The store is closed and every reply flushed: skip the interpreter's slow teardown, so
    # the parent's close() returns as soon as the child is gone.
    os._exit(exit_code)
