"""Stop requests for a long-running command: SIGTERM and SIGINT, handled without a lock.

Python runs a signal handler in the main thread between two bytecodes, possibly while
that thread is inside ``threading.Event.wait`` holding the event's non-reentrant lock;
a handler that calls ``Event.set`` then deadlocks. So the handler here only sets a plain
attribute and writes one byte to a non-blocking self-pipe, and :meth:`StopRequest.wait`
sleeps in ``select`` on that pipe: a stop wakes it at once, whenever it arrives. The pipe
is also the interpreter's wake-up fd, so a signal that the kernel hands to another thread
(an exec store's reader, say) still wakes the main thread's ``select``, which would
otherwise sleep out its timeout before the Python handler ran.
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

    @property
    def wakeup_fd(self) -> int:
        """The pipe's write end, for :func:`signal.set_wakeup_fd`."""
        return self._write_fd

    @property
    def wakeup_fd_reader(self) -> int:
        """The pipe's read end: readable once a stop (or another handled signal) came."""
        return self._read_fd

    def __call__(self) -> bool:
        return self.requested

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds`` (finite); return at once when a stop is requested."""
        if not self.requested and seconds > 0:
            readable, _, _ = select.select([self.wakeup_fd_reader], [], [], seconds)
            if readable and not self.requested:
                # Another signal with a Python handler woke us: drain it, or every later
                # wait would return at once.
                with contextlib.suppress(BlockingIOError):
                    os.read(self._read_fd, 512)
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
    previous_wakeup = os_signal.set_wakeup_fd(stop.wakeup_fd, warn_on_full_buffer=False)
    try:
        yield stop
    finally:
        os_signal.set_wakeup_fd(previous_wakeup)
        for sig, old in previous.items():
            os_signal.signal(sig, old)
        stop.close()
