"""``${{ expression }}`` templates in step text (log, fail, shell).

The part between ``${{`` and ``}}`` is an expression of :mod:`.expressions`, so
``${{ inputs.env }}`` and ``${{ steps.build.outputs.version }}`` both work.

Decisions:
- At load time :func:`template_expressions` parses every template, and the loader
  refuses a reference it can prove wrong (an undeclared input, an unknown step).
- At run time a path that is missing renders as the empty string; it never raises.
- Rendering: text as is, null as "", true/false, numbers as JSON, lists and
  mappings as compact JSON.
- ``$${{`` is a literal ``${{`` (the escape for text that must show the braces).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from reference_engine.workflows.errors import WorkflowError
from reference_engine.workflows.expressions import Expression, compile_expression, evaluate

OPEN, CLOSE, ESCAPED_OPEN = "${{", "}}", "$${{"


def _pieces(text: str) -> list[str | Expression]:
    """Split ``text`` into literal text and compiled expressions; WorkflowError if malformed."""
    if not isinstance(text, str):
        raise WorkflowError(f"a template must be text, got {type(text).__name__}")
    out: list[str | Expression] = []
    literal: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith(ESCAPED_OPEN, i):
            literal.append(OPEN)
            i += len(ESCAPED_OPEN)
        elif text.startswith(OPEN, i):
            end = text.find(CLOSE, i + len(OPEN))
            if end < 0:
                raise WorkflowError(f"the template opened at character {i + 1} with '${{{{' "
                                    "is never closed; end it with '}}'")
            if literal:
                out.append("".join(literal))
                literal = []
            out.append(compile_expression(text[i + len(OPEN):end]))
            i = end + len(CLOSE)
        else:
            literal.append(text[i])
            i += 1
    if literal:
        out.append("".join(literal))
    return out


def template_expressions(text: str) -> list[Expression]:
    """Every expression inside ``text``; raises WorkflowError (or ExpressionError) if malformed."""
    return [p for p in _pieces(text) if isinstance(p, Expression)]


def render_value(value: Any) -> str:
    """How one value shows inside text."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def interpolate(text: str, inputs: Mapping[str, Any],
                context: Mapping[str, Any] | None = None) -> str:
    """``text`` with every ``${{ ... }}`` replaced by its rendered value.

    ``context`` is the full expression context (``inputs``, ``steps``, ``jobs``); when
    it has no ``inputs``, ``inputs`` is used. Missing paths render as "".
    """
    ctx: dict[str, Any] = dict(context or {})
    ctx.setdefault("inputs", inputs)
    return "".join(p if isinstance(p, str) else render_value(evaluate(p, ctx))
                   for p in _pieces(text))
