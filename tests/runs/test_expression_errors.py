"""An expression that fails at run time fails its job or step, naming the expression."""

from __future__ import annotations

from typing import Any

from reference_engine.engine import Engine
from reference_engine.workflows.loader import parse_workflow


def _run(engine: Engine, jobs: dict[str, Any], inputs: dict[str, Any] | None = None) -> Any:
    workflow = parse_workflow({"name": "w", "inputs": inputs or {"n": 0}, "jobs": jobs})
    view = engine.run(workflow)
    return view, engine.show(view.run_id)


def test_a_failing_when_fails_only_its_job_with_the_expression_named(engine: Engine) -> None:
    view, shown = _run(engine, {
        "a": {"steps": [{"name": "s1", "log": "x"}]},
        "b": {"depends_on": ["a"], "when": "steps.s1.outputs.nope == 'x'",
              "steps": [{"name": "s2", "log": "never"}]},
        "c": {"depends_on": ["a"], "when": "succeeded('a')",
              "steps": [{"name": "s3", "log": "ran"}]},
    })
    assert view.status == "failed"
    assert shown["jobs"] == {"a": "succeeded", "b": "failed", "c": "succeeded"}
    event = next(e for e in shown["journal"] if e.get("type") == "job_failed")
    assert "the expression 'steps.s1.outputs.nope == 'x'' failed" in event["error"]
    assert "Traceback" not in event["error"]


def test_a_failing_template_fails_the_step_with_the_expression_named(engine: Engine) -> None:
    view, shown = _run(engine, {"a": {"steps": [
        {"name": "s1", "log": "ratio ${{ 10 / inputs.n }}"}]}})
    assert view.status == "failed"
    step = shown["steps"]["s1"]
    assert step["status"] == "failed"
    assert step["error"] == "the expression '10 / inputs.n' failed: divide by zero"


def test_a_for_each_that_is_not_a_list_fails_the_step(engine: Engine) -> None:
    view, shown = _run(engine, {"a": {"steps": [
        {"name": "s1", "log": "x", "for_each": "inputs.items"}]}}, inputs={"items": None})
    assert view.status == "failed"
    assert "gave null, not a list" in shown["steps"]["s1"]["error"]
