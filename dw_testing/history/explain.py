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
set of calls (found greedily) that gives it one; for a marked call with none, a few calls in
flight beside it and, for a read, the first write of the value it read, if there is one
(it came too late). Together ``F`` and ``E`` are not
linearizable.

Shrinking a failing history by dropping calls while the rest still fails is *not* enough:
dropping the winning create makes a correct losing create look like the fault.

How the fault is found, so that it costs about the size of the fault, not of the key: calls
with no legal place are found without a search (:meth:`KeyHistory.placeless`); on a short
key a minimal violating sub-history is tried first, and kept when it is a conflict of the
whole key. Otherwise the failed search of the whole key says how far any legal order got,
and the calls that had returned by then are a conflict; a window back from its end is
widened, then narrowed, to the latest start that still gives a conflict, and that window
is shrunk one call at a time to a minimal conflict. Every question "can these calls be
placed together?" is decided on their :func:`window`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dw_testing.history.budget import Meter, OutOfBudget
from dw_testing.history.search import ABSENT, CREATE, GET, PUT, KeyHistory


@dataclass(frozen=True)
class Explanation:
    """Indices into ``KeyHistory.ops``: the marked conflict and the calls that explain it."""

    fault: tuple[int, ...]
    explainers: tuple[int, ...]

    @property
    def calls(self) -> tuple[int, ...]:
        """Fault and explainers together, in invocation order."""
        return tuple(sorted({*self.fault, *self.explainers}))


_SMALL = 256  # up to this many calls, first try the cheap minimal violating sub-history


def window(history: KeyHistory, calls: Sequence[int]) -> tuple[int, list[int]]:
    """The calls that matter for placing ``calls`` together, and the states they may start
    from: deciding on this window is exact, and much cheaper than on the whole key.

    A call invoked after every one of ``calls`` returned comes after them all: it cannot
    help, so it is left out. A call that returned before every one of them began comes
    before them all: what such calls can leave behind is the empty state or the value of
    one of their writes (that write alone, placed first, leaves it), so they are replaced
    by those start states. (A window call placed before such a call can be left out
    instead: it is none of ``calls``, and the state it left is one a start can give.)
    """
    first = min(history.calls[i] for i in calls)
    last = max(history.rets[i] for i in calls)
    include = 0
    left: set[int] = set()
    for i in range(history.n):
        if history.rets[i] < first:
            if history.writes(i):
                left.add(history.args[i])
        elif history.calls[i] <= last:
            include |= 1 << i
    # Values no read in the window sees are alike to it (a create sees a record, nothing
    # compares its bytes): one of them stands for all.
    read = {history.results[i] for i in range(history.n)
            if include >> i & 1 and history.kinds[i] == GET}
    starts = [ABSENT, *sorted(left & read)]
    unread = sorted(left - read)
    return include, starts + unread[:1]


def cannot_place_together(history: KeyHistory, calls: Sequence[int], meter: Meter) -> bool:
    """Proven conflict: True only when the search finished and found no legal order."""
    include, starts = window(history, calls)
    try:
        return not history.place(meter, required=history.mask(calls), include=include,
                                 starts=starts)
    except OutOfBudget:
        return False


def explain(history: KeyHistory, meter: Meter, *, progress: int | None = None) -> Explanation:
    """The fault and its explainers for a key that is known not to be linearizable.

    ``progress`` is what the failed search of the whole key reported
    (:meth:`KeyHistory.place`); it saves searching for where every order broke down.

    Every step that runs out of ``meter``'s budget keeps what is already proven: the fault
    is always a proven conflict, at worst larger than minimal.
    """
    placeless = history.placeless()
    if placeless:
        alone = placeless[0]
        return Explanation((alone,), tuple(sorted(_late_writer(history, alone)
                                                  | _in_flight(history, alone))))
    fault = _find_conflict(history, meter, progress)
    explainers: set[int] = set()
    for call in fault:
        explainers |= _explain_one(history, call, meter)
    return Explanation(tuple(sorted(fault)), tuple(sorted(explainers - set(fault))))


def _earliest_conflicting_end(
        history: KeyHistory, conflict: Callable[[Sequence[int]], bool]) -> tuple[list[int], int]:
    """The calls that returned by the earliest end by which they cannot be placed together,
    and that end. A conflict stays one as calls are added: a binary search finds it."""
    rets = history.rets
    determinate = [i for i in range(history.n) if history.determinate >> i & 1]
    ends = sorted({rets[i] for i in determinate})
    low, high = 0, len(ends) - 1  # the whole key is known to be a conflict
    while low < high:
        middle = (low + high) // 2
        if conflict([i for i in determinate if rets[i] <= ends[middle]]):
            high = middle
        else:
            low = middle + 1
    return [i for i in determinate if rets[i] <= ends[high]], ends[high]


