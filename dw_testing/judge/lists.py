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

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
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
    """When a key's writes and deletes ran: (call, ret) pairs, ret ``NEVER`` if it raised."""

    writes: list[tuple[float, float, bool]]  # (call, ret, certain)
    deletes: list[tuple[float, float]]

    def present_throughout(self, start: float, end: float) -> bool:
        """A write completed before ``start`` and no delete could have run after it."""
        for w_call, w_ret, certain in self.writes:
            if not certain or w_ret >= start:
                continue
            if all(d_ret < w_call for d_call, d_ret in self.deletes if d_call < end):
                return True
        return False

    def could_exist(self, start: float, end: float) -> bool:
        """Some write may have been in effect at a moment between ``start`` and ``end``."""
        for w_call, w_ret, _ in self.writes:
            if w_call >= end:
                continue
            if w_ret == NEVER or not any(w_ret < d_call and d_ret < start
                                         for d_call, d_ret in self.deletes):
                return True
        return False


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
    clause = ("C-LIST-4" if bare and extra and not missing
              else "C-LIST-3" if missing or extra or duplicated else "C-LIST-5")
    return ListWrong(call, clause, tuple(missing), tuple(sorted(set(extra))),
                     tuple(duplicated), bool(unordered), expected)
