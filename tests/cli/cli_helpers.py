"""Shared helpers for the CLI tests (a module, not conftest, so tests can import it by name)."""

from __future__ import annotations

from collections.abc import Callable

from click.testing import Result
from flows import GATE_FLOW

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


class NoCreateStore:
    """A store without ``put_if_absent`` (for the capability check of ``dw run``)."""

    def __init__(self) -> None:
        self.records: dict[str, bytes] = {}

    def put(self, key: str, data: bytes) -> None:
        self.records[key] = data

    def get(self, key: str) -> bytes | None:
        return self.records.get(key)

    def delete(self, key: str) -> None:
        self.records.pop(key, None)

    def list(self, prefix: str) -> list[str]:
        return sorted(k for k in self.records if not prefix or k.startswith(prefix + "/"))


def no_create_store() -> NoCreateStore:
    return NoCreateStore()
