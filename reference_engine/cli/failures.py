"""Turn any exception into one line (or one JSON error) and an exit code; never a traceback."""

from __future__ import annotations

import os
from typing import Any

import click

from reference_engine.cli.output import emit_json, note
from reference_engine.clock import ClockError
from reference_engine.errors import InvalidKey, StoreError, StoreUnavailable
from reference_engine.refusals import Refusal

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_SUSPENDED = 3

DEBUG_HINT = "rerun with DW_DEBUG=1 for the traceback"


def _named_class(exc: BaseException, name: str) -> bool:
    # WorkflowError and PayloadError live in modules other helpers own; matching by class
    # name keeps a missing or broken module from breaking error reporting itself.
    return any(cls.__name__ == name for cls in type(exc).__mro__)


def classify(exc: BaseException) -> tuple[str, str]:
    """``(category, one-line message)`` for an exception that is not a refusal."""
    if isinstance(exc, InvalidKey):
        return "invalid_key", f"invalid key: {exc}"
    if isinstance(exc, StoreUnavailable):
        return "store_unavailable", f"cannot open the store: {exc}"
    if isinstance(exc, StoreError):
        return "store_error", f"the store failed: {exc}"
    if isinstance(exc, ClockError):
        return "clock_error", str(exc)
    if _named_class(exc, "WorkflowError"):
        return "invalid_workflow", f"invalid workflow: {exc}"
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        reason = exc.strerror or type(exc).__name__
        return "os_error", (f"cannot reach a file or path{where}: {reason}; "
                            "check the path and its permissions")
    # Unexpected: name the type only, since str(exc) may quote input we must not echo.
    return "internal_error", f"failed unexpectedly ({type(exc).__name__}); {DEBUG_HINT}"


def payload_refusal(exc: BaseException) -> Refusal:
    """A ``PayloadError`` that escaped the engine, shown as the refusal the engine would give."""
    details: dict[str, Any] = {}
    for attr in ("path", "rule"):
        value = getattr(exc, attr, None)
        if isinstance(value, str):
            details[attr] = value
    return Refusal("invalid_payload", f"the payload was refused: {exc}", details)


def report(exc: BaseException, *, json_mode: bool, command: str) -> int:
    """Print ``exc`` the dw way and return the exit code."""
    if isinstance(exc, BrokenPipeError):
        return EXIT_FAILED  # the reader went away (e.g. `| head`); nothing to tell anyone
    if os.environ.get("DW_DEBUG") == "1":
        import traceback  # only when asked for: it is slow to import

        traceback.print_exception(exc)
    if _named_class(exc, "PayloadError"):
        exc = payload_refusal(exc)
    if isinstance(exc, Refusal):
        if json_mode:
            emit_json(exc.to_json())
        else:
            line = f"{command}: refused ({exc.kind}): {exc.message}"
            note(line)
        return EXIT_FAILED
    category, message = classify(exc)
    if json_mode:
        emit_json({"error": {"refusal": None, "kind": category, "message": message, "details": {}}})
    else:
        note(f"{command}: {message}")
    return EXIT_FAILED


def fail(message: str, *, json_mode: bool, command: str, kind: str = "error") -> None:
    """Stop the command with exit 1 and a one-line message (JSON on stdout with --json)."""
    if json_mode:
        emit_json({"error": {"refusal": None, "kind": kind, "message": message, "details": {}}})
    else:
        note(f"{command}: {message}")
    raise click.exceptions.Exit(EXIT_FAILED)
