"""Every example on docs/reference/expressions.md runs: values as shown, refusals as shown."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from reference_engine.workflows.cel import ExpressionError, Scope, compile_cel
from reference_engine.workflows.errors import WorkflowError

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "expressions.md"
TEXT = PAGE.read_text(encoding="utf-8")
CONTEXT: dict[str, Any] = json.loads(re.search(r"```json\n(.*?)```", TEXT, re.S).group(1))
SCOPE = Scope.of(CONTEXT["inputs"], item=True)


def _cells(line: str) -> list[str]:
    parts = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [p.strip().replace("\\|", "|") for p in parts]


def _code(cell: str) -> str | None:
    found = re.fullmatch(r"`(.+)`", cell)
    return found.group(1) if found else None


def _rows() -> tuple[list[tuple[str, Any]], list[tuple[str, str]]]:
    values, refusals = [], []
    header: list[str] = []
    for line in TEXT.splitlines():
        if not line.startswith("|") or line.startswith("|---"):
            header = [] if not line.startswith("|") else header
            continue
        cells = _cells(line)
        if not header:
            header = cells
            continue
        if header[-1] == "Refused with":
            expr, message = _code(cells[0]), _code(cells[-1])
            assert expr and message, line
            refusals.append((expr, message))
        elif header[-1] == "Value":
            expr, value = _code(cells[-2]), _code(cells[-1])
            assert expr and value, line
            values.append((expr, json.loads(value)))
    return values, refusals


VALUES, REFUSALS = _rows()


def test_the_page_has_examples_of_every_kind() -> None:
    assert len(VALUES) >= 25 and len(REFUSALS) >= 4


@pytest.mark.parametrize(("expr", "expected"), VALUES, ids=[v[0] for v in VALUES])
def test_an_example_gives_the_value_shown(expr: str, expected: Any) -> None:
    got = compile_cel(expr, SCOPE).evaluate(CONTEXT)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(("expr", "message"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_a_refused_example_is_refused_as_shown(expr: str, message: str) -> None:
    if "write it in CEL" in message:  # the old form: the loader's refusal shows the CEL form
        from reference_engine.workflows.loader import parse_workflow

        doc = {"name": "w", "inputs": CONTEXT["inputs"], "jobs": {
            "build": {"steps": [{"name": "s0", "log": "x"}]},
            "a": {"depends_on": ["build"], "when": expr, "steps": [{"name": "s", "log": "x"}]}}}
        with pytest.raises(WorkflowError) as info:
            parse_workflow(doc)
    else:
        with pytest.raises(ExpressionError) as info:
            compile_cel(expr, SCOPE)
    assert message in str(info.value)


def test_the_guard_in_the_rules_protects_the_rest() -> None:
    guarded = "has(steps.build.outputs.tag) && steps.build.outputs.tag == 'x'"
    assert guarded in TEXT
    assert compile_cel(guarded, SCOPE).evaluate(CONTEXT) is False
