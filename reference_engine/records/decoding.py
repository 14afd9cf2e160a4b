"""Decoding results: Found(record) | Absent | Unreadable(reason). Decoders never raise."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

MAX_RECORD_BYTES = 256 * 1024
# A run revision holds its workflow snapshot, so a wait's schema appears in it at least
# twice: with run records capped at 256 KiB too, no registration could ever reach its own
# cap and fail its step. Runs get the store's guaranteed value size (C-VAL-1) instead.
MAX_RUN_RECORD_BYTES = 1024 * 1024
VERSION = 2

T = TypeVar("T")


@dataclass(frozen=True)
class Found(Generic[T]):
    record: T
    raw: bytes


@dataclass(frozen=True)
class Absent:
    pass


@dataclass(frozen=True)
class Unreadable:
    """The key holds bytes the engine will not guess at. ``reason`` never quotes the bytes."""

    reason: str


ABSENT = Absent()

Decoded = Found[T] | Absent | Unreadable


class SchemaError(ValueError):
    """A field is missing or has the wrong type; the message names the field."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name} is not JSON")


def load_object(data: bytes, limit: int = MAX_RECORD_BYTES) -> dict[str, Any] | Unreadable:
    """Parse a record's bytes into a JSON object, or say why not."""
    if len(data) > limit:
        return Unreadable(f"record is {len(data)} bytes, over the {limit} byte limit")
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return Unreadable("record is not valid JSON")
    if not isinstance(value, dict):
        return Unreadable("record is not a JSON object")
    return value


def dump(value: Mapping[str, Any]) -> bytes:
    """Canonical record bytes: sorted keys, compact, UTF-8."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


# --- field readers: raise SchemaError naming the field --------------------------------

def field_str(obj: Mapping[str, Any], name: str, *, optional: bool = False) -> str:
    value = obj.get(name)
    if value is None and optional:
        return ""
    if not isinstance(value, str):
        raise SchemaError(f"field {name!r} must be a string")
    return value


def field_opt_str(obj: Mapping[str, Any], name: str) -> str | None:
    value = obj.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise SchemaError(f"field {name!r} must be a string or null")
    return value


def field_int(obj: Mapping[str, Any], name: str) -> int:
    value = obj.get(name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise SchemaError(f"field {name!r} must be an integer")
    return value


def field_num(obj: Mapping[str, Any], name: str) -> float:
    value = obj.get(name)
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise SchemaError(f"field {name!r} must be a number")
    return float(value)


def field_bool(obj: Mapping[str, Any], name: str) -> bool:
    value = obj.get(name)
    if not isinstance(value, bool):
        raise SchemaError(f"field {name!r} must be true or false")
    return value


def field_obj(obj: Mapping[str, Any], name: str) -> dict[str, Any]:
    value = obj.get(name)
    if not isinstance(value, dict):
        raise SchemaError(f"field {name!r} must be an object")
    return value


def field_list(obj: Mapping[str, Any], name: str) -> list[Any]:
    value = obj.get(name)
    if not isinstance(value, list):
        raise SchemaError(f"field {name!r} must be a list")
    return value


def require_version(obj: Mapping[str, Any]) -> None:
    v = obj.get("v")
    if v != VERSION or isinstance(v, bool):
        raise SchemaError(f"unknown record version {v!r}; this engine reads v{VERSION}")


def decode_v2(data: bytes | None, what: str,
              build: Callable[[dict[str, Any]], T]) -> Decoded[T]:
    """What every v2 record decoder shares: no bytes are ``ABSENT``; bytes that are not a JSON
    object, another version, or a ``SchemaError`` from ``build`` are ``Unreadable("{what}:
    ...")``; otherwise ``Found(build(obj), data)``. Never raises into the caller."""
    if data is None:
        return ABSENT
    obj = load_object(data)
    if isinstance(obj, Unreadable):
        return obj
    try:
        require_version(obj)
        return Found(build(obj), data)
    except SchemaError as exc:
        return Unreadable(f"{what}: {exc}")


# --- time -----------------------------------------------------------------------------

def iso(ts: float) -> str:
    """Epoch seconds as ISO-8601 UTC (``2026-01-01T01:00:00Z``), millis only when needed."""
    moment = datetime.fromtimestamp(ts, tz=UTC)
    if moment.microsecond:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> float:
    """ISO-8601 UTC text as epoch seconds; SchemaError when it is not a timestamp."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise SchemaError("timestamp is not ISO-8601") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()
