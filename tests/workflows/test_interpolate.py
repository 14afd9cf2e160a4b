"""${{ }} templates (CEL inside): rendering, the missing-path rule, the escape, load errors."""

from __future__ import annotations

from typing import Any

import pytest

from reference_engine.workflows.cel import CelRuntimeError, ExpressionError
from reference_engine.workflows.errors import WorkflowError
from reference_engine.workflows.interpolate import interpolate, render_value, template_expressions


def test_inputs_are_substituted() -> None:
    assert interpolate("compiling for ${{ inputs.env }}", {"env": "prod"}) == "compiling for prod"
    assert interpolate("${{inputs.a}}-${{ inputs.b }}", {"a": "x", "b": "y"}) == "x-y"


def test_text_without_templates_is_unchanged() -> None:
    assert interpolate("echo {{ not a template }} $HOME ${x}", {}) == \
        "echo {{ not a template }} $HOME ${x}"


def test_a_missing_reference_fails_naming_the_expression_unless_guarded() -> None:
    with pytest.raises(CelRuntimeError, match=r"'inputs.nope' failed: .*guard"):
        interpolate("[${{ inputs.nope }}]", {})
    with pytest.raises(CelRuntimeError, match=r"steps\.s\.outputs\.x"):
        interpolate("[${{ steps.s.outputs.x }}]", {"a": 1})
    guarded = "[${{ has(steps.s) ? steps.s.outputs.x : '' }}]"
    assert interpolate(guarded, {}) == "[]"


@pytest.mark.parametrize(("value", "shown"), [
    (None, ""), ("text", "text"), (True, "true"), (False, "false"), (3, "3"), (2.5, "2.5"),
    ([1, "a"], '[1,"a"]'), ({"k": "é"}, '{"k":"é"}'),
])
def test_values_render_as_json_except_text_and_null(value: Any, shown: str) -> None:
    assert render_value(value) == shown
    assert interpolate("${{ inputs.v }}", {"v": value}) == shown


def test_a_full_context_reaches_steps_jobs_and_item() -> None:
    context = {"steps": {"build": {"outputs": {"version": "1.2"}}}, "jobs": {"a": "failed"},
               "item": "h1"}
    text = "v${{ steps.build.outputs.version }} on ${{ item }} failed=${{ failed('a') }}"
    assert interpolate(text, {}, context) == "v1.2 on h1 failed=true"


def test_context_inputs_win_over_the_inputs_argument() -> None:
    assert interpolate("${{ inputs.a }}", {"a": "arg"}, {"inputs": {"a": "ctx"}}) == "ctx"


def test_double_dollar_escapes_a_literal_template() -> None:
    assert interpolate("$${{ inputs.a }} is ${{ inputs.a }}", {"a": "x"}) == \
        "${{ inputs.a }} is x"
    assert template_expressions("$${{ not parsed") == []


def test_template_expressions_lists_what_a_template_reads() -> None:
    exprs = template_expressions("${{ inputs.a }} ${{ steps.s.outputs.x == 1 }}")
    assert [e.text.strip() for e in exprs] == ["inputs.a", "steps.s.outputs.x == 1"]


@pytest.mark.parametrize(("text", "error", "expected"), [
    ("${{ inputs.a", WorkflowError, "opened at character 1 with '${{' is never closed"),
    ("ok ${{ }}", ExpressionError, "the expression is empty"),
    ("${{ inputs.a == }}", ExpressionError, "column 14: Syntax error"),
    ("${{ os.system('x') }}", ExpressionError, "undeclared reference to 'os'"),
])
def test_broken_templates_are_refused(text: str, error: type[Exception], expected: str) -> None:
    with pytest.raises(error) as info:
        template_expressions(text)
    assert expected in str(info.value)
    with pytest.raises(WorkflowError):
        interpolate(text, {"a": 1})
