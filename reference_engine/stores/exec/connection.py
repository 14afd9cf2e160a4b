"""The parent's end of one ``dw-store/1`` child: its process, pipes and calls in flight.

Calls may come from many threads at once: each request is written under a lock with a
fresh id, and one reader thread hands every reply to the call waiting on that id, in
whatever order the child answers. A child that exits, hangs past the per-call timeout,
prints a line that is not a well-formed reply, or answers an id nobody asked for breaks
the connection: it is killed at once, and that call and every later one raise
:class:`ExecChildError` naming the command, the call and the child's last stderr lines.
"""

from __future__ import annotations

import collections
import contextlib
import os
import queue
import select
import shlex
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import IO, Any, Final, Protocol

from reference_engine.errors import StoreError, StoreUnavailable
from reference_engine.stores.exec.protocol import (
    PROTOCOL,
    Handshake,
    ProtocolViolation,
    Reply,
    Request,
)

DEFAULT_TIMEOUT_S: Final = 60.0
TIMEOUT_ENV: Final = "DW_EXEC_TIMEOUT"
STDERR_TAIL_LINES: Final = 12
# How long close() and a broken connection wait for the child to go before killing it.
_EXIT_GRACE_S: Final = 5.0
_STDERR_DRAIN_S: Final = 1.0
# How often a write waiting on a full pipe looks again (whether stdin was closed meanwhile).
_FULL_PIPE_RECHECK_S: Final = 0.1


class ChildProcess(Protocol):
    """What a connection uses of its child: ``subprocess.Popen``, or a forked child."""

    pid: int
    stdin: IO[bytes] | None
    stdout: IO[bytes] | None
    stderr: IO[bytes] | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def kill(self) -> None: ...


Spawn = Callable[[Sequence[str]], ChildProcess]


def program_path(name: str) -> str:
    """``name`` as written when PATH finds it (or it is a path), else the program of that
    name beside this Python: ``deno`` from the deno extra runs from an unactivated venv or
    a ``pipx run`` environment, whose ``bin/`` is not on PATH."""
    if os.sep in name or shutil.which(name) is not None:
        return name
    return shutil.which(name, path=os.path.dirname(sys.executable)) or name


def popen(argv: Sequence[str]) -> ChildProcess:
    """Start ``argv``, its three standard streams on pipes to this process."""
    return subprocess.Popen([program_path(argv[0]), *argv[1:]], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, close_fds=True)


class ExecChildError(StoreError):
    """The child broke the protocol: it exited, hung, or printed something that is no reply."""


class _Broken(Exception):
    """Why the connection broke; turned into an ExecChildError naming the waiting call."""


