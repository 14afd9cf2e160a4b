"""The workflows the engine-level tests run: one copy, built from a few knobs.

``approval_workflow`` is the shape every wait test uses: build, then an approval wait beside
a sibling job, then ship (only if approved) or rollback (if the wait failed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reference_engine.workflows.loader import parse_workflow
from reference_engine.workflows.model import Workflow

APPROVAL_SCHEMA: Mapping[str, Any] = {
    "type": "object", "required": ["approved"],
    "properties": {"approved": {"type": "boolean"}},
}
SOAK: Mapping[str, Any] = {"name": "soak", "log": "soaking"}


def approval_workflow(*, timeout: int = 3600, name: str = "approval",
                      siblings: Sequence[Mapping[str, Any]] = (SOAK,),
                      for_each: list[Any] | None = None,
                      inputs: Mapping[str, Any] | None = None,
                      build_log: str = "compiling") -> Workflow:
    """build -> (approve: the ``approval`` wait | checks: ``siblings``) -> ship / rollback.

    With ``for_each`` the wait fans out, and ship runs once every instance succeeded.
    """
    wait_step: dict[str, Any] = {"name": "approval", "wait_for_signal": {
        "timeout": timeout, "schema": dict(APPROVAL_SCHEMA)}}
    if for_each is not None:
        wait_step["for_each"] = for_each
    # CEL: a failed approval has no payload, so ask succeeded() first (&& short-circuits).
    when = ("succeeded('approve') && steps.approval.outputs.payload.approved" if for_each is None
            else "succeeded('approve')")
    document: dict[str, Any] = {
        "name": name,
        "jobs": {
            "build": {"steps": [{"name": "compile", "log": build_log}]},
            "approve": {"depends_on": ["build"], "steps": [wait_step]},
            "checks": {"depends_on": ["build"], "steps": [dict(step) for step in siblings]},
            "ship": {"depends_on": ["approve", "checks"], "when": when,
                     "steps": [{"name": "deploy", "log": "deploying"}]},
            "rollback": {"depends_on": ["approve"], "when": "failed('approve')",
                         "steps": [{"name": "notify", "log": "no approval"}]},
        },
    }
    if inputs is not None:
        document["inputs"] = dict(inputs)
    return parse_workflow(document)


def gate_flow(*, inputs: str | None = None, after_log: str = "approved") -> str:
    """YAML text for CLI tests: one wait, then a step that only runs once it was answered."""
    header = "name: gate\n" + (f"inputs: {inputs}\n" if inputs is not None else "")
    return header + f"""\
jobs:
  approve:
    steps:
      - name: approval
        wait_for_signal:
          timeout: 3600
          schema:
            type: object
            required: [approved]
            properties: {{approved: {{type: boolean}}}}
  after:
    depends_on: [approve]
    steps:
      - name: done
        log: "{after_log}"
"""


GATE_FLOW = gate_flow()
