"""A value that prints as its length, a hash and its first bytes, never whole.

Hypothesis prints every drawn value of a failing example, and pytest prints the operands
of a failed ``assert``: a 1 MiB value would print as a 4 MB bytes literal, and the
contract says a message never quotes a record's bytes. The suite's value strategies yield
:class:`ShownBytes`, which compares, hashes and slices as the bytes it holds.
"""

from __future__ import annotations

import hashlib
from typing import Any

# Values up to this many bytes print whole (they read better than a digest); longer ones
# print this many leading bytes, then the length and the hash.
SHOWN_BYTES = 32


def describe(data: bytes) -> str:
    """``b'ab'`` for a short value; ``<1048576 bytes #1a2b3c4d, starting b'...'>`` else."""
    if len(data) <= SHOWN_BYTES:
        return bytes.__repr__(bytes(data))
    head = bytes.__repr__(bytes(data[:SHOWN_BYTES]))
    return f"<{len(data)} bytes #{hashlib.sha256(data).hexdigest()[:8]}, starting {head}>"


class ShownBytes(bytes):
    """Bytes whose repr (and Hypothesis's pretty form) is :func:`describe`'s."""

    __slots__ = ()

    def __repr__(self) -> str:
        return describe(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(describe(self))
