"""Readable renderings of the engine's view objects (runs, deliveries, run records)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from reference_engine.cli.hints import resume_command, signal_command
from reference_engine.cli.output import note, say, table

SchemaLookup = Callable[[str], Any]


def render_run(view: Mapping[str, Any], schema_for: SchemaLookup, store_flag: str = "") -> None:
    """A run after ``dw run`` / ``dw resume`` / ``dw cancel``: status, waits, next command."""
    run_id = str(view.get("runId", ""))
    status = str(view.get("status", ""))
    say(f"run {run_id} ({view.get('workflow', '')}): {status}")
    waits = view.get("waits") or []
    if status == "suspended" and isinstance(waits, Sequence) and waits:
        rows = [(w.get("waitId"), w.get("job"), w.get("step"), w.get("deadline"))
                for w in waits if isinstance(w, Mapping)]
        table(None, ["waitId", "job", "step", "deadline"], rows,
              id_columns=["waitId", "deadline"])
        say("Next, from any shell (this one or another):")
        for w in waits:
            if isinstance(w, Mapping):
                step = str(w.get("step", ""))
                say(f"  {signal_command(str(w.get('waitId', '')), schema_for(step), store_flag)}")
        say(f"then:  {resume_command(run_id, store_flag)}")
    elif status in ("succeeded", "failed", "cancelled"):
        say(f"details: dw show {run_id}{store_flag}")


def render_delivery(delivery: Mapping[str, Any], store_flag: str = "") -> None:
    receipt = delivery.get("receipt")
    receipt = receipt if isinstance(receipt, Mapping) else {}
    say(f"accepted: wait {delivery.get('waitId', '')} of run {delivery.get('runId', '')}, "
        f"receipt {receipt.get('id', '')} at {receipt.get('receivedAt', '')}")
    command = delivery.get("resumeCommand")
    if delivery.get("awaitingResume") and isinstance(command, str) and command:
        say(f"Next: {command}{store_flag}")


def _brief(value: Any, limit: int = 60) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _when(value: Any) -> str:
    """Journal times: epoch seconds become ISO-8601 UTC; strings pass through."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            moment = datetime.fromtimestamp(value, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return str(value)
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    return "" if value is None else str(value)


def render_record(record: Mapping[str, Any], store_flag: str = "") -> None:
    """``dw show``: header, a steps table, the journal, and the next command if suspended."""
    run_id = str(record.get("runId", ""))
    damaged = record.get("damaged")
    if isinstance(damaged, Mapping):
        note(f"revision {damaged.get('rev')} ({damaged.get('key')}) cannot be read: "
             f"{damaged.get('reason')}; showing revision {record.get('rev')}. To recover, "
             f"{damaged.get('recovery')}")
    say(f"run {run_id} ({record.get('workflow', '')}): {record.get('status', '')}"
        f"  created {record.get('createdAt', '?')}, updated {record.get('updatedAt', '?')}")
    steps = record.get("steps")
    waiting: list[tuple[str, Mapping[str, Any]]] = []
    if isinstance(steps, Mapping) and steps:
        rows = []
        for name, step in steps.items():
            step = step if isinstance(step, Mapping) else {}
            rows.append((name, step.get("job"), step.get("status"),
                         _brief(step.get("output")), _brief(step.get("error"))))
            wait = step.get("wait")
            if step.get("status") == "waiting_signal" and isinstance(wait, Mapping):
                waiting.append((str(name), wait))
        table("steps", ["step", "job", "status", "output", "error"], rows, id_columns=["step"])
    journal = record.get("journal")
    if isinstance(journal, Sequence) and journal:
        events: list[tuple[Any, ...]] = []
        for number, event in enumerate(journal, start=1):
            event = event if isinstance(event, Mapping) else {}
            extra = {k: v for k, v in event.items() if k not in ("type", "at")}
            events.append((number, _when(event.get("at")), event.get("type", ""),
                           _brief(extra, 80)))
        table("journal", ["#", "at", "type", "details"], events, id_columns=["type"])
    if record.get("status") == "suspended" and waiting:
        say("Next, from any shell:")
        for _name, wait in waiting:
            say(f"  {signal_command(str(wait.get('id', '')), wait.get('schema'), store_flag)}")
        say(f"then:  {resume_command(run_id, store_flag)}")
