"""The run record: a legacy v1 run still reads, as a waiting run; a wrong one is unreadable."""

from __future__ import annotations

import json
from importlib import resources

from reference_engine.records.decoding import Found, Unreadable
from reference_engine.records.run import WAITING, decode_run


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
