"""The one way an emulator provider starts a server process, waits for it and stops it."""

from __future__ import annotations

import contextlib
import functools
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

Launch = Callable[[int], tuple["subprocess.Popen[Any]", str]]


def free_ports(count: int = 1) -> list[int]:
    """``count`` loopback ports free right now (another process may still take one)."""
    probes = [socket.socket() for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [probe.getsockname()[1] for probe in probes]
    finally:
        for probe in probes:
            probe.close()


def wait_ready(process: subprocess.Popen[Any], is_ready: Callable[[], bool], *,
               timeout: float, poll: float) -> bool:
    """Poll ``is_ready`` until it answers True; False if the process exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        if is_ready():
            return True
        time.sleep(poll)  # polling a starting server, not ordering a test
    return False


def stop(process: subprocess.Popen[Any], *, grace: float) -> None:
    """Terminate, then kill after ``grace`` seconds; never leaves the process running."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(grace)


@contextlib.contextmanager
def serve(launch: Launch, is_ready: Callable[[str], bool], *, attempts: int, timeout: float,
          poll: float, grace: float, failure: Callable[[], str]) -> Iterator[str]:
    """Start ``launch(attempt)`` (a process and its URL) until one is ready; yield the URL.

    A free port can be taken between the probe and the server's bind, so a start that
    never gets ready is retried on new ports. The process is stopped on exit; after
    ``attempts`` failed starts, ``RuntimeError(failure())``.
    """
    for attempt in range(attempts):
        process, url = launch(attempt)
        try:
            if wait_ready(process, functools.partial(is_ready, url), timeout=timeout,
                          poll=poll):
                yield url
                return
        finally:
            stop(process, grace=grace)
    raise RuntimeError(failure())
