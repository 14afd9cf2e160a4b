"""The wait registration record: it round-trips, and anything else reads as unreadable."""

from __future__ import annotations

import json

from record_samples import OTHER, WID, registration

from reference_engine.records.decoding import MAX_RECORD_BYTES, Absent, Found, Unreadable
from reference_engine.records.registration import decode_registration


def test_a_registration_round_trips() -> None:
    reg = registration()
    assert decode_registration(reg.encode(), WID) == Found(reg, reg.encode())


def test_none_is_absent_and_bad_registrations_are_unreadable() -> None:
    assert isinstance(decode_registration(None, WID), Absent)
    good = json.loads(registration().encode())
    bad_records = [
        b"{not json", b"[]", b"", json.dumps({**good, "v": 3}).encode(),
        json.dumps({k: v for k, v in good.items() if k != "v"}).encode(),
        json.dumps({**good, "deadline": "soon"}).encode(),
        json.dumps({**good, "waitId": OTHER}).encode(),
        json.dumps({**good, "schema": {"pad": "x" * MAX_RECORD_BYTES}}).encode(),
    ]
    for data in bad_records:
        assert isinstance(decode_registration(data, WID), Unreadable), data[:40]
