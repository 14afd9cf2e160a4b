"""Input coverage counted from recorded calls: each cell a call reaches, and none it does not."""

from __future__ import annotations

from collections import Counter

from dw_testing.history import Operation
from dw_testing.judge.coverage import (
    CELLS,
    PAGE_KEYS,
    TRAFFIC_CELLS,
    cell_id,
    cell_of,
    count,
    key_cells,
    value_cells,
    wanted,
)
from dw_testing.judge.coverage_table import InputCoverage, row_of
from dw_testing.judge.recording import ListCall, TrialLog


def test_value_bytes_are_classed_at_the_first_middle_and_last_position() -> None:
    cells = value_cells(b"\xffab\x00cd\n")
    assert ("value byte", "0xFF", "first") in cells
    assert ("value byte", "NUL", "middle") in cells  # index len // 2
    assert ("value byte", "LF", "last") in cells
    assert ("value form", "UTF-8", "is not") in cells
    assert ("value form", "JSON", "is") in value_cells(b'{"a": 1}')
    assert ("value form", "text lines", "is") in value_cells(b"one\ntwo\n")
    assert ("value form", "text lines", "is not") in value_cells(b"one\ntwo")


def test_key_characters_are_placed_in_the_key_and_in_their_segment() -> None:
    cells = key_cells("%a%b/%c%")
    for position in ("key first", "middle", "segment first", "key last"):
        assert ("key character", "%", position) in cells
    assert ("key character", "%", "segment last") not in cells
    assert ("key character", "%", "segment last") in key_cells("a%/b")
    assert not key_cells("plain/key")


def test_keys_at_and_past_the_limits_are_classed_by_their_widest_character() -> None:
    assert ("key length", "2-byte", "segment of 200") in key_cells("a/" + "\u00e9" * 100)
    assert ("key length", "4-byte", "segment of 201+") in key_cells("a" + "\U0001f600" * 50)
    assert ("key length", "1-byte", "key of 1024") in key_cells(
        "/".join(["k" * 200] * 5 + ["k" * 19]))


def _log() -> TrialLog:
    ticks = iter(range(1, 10_000))
    return TrialLog(clock=lambda: next(ticks))


def test_a_list_between_another_handles_writes_and_a_read_after_reopen_are_counted() -> None:
    log = _log()
    log.opened += [("h1", 0), ("h2", 0), ("h3", 50)]
    log.ops += [Operation("h2", "put", "p/a", b"1", None, 1, 2),
                Operation("h2", "delete", "p/b", None, None, 5, 6),
                Operation("h3", "get", "p/a", None, b"1", 60, 61)]
    log.lists.append(ListCall("h1", "p/", ("p/a",), 3, 4))
    log.closed.append(("h2", 40))
    found = count(log)
    assert found[TRAFFIC_CELLS[0]] == 1 and found[TRAFFIC_CELLS[1]] == 1
    assert found[TRAFFIC_CELLS[2]] == 1
    alone = _log()
    alone.ops.append(Operation("h2", "put", "p/a", b"1", None, 1, 2))
    alone.lists.append(ListCall("h1", "p/", ("p/a",), 3, 4))  # nothing after it
    assert not count(alone)[TRAFFIC_CELLS[0]]


def test_a_list_past_two_pages_by_count_and_bytes_is_counted() -> None:
    log = _log()
    keys = tuple(f"many/{n:05d}/{'k' * 600}" for n in range(PAGE_KEYS + 1))
    log.ops += [Operation("h1", "put", key, b"v" * 600, None, 1, 2) for key in keys]
    log.lists.append(ListCall("h1", "many/", keys, 3, 4))
    found = count(log)
    assert found[("list", "keys", f"over {PAGE_KEYS} in one answer")] == 1
    assert found[("list", "bytes of keys and values", "over 1 MiB in one answer")] == 1
    few = _log()
    few.ops.append(Operation("h1", "put", "p/a", b"v" * 100, None, 1, 2))
    few.lists.append(ListCall("h1", "p/", ("p/a",), 3, 4))
    assert not [cell for cell in count(few) if cell[0] == "list"]


def test_the_table_sums_tests_and_leaves_out_cells_a_store_is_not_asked() -> None:
    table = InputCoverage()
    counts = Counter({("value byte", "0xFF", "first"): 2})
    table.add("s", row_of(counts, {"cross_handle": False}))
    table.add("s", row_of(counts, {"cross_handle": False}))
    section = table.to_json()["s"]
    assert section["cells"][cell_id(("value byte", "0xFF", "first"))] == 4
    assert cell_id(TRAFFIC_CELLS[0]) in section["not_asked"]
    assert len(section["empty"]) == len(wanted({})) - 1
    assert all(cell_of(cell_id(c)) == c for c in CELLS)
    assert table.lines()[0].startswith(f"s: 1 of {len(wanted({}))} cells reached")
