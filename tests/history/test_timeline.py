"""The timeline beside a violation's table: golden drawings of small histories in both
character sets, terminal width and encoding, the window of a long history, and the SVG."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from history_calls import GOLDEN, TORN_READ, create, get

from dw_testing.history import timeline
from dw_testing.history.events import Operation
from dw_testing.history.timeline import (
    DEFAULT_WINDOW,
    MIN_BAR_WIDTH,
    SVG_WINDOW,
    can_draw_boxes,
    cut_window,
    render_svg,
    render_text,
)

GOLDEN_DIR = Path(__file__).parent / "golden"
BOX_CHARS = set("├─┤│┣━┫┃▶→…")
SVG = "{http://www.w3.org/2000/svg}"


@pytest.mark.parametrize("charset", ["box", "ascii"])
@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_timeline_matches_its_golden_drawing(name: str, charset: str) -> None:
    ops, marked = GOLDEN[name]
    drawn = render_text(ops, marked=marked, width=80, ascii=charset == "ascii")
    expected = (GOLDEN_DIR / f"{name}.{charset}.txt").read_text(encoding="utf-8")
    assert drawn + "\n" == expected, (
        f"the {charset} timeline of {name} changed; if the change is meant, rewrite "
        f"tests/history/golden/{name}.{charset}.txt with the drawing above")


def test_ascii_drawing_uses_no_character_outside_ascii() -> None:
    for ops, marked in GOLDEN.values():
        render_text(ops, marked=marked, width=80, ascii=True).encode("ascii")


def test_the_marked_call_is_the_heavy_one() -> None:
    lines = render_text(TORN_READ, marked=[1], width=80, ascii=False).splitlines()
    read = next(line for line in lines if " get " in line)
    losing = next(line for line in lines if "False" in line)
    assert read.startswith("▶") and "┣" in read and "┫" in read
    assert not losing.startswith("▶") and "├" in losing and "━" not in losing


def test_a_call_that_never_returned_runs_to_the_right_edge() -> None:
    ops = [get("B", b"v1", 0, 1), create("A", b"v1", True, 2, None), get("C", None, 3, 4)]
    lines = render_text(ops, width=90, ascii=True).splitlines()
    open_row = next(line for line in lines if "inf]" in line)
    closed = [line for line in lines if "[0, 1]" in line or "[3, 4]" in line]
    assert open_row.endswith(">")
    assert all(len(open_row) > len(line) for line in closed)


@pytest.mark.parametrize("encoding, expected", [("utf-8", True), ("ascii", False),
                                                ("latin-1", False), ("cp437", False)])
def test_box_drawing_follows_the_encoding(encoding: str, expected: bool) -> None:
    assert can_draw_boxes(io.TextIOWrapper(io.BytesIO(), encoding=encoding)) is expected


def test_without_a_choice_the_drawing_follows_stdout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdout", io.TextIOWrapper(io.BytesIO(), encoding="ascii"))
    assert not BOX_CHARS & set(render_text(TORN_READ, marked=[1], width=80))
    monkeypatch.setattr("sys.stdout", io.TextIOWrapper(io.BytesIO(), encoding="utf-8"))
    assert BOX_CHARS & set(render_text(TORN_READ, marked=[1], width=80))


def _table_width(ops: list[Operation]) -> int:
    header = render_text(ops, width=1, ascii=True).splitlines()[0]
    return header.index("timeline")


def test_bars_fill_the_width_and_shrink_no_further_than_the_minimum() -> None:
    table = _table_width(TORN_READ)
    for width in (table + MIN_BAR_WIDTH, table + MIN_BAR_WIDTH + 1, table + 70):
        rows = render_text(TORN_READ, width=width, ascii=True).splitlines()[1:4]
        assert max(len(row) for row in rows) == width
    narrow = render_text(TORN_READ, width=table + MIN_BAR_WIDTH - 1, ascii=True)
    assert max(len(row) for row in narrow.splitlines()[1:4]) == table + MIN_BAR_WIDTH


def test_width_follows_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    table = _table_width(TORN_READ)
    monkeypatch.setenv("COLUMNS", str(table + 50))
    rows = render_text(TORN_READ, ascii=True).splitlines()[1:4]
    assert max(len(row) for row in rows) == table + 50
    rows = render_text(TORN_READ, ascii=True, width=table + 30).splitlines()[1:4]
    assert max(len(row) for row in rows) == table + 30


def _long_history(calls: int) -> list[Operation]:
    return [get(f"p{i % 7}", None, 10 * i, 10 * i + 5) for i in range(calls)]


def _call_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.rstrip().endswith(("|", "#"))]


def test_a_window_of_exactly_the_limit_leaves_nothing_out() -> None:
    text = render_text(_long_history(DEFAULT_WINDOW), width=120, ascii=True)
    assert len(_call_rows(text)) == DEFAULT_WINDOW
    assert "left out" not in text


def test_one_call_past_the_window_is_counted_as_left_out() -> None:
    ops = _long_history(DEFAULT_WINDOW + 1)
    text = render_text(ops, marked=[0], width=120, ascii=True)
    assert len(_call_rows(text)) == DEFAULT_WINDOW
    assert f"1 of {DEFAULT_WINDOW + 1} calls left out (0 earlier, 1 later)" in text


def test_a_long_history_is_cut_to_the_window_around_the_marked_calls() -> None:
    ops = _long_history(10_000)
    marked = [5_000, 5_003]
    text = render_text(ops, marked=marked, width=120, ascii=True)
    rows = _call_rows(text)
    assert len(rows) == DEFAULT_WINDOW
    assert sum(row.startswith("*") for row in rows) == 2
    cut = cut_window(ops, marked)
    assert set(marked) <= set(cut.shown)
    assert cut.left_out_before + cut.left_out_after == 10_000 - DEFAULT_WINDOW
    # The window is centred on the marked calls: as many neighbours before as after.
    assert (marked[0] - cut.shown[0]) - (cut.shown[-1] - marked[1]) in (0, 1)
    assert cut.shown == tuple(range(cut.shown[0], cut.shown[-1] + 1))
    assert (f"{10_000 - DEFAULT_WINDOW:,} of 10,000 calls left out "
            f"({cut.left_out_before:,} earlier, {cut.left_out_after:,} later)") in text


def test_marked_calls_that_are_not_in_ops_are_refused() -> None:
    with pytest.raises(ValueError, match="not indices into the 3 calls"):
        render_text(TORN_READ, marked=[3])
    with pytest.raises(ValueError, match="at least one call"):
        render_text(TORN_READ, window=0)


def _svg(ops: list[Operation], **kwargs: object) -> tuple[str, ET.Element]:
    drawn = render_svg(ops, **kwargs)  # type: ignore[arg-type]
    return drawn, ET.fromstring(drawn)


def _calls(root: ET.Element) -> list[ET.Element]:
    return [g for g in root.iter(f"{SVG}g") if "call" in g.get("class", "").split()]


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_svg_has_one_call_element_per_call_with_hover_text(name: str) -> None:
    ops, marked = GOLDEN[name]
    _, root = _svg(ops, marked=marked)
    calls = _calls(root)
    assert len(calls) == len(ops)
    assert len(list(root.iter(f"{SVG}rect"))) == len(ops)
    assert sorted(int(g.get("data-index", "-1")) for g in calls) == list(range(len(ops)))
    assert {int(g.get("data-index", "-1")) for g in calls
            if "marked" in g.get("class", "").split()} == set(marked)
    for g in calls:
        op = ops[int(g.get("data-index", "-1"))]
        title = g.find(f"{SVG}title")
        assert title is not None and title.text is not None
        assert f"called at stamp {op.call}" in title.text
        assert ("never returned" if op.ret is None else f"returned at stamp {op.ret}") \
            in title.text
        assert op.process in title.text


def test_svg_is_self_contained() -> None:
    drawn, _ = _svg(TORN_READ, marked=[1])
    for outside in ("href", "<script", "<style", "url(", "http://www.w3.org/1999"):
        assert outside not in drawn
    assert drawn.count("http") == 1  # the SVG namespace, nothing fetched


def test_svg_escapes_process_names() -> None:
    ops = [get("<b>&x", None, 0, 1)]
    _, root = _svg(ops)
    assert [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "lane"] == ["<b>&x"]


def test_svg_of_ten_thousand_calls_is_cut_and_says_so() -> None:
    ops = _long_history(10_000)
    drawn, root = _svg(ops, marked=[7_000])
    assert len(_calls(root)) == SVG_WINDOW
    assert len(drawn) < 150_000
    note = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "left-out"]
    assert note and f"{10_000 - SVG_WINDOW:,} of 10,000 calls left out" in (note[0] or "")


def test_svg_window_at_the_limit_and_past_it() -> None:
    _, root = _svg(_long_history(SVG_WINDOW))
    assert len(_calls(root)) == SVG_WINDOW
    assert not [t for t in root.iter(f"{SVG}text") if t.get("class") == "left-out"]
    _, root = _svg(_long_history(SVG_WINDOW + 1))
    assert len(_calls(root)) == SVG_WINDOW
    assert [t for t in root.iter(f"{SVG}text") if t.get("class") == "left-out"]


def test_module_documents_its_public_interface() -> None:
    assert set(timeline.__all__) >= {"render_text", "render_svg", "cut_window"}


def test_without_marked_calls_the_legend_names_no_fault() -> None:
    legend = render_text(TORN_READ, width=80, ascii=True).splitlines()[-1]
    assert "cannot be placed" not in legend and "explains" not in legend
    assert "a call, from its start to its end" in legend
