"""Small workflows and payloads the engine tests share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reference_engine.engine import Engine
from reference_engine.workflows.loader import parse_workflow
from reference_engine.workflows.model import Workflow

SCHEMA = {"type": "object", "required": ["approved"],
          "properties": {"approved": {"type": "boolean"}}}
YES = '{"approved": true}'
NO = '{"approved": false}'


def approval_workflow(*, timeout: int = 3600, sibling: dict[str, Any] | None = None,
                      for_each: list[Any] | None = None) -> Workflow:
    """build -> (approve wait | checks) -> ship / rollback, like SPEC §4.1."""
    wait_step: dict[str, Any] = {"name": "approval",
                                 "wait_for_signal": {"timeout": timeout, "schema": SCHEMA}}
    if for_each is not None:
        wait_step["for_each"] = for_each
    when = ("steps.approval.outputs.payload.approved" if for_each is None
            else "succeeded('approve')")
    return parse_workflow({
        "name": "approval",
        "inputs": {"env": "prod"},
        "jobs": {
            "build": {"steps": [{"name": "compile", "log": "compiling ${{ inputs.env }}"}]},
            "approve": {"depends_on": ["build"], "steps": [wait_step]},
            "checks": {"depends_on": ["build"],
                       "steps": [sibling or {"name": "soak", "sleep": 2}]},
            "ship": {"depends_on": ["approve", "checks"], "when": when,
                     "steps": [{"name": "deploy", "log": "deploying"}]},
            "rollback": {"depends_on": ["approve"], "when": "failed('approve')",
                         "steps": [{"name": "notify", "log": "no approval"}]},
        },
    })


def plain_workflow() -> Workflow:
    return parse_workflow({"name": "plain", "jobs": {
        "a": {"steps": [{"name": "hello", "log": "hi"}]},
        "b": {"depends_on": ["a"], "steps": [{"name": "bye", "log": "bye"}]},
    }})


MakeEngine = Callable[..., Engine]
