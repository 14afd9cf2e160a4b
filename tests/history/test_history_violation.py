"""``HistoryViolation``: what assert_linearizable raises, and the plain data the report keeps."""

from __future__ import annotations

import json
import pickle
import xml.etree.ElementTree as ET

import pytest
from history_calls import DOUBLE_WINNER, create, get

from dw_testing.history import HistoryViolation, assert_linearizable
from dw_testing.history.events import Operation
from dw_testing.history.timeline import DEFAULT_WINDOW


def _raised(history: list[Operation]) -> HistoryViolation:
    with pytest.raises(HistoryViolation) as caught:
        assert_linearizable(history)
    return caught.value


def test_a_violation_is_an_assertion_error_with_its_calls() -> None:
    violation = _raised(DOUBLE_WINNER)
    assert isinstance(violation, AssertionError)
    assert violation.key == "k"
    assert violation.key_calls == 2
    assert sorted(violation.ops, key=lambda op: op.call) == DOUBLE_WINNER
    assert violation.marked == (0, 1)
    assert violation.left_out == 0


def test_the_message_is_the_table_with_its_timeline() -> None:
    text = str(_raised(DOUBLE_WINNER))
    assert "not linearizable on key 'k'" in text
    header = next(line for line in text.splitlines() if "process" in line)
    assert header.split() == ["process", "op", "value", "result", "interval", "timeline"]
    rows = [line for line in text.splitlines()[1:] if "put_if_absent" in line]
    assert len(rows) == 2
    assert all("True" in row and ("[0, 1]" in row or "[2, 3]" in row) for row in rows)
    assert all(row[0] in "▶*" for row in rows)


def test_to_json_is_plain_data_and_round_trips() -> None:
    violation = _raised([create("A", b"v1", True, 0, 1), get("B", b"secret", 2, 3)])
    row = json.loads(json.dumps(violation.to_json()))
    assert set(row) == {"key", "key_calls", "ops", "marked", "left_out", "message"}
    assert row["ops"] == [op.to_json() for op in violation.ops]
    assert row["marked"] == list(violation.marked)
    again = HistoryViolation.from_json(row)
    assert (again.key, again.ops, again.marked, again.key_calls, again.left_out, str(again)) \
        == (violation.key, violation.ops, violation.marked, violation.key_calls,
            violation.left_out, str(violation))


def test_a_violation_survives_pickling_with_its_data() -> None:
    violation = _raised(DOUBLE_WINNER)
    violation.add_note("workload seed 7")
    again = pickle.loads(pickle.dumps(violation))
    assert isinstance(again, HistoryViolation)
    assert again.to_json() == violation.to_json()
    assert again.__notes__ == ["workload seed 7"]


def test_its_svg_marks_the_marked_calls() -> None:
    violation = _raised(DOUBLE_WINNER)
    root = ET.fromstring(violation.render_svg())
    marked = [g for g in root.iter("{http://www.w3.org/2000/svg}g")
              if "marked" in g.get("class", "").split()]
    assert len(marked) == 2


def test_a_violation_past_the_window_keeps_the_window_and_counts_the_rest() -> None:
    ops = [get(f"p{i}", None, 10 * i, 10 * i + 5) for i in range(DEFAULT_WINDOW + 5)]
    violation = HistoryViolation.from_subset("m", key="k", ops=ops, marked=[44], key_calls=90)
    assert len(violation.ops) == DEFAULT_WINDOW
    assert violation.left_out == 5
    assert violation.ops[violation.marked[0]] == ops[44]
    assert "5 of 45 calls left out" in violation.render_svg()


def test_marked_calls_outside_the_ops_are_refused() -> None:
    with pytest.raises(ValueError, match="not indices"):
        HistoryViolation("m", key="k", ops=DOUBLE_WINNER, marked=[2], key_calls=2)


def test_a_damaged_json_row_is_refused_with_a_hint() -> None:
    row = _raised(DOUBLE_WINNER).to_json()
    del row["marked"]
    with pytest.raises(ValueError, match="store the dict to_json returned"):
        HistoryViolation.from_json(row)
