"""The first pass over one key: a legal order built in one sweep through time, or none.

Most keys of a healthy history need no search at all. This pass walks the calls in order of
invocation and builds one legal order as it goes (Lowe's just-in-time linearization, with
one configuration instead of a set), keeping three promises:

* before a call is invoked, every call that returned earlier is in the order (a call whose
  result is unknown may instead be left out); a call goes in only after it was invoked,
  and only where the model of one key allows it;
* a get, or a create told False, goes in as soon as the state lets it (placing such a call
  early never makes a legal order illegal: it changes nothing);
* a write goes in when it must (a call invoked after its return comes next), or earlier
  when a read about to return needs its value.

What is left to choose is the order of the writes that are due together, and whether a
write still in flight goes before them. The pass tries the likeliest order first (the write
leaving what the next call wants goes last) and remembers the others: when a later call
finds no place, it goes back to the latest choice with orders left, within a bound of about
one more pass over the key. Past that bound it gives up (``None``) and the checker searches
(:mod:`dw_testing.history.search`, :mod:`dw_testing.history.sweep`). So ``None`` never means
a violation, and an order returned is always legal: ``tests/history/test_history_settle.py``
replays every order it returns with a checker of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import islice, permutations
from typing import cast

from dw_testing.history.events import Operation

PUT, CREATE, GET, DELETE = 0, 1, 2, 3
_KIND = {"put": PUT, "put_if_absent": CREATE, "get": GET, "delete": DELETE}
_READS = -1  # in an order of writes: the waiting reads get their values here
_ANY = object()  # the next call wants no particular state
_PRESENT = object()  # the next call wants some value, whichever
_ORDERS = 24  # orders of the writes due together that one choice may try
_GOING_BACK = 1  # calls invoked again after going back, per call of the key (settled keys
# of the benchmark used under a tenth of that)
_NEVER = 1 << 62  # the return of a call that raised: never due
_CHOICES_KEPT = 256  # choices remembered; older ones are forgotten in halves


def _fits(after: bytes | None, wanted: object) -> bool:
    """Whether a write leaving ``after`` gives the state ``wanted``."""
    return after is not None if wanted is _PRESENT else after == wanted


def _is_read(kind: int, result: object) -> bool:
    """A get, or a create told False: a call that changes nothing."""
    return kind == GET or (kind == CREATE and result is False)


class _Stuck(Exception):
    """No order this pass may try fits: the checker searches instead."""


class _Hopeless(_Stuck):
    """A get returned a value no call of the key writes: no order fits, so none is
    tried (the checker's own test of such reads names it)."""


@dataclass
class Columns:
    """One key's calls, and what this pass reads of each, column by column."""

    ops: list[Operation] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    values: list[bytes | None] = field(default_factory=list)
    results: list[bool | bytes | None] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)
    rets: list[int | None] = field(default_factory=list)

    @classmethod
    def of(cls, ops: Sequence[Operation]) -> Columns:
        return cls(list(ops), [op.op for op in ops], [op.value for op in ops],
                   [op.result for op in ops], [op.call for op in ops], [op.ret for op in ops])


def settle(ops: Sequence[Operation], optional: Sequence[bool] = (),
           columns: Columns | None = None) -> list[int] | None:
    """A legal order of the calls, as indices into ``ops``, or ``None`` when this pass
    found none. Calls that raised, and those flagged ``optional``, appear only if placed.
    ``columns`` (of ``ops``, if the caller has them) saves reading every call again."""
    try:
        return _Pass(columns or Columns.of(ops), optional).run()
    except _Stuck:
        return None


