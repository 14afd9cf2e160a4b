"""The run-claim lease record, ``claims/<runId>/<g>``."""

from __future__ import annotations

from dataclasses import dataclass, replace

from reference_engine.records.decoding import (
    ABSENT,
    VERSION,
    Decoded,
    Found,
    SchemaError,
    Unreadable,
    dump,
    field_bool,
    field_int,
    field_str,
    load_object,
    require_version,
)


@dataclass(frozen=True)
class Lease:
    holder: str
    host: str
    pid: int
    ttl_ms: int
    beat: int = 0
    released: bool = False

    def encode(self) -> bytes:
        return dump({
            "v": VERSION, "holder": self.holder, "host": self.host, "pid": self.pid,
            "ttlMs": self.ttl_ms, "beat": self.beat, "released": self.released,
        })

    def next_beat(self) -> Lease:
        return replace(self, beat=self.beat + 1)

    def as_released(self) -> Lease:
        return replace(self, released=True)


def decode_lease(data: bytes | None) -> Decoded[Lease]:
    if data is None:
        return ABSENT
    obj = load_object(data)
    if isinstance(obj, Unreadable):
        return obj
    try:
        require_version(obj)
        lease = Lease(
            holder=field_str(obj, "holder"), host=field_str(obj, "host"),
            pid=field_int(obj, "pid"), ttl_ms=field_int(obj, "ttlMs"),
            beat=field_int(obj, "beat"), released=field_bool(obj, "released"),
        )
    except SchemaError as exc:
        return Unreadable(f"claim lease: {exc}")
    return Found(lease, data)
