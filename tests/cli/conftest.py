"""Fixtures for the ``dw`` CLI tests: an in-process runner and a private store per test."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pytest
from cli_helpers import Invoke, assert_clean
from click.testing import CliRunner, Result

from reference_engine.cli.main import dw


@pytest.fixture
def mem_uri() -> str:
    """A memory store shared by every invocation of this test (one process), private to it."""
    return f"memory://cli-{uuid.uuid4().hex}"


@pytest.fixture
def invoke(monkeypatch: pytest.MonkeyPatch) -> Invoke:
    """``invoke(args, input=None)`` runs ``dw`` in-process and checks it printed no traceback."""
    monkeypatch.delenv("DW_STORE", raising=False)
    monkeypatch.delenv("DW_CLOCK", raising=False)
    monkeypatch.delenv("DW_DEBUG", raising=False)
    runner = CliRunner()

    def run(args: Sequence[str], input: str | bytes | None = None,
            env: dict[str, str] | None = None) -> Result:
        result = runner.invoke(dw, list(args), input=input, env=env, prog_name="dw")
        assert_clean(result)
        return result

    return run
