"""A tiny PNG reader for the browser test: enough to count a screenshot's colours.

Reads 8-bit, non-interlaced truecolour PNGs (RGB or RGBA), which is what Chromium's
``--screenshot`` writes, and undoes the five row filters. Anything else is refused with
the reason, never guessed at.
"""

from __future__ import annotations

import struct
import zlib
from collections import Counter
from dataclasses import dataclass

SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {2: 3, 6: 4}  # colour type -> bytes per pixel at 8 bits


@dataclass(frozen=True)
class Image:
    width: int
    height: int
    channels: int
    rows: tuple[bytes, ...]  # unfiltered, ``width * channels`` bytes each

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        start = x * self.channels
        r, g, b = self.rows[y][start:start + 3]
        return r, g, b

    def colours(self) -> Counter[tuple[int, int, int]]:
        """How many pixels have each RGB colour (alpha ignored)."""
        counts: Counter[tuple[int, int, int]] = Counter()
        step = self.channels
        for row in self.rows:
            for start in range(0, len(row), step):
                counts[(row[start], row[start + 1], row[start + 2])] += 1
        return counts


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def _unfilter(raw: bytes, width: int, height: int, bpp: int) -> tuple[bytes, ...]:
    stride = width * bpp
    rows: list[bytes] = []
    previous = bytearray(stride)
    at = 0
    for _ in range(height):
        kind, line = raw[at], bytearray(raw[at + 1: at + 1 + stride])
        at += 1 + stride
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up = previous[i]
            corner = previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                line[i] = (line[i] + _paeth(left, up, corner)) & 0xFF
            elif kind != 0:
                raise ValueError(f"PNG row filter {kind} is not one of 0-4")
        rows.append(bytes(line))
        previous = line
    return tuple(rows)


def read_png(data: bytes) -> Image:
    if not data.startswith(SIGNATURE):
        raise ValueError("not a PNG file (bad signature)")
    at = len(SIGNATURE)
    header: tuple[int, ...] = ()
    compressed = bytearray()
    while at < len(data):
        (length,) = struct.unpack(">I", data[at:at + 4])
        kind = data[at + 4:at + 8]
        body = data[at + 8:at + 8 + length]
        at += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            compressed += body
        elif kind == b"IEND":
            break
    if not header:
        raise ValueError("PNG without an IHDR chunk")
    width, height, depth, colour, _compression, _filter, interlace = header
    if depth != 8 or colour not in _CHANNELS or interlace:
        raise ValueError(f"PNG depth {depth}, colour type {colour}, interlace {interlace}: "
                         "only 8-bit non-interlaced RGB/RGBA is read here")
    channels = _CHANNELS[colour]
    rows = _unfilter(zlib.decompress(bytes(compressed)), width, height, channels)
    return Image(width, height, channels, rows)
