"""The run-claim lease record, ``claims/<runId>/<g>``."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from reference_engine.records import decoding
from reference_engine.records.decoding import field_bool, field_int, field_str


@dataclass(frozen=True)
class Lease:
    holder: str
    host: str
    pid: int
    ttl_ms: int
    beat: int = 0
    released: bool = False

    def encode(self) -> bytes:
        return decoding.dump({
            "v": decoding.VERSION, "holder": self.holder, "host": self.host, "pid": self.pid,
            "ttlMs": self.ttl_ms, "beat": self.beat, "released": self.released,
        })

    def next_beat(self) -> Lease:
        return replace(self, beat=self.beat + 1)

    def as_released(self) -> Lease:
        return replace(self, released=True)


def decode_lease(data: bytes | None) -> decoding.Decoded[Lease]:
    return decoding.decode_v2(data, "claim lease", _lease_from)


def _lease_from(obj: dict[str, Any]) -> Lease:
    return Lease(
        holder=field_str(obj, "holder"), host=field_str(obj, "host"),
        pid=field_int(obj, "pid"), ttl_ms=field_int(obj, "ttlMs"),
        beat=field_int(obj, "beat"), released=field_bool(obj, "released"),
    )
