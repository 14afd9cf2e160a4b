"""The Python dw-store/1 child: its handshake, its answers and how it ends."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from reference_engine.stores.exec.child import Server, default_capabilities, main
from reference_engine.stores.exec.protocol import Handshake, Request
from reference_engine.stores.memory import MemoryStore

CHILD = [sys.executable, "-m", "reference_engine.stores.exec.child"]


def serve(lines: list[str]) -> tuple[int, list[dict[str, object]]]:
    out = io.BytesIO()
    code = Server(MemoryStore(), out, workers=1).serve(
        io.BytesIO("".join(line + "\n" for line in lines).encode()))
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


def test_the_server_answers_each_op_then_closes() -> None:
    code, replies = serve([
        Request(id=1, op="put_if_absent", key="a/b", data=b"x").encode(),
        Request(id=2, op="put_if_absent", key="a/b", data=b"y").encode(),
        Request(id=3, op="get", key="a/b").encode(),
        Request(id=4, op="list", prefix="a").encode(),
        Request(id=5, op="put", key="/abs", data=b"").encode(),
        Request(id=6, op="close").encode(),
    ])
    assert code == 0
    by_id = {r["id"]: r for r in replies}
    assert by_id[1]["result"] is True and by_id[2]["result"] is False
    assert by_id[3]["result"] == "eA=="
    assert by_id[4]["result"] == ["a/b"]
    assert by_id[5]["error"]["kind"] == "invalid_key"  # type: ignore[index]
    assert replies[-1] == {"id": 6, "result": None}, "close is answered last"


def test_the_server_stops_on_a_bad_request_line() -> None:
    code, replies = serve(['{"id": 1, "op": "rename"}'])
    assert code == 2 and replies == []


LISTS = {"segment_prefixes": True, "sorted_list": True, "refuses_bad_keys": True,
         "nested_keys": True}


@pytest.mark.parametrize(("reference", "expected"), [
    ("memory://", {"cross_handle": False, "cross_process": False, "durable_reopen": False,
                   **LISTS}),
    ("file:///tmp/x", {"cross_handle": True, "cross_process": True, "durable_reopen": True,
                       **LISTS}),
    ("./.dw", {"cross_handle": True, "cross_process": True, "durable_reopen": True, **LISTS}),
    # a factory's list promises only what the factory itself declares
    ("pkg.mod:factory", {"cross_handle": True, "cross_process": True, "durable_reopen": True}),
    ("s3://bucket/p", LISTS),
])
def test_capabilities_follow_the_served_scheme(reference: str, expected: dict[str, bool]) -> None:
    assert default_capabilities(reference) == expected


def test_the_child_announces_itself_and_honours_declared_capabilities(tmp_path: Path) -> None:
    done = subprocess.run(
        [*CHILD, f"file://{tmp_path}?fsync=0", "--name", "mine",
         "--capability", "large_values=false"],
        input=b"", capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    hello = Handshake.decode(done.stdout.splitlines()[0])
    assert hello == Handshake(store="mine", put_if_absent=True, capabilities={
        "cross_handle": True, "cross_process": True, "durable_reopen": True,
        "large_values": False, **LISTS})


def test_a_store_that_cannot_open_exits_1_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["nosuch://x"]) == 1
    assert "cannot open 'nosuch://x'" in capsys.readouterr().err


def test_a_malformed_capability_flag_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["memory://", "--capability", "cross_process"])
    assert "--capability takes NAME=true or NAME=false" in capsys.readouterr().err


class _Factory:
    capabilities: ClassVar[dict[str, bool]] = {"cross_process": False, "large_values": False}

    def __call__(self) -> MemoryStore:
        return MemoryStore()


declaring_factory = _Factory()


def test_a_factory_served_by_the_child_keeps_its_declared_capabilities() -> None:
    from reference_engine.stores.exec.child import declared_capabilities

    reference = f"{__name__}:declaring_factory"
    assert declared_capabilities(reference) == {"cross_process": False, "large_values": False}
    assert declared_capabilities("memory://") == {}
