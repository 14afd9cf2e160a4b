"""``dw serve``: the scheduler loop. It resumes suspended runs whose waits all have outcomes."""

from __future__ import annotations

import math

import click

from reference_engine.cli.options import common_options
from reference_engine.cli.output import emit_json, note, say
from reference_engine.cli.session import engine_session
from reference_engine.cli.stop_signals import stop_on_signals

MIN_INTERVAL_S = 0.01
MAX_INTERVAL_S = 86_400.0

# The engine's own default (reference_engine.serving.scheduler.FULL_SCAN_EVERY_S), written out so
# that `dw --help` need not import the engine; a test keeps the two equal.
FULL_SCAN_EVERY_S = 300.0


def _interval(_ctx: click.Context, _param: click.Parameter, value: float) -> float:
    # FloatRange lets nan through (every comparison with nan is false) and inf too; a nan
    # interval spins, an infinite one overflows the wait. Both are usage errors.
    if not math.isfinite(value) or not MIN_INTERVAL_S <= value <= MAX_INTERVAL_S:
        raise click.BadParameter(
            f"must be a finite number of seconds from {MIN_INTERVAL_S:g} to "
            f"{MAX_INTERVAL_S:g}, e.g. --interval 2")
    return value


@click.command()
@click.option("--once", is_flag=True, help="Make one pass and exit.")
@click.option("--until-idle", is_flag=True,
              help="Exit after a pass that leaves no run ready to resume (for scripts).")
@click.option("--interval", default=2.0, show_default=True, metavar="SECONDS", type=float,
              callback=_interval,
              help=f"Pause between passes ({MIN_INTERVAL_S:g} to {MAX_INTERVAL_S:g}).")
@click.option("--full-scan-every", default=FULL_SCAN_EVERY_S, show_default=True,
              metavar="SECONDS", type=click.FloatRange(min=0),
              help="Read every run this often (0: every pass). Other passes read only "
                   "the runs the index names.")
@click.option("--full-scan", is_flag=True,
              help="Make the first pass read every run, whatever the index says (a store "
                   "written by an engine older than the index, or a check).")
@common_options
def serve(once: bool, until_idle: bool, interval: float, full_scan_every: float,
          full_scan: bool, store_uri: str, as_json: bool) -> None:
    """Resume runs whose waits all have outcomes.

    Each pass resumes, through the ordinary resume path and claim, every suspended run
    whose waits all have outcomes, and takes over runs whose owner died; a run another
    process holds is skipped. Loops until Ctrl-C or SIGTERM (the run in progress
    finishes, then the loop exits); --once makes one pass; --until-idle stops once no
    run is ready.

    A pass reads only what the index names: runs with a settled wait, runs filed as
    running (whose owner may have died), and waits whose deadline passed since the last
    look, which the store remembers, so a first pass costs what a later one does (cron,
    CI, serverless). A store that has never been served gets one full scan (every run
    read); --full-scan asks for one on the first pass, and a looping serve makes one
    every --full-scan-every seconds.
    """
    everything: list[str] = []
    passes = 0
    # The handlers go in first: a stop during a slow store open is honoured, not fatal.
    with stop_on_signals() as stop:
        with engine_session(store_uri, create=True) as engine:
            engine.schedule.full_scan_every = full_scan_every
            if not once and not until_idle and not stop():
                note(f"dw serve: polling every {interval:g}s; stop with Ctrl-C or SIGTERM")
            while not stop():
                # The pass looks at the stop between runs: a stop waits for the run in
                # progress only, never for the rest of the pass.
                resumed = engine.serve_once(full_scan=True if full_scan and passes == 0
                                            else None, should_stop=stop)
                passes += 1
                everything.extend(resumed)
                if as_json and not until_idle and (once or resumed):
                    emit_json({"resumed": list(resumed)})
                elif not as_json:
                    for run_id in resumed:
                        say(f"resumed {run_id}")
                    if once and not resumed:
                        say("nothing to resume")
                if once or stop() or (until_idle and not engine.ready_runs()):
                    break
                # A pass that resumed something goes again at once; one that only met
                # busy runs waits. A stop wakes the wait at once.
                stop.wait(0 if until_idle and resumed else interval)
        if as_json and (until_idle or (once and passes == 0)):
            emit_json({"resumed": everything})
        if not once and not until_idle:
            note("dw serve: stopped")
        elif stop():
            note(f"dw serve: stopped by {stop.signal_name}")
