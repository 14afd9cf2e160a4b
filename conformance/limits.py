"""Keys of an exact UTF-8 size, for the tests of the contract's limits.

A key is built from one *unit* character repeated (1, 2, 3 or 4 bytes in UTF-8), padded
with ASCII to the exact size asked for, so the same limit is tried in every width. Its
*sibling* differs in the last character only, by one of the same width: a store that keeps
only some leading bytes of a segment or key stores the two as one record.
"""

from __future__ import annotations

from reference_engine.stores.keys import MAX_KEY_BYTES, MAX_SEGMENT_BYTES

__all__ = ["MAX_KEY_BYTES", "MAX_SEGMENT_BYTES", "UNITS", "key_of", "segment_of", "sibling"]

# unit character -> the same-width character its sibling ends in.
UNITS = {"s": "t", "\u00e9": "\u00e8", "\u20ac": "\u20a4", "\U0001f600": "\U0001f601"}
_PAD, _PAD_SIBLING = "a", "b"


def segment_of(size: int, unit: str) -> str:
    """A segment of exactly ``size`` UTF-8 bytes: ``unit`` repeated, then ASCII padding."""
    width = len(unit.encode("utf-8"))
    segment = unit * (size // width) + _PAD * (size % width)
    assert len(segment.encode("utf-8")) == size
    return segment


def key_of(head: str, size: int, unit: str) -> str:
    """``head`` followed by segments of ``unit``, the whole key exactly ``size`` bytes.

    Every segment but the last is exactly the segment limit, so both limits are met at once.
    """
    remaining = size - len(head.encode("utf-8"))
    segments = []
    while remaining > MAX_SEGMENT_BYTES + 1:  # "/" plus a segment of at least one byte
        take = min(MAX_SEGMENT_BYTES, remaining - 2)
        segments.append(segment_of(take, unit))
        remaining -= take + 1
    segments.append(segment_of(remaining - 1, unit))
    key = head + "/" + "/".join(segments)
    assert len(key.encode("utf-8")) == size, (size, len(key.encode("utf-8")))
    return key


def sibling(key: str) -> str:
    """``key`` with its last character replaced by another of the same UTF-8 width."""
    last = key[-1]
    alternative = _PAD_SIBLING if last == _PAD else UNITS[last]
    return key[:-1] + alternative
