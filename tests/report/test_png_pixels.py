"""The browser test's tiny PNG reader: every row filter, and refusals for what it cannot read."""

from __future__ import annotations

import struct
import zlib

import pytest
from png_pixels import SIGNATURE, read_png


def chunk(kind: bytes, body: bytes) -> bytes:
    return (struct.pack(">I", len(body)) + kind + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def encode(rows: list[bytes], width: int, channels: int, filters: list[int],
           *, depth: int = 8, interlace: int = 0) -> bytes:
    """A PNG whose row ``i`` is filtered with ``filters[i]`` (the encoder side of each filter)."""
    raw = bytearray()
    previous = bytes(len(rows[0]))
    for row, kind in zip(rows, filters, strict=True):
        out = bytearray()
        for i, value in enumerate(row):
            left = row[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            predictor = (0, left, up, (left + up) // 2, _paeth(left, up, corner))[kind]
            out.append((value - predictor) & 0xFF)
        raw += bytes([kind]) + out
        previous = row
    colour = {3: 2, 4: 6}[channels]
    header = struct.pack(">IIBBBBB", width, len(rows), depth, colour, 0, 0, interlace)
    return (SIGNATURE + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(bytes(raw)))
            + chunk(b"IEND", b""))


ROWS = [bytes([10, 20, 30, 200, 100, 50, 255, 255, 255]),
        bytes([11, 22, 33, 190, 110, 40, 0, 0, 0]),
        bytes([12, 24, 36, 180, 120, 30, 1, 2, 3]),
        bytes([13, 26, 39, 170, 130, 20, 250, 0, 5]),
        bytes([14, 28, 42, 160, 140, 10, 9, 9, 9])]


def test_every_row_filter_reads_back_the_pixels() -> None:
    image = read_png(encode(ROWS, 3, 3, [0, 1, 2, 3, 4]))
    assert (image.width, image.height) == (3, 5)
    assert list(image.rows) == ROWS
    assert image.pixel(1, 0) == (200, 100, 50)
    assert len(image.colours()) == 15


def test_alpha_is_ignored_when_counting_colours() -> None:
    rows = [bytes([5, 5, 5, 0, 5, 5, 5, 255])]
    assert read_png(encode(rows, 2, 4, [1])).colours() == {(5, 5, 5): 2}


@pytest.mark.parametrize(("data", "reason"), [
    (b"GIF89a", "signature"),
    (encode(ROWS[:1], 3, 3, [0], depth=16), "only 8-bit"),
    (encode(ROWS[:1], 3, 3, [0], interlace=1), "only 8-bit non-interlaced"),
])
def test_what_it_cannot_read_is_refused(data: bytes, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        read_png(data)
