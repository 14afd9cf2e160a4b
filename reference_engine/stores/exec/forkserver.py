"""Python children forked from a warm process, for ``python -m <module> ...`` commands.

Starting a Python child costs about 45 ms of CPU, nearly all of it the interpreter's start
and imports; the conformance suite opens some 1,200 handles, so through ``exec:`` it spent
most of its time starting interpreters. A :class:`ForkServer` is one process of this
interpreter that has imported ``<module>`` once (``python -m
reference_engine.stores.exec.forkserver_loop <module>``); asked for a child, it forks, and the
fork runs ``<module>`` as ``__main__`` with the arguments, environment and working
directory the caller gives, on the three pipes the caller passes (over a Unix socket).

Each handle is still its own process with its own pipes and its own connection to the
store, speaking ``dw-store/1`` exactly as an exec'd child does; :class:`ForkedProcess`
gives the parent what it uses of a :class:`subprocess.Popen` (pid, pipes, ``poll``,
``wait``, ``kill``), and the server reports each child's exit status. Only commands the
caller knows are safe to fork use it (the built-in ``exec-`` stores and the self-test's
mutants, whose modules start no thread at import); any other ``exec:`` command is
started as written. ``DW_EXEC_FORK=0`` starts every child as written.

This module is the parent's side; the server's loop is :mod:`.forkserver_loop`.
"""

from __future__ import annotations

import array
import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future
from typing import IO, Final

from reference_engine.stores.exec import forkserver_loop
from reference_engine.stores.exec.forkserver_loop import MAX_MESSAGE

FORK_ENV: Final = "DW_EXEC_FORK"


def fork_from_env() -> bool:
    """``$DW_EXEC_FORK``: unset or ``1`` forks the commands that may be forked; ``0`` does not."""
    return os.environ.get(FORK_ENV, "1").strip().lower() not in ("0", "false", "no")


def forkable_module(argv: Sequence[str]) -> str | None:
    """``module`` when ``argv`` is ``[this interpreter, "-m", module, ...]``, else ``None``."""
    if len(argv) >= 3 and argv[0] == sys.executable and argv[1] == "-m" and argv[2]:
        return argv[2]
    return None


class ForkedProcess:
    """A child forked by a :class:`ForkServer`: what a connection uses of ``Popen``."""

    def __init__(self, pid: int, stdin: IO[bytes], stdout: IO[bytes], stderr: IO[bytes],
                 argv: Sequence[str]) -> None:
        self.pid = pid
        self.args = list(argv)
        self.stdin: IO[bytes] | None = stdin
        self.stdout: IO[bytes] | None = stdout
        self.stderr: IO[bytes] | None = stderr
        self.returncode: int | None = None
        self._exited = threading.Event()

    def exited(self, code: int) -> None:
        """The server reaped the child: ``code`` as ``Popen.returncode`` spells it."""
        self.returncode = code
        self._exited.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._exited.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            os.kill(self.pid, signal.SIGKILL)  # ProcessLookupError when it just went


