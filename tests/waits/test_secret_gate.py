"""The secret gate on answers (docs/explanation/answers.md): every rule, failing closed, nothing
leaks, bypass.

The leak test greps every byte written to the store, everything printed (CLI stdout and
stderr), every log record and every exception text for the rejected value.
"""

from __future__ import annotations

import json
import logging
import uuid
from functools import partial
from typing import Any

import pytest
from click.testing import CliRunner
from support import answers as answer_helpers
from support.answers import (
    OPEN_SCHEMA,
    SCHEMA,
    YES,
    MakeEngine,
    RecordingStore,
    applied,
    gate_workflow,
    snapshot,
)

from reference_engine import secrets
from reference_engine.cli.main import dw
from reference_engine.clock import SystemClock
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.records.decoding import Found
from reference_engine.records.outcome import decode_outcome
from reference_engine.refusals import Refusal
from reference_engine.stores.memory import MemoryStore

# One sample per rule; each is the whole value of a field named neutrally, so the
# credential-name rule cannot be what caught it.
SAMPLES: dict[str, Any] = {
    "aws_access_key_id": {"note": "key AKIAQWERTYUIOPASDFGH in the text"},
    "aws_session_key_id": {"note": "ASIAQWERTYUIOPASDFGH"},
    "pem_private_key": {"note": "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAK\n"},
    "bearer_token": {"note": "Authorization: Bearer abcdefgh12345678ijkl"},
    "bearer_header_field": {"Authorization": "Bearer abcdefgh12345678ijkl"},
    "github_token": {"note": "ghp_" + "a1B2c3D4e5" * 4},
    "github_pat": {"note": "github_pat_" + "A1b2C3d4E5_" * 3},
    "slack_token": {"note": "xoxb-1234567890-abcdefghij"},
    "sk_api_key": {"note": "sk-" + "Zq9" * 10},
    "google_api_key": {"note": "AIza" + "Sy0123456789abcdefghijklmnopqrstuvw"},
    "jwt": {"note": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl"},
}
CREDENTIAL_FIELDS = ["password", "Password", "passwd", "api_key", "API-KEY", "apiKey",
                     "apikey", "secret", "client_secret", "token", "x-auth-token",
                     "private_key", "PrivateKey", "credentials", "CREDENTIALS", "db.password"]
NOT_A_CREDENTIAL = ["", 0, None, True, [], {}]


def _open_run(engine: Engine) -> tuple[str, str]:
    view = engine.run(gate_workflow(schema=OPEN_SCHEMA))
    return view.run_id, view.waits[0].wait_id


def _secret_text(value: Any) -> str:
    return next(iter(value.values()))  # type: ignore[no-any-return]


@pytest.mark.parametrize("sample", list(SAMPLES.values()), ids=list(SAMPLES))
def test_every_rule_refuses_and_writes_nothing(engine: Engine, store: MemoryStore,
                                               sample: dict[str, Any]) -> None:
    run_id, wait_id = _open_run(engine)
    before = snapshot(store)
    with pytest.raises(Refusal) as refused:
        engine.answer(run_id, wait_id, json.dumps(sample))
    assert refused.value.kind == "secret_detected"
    assert refused.value.details["rule"] in secrets.RULE_NAMES
    assert _secret_text(sample) not in refused.value.message
    assert snapshot(store) == before
    engine.answer(run_id, wait_id, '{"note": "nothing to hide"}')  # the wait stayed open


@pytest.mark.parametrize("field", CREDENTIAL_FIELDS)
def test_credential_named_fields_refuse_non_empty_strings(engine: Engine, store: MemoryStore,
                                                          field: str) -> None:
    run_id, wait_id = _open_run(engine)
    before = snapshot(store)
    with pytest.raises(Refusal) as refused:
        engine.answer(run_id, wait_id, json.dumps({field: "hunter2"}))
    assert refused.value.kind == "secret_detected"
    assert refused.value.details["rule"] == "credential_field"
    assert "hunter2" not in refused.value.message
    assert snapshot(store) == before


@pytest.mark.parametrize("value", NOT_A_CREDENTIAL, ids=[repr(v) for v in NOT_A_CREDENTIAL])
def test_credential_named_fields_pass_when_not_a_non_empty_string(engine: Engine,
                                                                  value: Any) -> None:
    run_id, wait_id = _open_run(engine)
    delivery = engine.answer(run_id, wait_id, json.dumps({"password": value, "token": value}))
    assert delivery.awaiting_resume


def test_a_scanner_that_raises_fails_closed(engine: Engine, store: MemoryStore,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    run_id, wait_id = _open_run(engine)
    seen: list[Any] = []

    def broken(value: Any) -> str | None:
        seen.append(value)
        raise RuntimeError(f"scanner exploded on {json.dumps(value)}")

    monkeypatch.setattr(secrets, "scan", broken)
    before = snapshot(store)
    with pytest.raises(Refusal) as refused:
        engine.answer(run_id, wait_id, '{"note": "Ocelot-Tangerine-55"}')
    assert seen, "the gate never called the scanner"
    assert refused.value.kind == "secret_detected"
    assert refused.value.details["rule"] == "scanner_error"
    assert "Ocelot" not in refused.value.message and "exploded" not in refused.value.message
    # No exception chain travels with the refusal: the scanner's text quoted the value.
    assert refused.value.__cause__ is None and refused.value.__context__ is None
    assert snapshot(store) == before


def test_the_bypass_skips_the_gate_and_is_recorded_on_the_receipt(
    engine: Engine, store: MemoryStore
) -> None:
    run_id, wait_id = _open_run(engine)
    sample = SAMPLES["aws_access_key_id"]
    delivery = engine.answer(run_id, wait_id, json.dumps(sample), secret_detection=False)
    stored = decode_outcome(store.get(keys.outcome_key(wait_id)), wait_id)
    assert isinstance(stored, Found) and stored.record.receipt is not None
    assert stored.record.receipt.secret_detection is False
    assert stored.record.receipt.id == delivery.receipt.id
    # The journal filter at resume honours the bypass: the answer is consumed as given.
    assert engine.resume(run_id).status == "succeeded"
    shown = engine.show(run_id)
    [event] = applied(shown)
    assert event["payload"] == sample and event["receiptId"] == delivery.receipt.id
    assert shown["steps"]["approval"]["output"]["signal"]["secretDetection"] is False
    assert shown["steps"]["use"]["output"] == {"seen": sample}  # later steps get it too


def test_a_detected_answer_journals_its_receipt_with_detection_on(engine: Engine) -> None:
    run_id, wait_id = _open_run(engine)
    engine.answer(run_id, wait_id, '{"note": "plain"}')
    engine.resume(run_id)
    shown = engine.show(run_id)
    assert shown["steps"]["approval"]["output"]["signal"]["secretDetection"] is True
    assert len(applied(shown)) == 1


# --- nothing leaks: bytes written, output printed, logs, exception text ------------------

LEAKY = {
    "secret": json.dumps({"note": "AKIAQWERTYUIOPASDFGH"}),
    "credential": json.dumps({"password": "Marmalade-Wombat-314"}),
    "schema": json.dumps({"approved": "Marmalade-Wombat-314"}),
    "key_path": json.dumps({"approved": True, "AKIAQWERTYUIOPASDFGH": 1}),
}
NEEDLES = ("AKIAQWERTYUIOPASDFGH", "Marmalade-Wombat-314", "Marmalade", "QWERTYUIOPASDFGH")


def _assert_no_needle(text: str | bytes, where: str) -> None:
    raw = text if isinstance(text, bytes) else text.encode()
    for needle in NEEDLES:
        assert needle.encode() not in raw, f"{needle} leaked into {where}"


def test_no_byte_written_or_logged_holds_a_rejected_value(
    make_engine: MakeEngine, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    recorder = RecordingStore(MemoryStore())
    lines: list[str] = []
    engine = make_engine(recorder, progress=lines.append)
    schema = {**SCHEMA, "additionalProperties": False}
    view = engine.run(gate_workflow(schema=schema))
    wait_id = view.waits[0].wait_id
    texts: list[str] = []
    for payload in LEAKY.values():
        for call in (partial(engine.answer, view.run_id, wait_id, payload),
                     partial(engine.signal, wait_id, payload)):
            with pytest.raises(Refusal) as refused:
                call()
            texts += [str(refused.value), repr(refused.value),
                      json.dumps(refused.value.to_json()), repr(refused.value.__context__)]
    engine.answer(view.run_id, wait_id, YES)
    assert engine.resume(view.run_id).status == "succeeded"
    _assert_no_needle(recorder.every_byte(), "the store")
    _assert_no_needle("\n".join(texts), "a refusal")
    _assert_no_needle("\n".join(lines), "progress output")
    _assert_no_needle(caplog.text, "the log")


def test_no_cli_output_holds_a_rejected_value(monkeypatch: pytest.MonkeyPatch,
                                              caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.delenv("DW_CLOCK", raising=False)
    monkeypatch.setenv("DW_DEBUG", "0")
    monkeypatch.setattr(answer_helpers, "SPACE", [f"grep-{uuid.uuid4().hex}"])
    monkeypatch.setattr(answer_helpers, "RECORDERS", [])
    store = ["--store", "support.answers:recording_memory"]
    runner = CliRunner()
    flow = gate_workflow(schema={**SCHEMA, "additionalProperties": False})
    engine = Engine(answer_helpers.recording_memory(), SystemClock())
    view = engine.run(flow)
    wait_id = view.waits[0].wait_id
    printed: list[str] = []
    for payload in LEAKY.values():
        for json_flag in ([], ["--json"]):
            answer = runner.invoke(dw, ["answer", view.run_id, wait_id, payload, *store,
                                        *json_flag])
            assert answer.exit_code == 1, answer.output
            signal = runner.invoke(dw, ["signal", wait_id, "--payload", "-", *store, *json_flag],
                                   input=payload)
            assert signal.exit_code == 1, signal.output
            printed += [answer.output, signal.output]
            assert "refused" in answer.output
    ok = runner.invoke(dw, ["answer", view.run_id, wait_id, YES, *store])
    assert ok.exit_code == 0, ok.output
    done = runner.invoke(dw, ["resume", view.run_id, *store, "--json"])
    assert json.loads(done.stdout)["status"] == "succeeded"
    shown = runner.invoke(dw, ["show", view.run_id, *store, "--json"])
    printed += [ok.output, done.output, shown.output]
    everything = b"".join(r.every_byte() for r in answer_helpers.RECORDERS)
    assert len(answer_helpers.RECORDERS) > 4 and everything
    _assert_no_needle(everything, "the store")
    _assert_no_needle("\n".join(printed), "CLI output")
    _assert_no_needle(caplog.text, "the log")


def test_the_cli_bypass_flag_is_recorded_and_the_answer_consumed(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DW_CLOCK", raising=False)
    space = f"bypass-{uuid.uuid4().hex}"
    runner = CliRunner()
    store = ["--store", f"memory://{space}"]
    view = Engine(MemoryStore(space), SystemClock()).run(gate_workflow(schema=OPEN_SCHEMA))
    wait_id = view.waits[0].wait_id
    payload = json.dumps(SAMPLES["github_token"])
    refused = runner.invoke(dw, ["answer", view.run_id, wait_id, payload, *store])
    assert refused.exit_code == 1 and "secret_detected" in refused.output
    done = runner.invoke(dw, ["answer", view.run_id, wait_id, payload, *store,
                              "--no-secret-detection", "--json"])
    assert done.exit_code == 0, done.output
    stored = decode_outcome(MemoryStore(space).get(keys.outcome_key(wait_id)), wait_id)
    assert isinstance(stored, Found) and stored.record.receipt is not None
    assert stored.record.receipt.secret_detection is False
    resumed = runner.invoke(dw, ["resume", view.run_id, *store, "--json"])
    assert json.loads(resumed.stdout)["status"] == "succeeded"
    shown = json.loads(runner.invoke(dw, ["show", view.run_id, *store, "--json"]).stdout)
    assert [e["payload"] for e in applied(shown)] == [SAMPLES["github_token"]]