class ChildConnection:
    """The child process, its pipes, the reader threads and the calls in flight.

    Holds no reference to the store object, so an abandoned handle can be collected and
    its finalizer can end the child.
    """

    def __init__(self, argv: Sequence[str], label: str, timeout: float,
                 spawn: Spawn = popen) -> None:
        self.label = label
        self.timeout = timeout
        self.cwd = os.getcwd()  # the command to run by hand runs from here
        # A caller writes its request line itself when nothing is queued and the pipe takes
        # it whole (the pipe is non-blocking); the rest goes to the writer thread. So a
        # caller never blocks on a full pipe, and its timeout holds even when the child
        # stops reading. _send_lock orders the writes and guards the descriptor's closing.
        self._outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._send_lock = threading.Lock()
        self._queued = 0
        self._stdin_open = True
        self._state_lock = threading.Lock()
        self._pending: dict[int, tuple[Request, Future[Reply]]] = {}
        self._next_id = 0
        self.broken: str | None = None
        self._closing = False
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._handshake: Future[bytes] = Future()
        try:
            self.proc = spawn(argv)
        except OSError as exc:
            raise StoreUnavailable(
                f"exec store {label!r}: cannot start {argv[0]!r} ({exc.strerror or exc}); "
                "check the program is installed and on PATH, e.g. run: "
                f"{shlex.join(['command', '-v', argv[0]])}",
                op="open",
            ) from None
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._stdin: IO[bytes] = self.proc.stdin
        self._stdin_fd = self._stdin.fileno()
        os.set_blocking(self._stdin_fd, False)
        self._stdout_thread = threading.Thread(
            target=self._read_stdout, name=f"dw-exec-stdout-{self.proc.pid}", daemon=True)
        self._stderr_thread = threading.Thread(
            target=self._read_stderr, name=f"dw-exec-stderr-{self.proc.pid}", daemon=True)
        self._writer_thread = threading.Thread(
            target=self._write_stdin, name=f"dw-exec-stdin-{self.proc.pid}", daemon=True)
        self._stdout_thread.start()
        self._stderr_thread.start()
        self._writer_thread.start()

    def _write_stdin(self) -> None:
        while True:
            line = self._outbox.get()
            if line is None:
                return
            batch = [line]
            while not self._outbox.empty():  # requests queued meanwhile go in one write
                more = self._outbox.get()
                if more is None:
                    self._outbox.put(None)
                    break
                batch.append(more)
            if not self._write_all(memoryview(b"".join(batch))):
                self.fail(self._write_fault())
                return
            with self._send_lock:
                self._queued -= len(batch)

    def _write_all(self, data: memoryview) -> bool:
        """Write ``data`` as the pipe takes it (False: the child is gone or stdin closed)."""
        while data:
            with self._send_lock:
                if not self._stdin_open:
                    return False
                try:
                    data = data[os.write(self._stdin_fd, data):]
                except BlockingIOError:
                    pass
                except OSError:
                    return False
            if data:  # the pipe is full: wait until the child reads some
                with contextlib.suppress(OSError, ValueError):
                    select.select([], [self._stdin_fd], [], _FULL_PIPE_RECHECK_S)
        return True

    def _send(self, line: bytes) -> str | None:
        """Send one request line, or queue it for the writer; a fault's description."""
        written = 0
        with self._send_lock:
            if self._queued == 0 and self._stdin_open:
                try:
                    written = os.write(self._stdin_fd, line)
                except BlockingIOError:
                    written = 0
                except OSError:
                    written = -1  # the child is gone
                if written == len(line):
                    return None
            if written >= 0:
                self._queued += 1
                # Under the lock: nothing overtakes a line half written.
                self._outbox.put(line[written:])
                return None
        return self._write_fault()  # outside the lock: it may wait a moment for the exit

    def _write_fault(self) -> str:
        """Why stdin refused a write: mostly that the child exited, which then says how."""
        try:
            code = self.proc.wait(timeout=_STDERR_DRAIN_S)
        except subprocess.TimeoutExpired:
            return "the child stopped reading its stdin"
        return f"the child exited with code {code}"

    def _close_stdin(self) -> None:
        with self._send_lock:
            if self._stdin_open:
                self._stdin_open = False
                with contextlib.suppress(BrokenPipeError, OSError, ValueError):
                    self._stdin.close()

    # -- reading ---------------------------------------------------------------------------

    # Each reader closes its own pipe when it is done, however the handle ended (closed,
    # killed, broken, or dropped by a failing test): descriptors never outlive the child.

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        try:
            for raw in iter(self.proc.stderr.readline, b""):
                self._stderr.append(raw.decode("utf-8", "replace").rstrip("\r\n"))
        finally:
            with contextlib.suppress(OSError, ValueError):
                self.proc.stderr.close()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        try:
            for raw in iter(self.proc.stdout.readline, b""):
                if not self._handshake.done():
                    self._handshake.set_result(raw)
                    continue
                problem = self._dispatch(raw)
                if problem is not None:
                    self.fail(problem)
                    return
            self._on_eof()
        finally:
            with contextlib.suppress(OSError, ValueError):
                self.proc.stdout.close()

    def _dispatch(self, raw: bytes) -> str | None:
        """Hand one reply line to its waiting call; the fault's description if it is bad."""
        try:
            reply_id, message = Reply.decode_raw(raw)
        except ProtocolViolation as exc:
            return f"the child printed a line that is not a reply ({exc}): {_preview(raw)}"
        with self._state_lock:
            waiting = self._pending.pop(reply_id, None)
        if waiting is None:
            return (f"the child answered id {reply_id}, which was never asked or was "
                    "already answered")
        request, future = waiting
        try:
            reply = Reply.for_op(request.op, reply_id, message)
        except ProtocolViolation as exc:
            with self._state_lock:
                self._pending[reply_id] = waiting  # so that fail() fails this call too
            return f"the child answered {request.describe()} in the wrong shape: {exc}"
        future.set_result(reply)
        return None

    def _on_eof(self) -> None:
        try:
            code = self.proc.wait(timeout=_EXIT_GRACE_S)
        except subprocess.TimeoutExpired:
            reason = "the child closed its stdout but kept running"
        else:
            if self._closing:
                reason = "the handle is closed"
            elif not self._handshake.done():
                reason = f"the child exited with code {code} before its handshake"
            else:
                reason = f"the child exited with code {code}"
        self.fail(reason)
        if not self._handshake.done():
            self._handshake.set_exception(_Broken(reason))

    # -- calling ---------------------------------------------------------------------------

    def handshake(self) -> Handshake:
        try:
            line = self._handshake.result(timeout=self.timeout)
        except FutureTimeout:
            self.fail(f"no handshake line within {self.timeout:g}s")
            raise self.error("open", "start") from None
        except _Broken as exc:
            self.fail(str(exc))
            raise self.error("open", "start") from None
        try:
            hello = Handshake.decode(line)
        except ProtocolViolation as exc:
            self.fail(f"its first line is not a {PROTOCOL} handshake ({exc}): {_preview(line)}")
            raise self.error("open", "start") from None
        if hello.protocol != PROTOCOL:
            self.fail(f"the child speaks {hello.protocol}, this parent speaks {PROTOCOL}; "
                      f"update the child (or its shim) to {PROTOCOL}, or dw-testing to a "
                      f"version that speaks {hello.protocol}")
            raise self.error("open", "start") from None
        return hello

    def call(self, request_op: str, *, key: str | None = None, prefix: str | None = None,
             data: bytes | None = None) -> Any:
        future: Future[Reply] = Future()
        with self._state_lock:
            request = Request(id=self._next_id, op=request_op, key=key, prefix=prefix,
                              data=data)
            self._next_id += 1
            if self.broken is None:
                self._pending[request.id] = (request, future)
        where = key if key is not None else (prefix or "")
        if self.broken is not None:
            raise self.error(request_op, where, request)
        problem = self._send(request.encode().encode("utf-8") + b"\n")
        if problem is not None:
            self.fail(problem)
        try:
            reply = future.result(timeout=self.timeout)
        except FutureTimeout:
            self.fail(f"no answer to {request.describe()} within {self.timeout:g}s "
                      f"(the per-call timeout; set {TIMEOUT_ENV} to change it)")
            raise self.error(request_op, where, request) from None
        except _Broken:
            raise self.error(request_op, where, request) from None
        reply.raise_error("", op=request_op, key=where)
        return reply.result

    # -- breaking and ending ---------------------------------------------------------------

    def fail(self, reason: str) -> None:
        """Break the connection (first reason wins), kill the child, fail every waiting call."""
        with self._state_lock:
            if self.broken is None:
                self.broken = reason
            waiting = list(self._pending.values())
            self._pending.clear()
        self.kill()
        for _, future in waiting:
            if not future.done():
                future.set_exception(_Broken(reason))

    def error(self, op: str, key: str, request: Request | None = None) -> ExecChildError:
        """The error for the call ``request`` on a broken connection."""
        self.kill()  # the child is gone and reaped before anyone hears of the fault
        self._stderr_thread.join(timeout=_STDERR_DRAIN_S)
        what = request.describe() if request is not None else "starting the child"
        tail = list(self._stderr)
        stderr = ("its last stderr lines:\n" + "\n".join(f"  | {line}" for line in tail)
                  if tail else "it wrote nothing to stderr")
        return ExecChildError(
            f"exec store {self.label!r}: {what} failed: {self.broken}; {stderr}\n"
            f"Run the command by hand to see it start and print its {PROTOCOL} handshake: "
            f"cd {shlex.quote(self.cwd)} && {self.label}",
            op=op, key=key,
        )

    def kill(self) -> None:
        """End the child now and reap it (idempotent)."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):  # SIGKILL is not ignorable
            self.proc.wait(timeout=_EXIT_GRACE_S)
        self._outbox.put(None)
        if threading.current_thread() is not self._writer_thread:
            # A write blocked on the dead child's pipe fails now; then stdin can close.
            self._writer_thread.join(timeout=_EXIT_GRACE_S)
        self._close_stdin()

    def close(self) -> None:
        """Ask the child to close, let it exit, and kill it if it does not."""
        self._closing = True
        if self.broken is None and self.proc.poll() is None:
            # A failure here has already broken and killed the child: nothing left to release.
            with contextlib.suppress(StoreError):
                self.call("close")
        self._outbox.put(None)
        self._writer_thread.join(timeout=_EXIT_GRACE_S)
        self._close_stdin()
        try:
            self.proc.wait(timeout=_EXIT_GRACE_S)
        except subprocess.TimeoutExpired:
            self.kill()
        with self._state_lock:
            if self.broken is None:
                self.broken = "the handle is closed"
        self._stdout_thread.join(timeout=_EXIT_GRACE_S)
        self._stderr_thread.join(timeout=_STDERR_DRAIN_S)


def _preview(raw: bytes | str, limit: int = 60) -> str:
    """The start of a bad line, so a stray debug print is recognisable."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    text = text.rstrip("\r\n")
    return repr(text[:limit]) + (f" ... ({len(text)} chars)" if len(text) > limit else "")
