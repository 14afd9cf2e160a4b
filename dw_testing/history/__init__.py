"""Record concurrent store histories and check them for linearizability, per key.

UNKNOWN: :func:`assert_linearizable` raises :class:`BudgetExhausted` (an ``Exception``, not an
``AssertionError``) when the search ran out of budget; the plugin reports that as UNKNOWN.
A violation raises :class:`HistoryViolation`, an ``AssertionError`` carrying the minimal
violating sub-history (``.ops``, ``.marked``, ``.to_json()``); its message is a table of the
calls with their timeline beside it (:mod:`dw_testing.history.timeline`).
"""

from dw_testing.history.checker import (
    Budget,
    BudgetExhausted,
    CheckResult,
    assert_linearizable,
    check_history,
    format_history,
)
from dw_testing.history.events import Operation, dump_jsonl, load_jsonl, merge_histories
from dw_testing.history.recorder import HistoryLog, HistoryRecorder
from dw_testing.history.timeline import render_svg, render_text
from dw_testing.history.violation import HistoryViolation

__all__ = [
    "Budget",
    "BudgetExhausted",
    "CheckResult",
    "HistoryLog",
    "HistoryRecorder",
    "HistoryViolation",
    "Operation",
    "assert_linearizable",
    "check_history",
    "dump_jsonl",
    "format_history",
    "load_jsonl",
    "merge_histories",
    "render_svg",
    "render_text",
]
