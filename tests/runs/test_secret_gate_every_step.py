"""The secret gate covers every value a step makes, and the answer bypass carries through.

One run per test: an approval answered with ``--no-secret-detection`` holds an AWS-key-shaped
value; then one step of each kind copies it and also makes a GitHub-token-shaped value of its
own. The copy stays (the operator let it through); what the step made is redacted, in the
stored record, the journal and every printed line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.secret_steps import MADE

from reference_engine.engine import Engine
from reference_engine.refusals import Refusal
from reference_engine.stores.memory import MemoryStore
from reference_engine.workflows.errors import WorkflowError
from reference_engine.workflows.loader import load_workflow, parse_workflow

LET_THROUGH = "AKIA" + "QWERTYUIOPASDFGH"
ANSWER = "steps.approval.outputs.payload.key"
# The step makes the token from pieces, so the workflow's own text holds no secret.
MAKE = "'ghp_' + 'Zx9Zx9Zx9Zx9' + 'Zx9Zx9Zx9Zx9' + 'Zx9Zx9Zx9Zx9'"
STEPS: dict[str, dict[str, Any]] = {
    "log": {"log": f"answer=${{{{ {ANSWER} }}}} made=${{{{ {MAKE} }}}}"},
    "fail": {"fail": f"answer=${{{{ {ANSWER} }}}} made=${{{{ {MAKE} }}}}",
             "allow_failure": True},
    "shell": {"shell": f"printf '%s %s' '${{{{ {ANSWER} }}}}' \"gh\"p_$(printf 'Zx9%.0s' "
                       "1 2 3 4 5 6 7 8 9 10 11 12)"},
    "python": {"python": "support.secret_steps:copy_and_make"},
    "sleep": {"sleep": 0},
}


def _run(make_engine: Callable[..., Engine], kind: str) -> tuple[dict[str, Any], str, str]:
    printed: list[str] = []
    store = MemoryStore()
    engine = make_engine(store, progress=printed.append)
    workflow = parse_workflow({"name": "gate", "jobs": {
        "approve": {"steps": [{"name": "approval", "wait_for_signal": {
            "timeout": 3600, "schema": {"type": "object"}}}]},
        "copy": {"depends_on": ["approve"], "steps": [{"name": "it", **STEPS[kind]}]}}})
    view = engine.run(workflow)
    payload = json.dumps({"key": LET_THROUGH})
    with pytest.raises(Refusal) as refused:  # without the bypass the answer is refused
        engine.signal(view.waits[0].wait_id, payload)
    assert refused.value.kind == "secret_detected"
    engine.signal(view.waits[0].wait_id, payload, secret_detection=False)
    engine.resume(view.run_id)
    stored = b"\n".join(store.get(k) or b"" for k in store.list("")).decode()
    return engine.show(view.run_id)["steps"], stored, "\n".join(printed)


@pytest.mark.parametrize("kind", sorted(STEPS))
def test_a_step_keeps_a_bypassed_answer_and_redacts_what_it_made(
        make_engine: Callable[..., Engine], kind: str) -> None:
    steps, stored, printed = _run(make_engine, kind)
    step = steps["it"]
    made = json.dumps({"output": step["output"], "error": step.get("error")})
    assert MADE not in stored and MADE not in printed
    if kind == "sleep":  # makes no text: its output is only the seconds
        assert step["output"] == {"seconds": 0.0}
        return
    assert LET_THROUGH in made, made  # the copy of the bypassed answer stays
    assert "[redacted:github_token]" in made, made
    if kind == "python":
        assert step["output"]["nested"] == [{"password": "[redacted:credential_field]"}]
    if kind in ("log", "fail"):
        assert "[redacted:github_token]" in printed


def test_the_wait_step_stores_the_bypassed_answer_as_given(
        make_engine: Callable[..., Engine]) -> None:
    steps, stored, _ = _run(make_engine, "sleep")
    assert steps["approval"]["output"]["payload"] == {"key": LET_THROUGH}
    assert steps["approval"]["output"]["signal"]["secretDetection"] is False
    assert LET_THROUGH in stored


def test_without_a_bypass_nothing_is_let_through(engine: Engine) -> None:
    workflow = parse_workflow({"name": "made", "jobs": {"a": {"steps": [
        {"name": "it", "log": "made=${{ 'AKIA' + 'QWERTYUIOP' + 'ASDFGH' }}"}]}}})
    view = engine.run(workflow)
    assert engine.show(view.run_id)["steps"]["it"]["output"] == {
        "message": "made=[redacted:aws_access_key_id]"}


def test_a_workflow_file_holding_a_secret_literal_is_refused_with_its_line(
        tmp_path: Path) -> None:
    path = tmp_path / "pasted.yaml"
    path.write_text("name: pasted\njobs:\n  a:\n    steps:\n      - name: call\n"
                    f"        shell: \"curl -u {LET_THROUGH}:x https://example.com\"\n",
                    encoding="utf-8")
    with pytest.raises(WorkflowError) as info:
        load_workflow(path)
    message = str(info.value)
    assert "secret-shaped value (aws_access_key_id) at line 6" in message
    assert "pass the secret through the environment" in message
    assert LET_THROUGH not in message
    with pytest.raises(WorkflowError, match="secret-shaped"):
        parse_workflow({"name": "w", "jobs": {"a": {"steps": [
            {"name": "s", "log": f"{LET_THROUGH}"}]}}})