def _find_conflict(history: KeyHistory, meter: Meter, progress: int | None) -> list[int]:
    """A minimal set of calls that cannot be placed together (none is placeless)."""
    calls, rets = history.calls, history.rets

    def conflict(chosen: Sequence[int]) -> bool:
        return cannot_place_together(history, chosen, meter)

    if progress is not None:
        # No legal order placed the first ``progress + 1`` calls to return: they are a
        # conflict (a legal order holding them all would have been one of the search's).
        ended = history.by_ret[:progress + 1]
        last_end = rets[ended[-1]]
    else:
        ended, last_end = _earliest_conflicting_end(history, conflict)
    # A minimal violating sub-history is often the fault and cheap to find on a short key;
    # it is not the fault when a call it dropped explains one it kept.
    before = [i for i in range(history.n) if calls[i] <= last_end]
    if len(before) <= _SMALL:
        violating = [i for i in _shrink_subhistory(history, before, meter)
                     if history.determinate >> i & 1]
        if violating and conflict(violating):
            return _minimise(violating, conflict)
    # The latest start from which the calls that ended by then still cannot be placed:
    # widen a window back from the end, doubling, then narrow it by binary search, so the
    # searches that must try every order stay about as small as the window found.
    begins = sorted({calls[i] for i in ended})

    def from_begin(index: int) -> list[int]:
        return [i for i in ended if calls[i] >= begins[index]]

    top = len(begins) - 1
    width, known = 1, 0  # begins[known] is a start known to give a conflict
    while width <= top:
        if conflict(from_begin(top - width)):
            known = top - width
            break
        width *= 2
    low, high = known, max(known, top - width // 2 - 1) if width > 1 else top
    while low < high:
        middle = (low + high + 1) // 2
        if conflict(from_begin(middle)):
            low = middle
        else:
            high = middle - 1
    return _minimise(from_begin(low), conflict)


def _explain_one(history: KeyHistory, call: int, meter: Meter) -> set[int]:
    """A smallest (greedy) set of calls that gives ``call`` a legal place on its own."""
    include, starts = window(history, [call])
    witness: list[int] = []
    try:
        if not history.place(meter, required=1 << call, include=include, starts=starts,
                             witness=witness):
            return set()
    except OutOfBudget:
        return set()
    start, applied = witness[0], witness[1:]
    needed = [i for i in applied if i != call]
    for candidate in list(needed):
        rest = [i for i in needed if i != candidate]
        try:
            if history.place(meter, required=1 << call, include=history.mask([call, *rest]),
                             starts=[start]):
                needed = rest
        except OutOfBudget:
            break
    if start != ABSENT:
        needed.append(_prefix_writer(history, start, before=history.calls[call]))
    return set(needed)


def _prefix_writer(history: KeyHistory, value: int, *, before: int) -> int:
    """The last write of ``value`` that returned before ``before`` (one exists)."""
    return max((i for i in range(history.n)
                if history.rets[i] < before and history.writes(i)
                and history.args[i] == value), key=history.rets.__getitem__)


_CONTEXT = 8  # at most this many calls in flight beside a call with no legal place


def _in_flight(history: KeyHistory, call: int) -> set[int]:
    """The calls that ran while ``call`` did (nearest starts first, a few): nothing they
    could do makes ``call`` legal, but they show what it raced with."""
    overlapping = [i for i in range(history.n) if i != call
                   and history.calls[i] <= history.rets[call]
                   and history.rets[i] >= history.calls[call]]
    overlapping.sort(key=lambda i: abs(history.calls[i] - history.calls[call]))
    return set(overlapping[:_CONTEXT])


def _late_writer(history: KeyHistory, call: int) -> set[int]:
    """For a call with no legal place that is a read: the first write of the value it read,
    if any (it shows where the value came from, and that it came too late)."""
    if history.kinds[call] != GET or history.results[call] < 0:
        return set()
    value = history.results[call]
    for i in range(history.n):
        if history.args[i] == value and history.writes(i):
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


def _shrink_subhistory(history: KeyHistory, calls: list[int], meter: Meter) -> list[int]:
    """A minimal sub-history of ``calls`` that is not linearizable on its own.

    A get's value keeps its writer: without it, the sub-history would only show the less
    useful "read a value nobody wrote".
    """
    kinds, args, results = history.kinds, history.args, history.results
    reads = {results[i] for i in calls if kinds[i] == GET and results[i] >= 0}
    writes = {args[i] for i in calls if kinds[i] in (PUT, CREATE)}
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

    if not still_violates(calls):
        return []
    return _minimise(calls, still_violates)
