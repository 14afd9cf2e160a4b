"""``dw show RUN --timeline``: the race between a signal and a deadline, claims and holders."""

from __future__ import annotations

import json
import re
import uuid
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_helpers import WAIT_FLOW, Invoke

from dw_testing.kit.clock import FakeClock
from reference_engine.cli.timeline_view import (
    ASCII,
    BOX,
    MIN_TEXT,
    glyphs_for,
    render_timeline,
)
from reference_engine.engine import Engine
from reference_engine.records import keys
from reference_engine.records.run_store import revision_numbers
from reference_engine.runs.timeline import LOST, OPEN, WON, Lane, Mark, RunTimeline
from reference_engine.stores.memory import MemoryStore
from reference_engine.workflows.loader import parse_workflow

APPROVE = '{"approved": true}'
TIMEOUT = 3600  # the gate flow's wait timeout


@pytest.fixture
def clock(tmp_path: Path) -> FakeClock:
    return FakeClock(mirror_to=tmp_path / "clock")


@pytest.fixture
def dw(invoke: Invoke, mem_uri: str, clock: FakeClock) -> Invoke:
    # A wide terminal, whatever the test runner's own COLUMNS says: these tests read whole
    # labels; the width tests set their own.
    def run(*args: str) -> Any:
        return invoke([*args, "--store", mem_uri], env={**clock.env, "COLUMNS": "200"})
    return run


def start(dw: Invoke, tmp_path: Path) -> tuple[str, str]:
    flow = tmp_path / "gate.yaml"
    flow.write_text(WAIT_FLOW)
    result = dw("run", str(flow), "--json")
    assert result.exit_code == 3, result.output
    view = json.loads(result.stdout)
    return view["runId"], view["waits"][0]["waitId"]


def rows(output: str) -> list[str]:
    """The timeline rows: the lines between the two rules under the header."""
    lines = output.splitlines()
    rules = [i for i, line in enumerate(lines) if line and set(line) <= {"─", "-"}]
    assert len(rules) == 2, output
    return lines[rules[0] + 1: rules[1]]


def lane_cell(output: str, row: str, title: str) -> str:
    """The glyph a row shows in the lane titled ``title`` (lanes are one char, one apart)."""
    legend = next(line for line in output.splitlines() if line.startswith("lanes: "))
    labels = re.findall(r"(\w) (run|claims|steps|wait \S+)", legend)
    index = [name for _label, name in labels].index(title)
    header = next(line for line in output.splitlines() if line.startswith("time "))
    first = header.index(" 1 ") + 1
    return row[first + 2 * index]


def row_with(lines: list[str], text: str) -> int:
    found = [i for i, line in enumerate(lines) if text in line]
    assert len(found) == 1, f"{text!r} should be on exactly one row of:\n" + "\n".join(lines)
    return found[0]


def test_a_signal_before_the_deadline_wins_and_the_deadline_is_drawn_lost(
        dw: Invoke, clock: FakeClock, tmp_path: Path) -> None:
    run_id, wait_id = start(dw, tmp_path)
    clock.advance(30)
    assert dw("signal", wait_id, "--payload", APPROVE, "--submitted-by", "ann").exit_code == 0
    clock.advance(TIMEOUT)  # the deadline falls while the run still sleeps
    assert dw("resume", run_id).exit_code == 0

    out = dw("show", run_id, "--timeline").stdout
    lines = rows(out)
    opened = row_with(lines, f"wait {wait_id} opened by approve/approval")
    won = row_with(lines, "signal written by ann")
    lost = row_with(lines, "deadline 2026-01-01T01:00:00Z: lost, the signal was written first")
    applied = row_with(lines, "resume applied the signal: approve/approval succeeded")
    assert opened < won < lost < applied
    wait_lane = "wait approve/approval"
    assert lane_cell(out, lines[won], wait_lane) == BOX.shapes[WON]
    assert lane_cell(out, lines[lost], wait_lane) == BOX.shapes[LOST]
    # The wait stays open (a bar) on the rows between its opening and the resume.
    assert lane_cell(out, lines[opened + 1], wait_lane) == BOX.through
    assert "00:00:30" in lines[won] and "01:00:00" in lines[lost]


