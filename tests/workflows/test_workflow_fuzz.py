"""Fuzzing the loader: any structure or text gives a Workflow or a WorkflowError, nothing else."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference_engine.workflows.errors import WorkflowError
from reference_engine.workflows.loader import load_yaml, parse_workflow

KEYS = ["name", "inputs", "jobs", "steps", "depends_on", "when", "log", "sleep", "fail",
        "shell", "python", "wait_for_signal", "timeout", "schema", "type", "enum", "for_each",
        "allow_failure", "a", "b", "s", "t", "required", "properties", "items"]

scalars = (st.none() | st.booleans() | st.integers(-5, 40_000_000) | st.floats()
           | st.sampled_from([*KEYS, "inputs.a", "failed('a')", "${{ inputs.a }}", "m:f",
                                     "object", "a/b", "s[0]", ""])
           | st.text(max_size=8))
structures = st.recursive(
    scalars,
    lambda inner: (st.lists(inner, max_size=4)
                   | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=4), inner,
                                     max_size=5)
                   | st.dictionaries(st.integers(0, 3), inner, max_size=2)
                   | st.sets(st.integers(0, 3), max_size=2)
                   | st.tuples(inner)),
    max_leaves=30)


@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(structures)
def test_any_structure_loads_or_is_refused_with_workflow_error(doc: Any) -> None:
    try:
        workflow = parse_workflow(doc)
    except WorkflowError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert parse_workflow(json.loads(json.dumps(workflow.source))) == workflow


job_names = st.sampled_from(["a", "b", "c"])
steps = st.fixed_dictionaries(
    {"name": st.sampled_from(["s1", "s2", "s3", "s4"])},
    optional={"log": st.sampled_from(["x", "${{ inputs.env }}", "${{ steps.s1.outputs.o }}"]),
              "sleep": st.sampled_from([0, 1.5, -1]),
              "wait_for_signal": st.fixed_dictionaries(
                  {"timeout": st.sampled_from([1, 60, 0])},
                  optional={"schema": st.sampled_from([{}, {"type": "object"},
                                                       {"enum": []}])}),
              "for_each": st.sampled_from([[1, 2], "inputs.env", "item", "[inputs.env]"]),
              "allow_failure": st.booleans()})
jobs = st.fixed_dictionaries(
    {"steps": st.lists(steps, min_size=1, max_size=2)},
    optional={"depends_on": st.lists(job_names, max_size=2),
              "when": st.sampled_from(["failed('a')", "succeeded('b') && inputs.env == 'x'",
                                       "succeeded('b') and inputs.env",
                                       "steps.s1.outputs.ok", "inputs.env =="])})
near_valid = st.fixed_dictionaries({
    "name": st.sampled_from(["w", "w/x"]),
    "inputs": st.just({"env": "prod"}),
    "jobs": st.dictionaries(job_names, jobs, min_size=1, max_size=3)})


@settings(max_examples=400, deadline=None)
@given(near_valid)
def test_near_valid_workflows_load_or_are_refused_cleanly(doc: dict[str, Any]) -> None:
    try:
        workflow = parse_workflow(doc)
    except WorkflowError:
        return
    levels = workflow.levels()  # a loaded workflow never has a cycle
    assert sorted(n for level in levels for n in level) == sorted(workflow.jobs)
    names = [s.name for j in workflow.jobs.values() for s in j.steps]
    assert len(names) == len(set(names))


YAML_ATOMS = ["name: w\n", "jobs:\n", "  a:\n", "    steps:\n", "      - name: s\n",
              "        log: x\n", "        sleep: 2\n", ": ", "- ", "[", "]", "{", "}", "&a ",
              "*a ", "<<: ", "!!python/object ", "!!binary ", "2026-01-01 ", "'", '"', "\t",
              "---\n", "%YAML 1.1\n", "? ", ",", "#", "\n", "  ", "\\", "~", ".nan", "0x1F"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(YAML_ATOMS), max_size=20).map("".join) | st.text(max_size=60))
def test_any_text_loads_or_is_refused_with_workflow_error(text: str) -> None:
    try:
        parse_workflow(load_yaml(text))
    except WorkflowError as exc:
        assert str(exc) and "Traceback" not in str(exc) and "\n" not in str(exc)


@settings(max_examples=50, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=80))
def test_any_bytes_in_a_file_are_refused_or_loaded(tmp_path: Path, raw: bytes) -> None:
    from reference_engine.workflows.loader import load_workflow

    path = tmp_path / "fuzz.yaml"
    path.write_bytes(raw)
    with contextlib.suppress(WorkflowError):
        load_workflow(path)
