"""Shared helpers for the CLI tests (a module, not conftest, so tests can import it by name)."""

from __future__ import annotations

from collections.abc import Callable

from click.testing import Result
from flows import GATE_FLOW

from dw_testing.kit.doubles import NoCreateStore

Invoke = Callable[..., Result]
CLEAN_EXIT_CODES = {0, 1, 2, 3}


def assert_clean(result: Result) -> None:
    """No traceback reached the user, and nothing escaped click as an exception."""
    assert "Traceback" not in result.output, result.output
    if result.exception is not None:
        assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in CLEAN_EXIT_CODES, result.exit_code


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
