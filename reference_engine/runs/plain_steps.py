"""What a plain step does: ``log``, ``fail``, ``shell``, ``sleep`` and ``python``.

:func:`perform` returns ``(status, output, error)`` and the executor saves it. A step that
takes a while keeps the run's claim alive: ``sleep:`` sleeps in ttl/3 chunks and checks
the claim between them, and a ``shell:`` or ``python:`` step runs inside
:meth:`~reference_engine.runs.claims.Claim.keep_alive`.
"""

from __future__ import annotations

import contextlib
import json
import types
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from reference_engine.records.run import FAILED, SUCCEEDED
from reference_engine.runs.claims import Claim
from reference_engine.secrets import redact_text, scrub
from reference_engine.workflows.interpolate import interpolate, render
from reference_engine.workflows.model import Step

MAX_OUTPUT_CHARS = 64 * 1024

Performed = tuple[str, Any, str | None]


def perform(step: Step, context: dict[str, Any], *, run_id: str, claim: Claim | None,
            sleeper: Callable[[float], object] | None,
            progress: Callable[[str], None],
            allowed: frozenset[str] = frozenset()) -> Performed:
    """Run one plain step of run ``run_id``: ``(status, output, error)``.

    Every value a step makes passes the secret rules before it is printed or returned
    for saving (``log`` text, ``fail`` message, ``shell`` output, ``python`` value): each
    matching span becomes ``[redacted:<rule>]``, except what ``allowed`` lets through, the
    strings of answers accepted with the ``--no-secret-detection`` bypass.
    """
    if step.kind in ("log", "fail", "shell"):
        text = (render(step.template, context) if step.template is not None
                else interpolate(str(step.value), context["inputs"], context))
        if step.kind == "log":
            text = redact_text(text, allowed)
            progress(text)
            return SUCCEEDED, {"message": text}, None
        if step.kind == "fail":
            return FAILED, None, redact_text(text, allowed)
        status, output, error = _shell(text, claim)
        return status, scrub(output, allowed), error
    if step.kind == "sleep":
        _sleep(float(step.value), claim, sleeper)
        return SUCCEEDED, {"seconds": step.value}, None
    if step.kind == "python":
        status, output, error = _python(str(step.value), {**context, "run_id": run_id}, claim)
        return status, scrub(output, allowed), error
    return FAILED, None, f"unknown step kind {step.kind}"


def _sleep(seconds: float, claim: Claim | None,
           sleeper: Callable[[float], object] | None) -> None:
    """The ``sleep:`` step, in ttl/3 chunks so the claim keeps beating."""
    if sleeper is None:
        return
    chunk = claim.ttl / 3 if claim is not None else seconds
    left = seconds
    while left > 0:
        part = min(chunk, left)
        sleeper(part)
        left -= part
        if claim is not None:
            claim.ensure_held()


def _shell(command: str, claim: Claim | None) -> Performed:
    import subprocess  # only a shell step needs it; a resume from the CLI often has none

    with _kept_alive(claim):
        done = subprocess.run(command, shell=True, capture_output=True, text=True,
                              check=False)
    output = (done.stdout + done.stderr)[-MAX_OUTPUT_CHARS:]
    result = {"exit_code": done.returncode, "output": output}
    if done.returncode != 0:
        return FAILED, result, f"exit code {done.returncode}"
    return SUCCEEDED, result, None


def _python(target: str, context: dict[str, Any], claim: Claim | None) -> Performed:
    import importlib

    module_name, _, function_name = target.partition(":")
    function = getattr(importlib.import_module(module_name), function_name)
    frozen = types.MappingProxyType(json.loads(json.dumps(context)))
    with _kept_alive(claim):
        value = function(frozen)
    try:
        output = json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError):
        return FAILED, None, f"{target} returned a value that is not JSON"
    return SUCCEEDED, output, None


def _kept_alive(claim: Claim | None) -> AbstractContextManager[None]:
    return claim.keep_alive() if claim is not None else contextlib.nullcontext()
