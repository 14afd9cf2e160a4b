"""``dw serve``: the scheduler loop. It resumes suspended runs whose waits all have outcomes."""

from __future__ import annotations

import signal as os_signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

import click

from reference_engine.cli.options import common_options
from reference_engine.cli.output import emit_json, note, say
from reference_engine.cli.session import engine_session


@contextmanager
def stop_on_sigterm(stop: threading.Event) -> Iterator[None]:
    """SIGTERM sets ``stop``; the loop finishes its pass and exits 0."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers exist only in the main thread (e.g. under a test runner)
        return

    def handler(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    previous = os_signal.signal(os_signal.SIGTERM, handler)
    try:
        yield
    finally:
        os_signal.signal(os_signal.SIGTERM, previous)


@click.command()
@click.option("--once", is_flag=True, help="Make one pass and exit.")
@click.option("--interval", default=2.0, show_default=True, metavar="SECONDS",
              type=click.FloatRange(min=0.01), help="Pause between passes.")
@common_options
def serve(once: bool, interval: float, store_uri: str, as_json: bool) -> None:
    """Resume runs whose waits all have outcomes.

    Loops until Ctrl-C or SIGTERM; --once makes one pass.
    """
    stop = threading.Event()
    with engine_session(store_uri) as engine, stop_on_sigterm(stop):
        if not once:
            note(f"dw serve: polling every {interval:g}s; stop with Ctrl-C or SIGTERM")
        try:
            while True:
                resumed = engine.serve_once()
                if as_json and (once or resumed):
                    emit_json({"resumed": list(resumed)})
                elif resumed:
                    for run_id in resumed:
                        say(f"resumed {run_id}")
                elif once:
                    say("nothing to resume")
                # An Event wait, not sleep: SIGTERM wakes it at once.
                if once or stop.wait(interval):
                    break
        except KeyboardInterrupt:
            pass
    if not once:
        note("dw serve: stopped")
