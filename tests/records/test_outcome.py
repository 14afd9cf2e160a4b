"""The outcome record: it round-trips, names its own run and wait, and compares by identity."""

from __future__ import annotations

import json

from record_samples import OTHER, WID, accepted

from reference_engine.records.decoding import Found, Unreadable
from reference_engine.records.outcome import Outcome, Receipt, decode_outcome, settled_by


def test_an_outcome_round_trips() -> None:
    out = accepted()
    decoded = decode_outcome(out.encode(), WID, "r")
    assert isinstance(decoded, Found) and decoded.record == out


def test_an_outcome_naming_another_run_or_wait_is_unreadable() -> None:
    out = accepted(run_id="other")
    assert isinstance(decode_outcome(out.encode(), WID, "r"), Unreadable)
    assert isinstance(decode_outcome(out.encode(), OTHER), Unreadable)
    no_payload = json.loads(accepted().encode())
    del no_payload["payload"]
    assert isinstance(decode_outcome(json.dumps(no_payload).encode(), WID), Unreadable)


def test_settled_by_compares_identity_not_content() -> None:
    mine = accepted()
    other_receipt = Outcome("accepted", WID, "r", "w", "fp", 100.0, 5.0,
                            Receipt("other", WID, 5.0, "ana", True), {"approved": True})
    assert settled_by(mine, mine) and not settled_by(other_receipt, mine)
    timed = Outcome("timed_out", WID, "r", "w", "fp", 100.0, 101.0)
    assert settled_by(timed, timed)
    assert not settled_by(Outcome("timed_out", WID, "r", "w", "fp", 100.0, 102.0), timed)
    assert not settled_by(Outcome("cancelled", WID, "r", "w", "fp", 100.0, 101.0), timed)
