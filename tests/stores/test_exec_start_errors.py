"""A store that cannot start is told why: its own last stderr lines, and the command to run
by hand from the directory the suite ran it in. A program beside this Python is found
without an activated venv (Deno from the deno extra under ``pipx run``)."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import pytest

from reference_engine.stores.exec.client import open_exec
from reference_engine.stores.exec.connection import ExecChildError, program_path

CANNOT_OPEN = ("import sys; sys.stderr.write('cannot open the store: unable to open database "
               "file: /nodir/kv.db\\n'); sys.exit(1)")


def test_a_child_that_exits_before_its_handshake_is_quoted_with_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    command = shlex.join([sys.executable, "-c", CANNOT_OPEN])
    with pytest.raises(ExecChildError) as caught:
        open_exec(command)
    message = str(caught.value)
    assert "  | cannot open the store: unable to open database file: /nodir/kv.db" in message
    assert f"cd {shlex.quote(str(tmp_path))} && {command}" in message
    assert "before its handshake" in message


def test_a_program_missing_from_path_is_found_beside_this_python(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    name = Path(sys.executable).name
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing there
    assert program_path(name) == os.path.join(os.path.dirname(sys.executable), name)
    assert program_path("no-such-program-dw") == "no-such-program-dw"
    assert program_path("./relative/prog") == "./relative/prog"


def test_a_program_on_path_runs_as_written(monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    program = tmp_path / "deno"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert program_path("deno") == "deno"


def test_the_async_race_skip_of_an_exec_store_speaks_of_its_handshake(
    pytester: pytest.Pytester,
) -> None:
    result = pytester.runpytest_subprocess(
        "--dw-suite-only", "--dw-store=exec-sqlite", "-k", "test_coroutines_racing", "-rs",
        "-p", "no:randomly")
    result.assert_outcomes(skipped=1)
    output = result.stdout.str()
    assert "store exec-sqlite is served over exec: (dw-store/1)" in output
    assert "plain def" not in output
