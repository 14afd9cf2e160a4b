"""One recorded store call, and the JSON-lines form that carries histories across processes.

Timestamps are ``time.monotonic_ns()`` readings. On Linux that is ``CLOCK_MONOTONIC``,
one clock for the whole host, so stamps taken in different processes on one machine
are comparable and histories recorded in child processes can simply be merged.
(They are *not* comparable across hosts or across a reboot.)
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import msgspec

OpName = Literal["put", "put_if_absent", "get", "delete"]
OP_NAMES: tuple[OpName, ...] = ("put", "put_if_absent", "get", "delete")


@dataclass(frozen=True, slots=True)
class Operation:
    """A call and its response.

    ``value`` is the argument of ``put``/``put_if_absent``; ``result`` is what the call
    returned (``bool`` for ``put_if_absent``, ``bytes | None`` for ``get``, ``None``
    otherwise). ``ret is None`` marks an INDETERMINATE call: it raised, so it may or may
    not have taken effect, and its response time is taken as infinite. ``error`` names the
    exception type, never its message. ``fault`` names the network faults a fault proxy
    played while the call ran (``"lost-reply"``, comma-separated), if any.
    """

    process: str
    op: OpName
    key: str
    value: bytes | None
    result: bool | bytes | None
    call: int
    ret: int | None
    error: str | None = None
    fault: str | None = None

    @property
    def indeterminate(self) -> bool:
        return self.ret is None

    def to_json(self) -> dict[str, Any]:
        result: Any = self.result
        if isinstance(self.result, bytes):
            result = _b64(self.result)
        row: dict[str, Any] = {
            "process": self.process, "op": self.op, "key": self.key,
            "value": None if self.value is None else _b64(self.value),
            "result": result, "call": self.call, "ret": self.ret, "error": self.error,
        }
        if self.fault is not None:
            row["fault"] = self.fault
        return row

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> Operation:
        op = row["op"]
        if op not in OP_NAMES:
            raise ValueError(f"history row has op {op!r}; expected one of {', '.join(OP_NAMES)}")
        result = row.get("result")
        if op == "get" and result is not None:
            result = base64.b64decode(result)
        elif op == "put_if_absent" and result is not None:
            result = bool(result)
        value = row.get("value")
        return cls(
            process=str(row["process"]), op=op, key=str(row["key"]),
            value=None if value is None else base64.b64decode(value),
            result=result, call=int(row["call"]),
            ret=None if row.get("ret") is None else int(row["ret"]),
            error=row.get("error"), fault=row.get("fault"),
        )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def dump_jsonl(history: Iterable[Operation], path: Path) -> None:
    """Write one JSON object per line (the child-process side of a merge).

    Each line is :meth:`Operation.to_json` with ``fault`` always present (``null`` when
    none); msgspec writes it (docs/reference/costs.md: why msgspec).
    """
    path.write_bytes(_ENCODER.encode_lines(list(history)))


def iter_jsonl(path: Path) -> Iterator[Operation]:
    with path.open(encoding="utf-8") as source:
        for number, line in enumerate(source, 1):
            if not line.strip():
                continue
            try:
                yield Operation.from_json(json.loads(line))
            except (KeyError, ValueError, TypeError) as exc:
                raise ValueError(
                    f"{path}:{number} is not a recorded operation ({type(exc).__name__}); "
                    "write histories with dump_jsonl"
                ) from None


def merge_histories(*histories: Iterable[Operation]) -> list[Operation]:
    """One history from several recorders or processes, ordered by invocation stamp."""
    merged = [op for history in histories for op in history]
    merged.sort(key=lambda op: (op.call, op.process))
    return merged


def load_jsonl(*paths: Path) -> list[Operation]:
    """Read and merge histories that child processes wrote with :func:`dump_jsonl`.

    A file is decoded at once by msgspec; one it refuses (a key left out, a bad row) is read
    again line by line, which names the first bad line, as files were always read.
    """
    return merge_histories(*(_load_one(p) for p in paths))


def _load_one(path: Path) -> list[Operation]:
    try:
        ops: list[Operation] = _DECODER.decode_lines(path.read_bytes())
    except (msgspec.DecodeError, msgspec.ValidationError):
        return list(iter_jsonl(path))
    return ops


_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder(Operation)
