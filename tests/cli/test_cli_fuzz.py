"""Hypothesis fuzz of ``dw`` arguments: never a traceback, exit code always in {0, 1, 2, 3}."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from cli_helpers import WAIT_FLOW, Invoke, refusal_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import json_strategies

from reference_engine.stores.keys import key_problem
from reference_engine.stores.registry import open_store

FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])

# Key-like text: mostly path segments, plus the characters the key rules care about.
key_text = st.one_of(
    st.text(max_size=40),
    st.lists(st.sampled_from(["a", "b", "..", ".", "", "runs", "\\", "\x00", "é", "x" * 201]),
             min_size=1, max_size=5).map("/".join),
)
json_values = json_strategies.json_values(text=20, keys=10, width=4, leaves=20)
payload_text = st.one_of(st.text(max_size=60), json_values.map(json.dumps),
                         st.builds(lambda v: json.dumps({"approved": v}), json_values))


@FUZZ
@given(key=key_text, data=st.text(max_size=40))
def test_store_put_accepts_exactly_the_valid_keys(invoke: Invoke, key: str, data: str) -> None:
    uri = f"memory://fuzz-{uuid.uuid4().hex}"
    # "--" ends the options, so a key like "-0" is still a key.
    result = invoke(["store", "put", "--data", data, "--store", uri, "--", key])
    if key_problem(key) is None:
        assert result.exit_code == 0, result.output
        assert open_store(uri).get(key) == data.encode("utf-8", "surrogateescape")
    else:
        assert result.exit_code in {1, 2}
        assert open_store(uri).list("") == []


@FUZZ
@given(key=key_text)
def test_store_read_commands_never_trace(invoke: Invoke, key: str) -> None:
    uri = f"memory://fuzz-{uuid.uuid4().hex}"
    for command in ("cat", "create", "rm", "ls"):
        invoke(["store", command, "--store", uri, "--data", "x", "--", key]
               if command == "create" else ["store", command, "--store", uri, "--", key])


SAFE_COMMANDS = ["store", "signal", "answer", "resume", "cancel", "delete", "waits", "runs",
                 "show", "sweep", "run"]
WORDS = ["--json", "--payload", "--store", "--data", "--submitted-by", "--no-secret-detection",
         "--input", "--run-id", "ls", "cat", "put", "create", "rm", "-", "--help", "{}"]


@FUZZ
@given(command=st.sampled_from(SAFE_COMMANDS),
       rest=st.lists(st.one_of(st.sampled_from(WORDS), st.text(max_size=20)), max_size=6))
def test_random_arguments_never_trace(invoke: Invoke, tmp_path_factory: pytest.TempPathFactory,
                                      monkeypatch: pytest.MonkeyPatch, command: str,
                                      rest: list[str]) -> None:
    # A random --store may name a relative path: keep whatever it creates in a temp dir.
    monkeypatch.chdir(tmp_path_factory.mktemp("fuzzcwd"))
    invoke([command, *rest, "--store", f"memory://fuzz-{uuid.uuid4().hex}"], input="")


@pytest.mark.parametrize("uri", ["memory://", "./rel", "sqlite:///no/such/dir/x.db",
                                 "s3://", "gs://", "::", "a:b", "file://", "ftp://x"])
def test_odd_store_uris_never_trace(invoke: Invoke, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch, uri: str) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke(["store", "ls", "--store", uri])
    assert result.exit_code in {0, 1}


def test_random_payloads_to_an_open_wait_never_trace(invoke: Invoke, tmp_path: Path) -> None:
    uri = f"memory://fuzz-{uuid.uuid4().hex}"
    flow = tmp_path / "gate.yaml"
    flow.write_text(WAIT_FLOW)
    started = invoke(["run", str(flow), "--store", uri, "--json"])
    assert started.exit_code == 3, started.output
    wait_id = json.loads(started.stdout)["waits"][0]["waitId"]

    @FUZZ
    @given(text=payload_text, bypass=st.booleans())
    def deliver(text: str, bypass: bool) -> None:
        args = ["signal", wait_id, "--payload", text, "--store", uri, "--json"]
        result = invoke(args + (["--no-secret-detection"] if bypass else []))
        assert result.exit_code in {0, 1}
        body = json.loads(result.stdout)
        if result.exit_code == 1:
            assert body["error"]["refusal"] in {"invalid_payload", "secret_detected",
                                                "already_settled", "unreadable"}

    deliver()


@FUZZ
@given(wait_id=st.text(max_size=40), text=payload_text)
def test_signals_to_unknown_waits_are_refused_and_write_nothing(invoke: Invoke, wait_id: str,
                                                                 text: str) -> None:
    uri = f"memory://fuzz-{uuid.uuid4().hex}"
    result = invoke(["signal", "--payload", text, "--store", uri, "--json", "--", wait_id])
    assert refusal_of(result) == "unknown"
    assert open_store(uri).list("") == []
