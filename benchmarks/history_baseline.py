"""The history checker as it was before the rewrite (main at 364443e), for comparison only.

``benchmarks/history_check.py`` runs it beside the current checker in one run, so the
before and after figures come from the same machine under the same load. Nothing else
imports this module; it is frozen, not maintained.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from dw_testing.history.events import Operation

Verdict = Literal["ok", "violation", "unknown"]

_PUT, _CREATE, _GET, _DELETE = 0, 1, 2, 3
_KIND = {"put": _PUT, "put_if_absent": _CREATE, "get": _GET, "delete": _DELETE}
_ABSENT = -1
_NEVER = 1 << 62  # the response time of an indeterminate call
_DEADLINE_EVERY = 1024  # search steps between clock reads


@dataclass(frozen=True)
class Budget:
    """How much search one check may spend; either limit reached means UNKNOWN."""

    max_steps: int | None = 2_000_000
    max_seconds: float | None = 20.0


@dataclass(frozen=True)
class CheckResult:
    verdict: Verdict
    key: str | None = None
    violation: tuple[Operation, ...] = ()
    key_ops: int = 0
    steps: int = 0
    seconds: float = 0.0
    detail: str = ""


class _OutOfBudget(Exception):
    pass


class _Meter:
    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.steps = 0
        self.started = time.monotonic()
        self.deadline = (None if budget.max_seconds is None
                         else self.started + budget.max_seconds)

    def spend(self, steps: int) -> None:
        before = self.steps
        self.steps += steps
        if self.budget.max_steps is not None and self.steps > self.budget.max_steps:
            raise _OutOfBudget(f"search passed {self.budget.max_steps} steps")
        if (self.deadline is not None and before // _DEADLINE_EVERY != self.steps // _DEADLINE_EVERY
                and time.monotonic() > self.deadline):
            raise _OutOfBudget(f"search passed {self.budget.max_seconds}s")

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.started


def partition_by_key(history: Iterable[Operation]) -> dict[str, list[Operation]]:
    keyed: dict[str, list[Operation]] = defaultdict(list)
    for op in history:
        keyed[op.key].append(op)
    return dict(keyed)


def _key_linearizable(ops: Sequence[Operation], meter: _Meter) -> bool:
    """Depth-first search for a legal order of one key's calls. Raises _OutOfBudget."""
    # An indeterminate get has no effect and nothing to match: it can always be left out.
    live = sorted((op for op in ops if not (op.indeterminate and op.op == "get")),
                  key=lambda op: op.call)
    n = len(live)
    if n == 0:
        return True
    ids: dict[bytes, int] = {}

    def value_id(data: bytes | None) -> int:
        return _ABSENT if data is None else ids.setdefault(data, len(ids))

    kinds = [_KIND[op.op] for op in live]
    args = [value_id(op.value) if op.op in ("put", "put_if_absent") else _ABSENT for op in live]
    # For get: the value id read. For put_if_absent: 1 (True), 0 (False), -1 (unknown).
    results: list[int] = []
    for op in live:
        if op.indeterminate:
            results.append(-1)
        elif op.op == "get":
            results.append(value_id(op.result if isinstance(op.result, bytes) else None))
        elif op.op == "put_if_absent":
            results.append(1 if op.result else 0)
        else:
            results.append(0)
    calls = [op.call for op in live]
    rets = [_NEVER if op.ret is None else op.ret for op in live]
    by_ret = sorted(range(n), key=rets.__getitem__)
    required = 0
    for i, op in enumerate(live):
        if not op.indeterminate:
            required |= 1 << i
    if required == 0:
        return True

    def candidates(mask: int) -> list[int]:
        # A call may go next iff no pending call returned before it was invoked.
        earliest_ret = _NEVER
        for i in by_ret:
            if not mask >> i & 1:
                earliest_ret = rets[i]
                break
        found = []
        for i in range(n):
            if calls[i] > earliest_ret:
                break
            if not mask >> i & 1:
                found.append(i)
        return found

    def step(i: int, state: int) -> int | None:
        """The state after call ``i``, or None when the call is illegal (or a no-op to skip)."""
        kind = kinds[i]
        if kind == _PUT:
            return args[i]
        if kind == _DELETE:
            return _ABSENT
        if kind == _GET:
            return state if results[i] == state else None
        outcome = results[i]
        if outcome == -1:
            # Indeterminate create: applying it where it changes nothing equals omitting it.
            return args[i] if state == _ABSENT else None
        if outcome == 1:
            return args[i] if state == _ABSENT else None
        return state if state != _ABSENT else None

    seen: set[tuple[int, int]] = set()
    stack: list[tuple[int, int, list[int], int]] = [(0, _ABSENT, candidates(0), 0)]
    while stack:
        mask, state, options, position = stack[-1]
        descended = False
        while position < len(options):
            i = options[position]
            position += 1
            meter.spend(1)
            after = step(i, state)
            if after is None:
                continue
            next_mask = mask | 1 << i
            if next_mask & required == required:
                return True
            memo_key = (next_mask, after)
            if memo_key in seen:
                continue
            seen.add(memo_key)
            stack[-1] = (mask, state, options, position)
            stack.append((next_mask, after, candidates(next_mask), 0))
            descended = True
            break
        if not descended:
            stack.pop()
    return False


