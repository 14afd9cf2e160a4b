"""The claim's lease record round-trips."""

from __future__ import annotations

from reference_engine.records.claim import Lease, decode_lease
from reference_engine.records.decoding import Found


def test_a_lease_round_trips() -> None:
    lease = Lease("h", "host", 1, 30_000)
    assert isinstance(d := decode_lease(lease.encode()), Found) and d.record == lease
