"""Linearizability of recorded store histories, per key, and the report of a violation.

A history is partitioned per key (linearizability is compositional). Each key first gets
one sweep through time that builds a legal order as it goes (:mod:`dw_testing.history.settle`;
its work is bounded by about one more pass over the key, not by the budget); most keys end there.
A key it leaves is patched (:mod:`dw_testing.history.patch`) and swept once more; then
pruned (a read of a value no call wrote before it returned fails without a search), given a
quick greedy pass (:mod:`dw_testing.history.search`: the model of one key), a short
depth-first search (Wing and Gong's, with Lowe's memo), and what that leaves is decided by a
sweep over the reachable configurations (:mod:`dw_testing.history.sweep`). Keys are checked
smallest first, each search with its own :class:`Budget`; a key that runs out is UNKNOWN
and the next keys are still checked.

Verdicts: ``"ok"``, ``"violation"`` or ``"unknown"`` when the budget ran out on some key and
no key violates. Running out of budget is never a pass. A violation names the calls that
cannot be placed together (the fault, ``CheckResult.marked``) and the calls that explain
them (:mod:`dw_testing.history.explain` defines both); it never marks on its own a call
that has a legal place in the full history.

For pytest: :func:`assert_linearizable` raises :class:`HistoryViolation` (an
``AssertionError``) with the calls as a table and a timeline beside it on a violation, and
raises :class:`BudgetExhausted` on ``"unknown"``. The dw plugin reports a test that raised
``dw_testing.history.BudgetExhausted`` as UNKNOWN, not FAIL.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from dw_testing.history.budget import Budget, Meter, OutOfBudget
from dw_testing.history.events import Operation
from dw_testing.history.explain import explain
from dw_testing.history.labels import digest, result_text, stamp_ranks, value_text
from dw_testing.history.patch import patch_key
from dw_testing.history.search import KeyHistory
from dw_testing.history.settle import Columns, settle
from dw_testing.history.sweep import sweep
from dw_testing.history.timeline import render_text
from dw_testing.history.violation import HistoryViolation
from dw_testing.history.wire_faults import judged

Verdict = Literal["ok", "violation", "unknown"]
_SHRINK_BUDGET = Budget(max_steps=None, max_seconds=10.0)


@dataclass(frozen=True)
class CheckResult:
    verdict: Verdict
    key: str | None = None
    violation: tuple[Operation, ...] = ()
    """The calls a violation shows, in invocation order: the fault and what explains it."""
    marked: tuple[int, ...] = ()
    """Indices into ``violation`` of the fault: the calls that cannot be placed together."""
    key_ops: int = 0
    steps: int = 0
    seconds: float = 0.0
    detail: str = ""
    explain_seconds: float = 0.0
    """Of ``seconds``, what finding the fault and its explainers took (after the verdict)."""

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"

    def describe(self) -> str:
        if self.verdict == "ok":
            return f"linearizable ({self.steps} search steps, {self.seconds:.3f}s)"
        if self.verdict == "unknown":
            return (f"UNKNOWN: {self.detail}. Raise the budget or check a shorter history; "
                    "an exhausted search is never a pass.")
        return format_violation(self.violation, marked=self.marked, key=self.key,
                                of=self.key_ops)


class BudgetExhausted(Exception):
    """The search ran out of budget: the history is neither proven fine nor broken."""

    def __init__(self, result: CheckResult) -> None:
        super().__init__(result.describe())
        self.result = result


def partition_by_key(history: Iterable[Operation]) -> dict[str, list[Operation]]:
    keyed: dict[str, list[Operation]] = defaultdict(list)
    for op in history:
        keyed[op.key].append(op)
    return dict(keyed)


def check_history(history: Iterable[Operation], *, budget: Budget | None = None,
                  shrink_budget: Budget | None = None) -> CheckResult:
    """Check every key, each with its own ``budget``; the first violating key is reported
    with its fault and the calls that explain it (found within ``shrink_budget``)."""
    budget = budget or Budget()
    started = time.monotonic()
    steps = 0
    exhausted: list[str] = []
    # A call that met a lost or cut reply on the wire is indeterminate (C-LOST-1), once per
    # attempt its client may have made.
    keyed: dict[str, Columns] = {}
    for op in judged(history):
        # Each call is read once, here, where the calls lie in order (a key's calls lie
        # far apart), into columns (no object made a call: nothing for the collector).
        part = keyed.get(op.key)
        if part is None:
            part = keyed[op.key] = Columns()
        part.ops.append(op)
        part.names.append(op.op)
        part.values.append(op.value)
        part.results.append(op.result)
        part.calls.append(op.call)
        part.rets.append(op.ret)
    # Small keys first: a cheap violation should not wait behind an expensive key.
    for key in sorted(keyed, key=lambda k: (len(keyed[k].ops), k)):
        columns = keyed[key]
        ops = columns.ops
        # Most keys: one sweep through time finds a legal order, no search needed.
        order = settle(ops, columns=columns)
        if order is None:
            # Calls with unknown results dropped or bounded first (patch): same verdict,
            # and a sweep through time that more often finds its way.
            patched = patch_key(ops)
            if patched.changed:
                order = settle(patched.ops, patched.optional)
        if order is not None:
            steps += len(order)
            continue
        calls = KeyHistory(patched.ops, patched.optional)
        meter = Meter(budget)
        progress: list[int] = []
        try:
            # A quick pass settles most keys; a read of a value nobody wrote needs no search.
            legal = calls.greedy(meter) or (not calls.unwritten_reads()
                                            and _decide(calls, meter, progress))
        except OutOfBudget as exc:
            exhausted.append(f"key {key!r} ({len(ops)} calls): {exc}")
            steps += meter.steps
            continue
        steps += meter.steps
        if legal:
            continue
        explaining = time.monotonic()
        if patched.changed:
            # The fault is named on the calls as recorded, not as patched.
            calls, progress = KeyHistory(ops), []
        found = explain(calls, Meter(shrink_budget or _SHRINK_BUDGET),
                        progress=progress[0] if progress else None)
        shown = [calls.ops[i] for i in found.calls]
        fault = set(found.fault)
        marked = tuple(n for n, i in enumerate(found.calls) if i in fault)
        unchecked = "" if not exhausted else ("other keys ran out of budget before: "
                                              + "; ".join(exhausted))
        return CheckResult("violation", key=key, violation=tuple(shown), marked=marked,
                           key_ops=len(ops), steps=steps,
                           seconds=time.monotonic() - started, detail=unchecked,
                           explain_seconds=time.monotonic() - explaining)
    seconds = time.monotonic() - started
    if exhausted:
        return CheckResult("unknown", key=None, steps=steps, seconds=seconds,
                           detail="; ".join(exhausted))
    return CheckResult("ok", steps=steps, seconds=seconds)


_FIRST_TRY = 4  # search steps a call, for the depth-first search before the sweep


def _decide(calls: KeyHistory, meter: Meter, progress: list[int]) -> bool:
    """Whether the key is linearizable: first by the depth-first search, which on most
    keys goes straight to a legal order and costs about a step a call; when it has not
    decided within a few steps a call, by the sweep, whose cost does not explode where the
    depth-first search's does. Both spend ``meter``; raises ``OutOfBudget``."""
    limit = _FIRST_TRY * calls.n + 1024
    budget = meter.budget
    if budget.max_steps is not None:
        limit = min(limit, max(0, budget.max_steps - meter.steps - 512))
    trial = Meter(Budget(max_steps=limit, max_seconds=budget.max_seconds))
    try:
        return calls.place(trial, progress=progress)
    except OutOfBudget:
        pass
    finally:
        meter.spend(trial.steps)
    return sweep(calls, meter, progress=progress)


