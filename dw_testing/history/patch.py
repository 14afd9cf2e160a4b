"""Patch one key's calls with unknown results before the search: most of them vanish.

A call that raised (``ret is None``) may take effect at any point after its invocation, or
never; the search must try it everywhere, so a few dozen of them make a key's search explode.
etcd's robustness checker patches such calls before it runs Porcupine; these are the rules
for our one-key model (:mod:`dw_testing.history.search`), each keeping the verdict.

The *effect* of a raised write ``u`` is the state it leaves: the value ``v`` of a put or a
create, absence for a delete. Its *observers* are the determinate calls that tell that state
apart, and the calls with unknown results that need it:

* after a put or a create of ``v``: the gets that returned ``v``, the creates told False;
* after a delete: the gets that returned nothing, the creates told True or not told.

Take any legal order ``L`` in which ``u`` applied. The call after ``u`` in ``L`` (skipping
calls that did not apply) is an observer, or a put or a delete, which overwrites the state
without looking at it: nothing else is legal there (a get of another value, a create told
True after a write, a create told False after a delete). If it is a put or a delete, ``L``
without ``u`` is legal too. Hence:

1. **Unobserved, dropped.** A raised write with no observer that may come after it (no
   observer returned at or after its invocation) is left out.
2. **Observed, bounded.** Otherwise ``u``, when it applies, comes right before one of its
   observers ``c``, so before ``c`` returned: ``u`` gets the latest such return as its own,
   and stays optional (it may still not have applied). An observer that may come after it
   and never returned leaves ``u`` as it was.
3. **Read, so applied.** A raised put or create of ``v`` that is the only write of ``v``
   (copies of one call, as a retried write leaves under C-LOST-1, count as one), with ``v``
   read by a get: that get needs ``u`` before it, so ``u`` applied and returned no later than
   the first such get returned. One copy becomes a determinate call ending then (a create:
   told True); the others follow rule 2.

Rules are applied one after another, each to the history the previous ones left, so each
keeps the verdict of the one before: writes first (their observers are all determinate),
then deletes (a create patched by rules 2 and 3 may bound one). Raised gets change nothing
and match nothing: they are dropped first.

The soundness of every rule is checked against a brute-force reference (every order of
every subset) on small random histories, violations included:
``tests/history/test_history_patch.py``, which also shows that weakening any one rule
breaks it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import cast

from dw_testing.history.events import Operation

_NEVER = float("inf")


@dataclass(frozen=True)
class PatchedKey:
    """One key's calls after patching, and which of them may still be left out.

    ``optional[n]`` is True for a call whose result is unknown but which was given a return
    stamp (rule 2): it may apply, or not, but if it does it comes before calls invoked after
    its ``ret``. Calls with ``ret is None`` are optional as always.
    """

    ops: list[Operation]
    optional: list[bool]
    changed: bool = True
    """False when the key had no call with an unknown result: ``ops`` are the calls given."""


def _write_seen_until(value: bytes, read_end: dict[object, float],
                      told_false_end: float) -> float:
    """The latest return of an observer of a put or create of ``value`` (-1: none)."""
    return max(read_end.get(value, -1), told_false_end)


def _delete_seen_until(read_end: dict[object, float], absent_end: float) -> float:
    """The latest return of an observer of a delete (-1: none)."""
    return max(read_end.get(None, -1), absent_end)


def _bounded(op: Operation, end: float) -> tuple[Operation, bool] | None:
    """Rules 1 and 2: left out when no observer returned at or after its invocation, else
    ending when the latest observer did, still optional."""
    if end < op.call:
        return None
    return replace(op, ret=int(end)), True


def _only_writer(writers: set[tuple[str, int, int | None]]) -> bool:
    """Rule 3's condition: one raised call (or copies of it) writes the value."""
    return len(writers) == 1


def _applied_until(read: Operation) -> int:
    """Rule 3's bound: the write came before the first get of its value returned."""
    assert read.ret is not None
    return read.ret


def patch_key(ops: Sequence[Operation]) -> PatchedKey:
    """The calls of one key with the rules above applied (``ops`` in any order)."""
    rets = [op.ret for op in ops]
    if None not in rets:
        return PatchedKey(list(ops), [False] * len(ops), changed=False)
    # Column by column, each in one tight pass: a key holds many calls, few of them raised.
    names = [op.op for op in ops]
    raised_at = [n for n, ret in enumerate(rets) if ret is None]
    if any(names[n] == "get" for n in raised_at):  # raised gets change nothing: dropped
        gone = {n for n in raised_at if names[n] == "get"}
        ops = [op for n, op in enumerate(ops) if n not in gone]
        rets = [op.ret for op in ops]
        names = [op.op for op in ops]
        raised_at = [n for n, ret in enumerate(rets) if ret is None]
    values = [op.value for op in ops]
    results = [op.result for op in ops]
    # The values of raised writes: only their observers and writers matter.
    written = {values[n] for n in raised_at if names[n] != "delete"}
    watched = written | {None}
    read_end: dict[object, float] = {}  # value (or None) -> latest get returning it
    first_read: dict[object, int] = {}  # value -> the get of it that returned first (index)
    ends = cast("list[int]", rets)  # read below only where a call returned
    reads = [n for n, name in enumerate(names) if name == "get" and results[n] in watched
             and rets[n] is not None]
    for n in sorted(reads, key=ends.__getitem__):
        read_end[results[n]] = ends[n]  # by return: the last one is the latest
        first_read.setdefault(results[n], n)
    creates = [n for n, name in enumerate(names) if name == "put_if_absent"
               and rets[n] is not None]
    told_false_end: float = max((ends[n] for n in creates if not results[n]), default=-1)
    absent_end: float = max((ends[n] for n in creates if results[n]), default=-1)
    writers: dict[object, set[tuple[str, int, int | None]]] = {value: set() for value in written}
    for n in [n for n, value in enumerate(values) if value in written]:
        writers[values[n]].add((names[n], ops[n].call, rets[n]))
    patched: list[tuple[Operation, bool] | None] = [(op, False) for op in ops]
    promoted: set[bytes] = set()
    for n in raised_at:
        name, op = names[n], ops[n]
        if name == "delete":
            continue
        value = op.value if op.value is not None else b""
        first = first_read.get(value)
        if (first is not None and value not in promoted and _only_writer(writers[value])
                and (rets[first] or 0) >= op.call):
            promoted.add(value)  # rule 3
            end = _applied_until(ops[first])
            patched[n] = (replace(op, ret=end,
                                  result=True if name == "put_if_absent" else None), False)
            if name == "put_if_absent":
                absent_end = max(absent_end, end)
            continue
        patched[n] = bounded = _bounded(op, _write_seen_until(value, read_end, told_false_end))
        if bounded is not None and name == "put_if_absent" and bounded[0].ret is not None:
            absent_end = max(absent_end, bounded[0].ret)
    # Every raised write is now dropped or bounded (its observers all returned), so every
    # observer of a delete has a return.
    for n in raised_at:
        if names[n] == "delete":
            patched[n] = _bounded(ops[n], _delete_seen_until(read_end, absent_end))
    kept = [call for call in patched if call is not None]
    return PatchedKey([op for op, _ in kept], [flag for _, flag in kept])
