"""The workflow language on CEL: the roots, the functions, and how the old rules map onto CEL's.

Each decision in docs/reference/expressions.md has a test here: a missing path is an error
unless guarded, ``when:`` wants a boolean, a name with ``-`` is bracket access, inputs are
typed from their defaults, the cost limit, and runtime errors that name the expression.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_engine.workflows.cel import (
    ITERATION_BUDGET,
    MAX_EXPRESSION_CHARS,
    CelRuntimeError,
    ExpressionError,
    Scope,
    compile_cel,
    rewrite_dashes,
)

INPUTS: dict[str, Any] = {"env": "prod", "count": 3, "tags": ["a", "b"], "ratio": 0.5,
                          "flag": False, "cfg": {"region": "eu"}, "any": None,
                          "my-input": "dashed"}
CONTEXT: dict[str, Any] = {
    "inputs": INPUTS,
    "steps": {"build": {"outputs": {"version": "1.2"}, "status": "succeeded"},
              "my-step": {"outputs": {"ok": True}, "status": "succeeded"},
              "notify[0]": {"outputs": {"sent": 1}, "status": "succeeded"}},
    "jobs": {"approve": "failed", "build": "succeeded"},
}
SCOPE = Scope.of(INPUTS)


def value(text: str, context: dict[str, Any] | None = None, *, item: bool = False) -> Any:
    return compile_cel(text, Scope.of(INPUTS, item=item)).evaluate(context or CONTEXT)


@pytest.mark.parametrize(("text", "expected"), [
    ("inputs.env", "prod"),
    ("inputs.count + 1", 4),
    ("size(inputs.tags) >= 2", True),
    ("inputs.env in ['prod', 'staging']", True),
    ("'a' in inputs.tags", True),
    ("inputs.cfg.region", "eu"),
    ("has(inputs.cfg.region)", True),
    ("has(inputs.cfg.zone)", False),
    ("has(inputs.env)", True),
    ("'zone' in inputs.cfg", False),
    ("inputs.count > 2 ? 'many' : 'few'", "many"),
    ("!inputs.flag && inputs.ratio < 1.0", True),
    ("steps.build.outputs.version", "1.2"),
    ("steps.my-step.outputs.ok", True),
    ("steps['notify[0]'].outputs.sent", 1),
    ("steps.build.status == 'succeeded'", True),
    ("inputs.my-input", "dashed"),
    ("failed('approve') && succeeded('build')", True),
    ("failed('build') || succeeded('nojob')", False),
    ("jobs.approve", "failed"),
    ("inputs.tags.map(t, t + '!')", ["a!", "b!"]),
    ("inputs.tags.exists(t, t == 'b')", True),
    ("inputs.env.startsWith('pr') && inputs.env.contains('ro')", True),
    ("string(inputs.count) + 'x'", "3x"),
    ("inputs.any == null", True),
    ("int(inputs.ratio * 10.0)", 5),
])
def test_values(text: str, expected: Any) -> None:
    got = value(text)
    assert got == expected and type(got) is type(expected)


def test_item_is_a_variable_only_inside_for_each() -> None:
    assert value("item.host", {**CONTEXT, "item": {"host": "h1"}}, item=True) == "h1"
    with pytest.raises(ExpressionError, match="undeclared reference to 'item"):
        compile_cel("item.host", SCOPE)


def test_the_process_environment_and_unknown_names_are_not_reachable() -> None:
    for text in ("env.HOME", "os.environ", "HOME", "__import__('os')", "process.env"):
        with pytest.raises(ExpressionError, match="undeclared reference"):
            compile_cel(text, SCOPE)


def test_a_missing_path_is_an_error_naming_the_expression_unless_guarded() -> None:
    with pytest.raises(CelRuntimeError) as info:
        value("steps.build.outputs.missing == 'x'")
    message = str(info.value)
    assert "'steps.build.outputs.missing == 'x'' failed" in message
    assert "guard a path that may be missing with has(a.b)" in message
    assert value("has(steps.build.outputs.missing) && steps.build.outputs.missing == 'x'") \
        is False


def test_a_runtime_error_is_clear_and_has_no_traceback() -> None:
    with pytest.raises(CelRuntimeError, match=r"'10 / \(inputs.count - 3\)' failed: divide by"):
        value("10 / (inputs.count - 3)")


def test_a_condition_must_be_a_boolean_and_json_truthiness_is_gone() -> None:
    program = compile_cel("steps.build.outputs.version", SCOPE)
    with pytest.raises(CelRuntimeError, match="gave text, not true or false"):
        program.condition(CONTEXT)
    assert compile_cel("steps.build.outputs.version != ''", SCOPE).condition(CONTEXT) is True
    with pytest.raises(ExpressionError, match="no matching overload"):
        compile_cel("!inputs.env", SCOPE)  # not of a string: refused at load, typed


def test_inputs_are_typed_from_their_defaults() -> None:
    for text in ("inputs.count + 'x'", "inputs.env > 3", "size(inputs.count)",
                 "inputs.flag + 1", "inputs.tags + 'x'"):
        with pytest.raises(ExpressionError, match="no matching overload"):
            compile_cel(text, SCOPE)
    assert compile_cel("inputs.count + 1", SCOPE).result_type == "int"
    assert compile_cel("inputs.any + 1", SCOPE).result_type in ("int", "dyn")  # null: any


@pytest.mark.parametrize(("text", "rewritten"), [
    ("steps.my-step.outputs", 'steps["my-step"].outputs'),
    ("inputs.a-b-c == 'x'", 'inputs["a-b-c"] == \'x\''),
    ("inputs.count - 1", "inputs.count - 1"),  # spaces: subtraction
    ("'steps.my-step'", "'steps.my-step'"),  # inside text: untouched
    ("[1].map(x, x.a-b)", "[1].map(x, x.a-b)"),  # only paths from a root
    ("steps['a'].out-put", 'steps[\'a\']["out-put"]'),
])
def test_names_with_a_dash_become_bracket_access(text: str, rewritten: str) -> None:
    assert rewrite_dashes(text) == rewritten


def test_compile_records_what_it_reads() -> None:
    program = compile_cel("inputs.env == steps.build.outputs.version && failed('approve') || "
                          "jobs.build == 'x' || steps['notify[0]'].outputs.sent == 1 || "
                          "'steps.fake' == inputs['count']", SCOPE)
    assert program.inputs == {"env", "count"}
    assert program.steps == {"build", "notify[0]"}
    assert program.jobs == {"approve", "build"}
    assert program.failed_jobs == {"approve"}
    assert not program.uses_item


def test_failed_takes_a_job_name_in_quotes() -> None:
    with pytest.raises(ExpressionError, match=r"failed\(\) takes one job name in quotes"):
        compile_cel("failed(inputs.env)", SCOPE)


def test_the_size_limits_hold_at_the_limit_and_refuse_past_it() -> None:
    at = "inputs.count == " + "1" * (MAX_EXPRESSION_CHARS - 16 - 4) + " + 0"
    assert len(at) == MAX_EXPRESSION_CHARS
    with pytest.raises(ExpressionError, match="over 2000 characters"):
        compile_cel(at + " ", SCOPE)


def test_the_iteration_budget_stops_a_run_away_evaluation_with_a_clear_error() -> None:
    program = compile_cel("inputs.tags.all(a, a != '')", SCOPE)
    assert program.evaluate({"inputs": {**INPUTS, "tags": ["x"] * (ITERATION_BUDGET - 1)}})
    with pytest.raises(CelRuntimeError, match="over the budget of 10,000 macro iterations"):
        program.evaluate({"inputs": {**INPUTS, "tags": ["x"] * ITERATION_BUDGET}})
    nested = compile_cel("inputs.tags.all(a, inputs.tags.all(b, a != b || a == b))", SCOPE)
    assert nested.evaluate({"inputs": {**INPUTS, "tags": ["x"] * 99}})
    with pytest.raises(CelRuntimeError, match="over the budget"):
        nested.evaluate({"inputs": {**INPUTS, "tags": ["x"] * 100}})


def test_integers_past_64_bits_are_read_as_doubles() -> None:
    assert value("steps.build.outputs.big > 1.0",
                 {**CONTEXT, "steps": {"build": {"outputs": {"big": 2**70}}}}) is True


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="inputsejob.()[]'\"&|!=<>?:-+*/% 0123456789abc,{}\\", max_size=40))
def test_compiling_anything_raises_only_expression_error(text: str) -> None:
    try:
        program = compile_cel(text, SCOPE)
    except ExpressionError as exc:
        assert "\n" not in str(exc)
        return
    try:
        program.evaluate(CONTEXT)
    except CelRuntimeError as exc:
        assert "\n" not in str(exc)