class _Choice:
    """A flush with orders left to try, and what the pass held before it."""

    __slots__ = ("due", "next", "orders", "placed", "position", "readers", "rp", "skipped",
                 "state", "told_false", "unsure", "writes")

    def __init__(self, run: _Pass, position: int, rp: int, due: list[int],
                 orders: list[tuple[int, ...]]) -> None:
        self.position, self.rp, self.due, self.orders, self.next = position, rp, due, orders, 1
        # Calls placed or left out since are undone by trail; what is in flight is copied.
        self.placed, self.skipped = len(run.order), len(run.skipped)
        self.readers = {state: list(reads) for state, reads in run.readers.items()}
        self.told_false = list(run.told_false)
        self.writes = list(run.writes)
        self.unsure = list(run.unsure)
        self.state = run.state

    def restore(self, run: _Pass) -> None:
        done = run.done
        for trail, kept in ((run.order, self.placed), (run.skipped, self.skipped)):
            for i in trail[kept:]:
                done[i] = 0
            del trail[kept:]
        run.readers = {state: list(reads) for state, reads in self.readers.items()}
        run.told_false = list(self.told_false)
        run.writes = list(self.writes)
        run.unsure = list(self.unsure)
        run.state = self.state


class _Pass:
    __slots__ = ("args", "by_call", "by_ret", "calls", "done", "kinds", "maybe", "n",
                 "order", "readers", "results", "rets", "skipped", "state", "told_false",
                 "unsure", "values_written", "writes")

    def __init__(self, columns: Columns, optional: Sequence[bool]) -> None:
        self.n = n = len(columns.ops)
        self.kinds: list[int] = list(map(_KIND.__getitem__, columns.names))
        self.args = columns.values
        self.results: list[object] = columns.results  # type: ignore[assignment]
        self.calls = calls = columns.calls
        ends = columns.rets
        # A call that may be left out: it raised, or patch bounded it with no result.
        maybe = [False] * n
        returned: Sequence[int] = range(n)
        if None in ends:
            maybe = [end is None for end in ends]
            returned = [i for i in range(n) if not maybe[i]]
            ends = [_NEVER if end is None else end for end in ends]
        self.rets = rets = cast("list[int]", ends)
        if optional:
            maybe = [a or b for a, b in zip(maybe, optional, strict=True)]
        self.maybe = maybe
        self.by_ret = sorted(returned, key=rets.__getitem__)
        self.by_call: Sequence[int] = (range(n) if calls == sorted(calls)
                                       else sorted(range(n), key=calls.__getitem__))
        self.done = bytearray(n)
        self.order: list[int] = []  # placed, in order
        self.skipped: list[int] = []  # left out: a read that raised, an unneeded unknown call
        # Calls in flight, not placed: reads by the state they wait for, and writes.
        self.readers: dict[object, list[int]] = {}
        self.told_false: list[int] = []  # creates told False: they wait for any value
        self.writes: list[int] = []  # results known: each must go in
        self.unsure: list[int] = []  # results unknown: each may be left out
        self.state: bytes | None = None
        self.values_written: set[bytes | None] | None = None  # see written()

    def run(self) -> list[int]:
        """The order; raises :class:`_Stuck`."""
        kinds, results, calls, maybe, done, order = (
            self.kinds, self.results, self.calls, self.maybe, self.done, self.order)
        rets = self.rets
        by_ret, by_call, n = self.by_ret, self.by_call, self.n
        choices: list[_Choice] = []
        work = _GOING_BACK * n + 1024  # calls invoked again, after going back
        position = rp = 0
        total = len(by_ret)
        resumed = False  # the flush before ``by_call[position]`` is done (after going back)
        while True:
            try:
                while True:
                    if resumed:
                        resumed = False
                    elif rp < total:
                        # Every call that returned before the next one was invoked goes in.
                        call = calls[by_call[position]] if position < n else rets[by_ret[-1]] + 1
                        if rets[by_ret[rp]] < call:
                            j = by_ret[rp]
                            rp += 1
                            if (rp == total or rets[by_ret[rp]] >= call) and not done[j] \
                                    and not maybe[j] and (
                                        kinds[j] == PUT or kinds[j] == DELETE or (
                                            kinds[j] == CREATE and results[j] is True
                                            and self.state is None)):
                                # The common case: one write is due, and it is legal now.
                                # The choices: a write still in flight may go first.
                                if len(self.writes) > 1:
                                    self.remember(choices, position, rp, [j],
                                                  self.before([j], (j,)))
                                self.apply(j)
                            else:
                                due = [] if done[j] else [j]
                                while rp < total and rets[by_ret[rp]] < call:
                                    if not done[by_ret[rp]]:
                                        due.append(by_ret[rp])
                                    rp += 1
                                if due:
                                    orders = self.orders(
                                        due, by_call[position] if position < n else -1)
                                    if len(orders) > 1:
                                        self.remember(choices, position, rp, due, orders)
                                    self.flush(due, orders[0])
                    if position == n:
                        return order
                    # Call ``i`` is invoked: a read the state allows goes in now.
                    i = by_call[position]
                    position += 1
                    kind = kinds[i]
                    if kind == GET:
                        if maybe[i]:
                            done[i] = 1  # a read that raised tells nothing
                            self.skipped.append(i)
                        elif results[i] == self.state:
                            done[i] = 1
                            order.append(i)
                        else:
                            self.readers.setdefault(results[i], []).append(i)
                    elif kind == CREATE and results[i] is False and not maybe[i]:
                        if self.state is not None:
                            done[i] = 1
                            order.append(i)
                        else:
                            self.told_false.append(i)
                    elif maybe[i]:
                        self.unsure.append(i)
                    else:
                        self.writes.append(i)
            except _Hopeless:
                raise
            except _Stuck:
                while True:
                    if not choices or work <= 0:
                        raise
                    choice = choices[-1]
                    if choice.next >= len(choice.orders):
                        choices.pop()
                        continue
                    work -= position - choice.position + 1
                    choice.restore(self)
                    writes = choice.orders[choice.next]
                    choice.next += 1
                    try:
                        self.flush(choice.due, writes)
                    except _Hopeless:
                        raise
                    except _Stuck:
                        continue
                    position, rp, resumed = choice.position, choice.rp, True
                    break

    def remember(self, choices: list[_Choice], position: int, rp: int, due: list[int],
                 orders: list[tuple[int, ...]]) -> None:
        if len(choices) >= _CHOICES_KEPT:
            del choices[:_CHOICES_KEPT // 2]
        choices.append(_Choice(self, position, rp, due, orders))

    def wants(self, j: int) -> object:
        """The state call ``j`` needs: a get its answer, a create told True absence
        (``None``), one told False ``_PRESENT``; any other call ``_ANY``."""
        kind, result = self.kinds[j], self.results[j]
        if kind == GET:
            return result
        if kind == CREATE and result is not None:
            return None if result else _PRESENT
        return _ANY

    def orders(self, due: list[int], upcoming: int) -> list[tuple[int, ...]]:
        """The orders to try for the determinate writes in ``due``, likeliest first: the
        write leaving what the next call wants goes last, and before it those whose value
        a waiting read wants; then each with a write still in flight first."""
        kinds, args, maybe, done = self.kinds, self.args, self.maybe, self.done
        wanted = self.wants(upcoming) if upcoming >= 0 else _ANY
        writes: list[tuple[int, bytes | None]] = []
        needed: list[object] = []  # what the waiting reads want
        for j in due:
            if done[j] or maybe[j]:
                continue
            if _is_read(kinds[j], self.results[j]):
                needed.append(self.wants(j))
            else:
                writes.append((j, None if kinds[j] == DELETE else args[j]))
        ranked = sorted(writes, key=lambda write: (
            _fits(write[1], wanted), any(_fits(write[1], want) for want in needed)))
        base = tuple(j for j, _ in ranked)
        found = [base] if len(base) < 2 else list(islice(permutations(base), _ORDERS))
        if needed:
            # The waiting reads may need their value before the due writes, not after.
            found.insert(1, (_READS, *base))
        return found + self.before(due, base)[1:]

    def before(self, due: list[int], base: tuple[int, ...]) -> list[tuple[int, ...]]:
        """``base``, then each write in flight before it, then all of them before it."""
        early = [w for w in self.writes if w not in due]
        found = [base, *((w, *base) for w in early)]
        if len(early) > 1:
            found.append((*early, *base))
        return found

    def flush(self, due: list[int], writes: tuple[int, ...]) -> None:
        """Place every determinate call in ``due``: the writes in the order given, each
        create told True after a delete in flight if the key holds a value; each read
        still waiting at ``_READS`` in that order, or at the end. Calls with unknown
        results that nothing needed are left out. Raises :class:`_Stuck`."""
        done, kinds = self.done, self.kinds
        for w in writes:
            if w == _READS:
                self.satisfy(due)
            elif not done[w]:  # else: placed as a helper before
                if kinds[w] == CREATE and self.state is not None:
                    self.apply(self.helper(None, due))  # a delete first
                self.apply(w)
        self.satisfy(due)
        for j in due:
            if not done[j]:
                done[j] = 1
                self.skipped.append(j)

    def satisfy(self, due: list[int]) -> None:
        """Each determinate read in ``due`` still waiting goes in after a write in flight
        that gives it its value. Raises :class:`_Stuck`."""
        done, maybe, kinds, results = self.done, self.maybe, self.kinds, self.results
        for j in due:
            if not _is_read(kinds[j], results[j]):
                continue
            while not done[j] and not maybe[j]:
                wanted = self.wants(j)
                try:
                    self.apply(self.helper(wanted, due))
                except _Stuck:
                    if wanted is None or wanted is _PRESENT or self.state is None:
                        raise
                    # Only a create gives the value, and the key holds another: a delete
                    # in flight, then the create.
                    create = self.helper(wanted, due, absent=True)
                    self.apply(self.helper(None, due))
                    self.apply(create)

    def helper(self, wanted: object, due: list[int], *, absent: bool = False) -> int:
        """A write in flight that leaves the state ``wanted`` (see :meth:`wants`), as if the
        key were absent if ``absent``: a due one first, then one that must go in anyway,
        then one whose result is unknown. Raises :class:`_Stuck`, or :class:`_Hopeless`
        when no call of the key writes the value wanted."""
        kinds, args, done = self.kinds, self.args, self.done
        self.unsure = [w for w in self.unsure if not done[w]]
        best, best_rank = -1, 3
        for rank_in_flight, writes in ((1, self.writes), (2, self.unsure)):
            for w in writes:
                wkind = kinds[w]
                if wkind == CREATE and self.state is not None and not absent:
                    continue
                if _fits(None if wkind == DELETE else args[w], wanted):
                    rank = 0 if w in due else rank_in_flight
                    if rank < best_rank:
                        best, best_rank = w, rank
        if best < 0:
            if wanted.__class__ is bytes and wanted not in self.written():
                raise _Hopeless
            raise _Stuck
        return best

    def written(self) -> set[bytes | None]:
        if self.values_written is None:
            kinds, args = self.kinds, self.args
            self.values_written = {args[w] for w in range(self.n) if kinds[w] != DELETE}
        return self.values_written

    def apply(self, w: int) -> None:
        """Place write ``w``, then every read in flight that the new state allows."""
        done, order = self.done, self.order
        done[w] = 1
        order.append(w)
        (self.unsure if self.maybe[w] else self.writes).remove(w)
        self.state = state = None if self.kinds[w] == DELETE else self.args[w]
        waiting = self.readers.pop(state, None)
        if waiting:
            for r in waiting:
                if not done[r]:
                    done[r] = 1
                    order.append(r)
        if state is not None and self.told_false:
            for r in self.told_false:
                if not done[r]:
                    done[r] = 1
                    order.append(r)
            self.told_false.clear()