class ForkServer:
    """One warm process of this interpreter that forks children running ``module``."""

    def __init__(self, module: str) -> None:
        self.module = module
        self._lock = threading.Lock()
        self._state = threading.Lock()
        self._waiting: deque[Future[int]] = deque()
        self._children: dict[int, ForkedProcess] = {}
        self._early_exits: dict[int, int] = {}
        self.gone = False
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", forkserver_loop.__name__, module, str(theirs.fileno())],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),), close_fds=True)
        finally:
            theirs.close()
        self._sock = ours
        self._reader = threading.Thread(target=self._read, name=f"dw-forkserver-{module}",
                                        daemon=True)
        self._reader.start()

    def spawn(self, argv: Sequence[str]) -> ForkedProcess:
        """Fork a child running ``argv`` (``[python, "-m", module, *args]``) on new pipes."""
        module = forkable_module(argv)
        if module != self.module:
            raise ValueError(f"this fork server runs {self.module}, not {argv!r}")
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        theirs = (stdin_r, stdout_w, stderr_w)
        try:  # os.pipe() descriptors are not inherited by anything this process starts
            request = json.dumps({"argv": list(argv[3:]), "cwd": os.getcwd(),
                                  "env": dict(os.environ)}).encode("utf-8")
            future: Future[int] = Future()
            with self._lock:
                if self.gone:
                    raise OSError("the fork server has exited")
                with self._state:
                    self._waiting.append(future)
                self._sock.sendmsg([request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                                array.array("i", theirs))])
            pid = future.result(timeout=60)
        except BaseException:
            for fd in (stdin_w, stdout_r, stderr_r):
                os.close(fd)
            raise
        finally:
            for fd in theirs:
                os.close(fd)
        child = ForkedProcess(pid, os.fdopen(stdin_w, "wb"), os.fdopen(stdout_r, "rb"),
                              os.fdopen(stderr_r, "rb"), argv)
        with self._state:
            self._children[pid] = child
            code = self._early_exits.pop(pid, None)
        if code is not None:
            child.exited(code)
        return child

    def _read(self) -> None:
        try:
            while True:
                message = self._sock.recv(MAX_MESSAGE)
                if not message:
                    break
                self._dispatch(json.loads(message))
        except (OSError, ValueError):
            pass
        self._on_gone()

    def _dispatch(self, message: dict[str, int | str]) -> None:
        if "exited" in message:
            pid, code = int(message["exited"]), int(message["code"])
            with self._state:
                child = self._children.pop(pid, None)
                if child is None:  # reaped before spawn() filed it
                    self._early_exits[pid] = code
            if child is not None:
                child.exited(code)
            return
        with self._state:
            future = self._waiting.popleft()
        if "pid" in message:
            future.set_result(int(message["pid"]))
        else:
            future.set_exception(OSError(str(message.get("error", "fork failed"))))

    def _on_gone(self) -> None:
        """The server exited: no exit status will come, so each child is watched by pidfd."""
        with self._state:
            self.gone = True
            waiting, self._waiting = list(self._waiting), deque()
            orphans, self._children = list(self._children.values()), {}
        for future in waiting:
            future.set_exception(OSError("the fork server exited"))
        for child in orphans:
            threading.Thread(target=_watch_orphan, args=(child,), daemon=True).start()

    def close(self) -> None:
        """End the server (its children live on until their own stdin closes)."""
        # shutdown() first: the reader thread's recv() holds the socket open past a bare
        # close(), and the server would not see the end of its input.
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


def _watch_orphan(child: ForkedProcess) -> None:
    """Report an orphaned child's end, with no status to give (reaped by init)."""
    import select

    try:
        watch = os.pidfd_open(child.pid)
    except OSError:
        child.exited(-signal.SIGKILL)
        return
    try:
        select.select([watch], [], [])
    finally:
        os.close(watch)
    child.exited(-signal.SIGKILL)


_SERVERS: dict[tuple[str, str, tuple[tuple[str, str], ...]], ForkServer] = {}
_SERVERS_LOCK = threading.Lock()
# Servers kept at once; past that the one used longest ago ends (its children live on,
# watched by pidfd): a process that opens from many directories keeps a few servers only.
MAX_SERVERS: Final = 4


def _python_environment() -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("PYTHON")))


def server_for(module: str) -> ForkServer:
    """This process's fork server for ``module``, started on first use.

    One per working directory and ``PYTHON*`` environment, as ``python -m`` would see them:
    they decide which code a child imports.
    """
    key = (module, os.getcwd(), _python_environment())
    retired: list[ForkServer] = []
    with _SERVERS_LOCK:
        server = _SERVERS.pop(key, None)
        if server is None or server.gone:
            if not _SERVERS:
                atexit.register(end_servers)
            while len(_SERVERS) >= MAX_SERVERS:
                retired.append(_SERVERS.pop(next(iter(_SERVERS))))
            server = ForkServer(module)
        _SERVERS[key] = server  # last in the dict: the most recently used
    for old in retired:
        old.close()
    return server


def _forget_servers() -> None:
    """In a fork of this process: the servers are the parent's; close our copies of their
    sockets (no shutdown, which would end the parent's conversation) and start afresh."""
    global _SERVERS_LOCK
    _SERVERS_LOCK = threading.Lock()  # another thread may have held it at the fork
    for server in _SERVERS.values():
        server.gone = True
        with contextlib.suppress(OSError):
            os.close(server._sock.detach())
    _SERVERS.clear()


os.register_at_fork(after_in_child=_forget_servers)


def end_servers() -> None:
    """End every fork server this process started."""
    with _SERVERS_LOCK:
        servers = list(_SERVERS.values())
        _SERVERS.clear()
    for server in servers:
        server.close()
