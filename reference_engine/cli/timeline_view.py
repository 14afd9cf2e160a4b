"""``dw show RUN --timeline``: a run's timeline as text, one row per mark, one column per lane.

Time runs down the page. A lane column shows where a span (the run, a claim, a wait)
opens and closes, and a bar while it stays open, so overlaps read at a glance: a wait
still open while a second claim resumes the run, a deadline that fell after the signal
won. Box-drawing characters when the output encoding can show them, plain ASCII otherwise.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass

from reference_engine.records.decoding import iso
from reference_engine.runs.timeline import CLOSE, LOST, OPEN, POINT, WON, Mark, RunTimeline

PIPE_WIDTH = 160  # off a terminal; the same width the other dw tables assume
MIN_TEXT = 24  # the text column never shrinks below this, however narrow the terminal


@dataclass(frozen=True)
class Glyphs:
    shapes: dict[str, str]
    through: str  # a span that stays open across this row
    rule: str
    ellipsis: str


BOX = Glyphs({OPEN: "┬", CLOSE: "┴", POINT: "●", WON: "◆", LOST: "◇"}, "│", "─", "…")
ASCII = Glyphs({OPEN: "+", CLOSE: "-", POINT: "*", WON: "#", LOST: "x"}, "|", "-", "...")


def glyphs_for(encoding: str | None) -> Glyphs:
    """Box drawing when ``encoding`` can write every glyph, else ASCII."""
    sample = "".join([*BOX.shapes.values(), BOX.through, BOX.rule, BOX.ellipsis])
    try:
        sample.encode(encoding or "ascii")
    except (LookupError, UnicodeEncodeError):
        return ASCII
    return BOX


def terminal_width() -> int:
    return shutil.get_terminal_size((PIPE_WIDTH, 24)).columns


def _times(marks: Sequence[Mark]) -> tuple[list[str], str]:
    """Each mark's time, and the one UTC date they share ("" when they span days)."""
    full = [iso(m.at) for m in marks]
    dates = {text[:10] for text in full}
    if len(dates) == 1:
        return [text[11:-1] for text in full], next(iter(dates))
    return full, ""


def _lane_label(index: int) -> str:
    return "123456789abcdefghijklmnopqrstuvwxyz"[index] if index < 35 else "+"


def _clip(text: str, width: int, glyphs: Glyphs) -> str:
    if len(text) <= width:
        return text
    return text[: max(0, width - len(glyphs.ellipsis))] + glyphs.ellipsis


def render_timeline(timeline: RunTimeline, *, glyphs: Glyphs = BOX,
                    width: int = PIPE_WIDTH) -> list[str]:
    """The timeline as lines of text, each at most ``width`` characters (text is clipped)."""
    lanes = [lane.key for lane in timeline.lanes]
    times, date = _times(timeline.marks)
    when = f"times UTC on {date}" if date else "times UTC"
    lines = [f"run {timeline.run_id} ({timeline.workflow}): {timeline.status}, "
             f"{len(timeline.marks)} events on {len(lanes)} lanes, {when}"]
    legend = "  ".join(f"{_lane_label(i)} {lane.title}" for i, lane in enumerate(timeline.lanes))
    lines.append(f"lanes: {legend}")
    if timeline.missing_revisions:
        lines.append(f"note: {timeline.missing_revisions} older revision(s) were pruned or "
                     "unreadable; events they added alone are not shown")
    time_width = max([4, *(len(t) for t in times)])
    graph_width = 2 * len(lanes)
    text_width = max(MIN_TEXT, width - time_width - graph_width - 3)
    header = " ".join(_lane_label(i) for i in range(len(lanes)))
    lines.append("")
    lines.append(f"{'time':<{time_width}}  {header:<{graph_width}} what")
    rule_at = len(lines)
    open_spans: set[str] = set()
    for mark, time_text in zip(timeline.marks, times, strict=True):
        cells = []
        for lane in lanes:
            if lane == mark.lane:
                cells.append(glyphs.shapes[mark.shape])
            else:
                cells.append(glyphs.through if lane in open_spans else " ")
        if mark.shape == OPEN:
            open_spans.add(mark.lane)
        elif mark.shape == CLOSE:
            open_spans.discard(mark.lane)
        graph = " ".join(cells)
        text = _clip(mark.text, text_width, glyphs)
        lines.append(f"{time_text:<{time_width}}  {graph:<{graph_width}} {text}".rstrip())
    key = "  ".join(f"{glyphs.shapes[s]} {name}" for s, name in
                    ((OPEN, "opens"), (CLOSE, "closes"), (POINT, "event"), (WON, "won"),
                     (LOST, "lost")))
    rule = glyphs.rule * max(len(line) for line in lines[rule_at - 1:])
    lines.insert(rule_at, rule)
    lines.append(rule)
    lines.append(f"key: {key}  {glyphs.through} open span")
    return lines
