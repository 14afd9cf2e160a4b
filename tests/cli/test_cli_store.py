"""``dw store``: raw records, create exit codes, and errors that name what was wrong."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import Invoke, one_line_error

from reference_engine.stores.registry import open_store


def test_put_then_cat_returns_the_exact_bytes(invoke: Invoke, mem_uri: str) -> None:
    assert invoke(["store", "put", "a/b", "--data", "héllo", "--store", mem_uri]).exit_code == 0
    result = invoke(["store", "cat", "a/b", "--store", mem_uri])
    assert result.exit_code == 0
    assert result.stdout_bytes == "héllo".encode()


def test_put_reads_stdin_when_no_data_is_given(invoke: Invoke, mem_uri: str) -> None:
    raw = b"\x00\xffbinary"
    assert invoke(["store", "put", "k", "--store", mem_uri], input=raw).exit_code == 0
    assert open_store(mem_uri).get("k") == raw
    shown = json.loads(invoke(["store", "cat", "k", "--store", mem_uri, "--json"]).stdout)
    assert shown["encoding"] == "base64"


def test_create_exits_0_when_it_wins_and_1_when_the_key_exists(invoke: Invoke,
                                                                mem_uri: str) -> None:
    first = invoke(["store", "create", "once", "--data", "1", "--store", mem_uri])
    second = invoke(["store", "create", "once", "--data", "2", "--store", mem_uri])
    assert (first.exit_code, second.exit_code) == (0, 1)
    assert open_store(mem_uri).get("once") == b"1"
    as_json = invoke(["store", "create", "once", "--data", "3", "--store", mem_uri, "--json"])
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout) == {"key": "once", "created": False}


def test_ls_lists_by_whole_segments(invoke: Invoke, mem_uri: str) -> None:
    store = open_store(mem_uri)
    for key in ("runs/r1/rev/1", "runs/r10/rev/1", "waits/w"):
        store.put(key, b"x")
    result = invoke(["store", "ls", "runs/r1", "--store", mem_uri])
    assert result.stdout.split() == ["runs/r1/rev/1"]
    everything = json.loads(invoke(["store", "ls", "--store", mem_uri, "--json"]).stdout)
    assert everything["keys"] == ["runs/r1/rev/1", "runs/r10/rev/1", "waits/w"]


def test_rm_deletes_and_a_missing_key_is_no_error(invoke: Invoke, mem_uri: str) -> None:
    open_store(mem_uri).put("gone", b"x")
    assert invoke(["store", "rm", "gone", "--store", mem_uri]).exit_code == 0
    assert invoke(["store", "rm", "gone", "--store", mem_uri]).exit_code == 0
    assert open_store(mem_uri).get("gone") is None


def test_cat_of_a_missing_key_exits_1_and_says_how_to_look(invoke: Invoke, mem_uri: str) -> None:
    result = invoke(["store", "cat", "nothing/here", "--store", mem_uri])
    assert result.exit_code == 1
    assert "dw store ls" in result.stderr


def test_bad_keys_are_refused_before_any_write(invoke: Invoke, mem_uri: str) -> None:
    for key in ("../escape", "/abs", "a//b", "a\\b", "x/."):
        result = invoke(["store", "put", key, "--data", "v", "--store", mem_uri])
        assert "invalid key" in one_line_error(result), key
    assert open_store(mem_uri).list("") == []


def test_unknown_scheme_is_one_line_naming_the_scheme(invoke: Invoke) -> None:
    result = invoke(["store", "ls", "--store", "nosuch://bucket"])
    assert "unknown store scheme 'nosuch'" in one_line_error(result)


def test_unreachable_path_fails_without_writing(invoke: Invoke, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    result = invoke(["store", "put", "k", "--data", "v", "--store", str(blocker / "store")])
    assert one_line_error(result)
    assert blocker.read_text() == "not a directory"


def test_file_store_round_trip_on_a_real_directory(invoke: Invoke, tmp_path: Path) -> None:
    uri = str(tmp_path / "dw")
    assert invoke(["store", "create", "w/1", "--data", "v", "--store", uri]).exit_code == 0
    assert invoke(["store", "create", "w/1", "--data", "v", "--store", uri]).exit_code == 1
    assert invoke(["store", "cat", "w/1", "--store", uri]).stdout_bytes == b"v"


def test_dw_store_env_var_picks_the_store(invoke: Invoke, mem_uri: str) -> None:
    open_store(mem_uri).put("from/env", b"yes")
    result = invoke(["store", "cat", "from/env"], env={"DW_STORE": mem_uri})
    assert result.stdout_bytes == b"yes"
