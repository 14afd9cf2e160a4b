"""Clear errors, and nothing created by mistake.

A bad ``--run-id`` is ``invalid_key``; a command that only reads or delivers refuses a
local store that does not exist (and creates nothing); ``dw run`` reads regular files
only; a damaged newest revision is named by ``dw show``, refused by every command that
would act on it (``dw signal`` too), and the recovery the hint names works.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import PLAIN_FLOW, WAIT_FLOW, Invoke

from reference_engine.clock import SystemClock
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.stores.keys import MAX_SEGMENT_BYTES
from reference_engine.stores.registry import open_store
from reference_engine.workflows.loader import load_yaml, parse_workflow

DW = [sys.executable, "-m", "reference_engine"]


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    path = tmp_path / "plain.yaml"
    path.write_text(PLAIN_FLOW)
    return path


@pytest.mark.parametrize("run_id", ["../evil", "a/b", "   ", "a\tb", "x" * (MAX_SEGMENT_BYTES + 1),
                                    ".", ".."])
def test_a_run_id_that_is_no_key_is_an_invalid_key_error(
    invoke: Invoke, plain: Path, mem_uri: str, run_id: str
) -> None:
    result = invoke(["run", str(plain), "--run-id", run_id, "--store", mem_uri, "--json"])
    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert error["kind"] == "invalid_key", error
    assert "--run-id" in error["message"] and "unexpectedly" not in error["message"]
    assert json.loads(invoke(["runs", "--store", mem_uri, "--json"]).stdout)["runs"] == []


def test_a_run_id_at_the_segment_limit_is_accepted(
    invoke: Invoke, plain: Path, mem_uri: str
) -> None:
    run_id = "x" * MAX_SEGMENT_BYTES
    result = invoke(["run", str(plain), "--run-id", run_id, "--store", mem_uri, "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["runId"] == run_id


READERS = [["waits"], ["runs"], ["sweep"], ["show", "r1"], ["resume", "r1"], ["cancel", "r1"],
           ["delete", "r1"], ["signal", "00000000-0000-4000-8000-000000000000", "--payload", "{}"],
           ["answer", "r1", "00000000-0000-4000-8000-000000000000", "{}"]]


@pytest.mark.parametrize("args", READERS, ids=lambda a: a[0])
@pytest.mark.parametrize("kind", ["path", "file", "sqlite"])
def test_a_command_that_only_reads_refuses_a_missing_store_and_creates_nothing(
    invoke: Invoke, tmp_path: Path, args: list[str], kind: str
) -> None:
    where = tmp_path / "typo-store" / "deeper"
    uri = {"path": str(where), "file": f"file://{where}", "sqlite": f"sqlite://{where}/x.db"}[kind]
    result = invoke([*args, "--store", uri, "--json"])
    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert error["kind"] == "store_unavailable", error
    assert "there is no store at" in error["message"] and "dw run" in error["message"]
    assert not (tmp_path / "typo-store").exists()


def test_a_run_creates_the_store_and_then_readers_find_it(
    invoke: Invoke, tmp_path: Path, plain: Path
) -> None:
    uri = f"sqlite://{tmp_path}/new/dir/x.db"
    assert invoke(["run", str(plain), "--store", uri]).exit_code == 0
    assert len(json.loads(invoke(["runs", "--store", uri, "--json"]).stdout)["runs"]) == 1


def test_dw_run_refuses_a_fifo_instead_of_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "flow.yaml"
    os.mkfifo(fifo)
    done = subprocess.run([*DW, "run", str(fifo), "--store", str(tmp_path / "s"), "--json"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1, done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["kind"] == "invalid_workflow" and "not a regular file" in error["message"]


# --- a damaged newest revision ------------------------------------------------------------

@pytest.fixture
def damaged(tmp_path: Path) -> tuple[str, str, str, str]:
    """A suspended run on a file store whose newest revision was torn in half."""
    uri = str(tmp_path / "store")
    engine = Engine(open_store(uri), SystemClock())
    view = engine.run(parse_workflow(load_yaml(WAIT_FLOW)))
    store = open_store(uri)
    rev = engine.show(view.run_id)["rev"]
    key = keys.revision_key(view.run_id, rev)
    data = store.get(key)
    assert data is not None
    store.delete(key)
    store.put(key, data[: len(data) // 2])
    return uri, view.run_id, view.waits[0].wait_id, key


def test_show_names_the_damaged_revision_and_shows_the_newest_readable_one(
    invoke: Invoke, damaged: tuple[str, str, str, str]
) -> None:
    uri, run_id, _wait, key = damaged
    result = invoke(["show", run_id, "--store", uri, "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["damaged"]["key"] == key and shown["rev"] == shown["damaged"]["rev"] - 1
    assert f"dw store rm {key}" in shown["damaged"]["recovery"]
    text = invoke(["show", run_id, "--store", uri])
    assert f"({key}) cannot be read" in text.stderr and f"run {run_id}" in text.stdout


@pytest.mark.parametrize("command", ["resume", "cancel", "signal"])
def test_acting_on_a_damaged_run_is_refused_and_the_hinted_recovery_works(
    invoke: Invoke, damaged: tuple[str, str, str, str], command: str
) -> None:
    uri, run_id, wait_id, key = damaged
    args = {"resume": ["resume", run_id], "cancel": ["cancel", run_id],
            "signal": ["signal", wait_id, "--payload", '{"approved": true}']}[command]
    refused = invoke([*args, "--store", uri, "--json"])
    assert refused.exit_code == 1
    error = json.loads(refused.stdout)["error"]
    assert error["refusal"] == "unreadable" and f"dw show {run_id}" in error["message"]
    if command != "signal":
        assert f"dw store rm {key}" in error["message"]
    assert invoke(["store", "rm", key, "--store", uri]).exit_code == 0
    assert invoke([*args, "--store", uri, "--json"]).exit_code in (0, 3)
