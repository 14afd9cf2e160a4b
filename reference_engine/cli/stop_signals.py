"""Stop requests for a long-running command: SIGTERM and SIGINT, handled without a lock.

Python runs a signal handler in the main thread between two bytecodes, possibly while
that thread is inside ``threading.Event.wait`` holding the event's non-reentrant lock;
a handler that calls ``Event.set`` then deadlocks. So the handler here only sets a plain
attribute and writes one byte to a non-blocking self-pipe, and :meth:`StopRequest.wait`
sleeps in ``select`` on that pipe: a stop wakes it at once, whenever it arrives.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal as os_signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (os_signal.SIGTERM, os_signal.SIGINT)


class StopRequest:
    """Set once a stop signal arrived; :meth:`wait` sleeps until then or a timeout."""

    def __init__(self) -> None:
        self.requested = False
        self.signal_name = ""
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._read_fd, False)
        os.set_blocking(self._write_fd, False)

    def request(self, signum: int = 0) -> None:
        """Ask the loop to stop. Safe inside a signal handler: it takes no lock."""
        self.requested = True
        if signum and not self.signal_name:
            self.signal_name = os_signal.Signals(signum).name
        with contextlib.suppress(OSError):  # a full pipe already holds a wake-up byte
            os.write(self._write_fd, b"\0")

    def __call__(self) -> bool:
        return self.requested

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds`` (finite); return at once when a stop is requested."""
        if not self.requested and seconds > 0:
            select.select([self._read_fd], [], [], seconds)
        return self.requested

    def close(self) -> None:
        for fd in (self._read_fd, self._write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


@contextmanager
def stop_on_signals() -> Iterator[StopRequest]:
    """A :class:`StopRequest` that SIGTERM and SIGINT set, the same way, while inside.

    Install it before anything slow (opening a remote store): a stop that arrives during
    the open is honoured as soon as the open returns, never by dying half-way.
    """
    stop = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        try:  # signal handlers exist only in the main thread (e.g. under a test runner)
            yield stop
        finally:
            stop.close()
        return

    def handler(signum: int, _frame: FrameType | None) -> None:
        stop.request(signum)

    previous = {sig: os_signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        yield stop
    finally:
        for sig, old in previous.items():
            os_signal.signal(sig, old)
        stop.close()
