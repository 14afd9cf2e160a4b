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

# The engine's own default (reference_engine.scheduling.FULL_SCAN_EVERY_S), written out so
# that `dw --help` need not import the engine; a test keeps the two equal.
FULL_SCAN_EVERY_S = 300.0


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
@click.option("--until-idle", is_flag=True,
              help="Exit after a pass that leaves no run ready to resume (for scripts).")
@click.option("--interval", default=2.0, show_default=True, metavar="SECONDS",
              type=click.FloatRange(min=0.01), help="Pause between passes.")
@click.option("--full-scan-every", default=FULL_SCAN_EVERY_S, show_default=True,
              metavar="SECONDS", type=click.FloatRange(min=0),
              help="Read every run this often (0: every pass). Other passes read only "
                   "the runs the index names; a full scan finds what a crash left unhinted.")
@common_options
def serve(once: bool, until_idle: bool, interval: float, full_scan_every: float,
          store_uri: str, as_json: bool) -> None:
    """Resume runs whose waits all have outcomes.

    Each pass resumes, through the ordinary resume path and claim, every suspended run
    whose waits all have outcomes, and takes over runs whose owner died; a run another
    process holds is skipped. Loops until Ctrl-C or SIGTERM; --once makes one pass;
    --until-idle stops once no run is ready.

    The first pass reads every run (a full scan), and so does one every
    --full-scan-every seconds. The passes between read only what the index names: runs
    with a settled wait, and waits whose deadline passed since the last pass.
    """
    stop = threading.Event()
    with engine_session(store_uri) as engine, stop_on_sigterm(stop):
        engine.schedule.full_scan_every = full_scan_every
        if not once and not until_idle:
            note(f"dw serve: polling every {interval:g}s; stop with Ctrl-C or SIGTERM")
        everything: list[str] = []
        try:
            while True:
                resumed = engine.serve_once()
                everything.extend(resumed)
                if as_json and not until_idle and (once or resumed):
                    emit_json({"resumed": list(resumed)})
                elif not as_json:
                    for run_id in resumed:
                        say(f"resumed {run_id}")
                    if once and not resumed:
                        say("nothing to resume")
                if once or (until_idle and not engine.ready_runs()):
                    break
                # An Event wait, not sleep: SIGTERM wakes it at once. A pass that resumed
                # something goes again at once; one that only met busy runs waits.
                if stop.wait(0 if until_idle and resumed else interval):
                    break
        except KeyboardInterrupt:
            pass
        if as_json and until_idle:
            emit_json({"resumed": everything})
    if not once and not until_idle:
        note("dw serve: stopped")
