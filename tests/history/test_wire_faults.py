"""Which call met which fault on the wire; a lost or cut reply makes a call indeterminate,
a reset before the request reached the server does not; the timeline names the fault."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from dw_testing.history import HistoryViolation, Operation, assert_linearizable
from dw_testing.history.timeline import render_svg, render_text
from dw_testing.history.wire_faults import as_judged, attribute_faults, is_ambiguous


@dataclass(frozen=True)
class Struck:
    kind: str
    stamp: int


def _create(process: str, result: bool, call: int, ret: int | None,
            value: bytes = b"v") -> Operation:
    return Operation(process, "put_if_absent", "k", value, result, call, ret)


def test_a_fault_belongs_to_every_call_in_flight_when_it_struck() -> None:
    ops = [_create("a", True, 10, 20), _create("b", False, 15, 30), _create("c", False, 40, None)]
    marked = attribute_faults(ops, [Struck("lost-reply", 18), Struck("reset-before", 50)])
    assert [op.fault for op in marked] == ["lost-reply", "lost-reply", "reset-before"]
    assert attribute_faults(ops, []) == ops


def test_only_a_fault_after_which_the_server_may_have_acted_is_ambiguous() -> None:
    lost = Operation("a", "put_if_absent", "k", b"v", False, 1, 2, fault="lost-reply")
    refused = Operation("a", "put_if_absent", "k", b"v", False, 1, 2, fault="reset-before")
    assert is_ambiguous(lost) and not is_ambiguous(refused)
    assert as_judged(lost).indeterminate and as_judged(refused) == refused


def test_a_create_told_false_after_a_lost_reply_is_no_violation() -> None:
    # Its first attempt created the record, the reply was lost, the retry met the record.
    told_false = _create("a", False, 1, 4)
    read = Operation("b", "get", "k", None, b"v", 5, 6)
    with pytest.raises(HistoryViolation):
        assert_linearizable([told_false, read])
    faulted = attribute_faults([told_false, read], [Struck("lost-reply", 2)])
    assert_linearizable(faulted)


def test_a_create_told_false_after_a_reset_before_the_server_is_still_a_violation() -> None:
    told_false = _create("a", False, 1, 4)
    faulted = attribute_faults([told_false], [Struck("reset-before", 2)])
    with pytest.raises(HistoryViolation) as raised:
        assert_linearizable(faulted)
    assert raised.value.ops[0].fault == "reset-before"


def test_the_timeline_names_the_fault_each_call_met_in_text_and_svg() -> None:
    ops = attribute_faults([_create("a", True, 1, 4), _create("b", False, 5, 8)],
                           [Struck("cut-reply", 6)])
    text = render_text(ops, width=120, ascii=True)
    header = text.splitlines()[0]
    assert "fault" in header.split()
    row = next(line for line in text.splitlines() if line.strip().startswith("b"))
    assert "cut-reply" in row
    assert "fault: what the fault proxy did on the wire" in text
    svg = render_svg(ops)
    assert svg.count('class="call faulted"') == 1
    assert "met on the wire: cut-reply" in svg
    assert 'class="fault-mark"' in svg


def test_a_timeline_with_no_fault_has_no_fault_column() -> None:
    text = render_text([_create("a", True, 1, 4)], width=120, ascii=True)
    assert "fault" not in text.splitlines()[0].split()
    assert "faulted" not in render_svg([_create("a", True, 1, 4)])


def test_the_fault_survives_the_report_json() -> None:
    op = Operation("a", "get", "k", None, b"v", 1, 2, fault="lost-reply")
    assert Operation.from_json(op.to_json()) == op
    assert "fault" not in Operation("a", "get", "k", None, b"v", 1, 2).to_json()


def test_the_html_report_draws_the_fault_on_the_violations_timeline() -> None:
    from dw_testing.report.html_page import _history_figure

    told_false = attribute_faults([_create("a", False, 1, 4)], [Struck("reset-before", 2)])
    with pytest.raises(HistoryViolation) as raised:
        assert_linearizable(told_false)
    figure = _history_figure(raised.value.to_json())
    assert 'class="call marked faulted"' in figure
    assert "met on the wire: reset-before" in figure


def test_a_retried_create_may_win_again_after_a_delete_between_its_attempts() -> None:
    # t0's first attempt created #v (read by b), c replaced and deleted it, and t0's retry
    # created #v again (read by d): two applications of one call that met a lost reply.
    ops = [_create("a", False, 1, 20),
           Operation("b", "get", "k", None, b"v", 2, 3),
           Operation("c", "put", "k", b"w", None, 4, 5),
           Operation("c", "delete", "k", None, None, 6, 7),
           Operation("d", "get", "k", None, b"v", 8, 9)]
    with pytest.raises(HistoryViolation):
        assert_linearizable(attribute_faults(ops, [Struck("reset-before", 10)]))
    assert_linearizable(attribute_faults(ops, [Struck("lost-reply", 10)]))
