"""``dw waits|runs|show|sweep``: look at what is in the store."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import click

from reference_engine.cli.hints import signal_command
from reference_engine.cli.options import common_options, store_flag_for
from reference_engine.cli.output import as_mapping, emit_json, say, table
from reference_engine.cli.session import engine_session
from reference_engine.cli.views import render_record
from reference_engine.records.run_states import STATUSES


def _next_command(wait: Any, plain: Mapping[str, Any], store_flag: str) -> str:
    """A ready-to-paste signal command for an open wait; the engine's own for expired ones."""
    schema = getattr(wait, "schema", None)
    if not plain.get("expired") and isinstance(schema, Mapping) and schema:
        return signal_command(str(plain.get("waitId", "")), schema, store_flag)
    command = plain.get("nextCommand")
    return f"{command}{store_flag}" if isinstance(command, str) and command else ""


@click.command()
@click.option("--workflow", default=None, metavar="NAME",
              help="Only waits of this workflow (each registration is still read).")
@common_options
@click.pass_context
def waits(ctx: click.Context, workflow: str | None, store_uri: str, as_json: bool) -> None:
    """List open waits, each with its next command.

    Sorted by deadline. Reads each wait's registration and outcome: two reads per open
    wait, and one more for a wait that timed out (is the run still waiting on it?).
    Looking settles overdue waits as timed out; it sweeps nothing (see dw sweep).
    """
    store_flag = store_flag_for(ctx, store_uri)
    with engine_session(store_uri) as engine:
        found = [(dict(as_mapping(w)), w) for w in engine.open_waits(workflow=workflow)]
    if as_json:
        emit_json({"waits": [plain for plain, _ in found]})
        return
    if not found:
        say("no open waits")
        return
    rows = [(w.get("waitId"), w.get("runId", ""), w.get("workflow"),
             f"{w.get('job')}/{w.get('step')}", w.get("deadline"),
             "expired" if w.get("expired") else "open") for w, _ in found]
    table("open waits", ["waitId", "run", "workflow", "job/step", "deadline", "state"], rows,
          id_columns=["waitId", "run", "deadline"])
    for plain, wait in found:
        say(f"  run {plain.get('runId', '')}: {_next_command(wait, plain, store_flag)}")


@click.command()
@click.option("--status", "statuses", multiple=True, metavar="STATUS",
              type=click.Choice(STATUSES),
              help="Only runs with this status (repeat for several); uses the index.")
@click.option("--workflow", default=None, metavar="NAME",
              help="Only runs of this workflow; uses the index.")
@common_options
def runs(statuses: tuple[str, ...], workflow: str | None, store_uri: str,
         as_json: bool) -> None:
    """List runs with their status.

    Without a filter this reads every run: one list and one read per run, which grows
    with the store. --status and --workflow list the index of runs by status and
    workflow and read only the runs it names. A run the index lost to a crash, or one
    older than the index, is filed again by dw sweep.
    """
    with engine_session(store_uri) as engine:
        found = [dict(as_mapping(r)) for r in engine.runs(statuses=statuses,
                                                          workflow=workflow)]
    if as_json:
        emit_json({"runs": found})
        return
    if not found:
        say("no runs; start one with: dw run FILE  (or try: dw demo)")
        return
    rows = [(r.get("runId"), r.get("workflow"), r.get("status"), r.get("updatedAt"))
            for r in found]
    table("runs", ["runId", "workflow", "status", "updated"], rows,
          id_columns=["runId", "updated"])


@click.command()
@click.argument("run_id")
@click.option("--timeline", is_flag=True,
              help="Draw the run as a timeline: steps, waits and their races, claims.")
@common_options
@click.pass_context
def show(ctx: click.Context, run_id: str, timeline: bool, store_uri: str,
         as_json: bool) -> None:
    """Show one run: its steps and its journal, or with --timeline, what happened when."""
    if timeline:
        _show_timeline(run_id, store_uri, as_json)
        return
    with engine_session(store_uri) as engine:
        record: Mapping[str, Any] = as_mapping(engine.show(run_id))
    if as_json:
        emit_json(record)
    else:
        render_record(record, store_flag_for(ctx, store_uri))


def _show_timeline(run_id: str, store_uri: str, as_json: bool) -> None:
    from reference_engine.cli.timeline_view import glyphs_for, render_timeline, terminal_width

    with engine_session(store_uri) as engine:
        drawn = engine.timeline(run_id)
    if as_json:
        emit_json(drawn.to_json())
        return
    encoding = getattr(sys.stdout, "encoding", None)
    for line in render_timeline(drawn, glyphs=glyphs_for(encoding), width=terminal_width()):
        click.echo(line)


@click.command()
@common_options
def sweep(store_uri: str, as_json: bool) -> None:
    """Remove old records of ended or deleted runs, and stale index entries.

    A record goes once its deadline is over 24 h past; old revisions and claims of
    ended runs are pruned. Index hints that point nowhere go at once, and a run the
    listing index lost is filed again. Reads every run.
    """
    with engine_session(store_uri) as engine:
        counts: Mapping[str, Any] = as_mapping(engine.sweep())
    if as_json:
        emit_json(dict(counts))
        return
    summary = ", ".join(f"{name}: {value}" for name, value in counts.items()) or "nothing"
    say(f"swept {summary}")


COMMANDS = (waits, runs, show, sweep)