def assert_linearizable(
    history: Iterable[Operation], *, budget: Budget | None = None
) -> CheckResult:
    """:class:`HistoryViolation` (an ``AssertionError`` carrying the minimal violating
    sub-history) or :class:`BudgetExhausted`."""
    result = check_history(history, budget=budget)
    if result.verdict == "violation":
        raise HistoryViolation.from_subset(result.describe(), key=result.key,
                                           ops=result.violation, marked=result.marked,
                                           key_calls=result.key_ops)
    if result.verdict == "unknown":
        raise BudgetExhausted(result)
    return result


def format_history(ops: Sequence[Operation]) -> str:
    """One line per call: process, op, key, value digest, result, interval.

    Intervals are ranks of the stamps within these calls (0 = earliest); ``inf`` marks a
    call that never returned. ``a`` precedes ``b`` exactly when a's end < b's start.
    """
    ordered = sorted(ops, key=lambda op: op.call)
    rank = stamp_ranks(ordered)
    rows = [("process", "op", "key", "value", "result", "interval")]
    for op in ordered:
        end = "inf" if op.ret is None else str(rank[op.ret])
        rows.append((op.process, op.op, op.key, value_text(op), result_text(op),
                     f"[{rank[op.call]}, {end}]"))
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    return "\n".join("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))
                     .rstrip() for row in rows)


_MODEL = ("respects their intervals and the model of one key "
          "(put / put_if_absent / get / delete)")


def _context(ops: Sequence[Operation], alone: int) -> str:
    """What the unmarked calls beside a call with no legal place are."""
    fault = ops[alone]
    end = float("inf") if fault.ret is None else fault.ret
    beside = [op for n, op in enumerate(ops) if n != alone
              and op.call <= end and (op.ret is None or op.ret >= fault.call)]
    late = len(ops) - 1 - len(beside)
    parts = []
    if beside:
        parts.append(f"{len(beside)} unmarked call{'s' if len(beside) > 1 else ''} ran while "
                     "it did")
    if late:
        parts.append("the unmarked call after it wrote the value it read, but too late")
    return " and ".join(parts)


def format_violation(ops: Sequence[Operation], *, marked: Sequence[int] = (),
                     key: str | None, of: int) -> str:
    """The violation in words, then its calls as a table with their timeline beside it."""
    if not marked:
        lead = (f"no order of these {len(ops)} calls (a violating subset of the key's {of}) "
                f"{_MODEL}")
    elif len(marked) == 1:
        lead = (f"the marked call has no legal place: no order of the key's {of} calls "
                f"that {_MODEL} includes it")
    else:
        lead = (f"the {len(marked)} marked calls cannot be placed together: no order of the "
                f"key's {of} calls that {_MODEL} includes them all, yet without any one of "
                "them the others fit")
    plain = len(ops) - len(marked)
    if len(marked) == 1 and plain:
        lead += "; " + _context(ops, marked[0])
    elif marked and plain:
        lead += (f"; the {plain} unmarked call{'s show' if plain > 1 else ' shows'} how each "
                 "marked call has a legal place on its own")
    return f"history is not linearizable on key {key!r}: {lead}.\n" + render_text(ops,
                                                                                   marked=marked)


__all__ = ["Budget", "BudgetExhausted", "CheckResult", "assert_linearizable", "check_history",
           "digest", "format_history", "format_violation", "partition_by_key"]
