"""The fork server's own loop: the process that imports a module once and forks children of it.

The parent's side (:mod:`.forkserver`) starts this module as ``python -m
reference_engine.stores.exec.forkserver_loop <module> <socket fd>``; each request on the Unix
socket carries a child's argv, environment and working directory as JSON and its three pipes
as descriptors; the loop forks, the fork becomes ``python -m <module>`` on those pipes, and
the loop reports each child's pid and, when it is reaped, its exit status.
"""

from __future__ import annotations

import array
import builtins
import json
import os
import signal
import socket
import sys
import types
from collections.abc import Mapping, Sequence
from importlib.machinery import ModuleSpec
from types import CodeType
from typing import Final

MAX_MESSAGE: Final = 1 << 20
FDS_PER_CHILD: Final = 3



def _child(spec: ModuleSpec, code: CodeType, request: Mapping[str, object],
           fds: Sequence[int], closing: Sequence[int]) -> None:
    """In the fork: become ``python -m module *argv`` on the passed pipes; never returns."""
    status = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for fd in closing:
            os.close(fd)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        # The interpreter's own streams wrap descriptors 0-2, now the passed pipes; the
        # server never read or wrote them, so no buffer holds anything of its own.
        sys.stdin, sys.stdout, sys.stderr = sys.__stdin__, sys.__stdout__, sys.__stderr__
        env = request["env"]
        assert isinstance(env, dict)
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in env.items()})
        cwd = str(request["cwd"])
        os.chdir(cwd)
        sys.path[0] = cwd
        argv = request["argv"]
        assert isinstance(argv, list)
        # As ``python -m`` runs it (runpy): a fresh __main__ holding the module's spec.
        main = types.ModuleType("__main__")
        main.__dict__.update(__file__=spec.origin, __cached__=None, __loader__=spec.loader,
                             __package__=spec.parent, __spec__=spec,
                             __builtins__=builtins)
        sys.modules["__main__"] = main
        sys.argv = [spec.origin or "-m", *map(str, argv)]
        exec(code, main.__dict__)
        status = 0
    except SystemExit as stop:
        status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if not isinstance(stop.code, (int, type(None))):
            print(stop.code, file=sys.stderr)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status)


def _reap(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        code = os.waitstatus_to_exitcode(status)
        sock.send(json.dumps({"exited": pid, "code": code}).encode("utf-8"))


def serve(module: str, sock: socket.socket) -> int:
    """Fork a child of ``module`` for each request on ``sock`` until it closes."""
    import gc
    import importlib
    import importlib.util
    import selectors

    served = importlib.import_module(module)
    for name in getattr(served, "FORK_PRELOAD", ()):  # what every child would import next
        importlib.import_module(name)
    # Each fork runs the module afresh as __main__, as ``python -m`` does (what it imports
    # stays loaded); its code is read and compiled once, here.
    del sys.modules[module]
    spec = importlib.util.find_spec(module)
    if spec is None or spec.loader is None or not hasattr(spec.loader, "get_code"):
        raise SystemExit(f"cannot find the code of {module}")
    code = spec.loader.get_code(module)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent ends this server, not ^C
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    gc.freeze()  # forks share the imported modules' pages instead of copying them
    selector = selectors.DefaultSelector()
    selector.register(sock, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)
    fd_bytes = array.array("i").itemsize * FDS_PER_CHILD
    while True:
        for ready, _ in selector.select():
            if ready.fileobj == wake_r:
                os.read(wake_r, 4096)
                _reap(sock)
                continue
            message, ancillary, _, _ = sock.recvmsg(MAX_MESSAGE, socket.CMSG_SPACE(fd_bytes))
            if not message:
                return 0
            fds = array.array("i")
            for level, kind, data in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
            try:
                request = json.loads(message)
                if len(fds) != FDS_PER_CHILD:
                    raise ValueError(f"expected {FDS_PER_CHILD} pipes, got {len(fds)}")
                pid = os.fork()
            except (OSError, ValueError) as exc:
                for fd in fds:
                    os.close(fd)
                sock.send(json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode())
                continue
            if pid == 0:
                selector.close()
                _child(spec, code, request, list(fds), [sock.fileno(), wake_r, wake_w])
            for fd in fds:
                os.close(fd)
            sock.send(json.dumps({"pid": pid}).encode("utf-8"))
            _reap(sock)


if __name__ == "__main__":
    served, fd = sys.argv[1], int(sys.argv[2])
    sys.exit(serve(served, socket.socket(fileno=fd)))
