"""Hints that name the likely cause of a wrong value or a short list from its bytes.

A value whose bytes were decoded as text and encoded again carries U+FFFD (``EF BF BD``)
where an invalid sequence was; a range scan that ends at ``prefix + "\\uffff"`` drops keys
whose next character lies above U+FFFF. Each hint says so in one sentence.
"""

from __future__ import annotations

from collections.abc import Iterable

REPLACEMENT = "\ufffd".encode()  # EF BF BD
_TOP_OF_BMP = 0xFFFF


def value_hint(got: bytes, wanted: bytes, index: int) -> str:
    """A hint for a value that differs from ``wanted`` from byte ``index`` on, or ``""``."""
    if REPLACEMENT in got[max(index - 2, 0):index + 3] and REPLACEMENT not in wanted:
        return (" (EF BF BD is U+FFFD, the replacement character: were the bytes decoded as "
                "text? Store them as bytes, a Uint8Array, never through a string)")
    if got.replace(b"\r\n", b"\n") == wanted.replace(b"\r\n", b"\n"):
        return " (only line endings differ: was the value written or read in text mode?)"
    if len(got) < len(wanted) and wanted.startswith(got):
        return (f" (the stored value is cut after {len(got)} bytes: a size limit, or a read "
                "that stops at the first chunk or NUL?)")
    return ""


def missing_keys_hint(missing: Iterable[str]) -> str:
    """A hint for keys a ``list`` left out, or ``""``."""
    astral = [key for key in missing if any(ord(ch) > _TOP_OF_BMP for ch in key)]
    if astral:
        return (f" ({astral[0]!r} holds a character above U+FFFF: a range scan that ends at "
                "the prefix plus \\uffff drops every key past it; end the range at the "
                "prefix's successor instead)")
    return ""
