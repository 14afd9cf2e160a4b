"""The key grammar of C-KEY-1, written out on its own: character classes, validity, and
the lossy treatments of text that merge distinct keys.

The model (:mod:`dw_testing.models`) and the generated mutants judge stores with it, so it
shares no code with any store. No Hypothesis here: strategies over it are in
:mod:`dw_testing.strategies`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping
from types import MappingProxyType
from urllib.parse import quote, unquote, unquote_plus

MAX_SEGMENT_BYTES = 200
MAX_KEY_BYTES = 1024


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


def in_class(ch: str, name: str) -> bool:
    """Whether ``ch`` belongs to the class ``name`` of :data:`CHARACTER_CLASSES`."""
    return any(lo <= ord(ch) <= hi for lo, hi in CHARACTER_CLASSES[name])


def utf8_length(text: str) -> int:
    return len(text.encode("utf-8"))


# -- the grammar, written out (C-KEY-1) ------------------------------------------------------


def _allowed_character(ch: str) -> bool:
    code = ord(ch)
    return not (code < 0x20 or 0x7F <= code < 0xA0 or 0xD800 <= code < 0xE000 or ch == "\\")


def is_valid_key(key: str) -> bool:
    """Whether C-KEY-1 allows ``key``: non-empty segments, no ``.``/``..``, no control
    character, backslash or lone surrogate, segments up to 200 and keys up to 1024 bytes."""
    if not key or not all(_allowed_character(ch) for ch in key) or utf8_length(key) > MAX_KEY_BYTES:
        return False
    return all(part not in ("", ".", "..") and utf8_length(part) <= MAX_SEGMENT_BYTES
               for part in key.split("/"))


def is_valid_prefix(prefix: str) -> bool:
    """Whether ``list(prefix)`` is allowed: ``""``, or a valid key with at most one ``/`` after."""
    return prefix == "" or is_valid_key(prefix[:-1] if prefix.endswith("/") else prefix)


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
