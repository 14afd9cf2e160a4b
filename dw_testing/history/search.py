"""The search for a legal order of one key's calls (Wing & Gong, with Lowe's memo).

The sequential model of one key: the state is ``bytes | None`` (absent), starting absent.

* ``put(v)`` -> ``None``; state becomes ``v``
* ``put_if_absent(v)`` -> ``True`` and state ``v`` if the state is absent, else ``False``
* ``get()`` -> the state
* ``delete()`` -> ``None``; state becomes absent

:class:`KeyHistory` holds one key's calls, prepared once, and answers
:meth:`KeyHistory.place`: is there a legal order, respecting real time (``a`` precedes
``b`` iff ``a.ret < b.call``), of a sub-history that holds every *required* call and any of
the *optional* ones? With every call required that is linearizability; with a few required
and the rest optional it asks whether those calls can be placed together in the history.

An INDETERMINATE call (it raised) is always optional and never blocks another: it may take
effect at any point after its invocation, or not at all. A determinate optional call may be
left out ("skipped"); until it is placed or skipped it blocks calls invoked after it returned.

Speed: the calls that may go next are found from two cursors (the first pending call by
invocation, the first by return), so a step costs the number of calls in flight rather
than the length of the history; (placed-or-skipped set, state) pairs already seen are not
searched again.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Sequence
from operator import attrgetter

from dw_testing.history.budget import Meter
from dw_testing.history.events import Operation

PUT, CREATE, GET, DELETE = 0, 1, 2, 3
_KIND = {"put": PUT, "put_if_absent": CREATE, "get": GET, "delete": DELETE}
ABSENT = -1
NEVER = 1 << 62  # the response time of an indeterminate call
_UNKNOWN = -1  # the result of an indeterminate create
_CALL = attrgetter("call")
_FIELDS = attrgetter("op", "value", "result", "call", "ret")


class _Frame:
    """One level of the depth-first search."""

    __slots__ = ("left", "low", "mask", "options", "placed", "position", "rp", "state",
                 "taken")

    def __init__(self, mask: int, state: int, options: list[int], low: int, rp: int,
                 taken: int, left: int, placed: tuple[int, ...]) -> None:
        self.placed = placed  # pending calls placed from ``low`` on, in order
        self.mask = mask  # the raised calls placed, by ordinal
        self.left = left  # required calls not yet placed
        self.state = state
        self.options = options  # moves: 2 * i applies call i, 2 * i + 1 leaves it out
        self.position = 0
        self.low = low  # first pending determinate call, by invocation
        self.rp = rp  # first pending determinate call, by return (index into by_ret)
        self.taken = taken  # the move that led here


class KeyHistory:
    """One key's calls in invocation order, with their values as small integers.

    Indeterminate gets are dropped up front: they change nothing and match nothing.
    """

    def __init__(self, ops: Sequence[Operation], optional: Sequence[bool] = ()) -> None:
        if any(optional):
            order = sorted(range(len(ops)), key=list(map(_CALL, ops)).__getitem__)
            ordered = [ops[n] for n in order]
            flags = [optional[n] for n in order]
        else:
            ordered = sorted(ops, key=_CALL)
            flags = [False] * len(ordered)
        rows = list(map(_FIELDS, ordered))
        if any(row[4] is None and row[0] == "get" for row in rows):
            kept = [n for n, row in enumerate(rows) if not (row[4] is None and row[0] == "get")]
            ordered = [ordered[n] for n in kept]
            rows = [rows[n] for n in kept]
            flags = [flags[n] for n in kept]
        self.ops: list[Operation] = ordered
        names, values, answers, calls, returns = zip(*rows, strict=True) if rows else ((),) * 5
        ids: dict[bytes, int] = {}
        self.kinds = kinds = [_KIND[name] for name in names]
        # Only put and put_if_absent carry a value.
        self.args = [ABSENT if value is None else ids.setdefault(value, len(ids))
                     for value in values]
        # For get: the value id read. For put_if_absent: 1 (True), 0 (False), -1 (unknown).
        self.results = [
            _UNKNOWN if ret is None or (flag and answer is None)
            else ids.setdefault(answer, len(ids)) if answer.__class__ is bytes
            else ABSENT if kind == GET and answer is None
            else 1 if answer is True else 0
            for kind, answer, ret, flag in zip(kinds, answers, returns, flags, strict=True)]
        self.calls = list(calls)
        self.rets = rets = [NEVER if ret is None else ret for ret in returns]
        self.n = n = len(rows)
        self.all = (1 << n) - 1
        self.indeterminate = [i for i, ret in enumerate(returns) if ret is None]
        # Calls with an unknown result but a return (dw_testing.history.patch): they may be
        # left out, but while pending they block calls invoked after their return.
        self.bounded = [i for i, flag in enumerate(flags) if flag and returns[i] is not None]
        self.determinate = self.all
        for i in self.indeterminate + self.bounded:
            self.determinate &= ~(1 << i)
        self.by_ret = sorted(range(n), key=rets.__getitem__)
        if self.indeterminate:
            del self.by_ret[n - len(self.indeterminate):]  # NEVER sorts last
        self.twin = self._twins()

    def _twins(self) -> list[int]:
        """For each bounded call, the bounded call invoked last before it that does the same
        to the state and ends at the same stamp (-1: none).

        Such calls are interchangeable: swapping two of them in a legal order, the one
        invoked first going first, keeps it legal. So the search tries them in order of
        invocation, each only once the one before it is placed or left out. Writes of
        values no get returned count as one kind: they tell apart only present from
        absent (a put of such a value over a present one is never needed; see
        :mod:`dw_testing.history.patch`).
        """
        twin = [-1] * self.n
        if not self.bounded:
            return twin
        read = {self.results[i] for i in range(self.n)
                if self.kinds[i] == GET and self.rets[i] != NEVER}
        last: dict[tuple[int, int, int], int] = {}
        for i in self.bounded:
            kind, value = self.kinds[i], self.args[i]
            effect = (DELETE, ABSENT) if kind == DELETE else (
                (kind, value) if value in read else (PUT, -3))
            group = (*effect, self.rets[i])
            twin[i] = last.get(group, -1)
            last[group] = i
        return twin

    def mask(self, indices: Sequence[int] | set[int]) -> int:
        out = 0
        for i in indices:
            out |= 1 << i
        return out

    def writes(self, i: int) -> bool:
        """Whether call ``i`` may leave its value: a put, or a create not told False."""
        kind = self.kinds[i]
        return kind == PUT or (kind == CREATE and self.results[i] != 0)

    def unwritten_reads(self) -> list[int]:
        """Gets that read a value no call wrote before the get returned.

        Such a get has no legal place in any sub-history: the check needs no search.
        """
        first_write: dict[int, int] = {}
        for i in range(self.n):
            if self.writes(i):
                first_write.setdefault(self.args[i], self.calls[i])
        return [i for i in range(self.n)
                if self.kinds[i] == GET and self.results[i] != ABSENT
                and self.rets[i] != NEVER
                and first_write.get(self.results[i], NEVER) > self.rets[i]]

    def placeless(self) -> list[int]:
        """The calls with no legal place in any sub-history, in invocation order.

        Every other call fits alone or after one write: from the empty state a put, a
        delete, a create told True and a get of nothing fit; a get of ``v`` fits after any
        write of ``v`` invoked before the get returned; a create told False after any write.
        So these are exactly the reads of a value nobody wrote in time, and the creates
        told False with no write invoked before they returned.
        """
        unwritten = set(self.unwritten_reads())
        first_any = min((self.calls[i] for i in range(self.n) if self.writes(i)), default=NEVER)
        return [i for i in range(self.n)
                if i in unwritten or (self.kinds[i] == CREATE and self.results[i] == 0
                                      and first_any > self.rets[i])]

    def _step(self, i: int, state: int) -> int:
        """The state after call ``i``, or -2 when the call is illegal there."""
        kind = self.kinds[i]
        if kind == PUT:
            return self.args[i]
        if kind == DELETE:
            return ABSENT
        if kind == GET:
            return state if self.results[i] == state else -2
        outcome = self.results[i]
        if outcome == 0:
            return state if state != ABSENT else -2
        # True, or indeterminate: applying it where it changes nothing equals omitting it.
        return self.args[i] if state == ABSENT else -2

    def greedy(self, meter: Meter) -> bool:
        """One quick pass over the whole history: at each point take a read that matches
        the state, else the likeliest legal write; apply an indeterminate call only when
        that makes a pending call legal.

        True means linearizable (the pass is a legal order). False means only that the
        pass got stuck: run :meth:`place`. Most keys of a healthy history pass here. Each
        call looked at costs a step of ``meter``'s budget, as in the search.
        """
        calls, rets, by_ret, n = self.calls, self.rets, self.by_ret, self.n
        kinds, args, results, step = self.kinds, self.args, self.results, self._step
        done = bytearray(n)  # placed, or indeterminate (those are looked at apart)
        for i in self.indeterminate:
            done[i] = 1
        for i in self.bounded:  # optional too: looked at apart, like raised calls
            done[i] = 1
        optional = sorted(self.indeterminate + self.bounded)
        latest_call = -1  # a bounded call may not go after a call invoked after its return
        applied: set[int] = set()
        state = ABSENT
        low = rp = 0
        remaining = len(by_ret) - len(self.bounded)
        looked = 0
        reads = [i for i in range(n) if kinds[i] == GET and not done[i]]
        next_read = 0
        while remaining:
            while done[by_ret[rp]]:
                rp += 1
            earliest = rets[by_ret[rp]]
            while done[low]:
                low += 1
            while next_read < len(reads) and done[reads[next_read]]:
                next_read += 1
            wanted = results[reads[next_read]] if next_read < len(reads) else -3
            chosen = -1
            after = state
            best: tuple[bool, bool, int] = (True, True, NEVER)
            i = low
            while i < n and calls[i] <= earliest:
                looked += 1
                if not done[i]:
                    kind = kinds[i]  # the model's step, inlined: this loop is the hot path
                    if kind == GET:
                        if results[i] == state:
                            chosen, after = i, state
                            break
                    else:
                        if kind == PUT:
                            value = args[i]
                        elif kind == DELETE:
                            value = ABSENT
                        elif results[i] == 0:
                            value = -2 if state == ABSENT else state
                        else:
                            value = args[i] if state == ABSENT else -2
                        if value != -2:
                            # Rank the writes that may go: a winning create first (only
                            # an empty key lets it win), then writes whose value the next
                            # read does not want, then the one that must end soonest.
                            rank = (kind != CREATE or value == state, value == wanted,
                                    rets[i])
                            if chosen < 0 or rank < best:
                                chosen, after, best = i, value, rank
                i += 1
            if chosen >= 0:
                state = after
                done[chosen] = 1
                remaining -= 1
                latest_call = max(latest_call, calls[chosen])
                continue
            for j in optional:
                if calls[j] > earliest:
                    meter.spend(looked)
                    return False
                after = (-2 if j in applied or rets[j] < latest_call
                         else step(j, state))
                if after not in (-2, state) and self._unblocks(after, done, low, earliest):
                    applied.add(j)
                    state = after
                    latest_call = max(latest_call, calls[j])
                    break
            else:
                meter.spend(looked)
                return False
        meter.spend(looked)
        return True

    def _unblocks(self, state: int, done: bytearray, low: int, earliest: int) -> bool:
        i = low
        while i < self.n and self.calls[i] <= earliest:
            if not done[i] and self._step(i, state) != -2:
                return True
            i += 1
        return False

    def place(self, meter: Meter, *, required: int | None = None, include: int | None = None,
              starts: Sequence[int] = (ABSENT,), witness: list[int] | None = None,
              progress: list[int] | None = None) -> bool:
        """Whether the calls in ``required`` can be placed in one legal order of a
        sub-history of ``include`` (default: all calls, all determinate ones required),
        starting from one of the states ``starts`` (value ids, or ``ABSENT``).

        Calls outside ``include`` are left out; determinate calls in ``include`` but not in
        ``required`` may be left out. On success ``witness`` (if given) receives the start
        state used, then the calls applied, in order. ``progress`` (if given) receives the
        most calls, taken in order of return, that one legal order placed: when the search
        fails, the call after them is where every order broke down. Raises
        :class:`~dw_testing.history.budget.OutOfBudget`.
        """
        include = self.all if include is None else include
        required = (self.determinate if required is None else required) & include
        if required == 0:
            if witness is not None:
                witness[:] = [starts[0]]
            return True
        calls, rets, by_ret, n, twin = self.calls, self.rets, self.by_ret, self.n, self.twin
        indeterminate = [i for i in self.indeterminate if include >> i & 1]
        ordinal = {i: k for k, i in enumerate(indeterminate)}
        step = self._step
        # Membership tests run on byte arrays: shifting a mask of a thousand calls costs
        # as much as copying it. ``done`` always matches the top frame's placed set.
        done = bytearray(n)
        pending = bytearray(n)  # determinate and not done: what blocks and what may go
        optional = bytearray(n)
        needed = bytearray(n)
        readonly = bytearray(
            kind == GET or (kind == CREATE and result == 0)
            for kind, result in zip(self.kinds, self.results, strict=True))
        left = 0
        for i in range(n):
            if not include >> i & 1:
                done[i] = 1
            elif rets[i] != NEVER:
                pending[i] = 1
                optional[i] = not required >> i & 1
            if required >> i & 1:
                needed[i] = 1
                left += 1

        def moves(low: int, rp: int, state: int) -> tuple[list[int], int]:
            """(moves, rp): a move is ``2 * i`` (apply i) or ``2 * i + 1`` (skip i).

            A pending call that never changes the state (a get, a create told False) and
            is legal now goes first, alone: placing it now, not later, keeps any legal
            order legal (every call it must follow is placed already, and the calls it
            passes see the same state).
            """
            while rp < len(by_ret) and done[by_ret[rp]]:
                rp += 1
            earliest = rets[by_ret[rp]] if rp < len(by_ret) else NEVER
            found: list[int] = []
            i = low
            while i < n and calls[i] <= earliest:
                if not done[i] and pending[i] and (twin[i] < 0 or done[twin[i]]):
                    if readonly[i] and step(i, state) == state:
                        return [2 * i], rp
                    found.append(2 * i)
                    if optional[i]:
                        found.append(2 * i + 1)
                i += 1
            for i in indeterminate:
                if calls[i] > earliest:
                    break
                if not done[i]:
                    found.append(2 * i)
            return found, rp

        stack: list[_Frame] = []
        spent = 0
        pending_starts = list(starts)
        furthest = 0
        # The memo: a placed set is every pending call before ``low`` (the first pending
        # call not placed), the raised calls placed (a mask over their ordinals) and the
        # pending calls placed from ``low`` on, all invoked by the earliest pending return:
        # (state, low, raised mask, those calls) names it exactly, for the cost of the
        # calls in flight.
        seen: set[tuple[int, int, int, tuple[int, ...]]] = set()
        while stack or pending_starts:
            if not stack:
                begin = pending_starts.pop(0)
                low0 = 0
                while low0 < n and not (pending[low0] and not done[low0]):
                    low0 += 1
                first, rp0 = moves(low0, 0, begin)
                furthest = max(furthest, rp0)
                stack.append(_Frame(0, begin, first, low0, rp0, -1, left, ()))
            frame = stack[-1]
            raised, state, options = frame.mask, frame.state, frame.options
            descended = False
            while frame.position < len(options):
                move = options[frame.position]
                frame.position += 1
                spent += 1
                i = move >> 1
                after = state if move & 1 else step(i, state)
                if after == -2:
                    continue
                remaining = frame.left - needed[i]
                if remaining == 0:
                    meter.spend(spent)
                    if witness is not None:
                        taken = [f.taken for f in stack[1:]] + [move]
                        witness[:] = [stack[0].state, *(m >> 1 for m in taken if not m & 1)]
                    return True
                done[i] = 1
                low = frame.low
                if pending[i]:
                    next_raised = raised
                    placed = list(frame.placed)
                    insort(placed, i)
                    while low < n and not (pending[low] and not done[low]):
                        low += 1
                    if placed[0] < low:
                        placed = [j for j in placed if j >= low]
                else:
                    next_raised = raised | 1 << ordinal[i]
                    placed = frame.placed  # type: ignore[assignment]
                key = (after, low, next_raised, tuple(placed))
                if key in seen:
                    done[i] = 0
                    continue
                seen.add(key)
                found, next_rp = moves(low, frame.rp, after)
                furthest = max(furthest, next_rp)
                stack.append(_Frame(next_raised, after, found, low, next_rp, move,
                                    remaining, key[3]))
                descended = True
                break
            if spent >= 256:
                meter.spend(spent)
                spent = 0
            if not descended:
                stack.pop()
                if frame.taken >= 0:
                    done[frame.taken >> 1] = 0
        meter.spend(spent)
        if progress is not None:
            progress[:] = [furthest]
        return False
