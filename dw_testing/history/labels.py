"""How one recorded call is named in a printout: value digests, results and time ranks.

Values are never printed, only their digests: a history may carry user payloads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from dw_testing.history.events import Operation


def digest(data: bytes | None) -> str:
    """A value's short fingerprint: equal digests mean equal bytes; contents never shown."""
    if data is None:
        return "-"
    return f"#{hashlib.sha256(data).hexdigest()[:8]}({len(data)}B)"


def result_text(op: Operation) -> str:
    """What the call answered, in words (the table's ``result`` column)."""
    if op.indeterminate:
        if op.error is None and op.fault:
            return f"met {op.fault} (may have applied)"
        return f"raised {op.error or 'an error'} (may have applied)"
    if op.op == "put_if_absent":
        # A None or 1 is not False or True: the contract's create answers a real bool.
        return str(op.result) if isinstance(op.result, bool) else (
            f"{type(op.result).__name__} (not a bool)")
    if op.op == "get":
        if op.result is None:
            return "None"
        # Labelled by its type, never by its contents: a memoryview equals bytes, yet
        # breaks a caller that decodes it.
        return digest(op.result) if isinstance(op.result, bytes) else (
            f"{type(op.result).__name__} (not bytes)")
    return "ok"


def value_text(op: Operation) -> str:
    """The digest of the value a write sent; empty for reads and deletes."""
    return digest(op.value) if op.op in ("put", "put_if_absent") else ""


def call_label(op: Operation) -> str:
    """One short line: op, value digest and result (``put_if_absent #..(2B) -> True``)."""
    parts: list[str] = [op.op]
    value = value_text(op)
    if value:
        parts.append(value)
    if op.indeterminate:
        parts.append(f"-> met {op.fault}" if op.error is None and op.fault
                     else f"-> raised {op.error or 'an error'}")
    elif op.op in ("put_if_absent", "get"):
        parts.append(f"-> {result_text(op)}")
    if op.fault and not (op.indeterminate and op.error is None):
        parts.append(f"[met {op.fault}]")
    return " ".join(parts)


def stamp_ranks(ops: Iterable[Operation]) -> dict[int, int]:
    """Each call and return stamp's rank among these calls' stamps (0 = earliest).

    Ranks keep the order that matters (``a`` precedes ``b`` iff a's end < b's start) and
    drop the nanoseconds that do not.
    """
    stamps: set[int] = set()
    for op in ops:
        stamps.add(op.call)
        if op.ret is not None:
            stamps.add(op.ret)
    return {stamp: rank for rank, stamp in enumerate(sorted(stamps))}
