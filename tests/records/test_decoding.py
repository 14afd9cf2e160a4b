"""Every decoder, on any bytes: it never raises, never reads as absent, and never takes
another wait's record for its own."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from record_samples import WID

from reference_engine.records.claim import decode_lease
from reference_engine.records.decoding import Absent, Found
from reference_engine.records.outcome import decode_outcome
from reference_engine.records.registration import decode_registration
from reference_engine.records.run import decode_run


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
