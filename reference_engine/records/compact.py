"""Make an ending run's record fit: big step outputs and journal payloads are left out.

A run must always be able to end (a cancel above all). If its final revision would
pass the record limit, the copies of large outputs and payloads in that one revision
are replaced by a marker naming their size; ids (receipt, wait, step) are kept, and the
earlier revisions keep the full values until the sweep prunes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from reference_engine.records.decoding import MAX_RUN_RECORD_BYTES, dump
from reference_engine.records.run import RunRecord

# Room for the fields a save adds (rev, generation, updated_at) and the end event.
SAVE_MARGIN_BYTES = 4096
LARGE_VALUE_BYTES = 1024
_KEPT_EVENT_FIELDS = ("type", "job", "step", "waitId", "receiptId", "status", "error", "at")


def _size(value: Any) -> int:
    return len(dump({"v": value}))


def _left_out(value: Any) -> dict[str, Any]:
    kept: dict[str, Any] = {"omitted": _size(value)}
    signal = value.get("signal") if isinstance(value, Mapping) else None
    if isinstance(signal, Mapping) and isinstance(signal.get("id"), str):
        kept["signal"] = {"id": signal["id"]}  # the receipt id still names the answer
    return kept


def fits(record: RunRecord) -> bool:
    return len(record.encode()) + SAVE_MARGIN_BYTES <= MAX_RUN_RECORD_BYTES


def compacted(record: RunRecord) -> RunRecord:
    """``record`` itself when it fits, else with every large output and event left out."""
    if fits(record):
        return record
    steps = {name: replace(step, output=_left_out(step.output))
             if _size(step.output) > LARGE_VALUE_BYTES else step
             for name, step in record.steps.items()}
    journal = tuple(
        {**{k: e[k] for k in _KEPT_EVENT_FIELDS if k in e}, "omitted": _size(e)}
        if _size(e) > LARGE_VALUE_BYTES else e
        for e in record.journal)
    return replace(record, steps=steps, journal=journal)
