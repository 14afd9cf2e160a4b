"""Record concurrent store histories and check them for linearizability, per key.

UNKNOWN: :func:`assert_linearizable` raises :class:`BudgetExhausted` (an ``Exception``, not an
``AssertionError``) when the search ran out of budget; the plugin reports that as UNKNOWN.
A violation raises ``AssertionError`` carrying the minimal violating sub-history.
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

__all__ = [
    "Budget",
    "BudgetExhausted",
    "CheckResult",
    "HistoryLog",
    "HistoryRecorder",
    "Operation",
    "assert_linearizable",
    "check_history",
    "dump_jsonl",
    "format_history",
    "load_jsonl",
    "merge_histories",
]