def test_a_deadline_that_passed_first_wins_and_the_late_signal_is_refused(
        dw: Invoke, clock: FakeClock, tmp_path: Path) -> None:
    run_id, wait_id = start(dw, tmp_path)
    clock.advance(TIMEOUT + 30)
    late = dw("signal", wait_id, "--payload", APPROVE)
    assert late.exit_code == 1 and "expired" in late.output
    clock.advance(60)
    assert dw("resume", run_id).exit_code == 0

    out = dw("show", run_id, "--timeline").stdout
    lines = rows(out)
    deadline = row_with(lines, "deadline 2026-01-01T01:00:00Z passed")
    won = row_with(lines, "timed_out written by the first look after the deadline")
    failed = row_with(lines, "approve/approval failed: wait_timeout")
    assert deadline < won < failed
    assert "01:00:30" in lines[won]  # written by the late signal's own look
    assert lane_cell(out, lines[won], "wait approve/approval") == BOX.shapes[WON]
    assert not any("signal written" in line for line in lines)
    assert "run ended: failed" in lines[-2] or "run ended: failed" in lines[-1]


def test_each_resume_is_a_claim_with_its_holder(dw: Invoke, clock: FakeClock,
                                                tmp_path: Path) -> None:
    run_id, wait_id = start(dw, tmp_path)
    dw("signal", wait_id, "--payload", APPROVE)
    clock.advance(5)
    dw("resume", run_id)
    lines = rows(dw("show", run_id, "--timeline").stdout)
    taken = [line for line in lines if re.search(r"claim g\d taken by \S+ \(pid \d+, holder", line)]
    assert [re.search(r"g\d", line).group() for line in taken] == ["g1", "g2"]  # type: ignore[union-attr]
    assert row_with(lines, "claim g1 released") < row_with(lines, "claim g2 taken")
    assert row_with(lines, "resumed under claim g2") < row_with(lines, "run ended: succeeded")


def test_a_cancel_wins_an_open_wait(dw: Invoke, clock: FakeClock, tmp_path: Path) -> None:
    run_id, _wait_id = start(dw, tmp_path)
    clock.advance(10)
    assert dw("cancel", run_id).exit_code == 0
    lines = rows(dw("show", run_id, "--timeline").stdout)
    assert row_with(lines, "cancel written") < row_with(lines, "lost, the cancel was written")
    row_with(lines, "run ended: cancelled")


def test_the_timeline_as_json(dw: Invoke, clock: FakeClock, tmp_path: Path) -> None:
    run_id, wait_id = start(dw, tmp_path)
    body = json.loads(dw("show", run_id, "--timeline", "--json").stdout)
    assert (body["runId"], body["status"]) == (run_id, "suspended")
    assert [lane["key"] for lane in body["lanes"]] == ["run", "claim", f"wait:{wait_id}"]
    assert {"at", "lane", "shape", "text"} == set(body["marks"][0])
    shapes = [m["shape"] for m in body["marks"] if m["lane"] == f"wait:{wait_id}"]
    assert shapes == [OPEN, "point"]  # opened; deadline ahead, nothing written yet


def test_an_unknown_run_is_refused_with_the_next_command(dw: Invoke) -> None:
    result = dw("show", "no-such-run", "--timeline")
    assert result.exit_code == 1
    assert "No run has the id no-such-run" in result.output and "dw runs" in result.output


# --- the text renderer: character sets and width --------------------------------------------

def small(text: str = "wait opened") -> RunTimeline:
    base = 1_767_225_600.0
    marks = (Mark(base, "run", OPEN, "run started"), Mark(base + 1, "wait:w", OPEN, text),
             Mark(base + 2, "wait:w", WON, "signal written"),
             Mark(base + 3, "wait:w", LOST, "deadline lost"))
    return RunTimeline("r1", "gate", "suspended", (Lane("run", "run"), Lane("wait:w", "wait w")),
                       marks)


