"""What the contract allows of a ``list`` that is not a snapshot (C-LIST-3 to C-LIST-5).

A list runs over an interval, while other calls may write and delete under its prefix.
Of the keys this test owns (its namespace), the list must hold every key whose write
completed before the list began and that no delete touched since, and may hold only keys
that existed at some moment of the list's interval; each key whole and once; in code-point
order when the store declares ``sorted_list``. A bare prefix (no trailing ``/``) is judged
only for a store that declares ``segment_prefixes`` (C-LIST-4); others may answer it as they
like.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from dw_testing.history import Operation
from dw_testing.judge.recording import ListCall

NEVER = float("inf")


@dataclass(frozen=True)
class ListWrong:
    """A list answer no moment of its interval allows."""

    call: ListCall
    clause: str
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    duplicated: tuple[str, ...] = ()
    unordered: bool = False
    expected: int = 0


@dataclass
class _KeyLife:
    """When a key's writes and deletes ran: (call, ret) pairs, ret ``NEVER`` if it raised.

    Both questions are monotone (a later-starting write is the likeliest to survive, a
    later-ending one the likeliest to be in effect), so each is answered by bisecting
    sorted calls with running maxima and minima, not by comparing every pair.
    """

    writes: list[tuple[float, float, bool]]  # (call, ret, certain)
    deletes: list[tuple[float, float]]
    _index: tuple[list[float], list[float], list[float], list[float], list[float],
                  list[float], list[float]] | None = None

    def _indexed(self) -> tuple[list[float], list[float], list[float], list[float],
                                list[float], list[float], list[float]]:
        if self._index is None:
            certain = sorted((ret, call) for call, ret, sure in self.writes if sure)
            c_rets = [ret for ret, _ in certain]
            c_max_call = list(_running(max, (call for _, call in certain), -NEVER))
            every = sorted((call, ret) for call, ret, _ in self.writes)
            w_calls = [call for call, _ in every]
            w_max_ret = list(_running(max, (ret for _, ret in every), -NEVER))
            dels = sorted(self.deletes)
            d_calls = [call for call, _ in dels]
            d_max_ret = list(_running(max, (ret for _, ret in dels), -NEVER))
            d_min_ret_after = list(reversed(list(_running(min, (ret for _, ret in
                                                               reversed(dels)), NEVER))))
            self._index = (c_rets, c_max_call, w_calls, w_max_ret, d_calls, d_max_ret,
                           d_min_ret_after)
        return self._index

    def present_throughout(self, start: float, end: float) -> bool:
        """A write completed before ``start`` and no delete could have run after it."""
        c_rets, c_max_call, _, _, d_calls, d_max_ret, _ = self._indexed()
        n = bisect_left(c_rets, start)
        if n == 0:
            return False
        latest_call = c_max_call[n - 1]
        m = bisect_left(d_calls, end)
        return m == 0 or d_max_ret[m - 1] < latest_call

    def could_exist(self, start: float, end: float) -> bool:
        """Some write may have been in effect at a moment between ``start`` and ``end``."""
        _, _, w_calls, w_max_ret, d_calls, _, d_min_ret_after = self._indexed()
        n = bisect_left(w_calls, end)
        if n == 0:
            return False
        latest_ret = w_max_ret[n - 1]
        if latest_ret == NEVER:
            return True
        m = bisect_right(d_calls, latest_ret)
        return m == len(d_calls) or d_min_ret_after[m] >= start


def _running(pick: Callable[[float, float], float], values: Iterable[float],
             first: float) -> Iterator[float]:
    best = first
    for value in values:
        best = pick(best, value)
        yield best


def _lives(ops: Iterable[Operation]) -> dict[str, _KeyLife]:
    lives: dict[str, _KeyLife] = defaultdict(lambda: _KeyLife([], []))
    for op in ops:
        ret = NEVER if op.ret is None else float(op.ret)
        if op.op == "delete":
            lives[op.key].deletes.append((float(op.call), ret))
        elif op.op == "put" or op.result is not False:
            certain = op.ret is not None and (op.op == "put" or op.result is True)
            lives[op.key].writes.append((float(op.call), ret, certain))
    return dict(lives)


def matching_prefix(prefix: str, capabilities: Mapping[str, bool]) -> str | None:
    """The string every listed key must start with, or ``None`` when the list is not judged."""
    if prefix == "" or prefix.endswith("/"):
        return prefix
    return prefix + "/" if capabilities.get("segment_prefixes", False) else None


def judge_lists(lists: Sequence[ListCall], ops: Sequence[Operation], *, namespace: str,
                capabilities: Mapping[str, bool]) -> list[ListWrong]:
    """Every list answer of the test that no moment of its interval allows."""
    lives = _lives(ops)
    owned = sorted(lives)
    wrongs: list[ListWrong] = []
    for call in lists:
        if call.keys is None or call.ret is None:
            continue
        match = matching_prefix(call.prefix, capabilities)
        if match is None:
            continue
        wrong = _judge_one(call, match, namespace, owned, lives, capabilities)
        if wrong is not None:
            wrongs.append(wrong)
    return wrongs


def _judge_one(call: ListCall, match: str, namespace: str, owned: list[str],
               lives: Mapping[str, _KeyLife],
               capabilities: Mapping[str, bool]) -> ListWrong | None:
    assert call.keys is not None and call.ret is not None
    start, end = float(call.call), float(call.ret)
    answer = call.keys
    seen: set[str] = set()
    duplicated = sorted({k for k in answer if k in seen or seen.add(k)})  # type: ignore[func-returns-value]
    # Keys of this test under the prefix: the longer of the two prefixes bounds them.
    bound = match if match.startswith(namespace) else namespace
    judged_here = bound.startswith(match) or match.startswith(namespace)
    extra = [k for k in answer
             if not k.startswith(match)
             or (judged_here and k.startswith(bound)
                 and (k not in lives or not lives[k].could_exist(start, end)))]
    missing: list[str] = []
    expected = 0
    if judged_here:
        for key in owned[bisect_left(owned, bound):]:
            if not key.startswith(bound):
                break
            if lives[key].present_throughout(start, end):
                expected += 1
                if key not in seen:
                    missing.append(key)
    unordered = capabilities.get("sorted_list", False) and list(answer) != sorted(answer)
    if not (missing or extra or duplicated or unordered):
        return None
    bare = not (call.prefix == "" or call.prefix.endswith("/"))
    # A bare prefix matched by name lists siblings that only start with it ("deeper/x" for
    # "deep"): C-LIST-4. The prefix's own key, or a key outside it, is a wrong list (C-LIST-3).
    siblings = [k for k in extra if k.startswith(call.prefix) and k != call.prefix]
    clause = ("C-LIST-4" if bare and siblings and not missing
              else "C-LIST-3" if missing or extra or duplicated else "C-LIST-5")
    return ListWrong(call, clause, tuple(missing), tuple(sorted(set(extra))),
                     tuple(duplicated), bool(unordered), expected)
