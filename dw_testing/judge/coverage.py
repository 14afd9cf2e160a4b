"""Input coverage: which corners of the input space a test's store calls reached.

The judge records every call (:mod:`.recording`); this module sorts those calls into cells,
``(dimension, class, position)``, and counts the calls in each. The cells are fixed and
known up front (:data:`CELLS`), so an empty one shows: a store run that never wrote a value
starting with 0xFF, or never listed a prefix past two backend pages, says so in its report.

The classes are the ones a layer between the store and its backend treats differently:

- *value byte*: the first, the middle (index ``len // 2``) and the last byte of each value
  written, in classes a text, line or C-string layer reads (NUL, line ends, controls, UTF-8
  lead and continuation bytes, bytes no UTF-8 holds, 0xFF alone);
- *value form*: whole values that are and are not UTF-8, JSON, text lines;
- *key character*: each character that means something to a URL, a percent-encoding, a
  path or a shell, at the first character of the key, of a segment, inside one, at the last
  of a segment and of the key, in every key a call named;
- *key length*: segments and keys at their byte limits (200, 1024) and one past, by the
  widest UTF-8 character they hold;
- *list*: one answer past two backend pages by count, and past a page by size (the bytes
  of the listed keys and of their values, as DynamoDB counts a Query page);
- *traffic*: lists beside another handle's writes and deletes under the prefix (overlapping
  one, or between two of them), and reads on a handle opened after the writer's handle was
  closed.

Cells that need a capability a store does not declare (:data:`NEEDS`) are not asked of it.
"""

from __future__ import annotations

import bisect
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from dw_testing.history import Operation
from dw_testing.judge.recording import ListCall, TrialLog
from dw_testing.kit.key_grammar import MAX_KEY_BYTES, MAX_SEGMENT_BYTES

Cell = tuple[str, str, str]

# -- value bytes -------------------------------------------------------------------------------

