"""C-VAL-1 over the byte classes: values whose first, a middle and last byte take every class.

A store that decodes values as text, trims line ends or whitespace, stops at NUL or escapes
quotes breaks on a byte of one class at one position; a value ending in a given byte is drawn
only on some seeds by the generic strategies. This test fills the grid (class x position,
the classes of the input-coverage table, :mod:`dw_testing.judge.coverage`) every run, with
the byte in each class drawn from the run's seed, and also writes values that are and are
not valid UTF-8, JSON and text lines. Each value is written, read back and
listed on a second handle; the judge checks every answer as well.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from dw_testing.history.labels import digest
from dw_testing.judge.coverage import BYTE_CLASSES, VALUE_POSITIONS
from dw_testing.plugin.profiles import rng

pytestmark = [pytest.mark.dw_store_contract, pytest.mark.dw_clause("C-VAL-1", "C-GET-1")]

BODY = b"body-of-the-value"
WHOLE_VALUES: dict[str, bytes] = {
    "valid-utf8-text": "çé €😀\n".encode(),
    "json": json.dumps({"k": [1, "two", None]}).encode(),
    "text-lines-crlf": b"one\r\ntwo\r\n",
    "text-without-final-newline": b"one\ntwo",
    "only-whitespace": b" \t\r\n ",
    "not-utf8": bytes(range(0x80, 0x100)),
}


def _placed(byte: int, position: str) -> bytes:
    """``BODY`` with ``byte`` first, last, or at the middle index ``len // 2``."""
    if position == "first":
        return bytes([byte]) + BODY
    if position == "last":
        return BODY + bytes([byte])
    middle = (len(BODY) + 1) // 2
    return BODY[:middle] + bytes([byte]) + BODY[middle:]


def _grid() -> dict[str, bytes]:
    draw = rng("value-classes")
    values = {f"{_slug(name)}/{position}": _placed(draw.choice(members), position)
              for name, members in BYTE_CLASSES.items() for position in VALUE_POSITIONS}
    values.update({f"whole/{name}": value for name, value in WHOLE_VALUES.items()})
    return values


def _slug(name: str) -> str:
    return name.replace(" ", "-")


def test_values_of_every_byte_class_at_every_position_read_back_byte_for_byte(
    dw_store: Any, dw_open_handle: Callable[[], Any], dw_caps: dict[str, bool],
) -> None:
    values = _grid()
    for name, value in values.items():
        dw_store.put(f"values/{name}", value)
    # Read back on another handle where handles share the store; else on the writer.
    other = dw_open_handle() if dw_caps["cross_handle"] else dw_store
    wrong = []
    for name, value in values.items():
        got = other.get(f"values/{name}")
        if got != value:
            shown = "None" if got is None else digest(bytes(got))
            wrong.append(f"{name}: got {shown}, expected {digest(value)}")
    assert not wrong, (f"C-VAL-1: {len(wrong)} of {len(values)} values read back changed: "
                       + "; ".join(wrong) + ". Store the bytes unchanged: no text decoding, "
                       "no trimming, no escaping")
    listed = sorted(other.list("values/"))
    expected = sorted(f"values/{name}" for name in values)
    assert listed == expected, (
        f"C-LIST-3: list('values/') answered {len(listed)} keys; expected the "
        f"{len(expected)} written ({sorted(set(expected) - set(listed))[:3]} missing)")
