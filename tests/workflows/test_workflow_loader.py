"""The workflow loader: the workflow format, and one clear WorkflowError for each bad file."""

from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from reference_engine.workflows.errors import WorkflowError
from reference_engine.workflows.loader import load_workflow, parse_workflow, with_inputs
from reference_engine.workflows.model import WaitSpec

# The example ``dw demo`` runs and prints: what users copy is what must load.
PACKAGED_EXAMPLE = resources.files("reference_engine").joinpath("examples", "approval.yaml")


def minimal(**overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": "w", "jobs": {"a": {"steps": [{"name": "s", "log": "hi"}]}}}
    doc.update(overrides)
    return doc


def one_step(step: dict[str, Any], **job: Any) -> dict[str, Any]:
    return {"name": "w", "inputs": {"env": "prod"},
            "jobs": {"a": {"steps": [{"name": "s", **step}], **job}}}


def refusal(doc: Any) -> str:
    with pytest.raises(WorkflowError) as info:
        parse_workflow(doc)
    return str(info.value)


def written(tmp_path: Path, text: str | bytes, name: str = "w.yaml") -> Path:
    """``text`` (bytes as they are) in a file ``name`` under ``tmp_path``."""
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


@pytest.fixture
def example_file(tmp_path: Path) -> Path:
    return written(tmp_path, PACKAGED_EXAMPLE.read_text(encoding="utf-8"), "approval.yaml")


def test_the_packaged_example_loads_with_its_levels(example_file: Path) -> None:
    workflow = load_workflow(example_file)
    assert workflow.name == "approval"
    assert workflow.inputs == {"env": "prod"}
    assert workflow.levels() == [["build"], ["approve", "checks"], ["rollback", "ship"]]
    assert workflow.has_wait()
    wait = workflow.step("approval")
    assert wait.kind == "wait_for_signal"
    assert wait.value == WaitSpec(timeout=3600.0, schema={
        "type": "object", "required": ["approved"],
        "properties": {"approved": {"type": "boolean"}}})
    assert workflow.step("soak").value == 0.2
    assert workflow.jobs["ship"].depends_on == ("approve", "checks")
    assert workflow.jobs["rollback"].when == "failed('approve')"


def test_source_is_plain_json_and_rebuilds_an_equal_workflow(example_file: Path) -> None:
    workflow = load_workflow(example_file)
    snapshot = json.loads(json.dumps(workflow.source))
    assert snapshot == workflow.source
    assert parse_workflow(snapshot) == workflow


def test_parse_does_not_share_the_callers_mapping() -> None:
    doc = minimal(inputs={"xs": [1, 2]})
    workflow = parse_workflow(doc)
    doc["inputs"]["xs"].append(3)
    assert workflow.inputs == {"xs": [1, 2]}


def test_with_inputs_overrides_defaults_and_the_snapshot() -> None:
    workflow = parse_workflow(minimal(inputs={"env": "prod", "n": 1}))
    changed = with_inputs(workflow, {"env": "stage"})
    assert changed.inputs == {"env": "stage", "n": 1}
    assert changed.source["inputs"] == {"env": "stage", "n": 1}
    assert workflow.inputs == {"env": "prod", "n": 1}
    assert with_inputs(workflow, {}) is workflow


@pytest.mark.parametrize(("default", "given", "read"), [
    (1, "5", 5), (0.5, "2", 2), (0.5, "2.5", 2.5), (False, "true", True), ([1], "[2, 3]", [2, 3]),
    ({"a": 1}, '{"b": 2}', {"b": 2}), ("text", "5", "5"), (None, "5", "5"), (1, 7, 7),
])
def test_text_for_a_typed_input_is_read_as_json_of_the_defaults_kind(default: Any, given: Any,
                                                                       read: Any) -> None:
    workflow = parse_workflow(minimal(inputs={"x": default}))
    got = with_inputs(workflow, {"x": given}).inputs["x"]
    assert got == read and type(got) is type(read)


@pytest.mark.parametrize(("default", "given"), [(1, "five"), (1, "2.5"), (True, "1"),
                                                ([1], '{"a": 1}'), (1, "true")])
def test_text_of_another_kind_for_a_typed_input_is_refused(default: Any, given: str) -> None:
    workflow = parse_workflow(minimal(inputs={"x": default}))
    with pytest.raises(WorkflowError, match=r"input 'x' has a default of type .*pass a"):
        with_inputs(workflow, {"x": given})


def test_with_inputs_refuses_an_undeclared_input_naming_the_declared_ones() -> None:
    workflow = parse_workflow(minimal(inputs={"env": "prod"}))
    with pytest.raises(WorkflowError, match=r"no input 'envv' \(declared: env\)"):
        with_inputs(workflow, {"envv": "x"})


def test_empty_inputs_and_depends_on_read_as_none(tmp_path: Path) -> None:
    workflow = load_workflow(written(tmp_path, "name: w\ninputs:\njobs:\n  a:\n    depends_on:\n"
                                               "    steps: [{name: s, log: x}]\n"))
    assert workflow.inputs == {} and workflow.jobs["a"].depends_on == ()
    assert with_inputs(workflow, {}) is workflow
    assert parse_workflow(workflow.source) == workflow


def test_for_each_steps_keep_their_list_or_expression() -> None:
    doc = {"name": "w", "inputs": {"targets": ["a", "b"]}, "jobs": {"a": {"steps": [
        {"name": "lit", "log": "${{ item }}", "for_each": [1, 2]},
        {"name": "expr", "log": "to ${{ item }}", "for_each": "inputs.targets",
         "allow_failure": True},
    ]}}}
    workflow = parse_workflow(doc)
    assert workflow.step("lit").for_each == [1, 2]
    assert workflow.step("expr").for_each == "inputs.targets"
    assert workflow.step("expr").allow_failure is True
    assert workflow.step("expr[1]").name == "expr"


def test_a_wait_without_schema_accepts_anything() -> None:
    workflow = parse_workflow(one_step({"wait_for_signal": {"timeout": 1}}))
    assert workflow.step("s").value == WaitSpec(timeout=1.0, schema={})


@pytest.mark.parametrize("timeout", [1, 1.5, 31_536_000])
def test_timeouts_inside_the_range_load(timeout: float) -> None:
    parse_workflow(one_step({"wait_for_signal": {"timeout": timeout}}))


@pytest.mark.parametrize("timeout", [0, 0.5, -1, 31_536_001, True, "60", None, [60]])
def test_timeouts_outside_the_range_are_refused(timeout: Any) -> None:
    message = refusal(one_step({"wait_for_signal": {"timeout": timeout}}))
    assert "'timeout' takes a number of seconds from 1 to 31536000" in message
    assert "job 'a', step 's'" in message


# -- refusals: each names where and what to do --------------------------------------

BAD_DOCUMENTS: list[tuple[str, Any, str]] = [
    ("not a mapping", ["name"], "the workflow must be a mapping"),
    ("no name", {"jobs": {}}, "'name' must be one path segment"),
    ("name with slash", minimal(name="a/b"), "'name' must be one path segment"),
    ("name dot-dot", minimal(name=".."), "'name' must be one path segment"),
    ("unknown top key", minimal(job={}), "unknown key 'job' in the workflow"),
    ("no jobs", minimal(jobs={}), "'jobs' must be a non-empty mapping"),
    ("bad job name", minimal(jobs={"a b": {"steps": [{"name": "s", "log": "x"}]}}),
     "job 'a b': a job name must be a name"),
    ("job not mapping", minimal(jobs={"a": ["x"]}), "job 'a': a job must be a mapping"),
    ("no steps", minimal(jobs={"a": {"steps": []}}), "'steps' must be a non-empty list"),
    ("unknown job key", minimal(jobs={"a": {"steps": [{"name": "s", "log": "x"}], "if": "x"}}),
     "unknown key 'if' in a job"),
    ("unknown kind", one_step({"run": "x"}), "unknown step kind or key 'run'"),
    ("two kinds", one_step({"log": "x", "shell": "y"}), "exactly one kind key"),
    ("no kind", one_step({}), "exactly one kind key"),
    ("step without name", minimal(jobs={"a": {"steps": [{"log": "x"}]}}),
     "job 'a', step 1: the step has no 'name'"),
    ("bracket in step name", minimal(jobs={"a": {"steps": [{"name": "s[0]", "log": "x"}]}}),
     "the step name must be a name"),
    ("slash in step name", minimal(jobs={"a": {"steps": [{"name": "s/t", "log": "x"}]}}),
     "the step name must be a name"),
    ("duplicate step name", minimal(jobs={
        "a": {"steps": [{"name": "s", "log": "x"}]},
        "b": {"steps": [{"name": "s", "log": "y"}]}}),
     "job 'b', step 's': the step name is already used in job 'a'"),
    ("unknown dependency", minimal(jobs={"a": {"depends_on": ["zz"],
                                               "steps": [{"name": "s", "log": "x"}]}}),
     "depends_on names job 'zz', which does not exist"),
    ("self dependency", minimal(jobs={"a": {"depends_on": ["a"],
                                            "steps": [{"name": "s", "log": "x"}]}}),
     "it depends on itself"),
    ("cycle", minimal(jobs={
        "a": {"depends_on": ["c"], "steps": [{"name": "s1", "log": "x"}]},
        "b": {"depends_on": ["a"], "steps": [{"name": "s2", "log": "x"}]},
        "c": {"depends_on": ["b"], "steps": [{"name": "s3", "log": "x"}]}}),
     "depends_on forms a cycle (a -> c -> b -> a)"),
    ("bad when", one_step({"log": "x"}, when="inputs.env =="),
     "'when': the expression 'inputs.env ==' is refused (column 14: Syntax error"),
    ("old-form when", one_step({"log": "x"}, when="inputs.env == 'prod' and not inputs.env"),
     "is the old expression form; write it in CEL: inputs.env == 'prod' && !inputs.env"),
    ("when of the wrong type", one_step({"log": "x"}, when="inputs.env"),
     "the condition is string, not true or false"),
    ("typed input", one_step({"log": "${{ inputs.env + 1 }}"}),
     "no matching overload for '_+_' applied to '(string, int)'"),
    ("unknown function", one_step({"log": "${{ shout(inputs.env) }}"}),
     "undeclared reference to 'shout'"),
    ("for_each not a list", one_step({"log": "x", "for_each": "inputs.env"}),
     "the expression is string, not a list"),
    ("when not text", one_step({"log": "x"}, when=True), "'when' must be an expression"),
    ("when on unknown job", one_step({"log": "x"}, when="failed('nope')"),
     "it names job 'nope', which does not exist"),
    ("when on a job not depended on", minimal(jobs={
        "a": {"steps": [{"name": "s1", "log": "x"}]},
        "b": {"when": "succeeded('a')", "steps": [{"name": "s2", "log": "x"}]}}),
     "it reads job 'a', which this job does not depend on"),
    ("when on a step of a sibling", minimal(jobs={
        "a": {"steps": [{"name": "s1", "log": "x"}]},
        "b": {"when": "steps.s1.outputs.ok", "steps": [{"name": "s2", "log": "x"}]}}),
     "it reads step 's1' of job 'a', which has not run by then"),
    ("when on an unknown step", one_step({"log": "x"}, when="steps.nope.outputs.x"),
     "it reads step 'nope', which does not exist"),
    ("undeclared input", one_step({"log": "${{ inputs.nope }}"}),
     "it reads inputs.nope, which the workflow does not declare"),
    ("unclosed template", one_step({"shell": "echo ${{ inputs.env"}), "is never closed"),
    ("item outside for_each", one_step({"log": "${{ item }}"}),
     "it reads 'item', which exists only inside a step with for_each"),
    ("sleep as text", one_step({"sleep": "2"}), "'sleep' takes a number of seconds"),
    ("negative sleep", one_step({"sleep": -1}), "'sleep' takes a number of seconds"),
    ("log not text", one_step({"log": 3}), "'log' takes text, got a number"),
    ("empty shell", one_step({"shell": "  "}), "'shell' needs a command"),
    ("bad python target", one_step({"python": "os.system"}), "'python' takes 'module:function'"),
    ("for_each mapping", one_step({"log": "x", "for_each": {"a": 1}}),
     "'for_each' takes a list or an expression"),
    ("for_each bad expression", one_step({"log": "x", "for_each": "inputs."}),
     "'for_each': the expression 'inputs.' is refused (column 8: Syntax error"),
    ("allow_failure text", one_step({"log": "x", "allow_failure": "yes"}),
     "'allow_failure' takes true or false"),
    ("wait not mapping", one_step({"wait_for_signal": 60}), "'wait_for_signal'"),
    ("wait without timeout", one_step({"wait_for_signal": {"schema": {}}}),
     "needs a timeout"),
    ("wait unknown key", one_step({"wait_for_signal": {"timeout": 5, "retries": 1}}),
     "unknown key 'retries' in wait_for_signal"),
    ("schema outside subset", one_step({"wait_for_signal": {
        "timeout": 5, "schema": {"type": "string", "pattern": "x"}}}),
     "keyword 'pattern' is outside the supported subset"),
    ("non-text key", {1: "x", "name": "w"}, "has a key that is a number, not text"),
    ("NaN input", minimal(inputs={"x": float("nan")}), "holds NaN or infinity"),
    ("non-JSON value", minimal(inputs={"x": {1, 2}}), "which is not plain JSON"),
]


@pytest.mark.parametrize(("doc", "expected"), [(d, e) for _, d, e in BAD_DOCUMENTS],
                         ids=[i for i, _, _ in BAD_DOCUMENTS])
def test_bad_workflows_are_refused_with_a_message_that_says_what(doc: Any,
                                                                  expected: str) -> None:
    message = refusal(doc)
    assert expected in message
    assert "\n" not in message and "Traceback" not in message


def test_odd_names_are_shown_escaped_on_one_line() -> None:
    message = refusal(minimal(**{"bad\nkey\x00" + "x" * 100: 1}))
    assert "unknown key 'bad\\nkey\\x00" in message and "..." in message
    assert "\n" not in message and "\x00" not in message


def test_a_step_may_read_earlier_steps_of_its_own_job_and_of_its_dependencies() -> None:
    doc = {"name": "w", "inputs": {}, "jobs": {
        "a": {"steps": [{"name": "s1", "log": "x"},
                        {"name": "s2", "log": "${{ steps.s1.outputs.x }}"}]},
        "b": {"depends_on": ["a"], "when": "succeeded('a') && steps.s2.outputs.y",
              "steps": [{"name": "s3", "log": "${{ steps['s1[0]'].outputs.x }}"}]},
        "c": {"depends_on": ["b"], "when": "jobs.a == 'succeeded'",
              "steps": [{"name": "s4", "log": "x"}]},
    }}
    parse_workflow(doc)


def test_a_step_cannot_read_itself_or_a_later_step() -> None:
    doc = {"name": "w", "jobs": {"a": {"steps": [
        {"name": "s1", "log": "${{ steps.s2.outputs.x }}"}, {"name": "s2", "log": "x"}]}}}
    assert "it reads step 's2' of job 'a', which has not run by then" in refusal(doc)


def test_the_first_bad_step_is_named_even_deep_in_a_valid_workflow() -> None:
    doc = copy.deepcopy(minimal())
    doc["jobs"]["b"] = {"depends_on": ["a"], "steps": [{"name": "ok", "log": "x"},
                                                       {"name": "bad", "sleep": "x"}]}
    assert "job 'b', step 'bad'" in refusal(doc)


# -- files ---------------------------------------------------------------------------


def load_text(tmp_path: Path, text: str | bytes) -> str:
    path = written(tmp_path, text)
    with pytest.raises(WorkflowError) as info:
        load_workflow(path)
    message = str(info.value)
    assert str(path) in message
    return message


def test_duplicate_yaml_keys_are_refused_with_the_line(tmp_path: Path) -> None:
    text = "name: w\njobs:\n  a:\n    steps: [{name: s, log: x}]\n  a:\n    steps: []\n"
    message = load_text(tmp_path, text)
    assert "key 'a' appears twice in one mapping (line 5)" in message


def test_duplicate_keys_inside_a_step_are_refused(tmp_path: Path) -> None:
    text = "name: w\njobs:\n  a:\n    steps:\n      - name: s\n        log: x\n        log: y\n"
    assert "key 'log' appears twice" in load_text(tmp_path, text)


def test_merge_keys_may_be_overridden(tmp_path: Path) -> None:
    workflow = load_workflow(written(tmp_path, "name: w\njobs:\n  a:\n    steps:\n"
                                               "      - &s {name: s, log: x}\n"
                                               "      - <<: *s\n        name: t\n"))
    assert [s.name for s in workflow.jobs["a"].steps] == ["s", "t"]


@pytest.mark.parametrize(("text", "expected"), [
    ("", "the workflow must be a mapping, got null"),
    ("name: [unclosed\n", "is not valid YAML at line"),
    ("a: 1\n---\nb: 2\n", "is not valid YAML"),
    ("name: !!python/object:os.system x\n", "is not valid YAML"),
    ("name: w\nwhen: 2026-13-45\n", "impossible date"),
    ("name: w\ninputs: {d: 2026-01-01}\njobs: {}\n", "which is not plain JSON; quote it"),
    ("[" * 800, "nests too deeply"),
    (b"name: \xff\xfe\n", "is not UTF-8 text"),
])
def test_unreadable_files_are_refused(tmp_path: Path, text: str | bytes, expected: str) -> None:
    assert expected in load_text(tmp_path, text)


def test_a_missing_file_or_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(WorkflowError, match="does not exist"):
        load_workflow(tmp_path / "nope.yaml")
    with pytest.raises(WorkflowError, match="is a directory"):
        load_workflow(tmp_path)


def test_an_alias_bomb_is_refused_quickly(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    text = "name: w\ninputs:\n" + "\n".join("  " + line for line in lines) + "\njobs: {}\n"
    assert "is too large or nests too deeply" in load_text(tmp_path, text)


def test_a_bom_is_accepted(tmp_path: Path) -> None:
    bom = b"\xef\xbb\xbfname: w\njobs: {a: {steps: [{name: s, log: x}]}}\n"
    assert load_workflow(written(tmp_path, bom)).name == "w"


@pytest.mark.parametrize(("line", "column", "problem"), [
    ('        log: "n=${{ inputs.count + \'x\' }}"', 34, "no matching overload"),  # the +
    ('    when: "inputs.count >"', 26, "Syntax error"),  # just past the end
    ('        log: "${{ nosuch.x }}"', 25, "undeclared reference to 'nosuch.x'"),  # the .
])
def test_a_refused_expression_names_the_files_line_and_column(
        tmp_path: Path, line: str, column: int, problem: str) -> None:
    job_line = line if line.startswith("    when") else "    steps:"
    steps = ("    steps:\n      - name: s\n" + line + "\n") if job_line == "    steps:" \
        else line + "\n    steps: [{name: s, log: x}]\n"
    path = written(tmp_path, "name: w\ninputs: {count: 3}\njobs:\n  a:\n" + steps)
    with pytest.raises(WorkflowError) as info:
        load_workflow(path)
    message = str(info.value)
    number = 7 if job_line == "    steps:" else 5
    assert f"line {number}, column {column}: " in message and problem in message, message
    assert str(path) in message and "\n" not in message