#: Byte classes of a value, each an inclusive set of byte values; together they cover 0-255.
BYTE_CLASSES: Mapping[str, tuple[int, ...]] = {
    "NUL": (0x00,),
    "C0 control": (*range(0x01, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20)),
    "tab": (0x09,),
    "LF": (0x0A,),
    "CR": (0x0D,),
    "space": (0x20,),
    "ASCII letter or digit": tuple(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                   b"abcdefghijklmnopqrstuvwxyz"),
    "ASCII punctuation": tuple(b"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
    "DEL": (0x7F,),
    "UTF-8 continuation": tuple(range(0x80, 0xC0)),
    "UTF-8 lead of 2": tuple(range(0xC2, 0xE0)),
    "UTF-8 lead of 3": tuple(range(0xE0, 0xF0)),
    "UTF-8 lead of 4": tuple(range(0xF0, 0xF5)),
    "never in UTF-8": (0xC0, 0xC1, *range(0xF5, 0xFF)),
    "0xFF": (0xFF,),
}
VALUE_POSITIONS = ("first", "middle", "last")
_CLASS_OF_BYTE: tuple[str, ...] = tuple(
    next(name for name, members in BYTE_CLASSES.items() if byte in members)
    for byte in range(256))

VALUE_FORMS = ("UTF-8", "JSON", "text lines")
FORM_POSITIONS = ("is", "is not")

# -- key characters ------------------------------------------------------------------------

#: Characters a URL, a percent-encoding, a path or a shell gives a meaning to, all inside the
#: grammar of C-KEY-1 (backslash and controls are refused shapes, tested as such).
KEY_MEANINGFUL_CHARS = "%+?#&=;:@!$'()*,[]{}~`\"<>|^ ."
KEY_POSITIONS = ("key first", "segment first", "middle", "segment last", "key last")
_MEANINGFUL = re.compile("[" + re.escape(KEY_MEANINGFUL_CHARS) + "]")


def special_name(ch: str) -> str:
    return "space" if ch == " " else ch


# -- key lengths ---------------------------------------------------------------------------

WIDTHS = ("1-byte", "2-byte", "3-byte", "4-byte")
LENGTH_POSITIONS = (f"segment of {MAX_SEGMENT_BYTES}", f"key of {MAX_KEY_BYTES}",
                    f"segment of {MAX_SEGMENT_BYTES + 1}+", f"key of {MAX_KEY_BYTES + 1}+")

# -- lists and traffic ---------------------------------------------------------------------

#: Two pages of S3 ListObjectsV2 or GCS objects.list; 1 MiB is a DynamoDB Query page.
PAGE_KEYS = 2000
PAGE_BYTES = 1 << 20
LIST_CELLS: tuple[Cell, ...] = (
    ("list", "keys", f"over {PAGE_KEYS} in one answer"),
    ("list", "bytes of keys and values", "over 1 MiB in one answer"),
)
TRAFFIC_CELLS: tuple[Cell, ...] = (
    ("traffic", "write on another handle", "beside a list"),
    ("traffic", "delete on another handle", "beside a list"),
    ("traffic", "read on a new handle", "after the writer's handle closed"),
)


def _cells() -> tuple[Cell, ...]:
    found: list[Cell] = []
    found += [("value byte", name, pos) for name in BYTE_CLASSES for pos in VALUE_POSITIONS]
    found += [("value form", form, pos) for form in VALUE_FORMS for pos in FORM_POSITIONS]
    found += [("key character", special_name(ch), pos) for ch in KEY_MEANINGFUL_CHARS
              for pos in KEY_POSITIONS]
    found += [("key length", width, pos) for pos in LENGTH_POSITIONS for width in WIDTHS]
    return (*found, *LIST_CELLS, *TRAFFIC_CELLS)


#: Every cell, in the table's order.
CELLS: tuple[Cell, ...] = _cells()

#: The capability a cell needs: a store that does not declare it is not asked to fill it.
NEEDS: Mapping[Cell, str] = {
    **{("key length", w, pos): "refuses_bad_keys" for w in WIDTHS
       for pos in LENGTH_POSITIONS[2:]},
    **{cell: "cross_handle" for cell in TRAFFIC_CELLS},
}


def cell_id(cell: Cell) -> str:
    """The cell as one string (the report's JSON key): ``dimension / class / position``."""
    return " / ".join(cell)


def cell_of(text: str) -> Cell:
    dimension, name, position = text.split(" / ", 2)
    return dimension, name, position


def wanted(capabilities: Mapping[str, bool]) -> list[Cell]:
    """The cells a store with ``capabilities`` is asked to fill."""
    return [c for c in CELLS if c not in NEEDS or capabilities.get(NEEDS[c], False)]


# -- counting ------------------------------------------------------------------------------


def count(log: TrialLog) -> Counter[Cell]:
    """The calls of one test's ``log`` in each cell (cells with no call are left out)."""
    found: Counter[Cell] = Counter()
    writes = [op for op in log.ops if op.op in ("put", "put_if_absent")]
    for op in writes:
        if op.value is not None:
            found.update(value_cells(op.value))
    for op in log.ops:
        found.update(key_cells(op.key))
    found.update(_list_cells(log.lists, writes))
    found.update(_traffic_cells(log))
    return found


def value_cells(value: bytes) -> set[Cell]:
    """The cells one written value falls in."""
    cells: set[Cell] = set()
    if value:
        cells.add(("value byte", _CLASS_OF_BYTE[value[0]], "first"))
        cells.add(("value byte", _CLASS_OF_BYTE[value[-1]], "last"))
    if len(value) >= 3:
        cells.add(("value byte", _CLASS_OF_BYTE[value[len(value) // 2]], "middle"))
    text: str | None
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    cells.add(("value form", "UTF-8", "is" if text is not None else "is not"))
    cells.add(("value form", "JSON", "is" if text is not None and _is_json(text) else "is not"))
    lines = text is not None and text.endswith("\n") and "\x00" not in text
    cells.add(("value form", "text lines", "is" if lines else "is not"))
    return cells


def _is_json(text: str) -> bool:
    if not text or text[0] not in '{["-0123456789tfn \t\r\n':
        return False  # most values: no JSON document starts so
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def key_cells(key: str) -> set[Cell]:
    """The cells one key named by a call falls in."""
    cells: set[Cell] = set()
    if not isinstance(key, str):
        return cells  # a test of the store's refusals: the key is no input of the grammar
    for match in _MEANINGFUL.finditer(key):
        cells.update(("key character", special_name(match.group()), pos)
                     for pos in _positions(key, match.start()))
    encoded = len(key.encode("utf-8", "surrogatepass"))
    if encoded == MAX_KEY_BYTES:
        cells.add(("key length", _width(key), LENGTH_POSITIONS[1]))
    elif encoded > MAX_KEY_BYTES:
        cells.add(("key length", _width(key), LENGTH_POSITIONS[3]))
    if encoded >= MAX_SEGMENT_BYTES:
        for segment in key.split("/"):
            size = len(segment.encode("utf-8", "surrogatepass"))
            if size == MAX_SEGMENT_BYTES:
                cells.add(("key length", _width(segment), LENGTH_POSITIONS[0]))
            elif size > MAX_SEGMENT_BYTES:
                cells.add(("key length", _width(segment), LENGTH_POSITIONS[2]))
    return cells


def _positions(key: str, index: int) -> list[str]:
    found = []
    first_of_segment = index == 0 or key[index - 1] == "/"
    last_of_segment = index == len(key) - 1 or key[index + 1] == "/"
    if index == 0:
        found.append("key first")
    elif first_of_segment:
        found.append("segment first")
    if index == len(key) - 1:
        found.append("key last")
    elif last_of_segment:
        found.append("segment last")
    if not first_of_segment and not last_of_segment:
        found.append("middle")
    return found


_FOUR_BYTES = re.compile("[\U00010000-\U0010ffff]")
_THREE_BYTES = re.compile("[\u0800-\uffff]")


def _width(text: str) -> str:
    """The UTF-8 width of the widest character of ``text``."""
    if text.isascii():
        return WIDTHS[0]
    if _FOUR_BYTES.search(text):
        return WIDTHS[3]
    return WIDTHS[2] if _THREE_BYTES.search(text) else WIDTHS[1]


def _list_cells(lists: Sequence[ListCall], writes: Sequence[Operation]) -> Counter[Cell]:
    found: Counter[Cell] = Counter()
    answered = [c for c in lists if c.keys is not None and c.ret is not None]
    if not answered:
        return found
    done = sorted((op for op in writes if op.ret is not None), key=lambda op: op.ret or 0)
    written = sum(len(op.value or b"") for op in done)
    for call in answered:
        keys = call.keys or ()
        if len(keys) > PAGE_KEYS:
            found[LIST_CELLS[0]] += 1
        # Four bytes a character at most: most answers are ruled out without encoding them.
        if written + 4 * sum(len(k) for k in keys) <= PAGE_BYTES:
            continue
        names = sum(len(k.encode("utf-8", "surrogatepass")) for k in keys)
        if names + _listed_value_bytes(keys, call, done) > PAGE_BYTES:
            found[LIST_CELLS[1]] += 1
    return found


def _listed_value_bytes(keys: Iterable[str], call: ListCall,
                        done: Sequence[Operation]) -> int:
    """The bytes of the values last written to the listed keys before the list began."""
    latest: dict[str, int] = {}
    for op in done:
        if (op.ret or 0) >= call.call:
            break
        latest[op.key] = len(op.value or b"")
    return sum(latest.get(key, 0) for key in keys)


def _traffic_cells(log: TrialLog) -> Counter[Cell]:
    found: Counter[Cell] = Counter()
    changes = sorted((op for op in log.ops if op.op in ("put", "put_if_absent", "delete")
                      and isinstance(op.key, str)), key=lambda op: op.call)
    starts = [op.call for op in changes]
    for call in log.lists:
        if isinstance(call.prefix, str):
            found.update(_beside(call, changes, starts))
    reads = _reads_after_reopen(log)
    if reads:
        found[TRAFFIC_CELLS[2]] += reads
    return found


# How many changes on either side of a list are looked at: enough for two writers taking
# turns with a lister, few enough that a test of thousands of calls is counted at once.
_NEAR = 8


def _beside(call: ListCall, changes: Sequence[Operation], starts: Sequence[int]) -> set[Cell]:
    """The kinds of other handles' changes under the list's prefix that ran beside it: those
    that overlapped it, else the last before and the first after it, made by one handle."""
    end = call.ret if call.ret is not None else float("inf")
    cut = bisect.bisect_left(starts, end)  # changes[:cut] began before the list ended
    near = [op for op in changes[max(0, cut - _NEAR):cut + _NEAR]
            if op.process != call.handle and op.key.startswith(call.prefix)]
    before = [op for op in near if op.call < end]
    overlapping = [op for op in before if op.ret is None or op.ret > call.call]
    if not overlapping:
        after = {op.process: op for op in reversed(near) if op.call >= end}
        last = before[-1] if before else None
        overlapping = [last, after[last.process]] if last and last.process in after else []
    return {TRAFFIC_CELLS[1] if op.op == "delete" else TRAFFIC_CELLS[0] for op in overlapping}


def _reads_after_reopen(log: TrialLog) -> int:
    """Gets on a handle opened after the handle that last wrote the key had closed."""
    opened = dict(log.opened)
    closed = dict(log.closed)
    writer: dict[str, Operation] = {}
    reads = 0
    for op in sorted(log.ops, key=lambda op: op.call):
        if op.op != "get":
            if op.ret is not None:
                writer[op.key] = op
            continue
        last = writer.get(op.key)
        if last is None or last.process == op.process or last.process not in closed:
            continue
        if closed[last.process] <= opened.get(op.process, -1) and (last.ret or 0) < op.call:
            reads += 1
    return reads
