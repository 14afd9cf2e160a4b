"""The ``dw`` group itself: help, plugin commands, exit codes and error reporting."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click
import pytest
from cli_helpers import Invoke, one_line_error
from click.testing import CliRunner

from reference_engine.cli import list_cmds, main, run_cmds
from reference_engine.errors import StoreError
from reference_engine.refusals import Refusal

BUILTIN = ("store", "run", "resume", "signal", "answer", "cancel", "delete", "waits", "runs",
           "show", "sweep", "serve", "demo")


def test_help_lists_every_command(invoke: Invoke) -> None:
    result = invoke(["--help"])
    assert result.exit_code == 0
    listed = {line.split()[0] for line in result.stdout.split("Commands:")[1].splitlines()
              if line.strip()}
    assert set(BUILTIN) <= listed


@pytest.mark.parametrize("command", BUILTIN)
def test_every_command_takes_store_and_json(invoke: Invoke, command: str) -> None:
    args = [command, "ls", "--help"] if command == "store" else [command, "--help"]
    text = invoke(args).stdout
    assert "--store URI" in text and "--json" in text and "DW_STORE" in text


def test_resume_takes_no_answer_argument(invoke: Invoke) -> None:
    assert invoke(["resume", "r1", '{"approved": true}']).exit_code == 2


def test_usage_errors_exit_2(invoke: Invoke) -> None:
    assert invoke(["signal", "w1"]).exit_code == 2  # --payload is required
    assert invoke(["no-such-command"]).exit_code == 2
    assert invoke(["run", "/does/not/exist.yaml"]).exit_code == 2


class FakeEP:
    def __init__(self, name: str, target: Any) -> None:
        self.name = name
        self.package = "fake-plugin"
        self._target = target

    def load(self) -> Any:
        if isinstance(self._target, Exception):
            raise self._target
        return self._target


@click.command()
def _hello() -> None:
    click.echo("hello from a plugin")


def _plugins(monkeypatch: pytest.MonkeyPatch, *eps: FakeEP) -> None:
    monkeypatch.setattr(main, "find_plugins", lambda: {ep.name: ep for ep in eps})


def test_plugin_commands_load_from_the_entry_point_group(invoke: Invoke,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _plugins(monkeypatch, FakeEP("hello", _hello))
    assert "hello" in invoke(["--help"]).stdout
    assert invoke(["hello"]).stdout.strip() == "hello from a plugin"


def test_a_broken_plugin_breaks_only_itself(invoke: Invoke,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    _plugins(monkeypatch, FakeEP("broken", ImportError("no module named x")),
             FakeEP("notacommand", object()))
    assert invoke(["--help"]).exit_code == 0
    for name in ("broken", "notacommand"):
        result = invoke([name, "--any", "args"])
        assert "failed to load" in one_line_error(result)
    assert invoke(["store", "ls", "--store", "memory://"]).exit_code == 0


def test_a_plugin_cannot_shadow_a_builtin(invoke: Invoke,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _plugins(monkeypatch, FakeEP("run", _hello))
    assert "hello from a plugin" not in invoke(["run", "--help"]).stdout


class RaisingEngine:
    """Every call raises ``error``: tests how the CLI reports each kind of failure."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def __getattr__(self, _name: str) -> Any:
        def call(*_args: Any, **_kwargs: Any) -> Any:
            raise self.error
        return call


def _engine_raising(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    @contextmanager
    def session(_uri: str, **_options: bool) -> Iterator[Any]:
        yield RaisingEngine(error)

    for module in (run_cmds, list_cmds):
        monkeypatch.setattr(module, "engine_session", session)


def test_refusal_with_json_is_the_error_shape_on_stdout(invoke: Invoke,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    _engine_raising(monkeypatch, Refusal("expired", "wait w1 expired at 2026-01-01T00:00:00Z; "
                                         "run: dw resume r1", {"waitId": "w1"}))
    result = invoke(["signal", "w1", "--payload", "{}", "--json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {"error": {
        "refusal": "expired",
        "message": "wait w1 expired at 2026-01-01T00:00:00Z; run: dw resume r1",
        "details": {"waitId": "w1"}}}


def test_refusal_without_json_is_one_line_on_stderr(invoke: Invoke,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    _engine_raising(monkeypatch, Refusal("busy", "run r1 is busy; retry: dw resume r1"))
    result = invoke(["resume", "r1"])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.strip() == "dw resume: refused (busy): run r1 is busy; retry: dw resume r1"


@pytest.mark.dw_clause("C-ERR-2")
def test_unexpected_errors_name_only_the_type(invoke: Invoke,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    _engine_raising(monkeypatch, RuntimeError("hunter2-secret-in-message"))
    result = invoke(["runs"])
    assert result.exit_code == 1
    assert "hunter2" not in result.output
    assert "RuntimeError" in result.stderr and "DW_DEBUG=1" in result.stderr


def test_dw_debug_shows_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    _engine_raising(monkeypatch, RuntimeError("boom"))
    result = CliRunner().invoke(main.dw, ["runs"], env={"DW_DEBUG": "1"})
    assert result.exit_code == 1
    assert "Traceback" in result.stderr and "RuntimeError: boom" in result.stderr


def test_store_errors_in_json_mode_keep_stdout_parseable(invoke: Invoke,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _engine_raising(monkeypatch, StoreError("get failed on runs/x", op="get", key="runs/x"))
    result = invoke(["waits", "--json"])
    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert error["refusal"] is None and error["kind"] == "store_error"


def test_a_bad_dw_clock_is_one_line(invoke: Invoke, mem_uri: str) -> None:
    result = invoke(["runs", "--store", mem_uri], env={"DW_CLOCK": "nonsense"})
    assert "DW_CLOCK" in one_line_error(result)


def test_bad_input_option_is_a_usage_error(invoke: Invoke, tmp_path: Any) -> None:
    flow = tmp_path / "f.yaml"
    flow.write_text("name: x\njobs: {}\n")
    assert invoke(["run", str(flow), "--input", "novalue"]).exit_code == 2
