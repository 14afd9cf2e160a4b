"""Shared helpers for the CLI tests (a module, not conftest, so tests can import it by name)."""

from __future__ import annotations

import json
from collections.abc import Callable

from click.testing import Result
from support.flows import GATE_FLOW

from dw_testing.kit.doubles import NoCreateStore

Invoke = Callable[..., Result]
CLEAN_EXIT_CODES = {0, 1, 2, 3}


def assert_clean(result: Result) -> None:
    """No traceback reached the user, and nothing escaped click as an exception."""
    assert "Traceback" not in result.output, result.output
    if result.exception is not None:
        assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in CLEAN_EXIT_CODES, result.exit_code


def refusal_of(result: Result) -> str | None:
    """The refusal a ``--json`` command printed on stdout; it must have exited 1 (refused)."""
    assert result.exit_code == 1, result.output
    refusal: str | None = json.loads(result.stdout)["error"]["refusal"]
    return refusal


def one_line_error(result: Result) -> str:
    """The message of a command that failed (exit 1) with exactly one line on stderr."""
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


WAIT_FLOW = GATE_FLOW

PLAIN_FLOW = """\
name: plain
jobs:
  only:
    steps:
      - name: hello
        log: "hello"
"""


def no_create_store() -> NoCreateStore:
    return NoCreateStore()
