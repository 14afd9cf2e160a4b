"""Which calls of a non-linearizable key are the fault, and which calls explain them.

Definitions, for the calls ``H`` of one key (``search`` describes legal orders):

* a sub-history ``S`` of ``H`` is *legal* when some order of its calls respects real time
  and the model, its indeterminate calls being optional;
* a set ``F`` of calls *cannot be placed together* (is a *conflict*) when no legal ``S``
  with ``F ⊆ S ⊆ H`` exists: no choice of the other calls makes room for all of ``F``;
* a call *has a legal place* in ``H`` when ``{call}`` is not a conflict.

A report marks a conflict ``F`` (the fault) that is minimal: dropping any one of its calls
leaves calls that can be placed together. So a call that has a legal place in the full
history is never marked on its own. When some call has no legal place at all (a read of a
value nobody wrote, say), that call alone is the fault. The report also shows, plainly, the
calls ``E`` that explain the others: for every marked call with a legal place, a smallest
set of calls (found greedily) that gives it one; for a marked read with none, the first
write of the value it read, if there is one (it came too late). Together ``F`` and ``E`` are not
linearizable.

Shrinking a failing history by dropping calls while the rest still fails is *not* enough:
dropping the winning create makes a correct losing create look like the fault.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dw_testing.history.budget import Meter, OutOfBudget
from dw_testing.history.search import CREATE, GET, PUT, KeyHistory


@dataclass(frozen=True)
class Explanation:
    """Indices into ``KeyHistory.ops``: the marked conflict and the calls that explain it."""

    fault: tuple[int, ...]
    explainers: tuple[int, ...]

    @property
    def calls(self) -> tuple[int, ...]:
        """Fault and explainers together, in invocation order."""
        return tuple(sorted({*self.fault, *self.explainers}))


def cannot_place_together(history: KeyHistory, calls: Sequence[int], meter: Meter) -> bool:
    """Proven conflict: True only when the search finished and found no legal order."""
    try:
        return not history.place(meter, required=history.mask(calls))
    except OutOfBudget:
        return False


def explain(history: KeyHistory, meter: Meter) -> Explanation:
    """The fault and its explainers for a key that is known not to be linearizable.

    Every step that runs out of ``meter``'s budget keeps what is already proven: the fault
    is always a proven conflict, at worst larger than minimal.
    """
    fault, placeless = _find_fault(history, meter)
    if placeless:
        return Explanation(tuple(fault), tuple(sorted(_late_writer(history, fault[0]))))
    explainers: set[int] = set()
    for call in fault:
        explainers |= _explain_one(history, call, meter)
    return Explanation(tuple(sorted(fault)), tuple(sorted(explainers - set(fault))))


def _find_fault(history: KeyHistory, meter: Meter) -> tuple[list[int], bool]:
    """A minimal conflict, and whether it is one call with no legal place at all."""
    unwritten = history.unwritten_reads()
    if unwritten:
        return unwritten[:1], True
    determinate = [i for i in range(history.n) if history.determinate >> i & 1]
    for call in determinate:
        if cannot_place_together(history, [call], meter):
            return [call], True

    def conflict(calls: Sequence[int]) -> bool:
        return cannot_place_together(history, calls, meter)

    # A minimal violating sub-history is usually the fault and cheap to find; when it is
    # not a conflict of the whole history (a call it dropped explains one it kept), start
    # from every call instead.
    violating = [i for i in _shrink_subhistory(history, meter)
                 if history.determinate >> i & 1]
    start = violating if violating and conflict(violating) else determinate
    return _minimise(start, conflict), False


def _explain_one(history: KeyHistory, call: int, meter: Meter) -> set[int]:
    """A smallest (greedy) set of calls that gives ``call`` a legal place; empty if none."""
    witness: list[int] = []
    try:
        if not history.place(meter, required=1 << call, witness=witness):
            return set()
    except OutOfBudget:
        return set()
    needed = [i for i in witness if i != call]
    for candidate in list(needed):
        rest = [i for i in needed if i != candidate]
        try:
            if history.place(meter, required=1 << call, include=history.mask([call, *rest])):
                needed = rest
        except OutOfBudget:
            break
    return set(needed)


def _late_writer(history: KeyHistory, call: int) -> set[int]:
    """For a read with no legal place: the first write of the value it read, if any (it
    shows where the value came from, and that it came too late)."""
    if history.kinds[call] != GET or history.results[call] < 0:
        return set()
    value = history.results[call]
    for i in range(history.n):
        kind, result = history.kinds[i], history.results[i]
        if history.args[i] == value and (kind == PUT or (kind == CREATE and result != 0)):
            return {i}
    return set()


def _minimise(calls: list[int], keeps_failing: Callable[[Sequence[int]], bool]) -> list[int]:
    """Drop chunks, then single calls, while ``keeps_failing`` holds (``calls`` fails)."""
    current = list(calls)
    chunk = max(1, len(current) // 2)
    while True:
        start, dropped = 0, False
        while start < len(current):
            candidate = current[:start] + current[start + chunk:]
            if candidate and keeps_failing(candidate):
                current, dropped = candidate, True
            else:
                start += chunk
        if chunk == 1 and not dropped:
            return current
        chunk = max(1, chunk // 2)


def _shrink_subhistory(history: KeyHistory, meter: Meter) -> list[int]:
    """A minimal sub-history that is not linearizable on its own.

    A get's value keeps its writer: without it, the sub-history would only show the less
    useful "read a value nobody wrote".
    """
    kinds, args, results = history.kinds, history.args, history.results
    reads = {results[i] for i in range(history.n) if kinds[i] == GET and results[i] >= 0}
    writes = {args[i] for i in range(history.n) if kinds[i] in (PUT, CREATE)}
    explained = reads & writes

    def still_violates(candidate: Sequence[int]) -> bool:
        read = {results[i] for i in candidate if kinds[i] == GET and results[i] >= 0}
        written = {args[i] for i in candidate if kinds[i] in (PUT, CREATE)}
        if any(value in explained and value not in written for value in read):
            return False
        chosen = history.mask(candidate)
        try:
            return not history.place(meter, include=chosen,
                                     required=chosen & history.determinate)
        except OutOfBudget:
            return False

    return _minimise(list(range(history.n)), still_violates)
