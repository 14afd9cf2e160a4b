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
would merge with it. The grammar is written out here on purpose, not imported from the
stores: the model that judges a store must not share its code.
"""

from __future__ import annotations

import functools
import random
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from urllib.parse import quote, unquote, unquote_plus

from hypothesis import strategies as st

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
    "values",
]

MAX_SEGMENT_BYTES = 200
MAX_KEY_BYTES = 1024
# 1 MiB: what C-VAL-1 asks of a store that declares large_values (64 KiB otherwise).
LARGE_VALUE_BYTES = 1 << 20
SMALL_VALUE_LIMIT = 64 << 10


def _ranges(*pairs: tuple[int, int]) -> tuple[tuple[int, int], ...]:
    return pairs


# Printable ASCII punctuation less "/" (the separator) and "\" (refused by C-KEY-1).
_PUNCTUATION = tuple((ord(c), ord(c)) for c in "!\"#$%&'()*+,-.:;<=>?@[]^_`{|}~")

#: Every class of character a key may hold (C-KEY-1), as inclusive code-point ranges.
CHARACTER_CLASSES: Mapping[str, tuple[tuple[int, int], ...]] = MappingProxyType({
    "ascii_lower": _ranges((0x61, 0x7A)),
    "ascii_upper": _ranges((0x41, 0x5A)),
    "digit": _ranges((0x30, 0x39)),
    "punctuation": _PUNCTUATION,
    "space": _ranges((0x20, 0x20)),
    "latin1": _ranges((0xA0, 0xFF)),
    "cased_bmp": _ranges((0x100, 0x24F), (0x370, 0x3FF), (0x400, 0x4FF), (0x1E00, 0x1EFF)),
    "combining": _ranges((0x300, 0x36F)),
    "unicode_space": _ranges((0x2000, 0x200A), (0x3000, 0x3000), (0x202F, 0x202F)),
    "format": _ranges((0x200B, 0x200F), (0x2060, 0x2064), (0xFEFF, 0xFEFF)),
    "cjk": _ranges((0x4E00, 0x9FFF), (0x3040, 0x30FF)),
    "fullwidth": _ranges((0xFF01, 0xFF5E)),
    "non_bmp": _ranges((0x10000, 0x10FFFF)),
})


@functools.lru_cache(maxsize=None)
def characters_of(name: str) -> st.SearchStrategy[str]:
    """One character of the class ``name`` (a key of :data:`CHARACTER_CLASSES`)."""
    ranges = CHARACTER_CLASSES[name]
    if all(lo == hi for lo, hi in ranges):
        return st.sampled_from([chr(lo) for lo, _ in ranges])
    return st.one_of([st.characters(min_codepoint=lo, max_codepoint=hi,
                                    exclude_categories=["Cs"]) for lo, hi in ranges])


@functools.lru_cache(maxsize=None)
def _alphabet(classes: tuple[str, ...]) -> st.SearchStrategy[str]:
    return st.one_of([characters_of(name) for name in classes])


def key_characters(classes: Sequence[str] | None = None) -> st.SearchStrategy[str]:
    """One character a key may hold, from every class (or only ``classes``)."""
    return _alphabet(tuple(classes or CHARACTER_CLASSES))


def _bytes(text: str) -> int:
    return len(text.encode("utf-8"))


# -- the grammar, written out (C-KEY-1) ------------------------------------------------------


def _allowed_character(ch: str) -> bool:
    code = ord(ch)
    return not (code < 0x20 or 0x7F <= code < 0xA0 or 0xD800 <= code < 0xE000 or ch == "\\")


def is_valid_key(key: str) -> bool:
    """Whether C-KEY-1 allows ``key``: non-empty segments, no ``.``/``..``, no control
    character, backslash or lone surrogate, segments up to 200 and keys up to 1024 bytes."""
    if not key or not all(_allowed_character(ch) for ch in key) or _bytes(key) > MAX_KEY_BYTES:
        return False
    return all(part not in ("", ".", "..") and _bytes(part) <= MAX_SEGMENT_BYTES
               for part in key.split("/"))


def is_valid_prefix(prefix: str) -> bool:
    """Whether ``list(prefix)`` is allowed: ``""``, or a valid key with at most one ``/`` after."""
    return prefix == "" or is_valid_key(prefix[:-1] if prefix.endswith("/") else prefix)


# -- keys ------------------------------------------------------------------------------------


@st.composite
def segments(draw: st.DrawFn, *, max_bytes: int = MAX_SEGMENT_BYTES,
             classes: Sequence[str] | None = None) -> str:
    """One segment: characters of every class at any position, from one character up to
    ``max_bytes`` UTF-8 bytes, often exactly at the limit or one character short of it."""
    alphabet = key_characters(classes)
    chars = draw(st.lists(alphabet, min_size=1, max_size=6))
    text = "".join(chars)
    while _bytes(text) > max_bytes:
        text = text[:-1] or draw(characters_of("ascii_lower"))
    if draw(st.integers(0, 5)) == 0:  # long: fill to the limit, the drawn text anywhere in it
        fill = draw(characters_of(draw(st.sampled_from(["ascii_lower", "cjk", "latin1"]))))
        target = draw(st.sampled_from([max_bytes, max_bytes - 1, max_bytes // 2]))
        room = max(0, target - _bytes(text)) // _bytes(fill)
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
    if draw(st.integers(0, 30)) == 0:  # the deepest: one-byte segments up to the limit
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
        used += 1 + _bytes(part)
    return "/".join(parts)


# -- lossy treatments: functions that merge distinct keys ------------------------------------


def _per_segment(treat: Callable[[str], str]) -> Callable[[str], str]:
    return lambda key: "/".join(treat(part) for part in key.split("/"))


def _fold_marks(text: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKD", text)
                   if not unicodedata.combining(ch))


def _to_fullwidth(text: str) -> str:
    return "".join(chr(ord(ch) + 0xFEE0) if 0x21 <= ord(ch) <= 0x7E and ch != "/" else ch
                   for ch in text)


#: ``{name: (collapse, twin)}``: ``collapse`` is what a lossy layer does to a key; ``twin``
#: proposes, from a key, another key that ``collapse`` maps to the same text.
LOSSY_TREATMENTS: Mapping[str, tuple[Callable[[str], str], Callable[[str], str]]] = (
    MappingProxyType({
        "casefold": (str.casefold, str.swapcase),
        "upper": (str.upper, str.lower),
        "nfc": (lambda k: unicodedata.normalize("NFC", k),
                lambda k: unicodedata.normalize("NFD", k)),
        "nfd": (lambda k: unicodedata.normalize("NFD", k),
                lambda k: unicodedata.normalize("NFC", k)),
        "nfkc": (lambda k: unicodedata.normalize("NFKC", k), _to_fullwidth),
        "strip": (_per_segment(str.strip), _per_segment(lambda s: f" {s}\u3000")),
        "percent_decode": (unquote, _per_segment(lambda s: quote(s, safe=""))),
        "plus_as_space": (unquote_plus, lambda k: k.replace(" ", "+")),
        "fold_marks": (_fold_marks, lambda k: unicodedata.normalize("NFD", k) + "\u0301"),
        "drop_format": (lambda k: "".join(c for c in k if unicodedata.category(c) != "Cf"),
                        _per_segment(lambda s: s + "\u200b")),
    })
)


def lossy_twin(key: str, treatment: str) -> str | None:
    """A valid key, not ``key``, that ``treatment`` merges with ``key``; ``None`` if the
    treatment leaves nothing of ``key`` to merge."""
    collapse, twin_of = LOSSY_TREATMENTS[treatment]
    twin = twin_of(key)
    if twin == key or not is_valid_key(twin) or collapse(twin) != collapse(key):
        return None
    return twin


# -- list prefixes -----------------------------------------------------------------------------


def cut_prefix(key: str, cut: int, *, slash: bool, bare: bool = True) -> str:
    """The prefix of ``key`` cut after ``cut`` characters (modulo its length), with a
    trailing ``/`` when ``slash``; with ``bare=False`` the cut moves to the end of its
    segment and always ends in ``/``. ``""`` when the cut leaves no valid prefix."""
    end = cut % (len(key) + 1)
    if not bare:
        boundary = key.find("/", end)
        end = len(key) if boundary < 0 else boundary
        slash = True
    candidate = key[:end]
    if candidate and slash and not candidate.endswith("/"):
        candidate += "/"
    if not bare and candidate and not candidate.endswith("/"):
        return ""
    return candidate if is_valid_prefix(candidate) else ""


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


def values(*, max_size: int = LARGE_VALUE_BYTES, large: bool = True) -> st.SearchStrategy[bytes]:
    """A value: empty, every byte 0-255, line endings in every form, NUL, invalid UTF-8,
    short binary, and (with ``large``) sizes at ``max_size`` and just under it."""
    small = st.one_of(st.just(b""), st.binary(min_size=1, max_size=8), _text_like(),
                      _every_byte())
    if not large:
        return small
    # One value in sixteen is large: enough to meet the limit in most runs, few enough that
    # a slow backend spends its time on the other calls.
    return st.integers(0, 15).flatmap(lambda pick: _large(max_size) if pick == 0 else small)
