"""Record encode/decode: round trips, and everything else reads as unreadable, never absent."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from reference_engine.records.claim import Lease, decode_lease
from reference_engine.records.decoding import MAX_RECORD_BYTES, Absent, Found, Unreadable
from reference_engine.records.outcome import Outcome, Receipt, decode_outcome, settled_by
from reference_engine.records.registration import Registration, decode_registration
from reference_engine.records.run import WAITING, decode_run
from reference_engine.waits.registration import normalize_wait_id

WID = "3e2d7c51-9a84-4f0b-8d6e-1c5b7a9f0e42"
OTHER = "00000000-0000-4000-8000-000000000001"


def _registration(**changes: Any) -> Registration:
    fields: dict[str, Any] = {
        "wait_id": WID, "workflow": "w", "run_id": "r", "job": "j", "step": "s",
        "iteration": 0, "attempt": 1, "deadline": 100.0, "schema": {"type": "object"},
        "registered_at": 1.0,
    }
    fields.update(changes)
    return Registration(**fields)


def _accepted(run_id: str = "r") -> Outcome:
    return Outcome("accepted", WID, run_id, "w", "fp", 100.0, 5.0,
                   Receipt("rid", WID, 5.0, "ana", True), {"approved": True})


def test_round_trips() -> None:
    reg = _registration()
    assert decode_registration(reg.encode(), WID) == Found(reg, reg.encode())
    out = _accepted()
    decoded = decode_outcome(out.encode(), WID, "r")
    assert isinstance(decoded, Found) and decoded.record == out
    lease = Lease("h", "host", 1, 30_000)
    assert isinstance(d := decode_lease(lease.encode()), Found) and d.record == lease


def test_none_is_absent_and_bad_records_are_unreadable() -> None:
    assert isinstance(decode_registration(None, WID), Absent)
    good = json.loads(_registration().encode())
    bad_records = [
        b"{not json", b"[]", b"", json.dumps({**good, "v": 3}).encode(),
        json.dumps({k: v for k, v in good.items() if k != "v"}).encode(),
        json.dumps({**good, "deadline": "soon"}).encode(),
        json.dumps({**good, "waitId": OTHER}).encode(),
        json.dumps({**good, "schema": {"pad": "x" * MAX_RECORD_BYTES}}).encode(),
    ]
    for data in bad_records:
        assert isinstance(decode_registration(data, WID), Unreadable), data[:40]


def test_an_outcome_naming_another_run_or_wait_is_unreadable() -> None:
    out = _accepted(run_id="other")
    assert isinstance(decode_outcome(out.encode(), WID, "r"), Unreadable)
    assert isinstance(decode_outcome(out.encode(), OTHER), Unreadable)
    no_payload = json.loads(_accepted().encode())
    del no_payload["payload"]
    assert isinstance(decode_outcome(json.dumps(no_payload).encode(), WID), Unreadable)


def test_settled_by_compares_identity_not_content() -> None:
    mine = _accepted()
    other_receipt = Outcome("accepted", WID, "r", "w", "fp", 100.0, 5.0,
                            Receipt("other", WID, 5.0, "ana", True), {"approved": True})
    assert settled_by(mine, mine) and not settled_by(other_receipt, mine)
    timed = Outcome("timed_out", WID, "r", "w", "fp", 100.0, 101.0)
    assert settled_by(timed, timed)
    assert not settled_by(Outcome("timed_out", WID, "r", "w", "fp", 100.0, 102.0), timed)
    assert not settled_by(Outcome("cancelled", WID, "r", "w", "fp", 100.0, 101.0), timed)


@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise_and_never_read_as_absent(data: bytes) -> None:
    for decoded in (decode_registration(data, WID), decode_outcome(data, WID, "r"),
                    decode_lease(data), decode_run(data, "r", 1)):
        assert not isinstance(decoded, Absent)


@given(st.dictionaries(st.sampled_from(["v", "kind", "waitId", "runId", "deadline", "schema",
                                        "receipt", "payload", "settledAt", "status", "steps"]),
                       st.one_of(st.none(), st.integers(), st.text(max_size=5),
                                 st.just(WID), st.just(2), st.just({}))))
def test_json_objects_never_decode_as_another_waits_record(obj: dict[str, Any]) -> None:
    data = json.dumps(obj).encode()
    for decoded in (decode_registration(data, WID), decode_outcome(data, WID)):
        if isinstance(decoded, Found):
            assert decoded.record.wait_id == WID


@given(st.text(max_size=50))
def test_normalized_wait_ids_are_lowercase_uuids_or_nothing(text: str) -> None:
    normalized = normalize_wait_id(text)
    assert normalized is None or (normalized == normalized.lower() and len(normalized) == 36)


def test_the_legacy_fixture_reads_as_a_waiting_v1_run() -> None:
    raw = resources.files("reference_engine").joinpath("fixtures/legacy_v1_run.json")
    data = raw.read_bytes()
    run_id = json.loads(data)["runId"]
    decoded = decode_run(data, run_id, 1)
    assert isinstance(decoded, Found)
    record = decoded.record
    assert record.legacy and record.status == "suspended"
    assert record.steps["approval"].status == WAITING
    assert record.steps["approval"].wait is not None
    odd = json.loads(data)
    odd["steps"]["approval"]["wait"]["kind"] = "timer"
    assert isinstance(decode_run(json.dumps(odd).encode(), run_id, 1), Unreadable)
    assert isinstance(decode_run(b'{"hello": 1}', run_id, 1), Unreadable)
    assert isinstance(decode_run(data, "another-run", 1), Unreadable)
