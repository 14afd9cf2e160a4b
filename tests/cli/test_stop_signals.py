"""A stop signal that the kernel hands to a thread other than the main one."""

from __future__ import annotations

import select
import signal
import threading

from reference_engine.cli.stop_signals import stop_on_signals


def test_a_stop_delivered_to_another_thread_wakes_the_main_threads_wait_at_once() -> None:
    seen: dict[str, bool] = {}
    with stop_on_signals() as stop:
        # A handler that leaves the pipe alone, so only the interpreter's wake-up fd can
        # make it readable, whenever the main thread gets round to running the handler.
        signal.signal(signal.SIGTERM, lambda *_: None)

        def signal_this_thread() -> None:
            signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
            readable, _, _ = select.select([stop.wakeup_fd_reader], [], [], 0)
            seen["pipe readable"] = bool(readable)

        helper = threading.Thread(target=signal_this_thread)
        helper.start()
        helper.join()
    assert seen == {"pipe readable": True}, (
        "a SIGTERM delivered to a non-main thread left StopRequest's pipe empty, so the "
        "main thread's wait would sleep on; stop_on_signals must install the pipe with "
        "signal.set_wakeup_fd"
    )


def test_another_handled_signal_is_drained_so_later_waits_still_sleep() -> None:
    with stop_on_signals() as stop:
        previous = signal.signal(signal.SIGUSR1, lambda *_: None)
        try:
            signal.raise_signal(signal.SIGUSR1)
            assert not stop.wait(0.001)
        finally:
            signal.signal(signal.SIGUSR1, previous)
        readable, _, _ = select.select([stop.wakeup_fd_reader], [], [], 0)
        assert not readable, "the wake-up byte of a non-stop signal was left in the pipe"
        assert not stop()
