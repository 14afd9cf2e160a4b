"""``dw run|resume|signal|answer|cancel|delete``: drive runs and deliver signals."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from reference_engine.cli.failures import EXIT_SUSPENDED
from reference_engine.cli.hints import step_schema
from reference_engine.cli.options import common_options, store_flag_for
from reference_engine.cli.output import as_mapping, emit_json, emit_result
from reference_engine.cli.session import engine_session
from reference_engine.cli.views import SchemaLookup, render_delivery, render_run

if TYPE_CHECKING:
    from reference_engine.engine import Engine
    from reference_engine.workflows.model import Workflow


def parse_inputs(_ctx: click.Context, _param: click.Parameter,
                 values: tuple[str, ...]) -> dict[str, str]:
    inputs: dict[str, str] = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter("write each input as name=value, e.g. --input env=stage")
        inputs[name.strip()] = value
    return inputs


def read_payload(text: str) -> str:
    """``-`` reads the payload from stdin; anything else is the JSON text itself."""
    if text == "-":
        return sys.stdin.read()
    return text


def workflow_schema_lookup(workflow: Workflow) -> SchemaLookup:
    def lookup(step: str) -> Any:
        try:
            return workflow.step(step).value.schema
        except (KeyError, AttributeError):
            return None
    return lookup


def record_schema_lookup(engine: Engine, run_id: str) -> SchemaLookup:
    def lookup(step: str) -> Any:
        try:
            return step_schema(engine.show(run_id), step)
        except Exception:  # only a hint; a failed lookup shows a generic payload
            return None
    return lookup


def finish_run(view: Any, schema_for: SchemaLookup, *, as_json: bool, store_flag: str) -> None:
    """Print a RunView and exit 3 when it is suspended."""
    plain: Mapping[str, Any] = as_mapping(view)
    if as_json:
        emit_json(plain)
    else:
        render_run(plain, schema_for, store_flag)
    if plain.get("status") == "suspended":
        raise click.exceptions.Exit(EXIT_SUSPENDED)


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--run-id", default=None, metavar="ID", help="Use this run id instead of a new UUID.")
@click.option("--input", "inputs", multiple=True, metavar="NAME=VALUE", callback=parse_inputs,
              help="Override a workflow input (repeatable).")
@common_options
@click.pass_context
def run(ctx: click.Context, file: Path, run_id: str | None, inputs: dict[str, str],
        store_uri: str, as_json: bool) -> None:
    """Run a workflow file until it finishes or suspends.

    Exits 3 when the run suspends on a wait, and prints the next commands.
    """
    from reference_engine.workflows.loader import load_workflow

    workflow = load_workflow(file)
    with engine_session(store_uri, create=True) as engine:
        view = engine.run(workflow, run_id=run_id, inputs=inputs or None)
    finish_run(view, workflow_schema_lookup(workflow), as_json=as_json,
               store_flag=store_flag_for(ctx, store_uri))


@click.command()
@click.argument("run_id")
@common_options
@click.pass_context
def resume(ctx: click.Context, run_id: str, store_uri: str, as_json: bool) -> None:
    """Continue a run from its stored wait outcomes.

    Takes no answer: deliver one first with dw signal or dw answer. Exits 3 if the run
    suspends again.
    """
    with engine_session(store_uri) as engine:
        view = engine.resume(run_id)
        lookup = record_schema_lookup(engine, run_id)
        plain = as_mapping(view)
        schemas = {str(w.get("step")): lookup(str(w.get("step")))
                   for w in plain.get("waits") or [] if isinstance(w, Mapping)}
    finish_run(plain, schemas.get, as_json=as_json, store_flag=store_flag_for(ctx, store_uri))


def _delivery_options(func: Any) -> Any:
    func = click.option("--no-secret-detection", "no_secret_detection", is_flag=True,
                        help="Skip the secret gate; the receipt records the bypass.")(func)
    func = click.option("--submitted-by", default=None, metavar="NAME",
                        help="Who answered; stored on the receipt.")(func)
    return func


@click.command()
@click.argument("wait_id")
@click.option("--payload", required=True, metavar="JSON",
              help="The answer as JSON text; '-' reads it from stdin.")
@_delivery_options
@common_options
@click.pass_context
def signal(ctx: click.Context, wait_id: str, payload: str, submitted_by: str | None,
           no_secret_detection: bool, store_uri: str, as_json: bool) -> None:
    """Deliver a JSON answer to a wait, from any host.

    The run changes only at the next dw resume (or dw serve).
    """
    text = read_payload(payload)
    with engine_session(store_uri, claims=False) as engine:
        delivery = engine.signal(wait_id, text, submitted_by=submitted_by,
                                 secret_detection=not no_secret_detection)
    _print_delivery(delivery, as_json, store_flag_for(ctx, store_uri))


@click.command()
@click.argument("run_id")
@click.argument("wait_id")
@click.argument("payload", metavar="JSON")
@_delivery_options
@common_options
@click.pass_context
def answer(ctx: click.Context, run_id: str, wait_id: str, payload: str,
           submitted_by: str | None, no_secret_detection: bool, store_uri: str,
           as_json: bool) -> None:
    """Answer a wait of a named run (a checked dw signal).

    JSON is the answer; '-' reads it from stdin.
    """
    text = read_payload(payload)
    with engine_session(store_uri, claims=False) as engine:
        delivery = engine.answer(run_id, wait_id, text, submitted_by=submitted_by,
                                 secret_detection=not no_secret_detection)
    _print_delivery(delivery, as_json, store_flag_for(ctx, store_uri))


def _print_delivery(delivery: Any, as_json: bool, store_flag: str) -> None:
    plain = as_mapping(delivery)
    if as_json:
        emit_json(plain)
    else:
        render_delivery(plain, store_flag)


@click.command()
@click.argument("run_id")
@common_options
@click.pass_context
def cancel(ctx: click.Context, run_id: str, store_uri: str, as_json: bool) -> None:
    """Cancel a run and its open waits."""
    with engine_session(store_uri) as engine:
        view = engine.cancel(run_id)
    plain = as_mapping(view)
    if as_json:
        emit_json(plain)
    else:
        render_run(plain, lambda _step: None, store_flag_for(ctx, store_uri))


@click.command()
@click.argument("run_id")
@common_options
def delete(run_id: str, store_uri: str, as_json: bool) -> None:
    """Delete a run and every record it owns."""
    with engine_session(store_uri) as engine:
        engine.delete(run_id)
    emit_result({"runId": run_id, "deleted": True}, f"deleted run {run_id}", as_json=as_json)


COMMANDS = (run, resume, signal, answer, cancel, delete)
