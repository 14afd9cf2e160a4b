"""``dw demo``: run the packaged approval workflow, signal it from another process, resume."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

import click

from reference_engine.cli.failures import fail
from reference_engine.cli.options import common_options
from reference_engine.cli.output import as_mapping, emit_json, note, say
from reference_engine.cli.session import engine_session
from reference_engine.cli.views import render_record

EXAMPLE = "approval.yaml"
DEMO_PAYLOAD = {"approved": True}


def signal_from_other_process(wait_id: str, store_uri: str) -> dict[str, Any]:
    """``python -m reference_engine signal ...`` in a child process; its JSON answer."""
    argv = [sys.executable, "-m", "reference_engine", "signal", wait_id,
            "--payload", json.dumps(DEMO_PAYLOAD), "--submitted-by", "dw-demo",
            "--store", store_uri, "--json"]
    import subprocess

    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    try:
        answer = json.loads(done.stdout) if done.stdout.strip() else {}
    except json.JSONDecodeError:
        answer = {}
    if done.returncode != 0:
        error = answer.get("error") if isinstance(answer, Mapping) else None
        message = error.get("message") if isinstance(error, Mapping) else None
        reason = message or (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise click.ClickException(
            f"the signal process exited {done.returncode}: {reason}")
    return answer if isinstance(answer, dict) else {}


@click.command()
@click.option("--print-workflow", is_flag=True,
              help="Print the packaged approval.yaml and exit (to try it by hand with dw run).")
@common_options
def demo(print_workflow: bool, store_uri: str, as_json: bool) -> None:
    """Run the approval example end to end.

    Runs the packaged examples/approval.yaml until it suspends, signals its wait from a
    separate process, resumes it and prints the finished run. To do the same by hand:
    dw demo --print-workflow > approval.yaml, then dw run approval.yaml.
    """
    from importlib import resources

    source = resources.files("reference_engine").joinpath("examples", EXAMPLE)
    if print_workflow:
        click.echo(source.read_text(encoding="utf-8"), nl=False)
        return
    if store_uri.lower().startswith("memory:"):
        fail("dw demo signals from a second process, which cannot see a memory:// store; "
             "use the default ./.dw or another shared store", json_mode=as_json,
             command="dw demo", kind="unsupported")
    from reference_engine.workflows.loader import load_workflow

    with resources.as_file(source) as path, engine_session(store_uri, create=True) as engine:
        workflow = load_workflow(path)
        note(f"1/3 running {EXAMPLE} on store {store_uri} until it suspends")
        started = as_mapping(engine.run(workflow))
        run_id = str(started.get("runId", ""))
        waits = [w for w in started.get("waits") or [] if isinstance(w, Mapping)]
        if started.get("status") != "suspended" or not waits:
            fail(f"expected run {run_id} to suspend on its approval wait, but it is "
                 f"{started.get('status')}; inspect it with: dw show {run_id}",
                 json_mode=as_json, command="dw demo")
        for wait in waits:
            wait_id = str(wait.get("waitId", ""))
            note(f"2/3 signalling wait {wait_id} from a separate process: "
                 f"dw signal {wait_id} --payload '{json.dumps(DEMO_PAYLOAD)}'")
            signal_from_other_process(wait_id, store_uri)
        note(f"3/3 resuming run {run_id}")
        finished = as_mapping(engine.resume(run_id))
        record = as_mapping(engine.show(run_id))
    if as_json:
        emit_json(record)
    else:
        render_record(record)
        say(f"demo finished: run {run_id} {finished.get('status')}; "
            f"see it again with: dw show {run_id}")
    if finished.get("status") != "succeeded":
        raise click.exceptions.Exit(1)
