"""Hypothesis strategies for store keys, list prefixes and values, from the contract's grammar.

Public as ``dw_testing.strategies``: a store author can draw from them in their own tests::

    from hypothesis import given
    from dw_testing.strategies import keys, values

    @given(key=keys(), value=values())
    def test_round_trip(key: str, value: bytes) -> None: ...

Nothing here is a list of known bad keys. Keys are drawn from every character class that
C-KEY-1 allows, at every position of a segment, with segment lengths up to 200 UTF-8 bytes
and keys up to 1024; :func:`lossy_twin` computes, from a drawn key, a distinct key that one
lossy treatment of text (case folding, Unicode normalisation, trimming, percent coding)
would merge with it. The grammar is :mod:`dw_testing.kit.key_grammar`, written out on
purpose, not imported from the stores: the model that judges a store shares no code with it.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence

from hypothesis import strategies as st

from dw_testing.kit.key_grammar import (
    CHARACTER_CLASSES,
    LOSSY_TREATMENTS,
    MAX_KEY_BYTES,
    MAX_SEGMENT_BYTES,
    cut_prefix,
    is_valid_key,
    is_valid_prefix,
    lossy_twin,
    utf8_length,
)
from dw_testing.models.shown_bytes import ShownBytes

__all__ = [
    "CHARACTER_CLASSES",
    "LOSSY_TREATMENTS",
    "MAX_KEY_BYTES",
    "MAX_SEGMENT_BYTES",
    "characters_of",
    "cut_prefix",
    "is_valid_key",
    "is_valid_prefix",
    "key_characters",
    "keys",
    "list_prefixes",
    "lossy_twin",
    "segments",
    "spectrum_keys",
    "spectrum_values",
    "values",
]

# 1 MiB: what C-VAL-1 asks of a store that declares large_values (64 KiB otherwise).
LARGE_VALUE_BYTES = 1 << 20
SMALL_VALUE_LIMIT = 64 << 10


@functools.cache
def characters_of(name: str) -> st.SearchStrategy[str]:
    """One character of the class ``name`` (a key of :data:`CHARACTER_CLASSES`)."""
    ranges = CHARACTER_CLASSES[name]
    if all(lo == hi for lo, hi in ranges):
        return st.sampled_from([chr(lo) for lo, _ in ranges])
    return st.one_of([st.characters(min_codepoint=lo, max_codepoint=hi,
                                    exclude_categories=["Cs"]) for lo, hi in ranges])


@functools.cache
def _alphabet(classes: tuple[str, ...]) -> st.SearchStrategy[str]:
    return st.one_of([characters_of(name) for name in classes])


def key_characters(classes: Sequence[str] | None = None) -> st.SearchStrategy[str]:
    """One character a key may hold, from every class (or only ``classes``)."""
    return _alphabet(tuple(classes or CHARACTER_CLASSES))


# -- keys ------------------------------------------------------------------------------------


@st.composite
def segments(draw: st.DrawFn, *, max_bytes: int = MAX_SEGMENT_BYTES,
             classes: Sequence[str] | None = None) -> str:
    """One segment: characters of every class at any position, from one character up to
    ``max_bytes`` UTF-8 bytes, often exactly at the limit or one character short of it."""
    alphabet = key_characters(classes)
    chars = draw(st.lists(alphabet, min_size=1, max_size=6))
    text = "".join(chars)
    while utf8_length(text) > max_bytes:
        text = text[:-1] or draw(characters_of("ascii_lower"))
    # Long, filled to the limit with the drawn text anywhere in it; the last choice, so a
    # failing example shrinks to a short segment.
    if draw(st.integers(0, 5)) == 5:
        fill = draw(characters_of(draw(st.sampled_from(["ascii_lower", "cjk", "latin1"]))))
        target = draw(st.sampled_from([max_bytes, max_bytes - 1, max_bytes // 2]))
        room = max(0, target - utf8_length(text)) // utf8_length(fill)
        cut = draw(st.integers(0, room))
        text = fill * cut + text + fill * (room - cut)
    if text in (".", ".."):
        text += draw(characters_of("ascii_lower"))
    return text


@st.composite
def keys(draw: st.DrawFn, *, max_bytes: int = MAX_KEY_BYTES, max_depth: int = 6,
         classes: Sequence[str] | None = None) -> str:
    """A key C-KEY-1 allows, of one to ``max_depth`` segments and at most ``max_bytes``
    bytes; now and then the deepest key that fits (one-character segments)."""
    if max_bytes < 1:
        raise ValueError("keys(max_bytes=...) must leave room for one byte")
    # The deepest key (one-byte segments up to the limit); the last choice, so it shrinks away.
    if draw(st.integers(0, 30)) == 30:
        depth = (max_bytes + 1) // 2
        part = draw(characters_of("ascii_lower"))
        return "/".join([part] * depth)
    depth = draw(st.integers(1, max_depth))
    parts: list[str] = []
    used = -1
    for _ in range(depth):
        room = min(MAX_SEGMENT_BYTES, max_bytes - used - 1)
        if room < 1:
            break
        part = draw(segments(max_bytes=room, classes=classes))
        parts.append(part)
        used += 1 + utf8_length(part)
    return "/".join(parts)


@st.composite
def spectrum_keys(draw: st.DrawFn, *, max_bytes: int = MAX_KEY_BYTES) -> list[str]:
    """One key per character class, built from one drawn character ``c`` of it: ``ccc/c``,
    the class first, inside and last in a segment and alone in a last one, so every class
    meets every position in one listing, and ``0/c`` for the class that sorts last. (Few
    keys: the spectrum opens every example, and on a remote store its calls are most of
    the model's time.) Keys longer than ``max_bytes`` are left out."""
    found = []
    for name in CHARACTER_CLASSES:
        ch = draw(characters_of(name), label=name)
        key = f"{ch * 3}/{ch}"
        if not is_valid_key(key):  # "." cannot stand alone as a segment
            key = f"{ch * 3}/{ch * 3}"
        if is_valid_key(key) and utf8_length(key) <= max_bytes and key not in found:
            found.append(key)
    # The last key in code-point order gets a twin that sorts first, so that a listing
    # that moves its class to the end is out of order for that class too.
    last = f"0/{max(found)[-1]}" if found else ""
    if last and is_valid_key(last) and utf8_length(last) <= max_bytes:
        found.append(last)
    return found


# -- list prefixes -----------------------------------------------------------------------------


@st.composite
def list_prefixes(draw: st.DrawFn, known: Sequence[str] = (), *,
                  bare: bool = True) -> str:
    """A prefix for ``list``: ``""``, a prefix of one of ``known`` cut at any character, with
    and without a trailing ``/``, or one that is a prefix of no key.

    With ``bare=False`` (a store that does not declare ``segment_prefixes``) every prefix
    is ``""`` or ends in ``/``, cut at a segment boundary.
    """
    kind = draw(st.integers(0, 9))
    if kind == 0 or not known:
        return "" if kind == 0 or draw(st.booleans()) else draw(keys(max_depth=2)) + "/"
    key = draw(st.sampled_from(known))
    if kind == 1:  # a prefix of no key: a fresh segment under a key
        absent = f"{key}/{draw(segments(max_bytes=8))}/"
        return absent if is_valid_prefix(absent) else ""
    return cut_prefix(key, draw(st.integers(0, len(key))), slash=draw(st.booleans()),
                      bare=bare)


# -- values ----------------------------------------------------------------------------------

_LINE_ENDINGS = (b"\r", b"\n", b"\r\n", b"\n\r")
_INVALID_UTF8 = (b"\xff", b"\xc3\x28", b"\x80", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80")


@st.composite
def spectrum_values(draw: st.DrawFn) -> bytes:
    """Every special byte run of a value (each line ending, NUL, each invalid UTF-8 form),
    in a drawn order, between drawn bytes, ending in NUL."""
    pieces = [*_LINE_ENDINGS, *_INVALID_UTF8, b"\x00", b"\r"]
    order = draw(st.permutations(pieces))
    filler = draw(st.binary(max_size=4))
    return ShownBytes(filler.join(order) + b"\x00")


@st.composite
def _every_byte(draw: st.DrawFn) -> bytes:
    order = list(range(256))
    random.Random(draw(st.integers(0, 2**32 - 1))).shuffle(order)
    return bytes(order)


@st.composite
def _text_like(draw: st.DrawFn) -> bytes:
    pieces = st.one_of(st.sampled_from(_LINE_ENDINGS), st.sampled_from(_INVALID_UTF8),
                       st.just(b"\x00"), st.text(max_size=4).map(lambda t: t.encode("utf-8")),
                       st.binary(min_size=1, max_size=3))
    return b"".join(draw(st.lists(pieces, min_size=1, max_size=6)))


@st.composite
def _large(draw: st.DrawFn, max_size: int) -> bytes:
    # Built from a drawn seed, never drawn byte by byte: a 1 MiB draw would be slow to make
    # and slower to shrink.
    size = draw(st.sampled_from([max_size, max_size - 1, max_size // 2 + 1]))
    return random.Random(draw(st.integers(0, 2**32 - 1))).randbytes(max(size, 0))


def values(*, max_size: int = LARGE_VALUE_BYTES,
           large: bool = True) -> st.SearchStrategy[bytes]:
    """A value: empty, every byte 0-255, line endings in every form, NUL, invalid UTF-8,
    short binary, and (with ``large``) sizes at ``max_size`` and just under it."""
    small = st.one_of(st.just(b""), st.binary(min_size=1, max_size=8), _text_like(),
                      _every_byte())
    if not large:
        return small.map(ShownBytes)
    # One value in sixteen is large: enough to meet the limit in most runs, few enough that
    # a slow backend spends its time on the other calls.
    return st.integers(0, 15).flatmap(
        lambda pick: _large(max_size) if pick == 15 else small).map(ShownBytes)