def test_ascii_is_used_where_the_encoding_cannot_show_box_drawing() -> None:
    assert glyphs_for("utf-8") is BOX
    assert glyphs_for("ascii") is ASCII
    assert glyphs_for("latin-1") is ASCII
    assert glyphs_for("no-such-codec") is ASCII
    text = "\n".join(render_timeline(small(), glyphs=ASCII))
    text.encode("ascii")  # raises if one box character slipped through
    assert "#  signal written" in text and "x  deadline lost" in text and "|" in text


GOLDEN_BOX = """\
run r1 (gate): suspended, 4 events on 2 lanes, times UTC on 2026-01-01
lanes: 1 run  2 wait w

time      1 2  what
─────────────────────────────
00:00:00  ┬    run started
00:00:01  │ ┬  wait opened
00:00:02  │ ◆  signal written
00:00:03  │ ◇  deadline lost
─────────────────────────────
key: ┬ opens  ┴ closes  ● event  ◆ won  ◇ lost  │ open span"""


def test_golden_box_drawing() -> None:
    assert "\n".join(render_timeline(small())) == GOLDEN_BOX


@pytest.mark.parametrize("width", [40, 41, 80])
def test_rows_fit_the_width_and_long_text_is_clipped(width: int) -> None:
    long_text = "x" * 200
    lines = render_timeline(small(long_text), glyphs=ASCII, width=width)
    body = [line for line in lines if line.startswith("00:")]
    assert all(len(line) <= width for line in body), body
    assert any(line.endswith("...") for line in body)


def test_the_text_column_never_shrinks_below_its_minimum() -> None:
    lines = render_timeline(small("y" * 200), glyphs=ASCII, width=10)
    clipped = next(line for line in lines if "yyy" in line)
    assert clipped.endswith("...") and len(clipped.split("  ")[-1].strip()) == MIN_TEXT


# --- runs the engine wrote before events carried times, and pruned runs ---------------------

def _engine(clock: FakeClock) -> tuple[Engine, MemoryStore]:
    store = MemoryStore(f"timeline-{uuid.uuid4().hex}")
    return Engine(store, clock, host="host-a", sleeper=clock.advance), store


def test_a_legacy_run_is_placed_at_its_revision_times(clock: FakeClock) -> None:
    engine, store = _engine(clock)
    raw = resources.files("reference_engine").joinpath("fixtures/legacy_v1_run.json")
    record = json.loads(raw.read_bytes())
    store.put(keys.revision_key(record["runId"], 1), raw.read_bytes())
    drawn = engine.timeline(record["runId"])
    legacy_events = [m for m in drawn.marks if m.lane != "claim"]
    assert legacy_events, "the legacy journal drew nothing"
    assert not [m for m in drawn.marks if m.lane == "claim"]  # v1 runs had no claims
    clock.advance(10)
    engine.signal(record["steps"]["approval"]["wait"]["id"], '{"approved": true}')
    engine.resume(record["runId"])
    drawn = engine.timeline(record["runId"])
    texts = [m.text for m in drawn.marks]
    assert any(t.startswith("claim g1 taken by host-a") for t in texts)
    assert "resumed under claim g1" in texts
    assert drawn.missing_revisions == 0


def test_pruned_revisions_are_counted_in_a_note(clock: FakeClock) -> None:
    engine, store = _engine(clock)
    flow = parse_workflow(yaml.safe_load(WAIT_FLOW))
    view = engine.run(flow)
    engine.signal(view.waits[0].wait_id, '{"approved": true}')
    engine.resume(view.run_id)
    numbers = revision_numbers(store, view.run_id)
    store.delete(keys.revision_key(view.run_id, numbers[0]))
    drawn = engine.timeline(view.run_id)
    assert drawn.missing_revisions == 1
    lines = render_timeline(drawn, glyphs=ASCII)
    assert "note: 1 older revision(s) were pruned or unreadable" in "\n".join(lines)
    # The newest revision's journal still holds every event, each at its own time.
    assert "run started" in [m.text for m in drawn.marks]
