"""``${{ expression }}`` templates in step text (log, fail, shell).

The part between ``${{`` and ``}}`` is a CEL expression (:mod:`.cel`), so
``${{ inputs.env }}`` and ``${{ size(inputs.tags) }}`` both work.

Decisions:
- At load time the loader compiles every template (:func:`split_template`), so a syntax
  error, an unknown name or a wrong type is refused before the run starts.
- At run time an expression that fails (a missing key) fails the step, naming the
  expression; guard an optional path with ``has()``.
- Rendering: text as is, null as "", true/false, numbers as JSON, lists and maps as
  compact JSON.
- ``$${{`` is a literal ``${{`` (the escape for text that must show the braces). The
  expression ends at the first ``}}``: write a map literal's closing braces apart, ``} }``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reference_engine.workflows.cel import Program, Scope, compile_cel
from reference_engine.workflows.errors import WorkflowError

OPEN, CLOSE, ESCAPED_OPEN = "${{", "}}", "$${{"

Pieces = tuple["str | Program", ...]


def split_template(text: str, compile: Callable[[str], Program]) -> Pieces:
    """``text`` as literal text and compiled expressions; WorkflowError if malformed."""
    if not isinstance(text, str):
        raise WorkflowError(f"a template must be text, got {type(text).__name__}")
    out: list[str | Program] = []
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
            out.append(compile(text[i + len(OPEN):end]))
            i = end + len(CLOSE)
        else:
            literal.append(text[i])
            i += 1
    if literal:
        out.append("".join(literal))
    return tuple(out)


def template_expressions(text: str, scope: Scope | None = None) -> list[Program]:
    """Every expression inside ``text``, compiled in ``scope`` (default: no typed inputs)."""
    wanted = scope or Scope()
    pieces = split_template(text, lambda expr: compile_cel(expr, wanted))
    return [p for p in pieces if isinstance(p, Program)]


def render_value(value: Any) -> str:
    """How one value shows inside text."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def render(pieces: Sequence[str | Program], context: Mapping[str, Any]) -> str:
    """The pieces of a template with each expression's value rendered (CelRuntimeError if one
    fails)."""
    return "".join(p if isinstance(p, str) else render_value(p.evaluate(context))
                   for p in pieces)


def interpolate(text: str, inputs: Mapping[str, Any],
                context: Mapping[str, Any] | None = None, scope: Scope | None = None) -> str:
    """``text`` with every ``${{ ... }}`` replaced by its rendered value.

    ``context`` is the full expression context (``inputs``, ``steps``, ``jobs``); when
    it has no ``inputs``, ``inputs`` is used. ``scope`` defaults to the inputs' types.
    """
    ctx: dict[str, Any] = dict(context or {})
    ctx.setdefault("inputs", inputs)
    wanted = scope if scope is not None else Scope.of(ctx["inputs"], item="item" in ctx)
    return render(split_template(text, lambda expr: compile_cel(expr, wanted)), ctx)