def _shrink(ops: list[Operation], meter: _Meter) -> list[Operation]:
    """Drop calls while the rest still violates; unknown sub-checks keep the call.

    A get's value keeps its writer: without it, the sub-history would only show the
    less useful "read a value nobody wrote".
    """
    writers_needed = {op.result for op in ops if op.op == "get" and isinstance(op.result, bytes)}
    written = {op.value for op in ops if op.op in ("put", "put_if_absent")}
    explained = writers_needed & written

    def still_violates(candidate: list[Operation]) -> bool:
        reads = {op.result for op in candidate if op.op == "get" and isinstance(op.result, bytes)}
        writes = {op.value for op in candidate if op.op in ("put", "put_if_absent")}
        if any(value in explained and value not in writes for value in reads):
            return False
        try:
            return not _key_linearizable(candidate, meter)
        except _OutOfBudget:
            return False

    current = list(ops)
    chunk = max(1, len(current) // 2)
    while True:
        start, dropped = 0, False
        while start < len(current):
            candidate = current[:start] + current[start + chunk:]
            if candidate and still_violates(candidate):
                current, dropped = candidate, True
            else:
                start += chunk
        if chunk == 1 and not dropped:
            return current
        chunk = max(1, chunk // 2)


def check_history(history: Iterable[Operation], *, budget: Budget | None = None,
                  shrink_budget: Budget | None = None) -> CheckResult:
    """Check every key; the first violating key is shrunk and reported."""
    meter = _Meter(budget or Budget())
    exhausted: list[str] = []
    keyed = partition_by_key(history)
    # Small keys first: a cheap violation should not wait behind an expensive key.
    for key in sorted(keyed, key=lambda k: (len(keyed[k]), k)):
        ops = keyed[key]
        try:
            legal = _key_linearizable(ops, meter)
        except _OutOfBudget as exc:
            exhausted.append(f"key {key!r} ({len(ops)} calls): {exc}")
            break
        if not legal:
            steps = meter.steps
            minimal = _shrink(ops, _Meter(shrink_budget or Budget(max_steps=None,
                                                                  max_seconds=10.0)))
            return CheckResult("violation", key=key, violation=tuple(minimal),
                               key_ops=len(ops), steps=steps, seconds=meter.seconds)
    if exhausted:
        return CheckResult("unknown", key=None, steps=meter.steps, seconds=meter.seconds,
                           detail="; ".join(exhausted))
    return CheckResult("ok", steps=meter.steps, seconds=meter.seconds)


