"""Small workflows and payloads the engine tests share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dw_testing.kit import workflows as kit_workflows
from reference_engine.engine import Engine
from reference_engine.workflows.loader import parse_workflow
from reference_engine.workflows.model import Workflow

SCHEMA = dict(kit_workflows.APPROVAL_SCHEMA)
YES = '{"approved": true}'
NO = '{"approved": false}'


def approval_workflow(*, timeout: int = 3600, sibling: dict[str, Any] | None = None,
                      for_each: list[Any] | None = None) -> Workflow:
    """The kit's approval workflow, with a sleeping sibling and an ``env`` input."""
    return kit_workflows.approval_workflow(
        timeout=timeout, siblings=[sibling or {"name": "soak", "sleep": 2}],
        for_each=for_each, inputs={"env": "prod"}, build_log="compiling ${{ inputs.env }}")


def plain_workflow() -> Workflow:
    return parse_workflow({"name": "plain", "jobs": {
        "a": {"steps": [{"name": "hello", "log": "hi"}]},
        "b": {"depends_on": ["a"], "steps": [{"name": "bye", "log": "bye"}]},
    }})


MakeEngine = Callable[..., Engine]
