"""The verdict of one key by a sweep in time order over the set of reachable configurations.

This is just-in-time linearization (Lowe; Knossos's "linear" checker): walk the key's
invocations and returns in real-time order, keeping every *configuration* a legal prefix of
a linearization can be in: the state of the key, which of the calls in flight are already
linearized, and when a blind write (a put or a delete) was last linearized. A call is
linearized only when it must be, at its own return: there every configuration that has not
linearized it yet places it, after any sequence of other calls in flight. The set of
configurations is deduplicated, so a step costs about the number of configurations (a
handful), not the number of calls of the key.

Three reductions keep the sets small; each keeps every verdict (the property tests compare
this sweep with a brute-force checker over every order, violations included):

* **Reads go at once.** A call that never changes the state (a get, a create told False) is
  linearized as soon as the state lets it: at its invocation, or right after the write that
  makes it legal. Any legal order stays legal with the read moved there (every call it must
  follow is placed, the calls it passes see the same state).
* **Overwritten writes are absorbed.** A blind write placed right before another blind write
  leaves nothing anyone sees. So a sequence never places a blind write right before another
  one; instead, at its return a blind write still pending may be *absorbed* when some blind
  write was linearized since its invocation (it could have gone right before that one).
* **Quiet moments are free.** With no call in flight a configuration is only a state; equal
  ones merge.

Calls with unknown results (``dw_testing.history.patch``: raised calls, and bounded ones)
are optional: at their return (if any) a configuration may also leave them out.
"""

from __future__ import annotations

from bisect import insort

from dw_testing.history.budget import Meter
from dw_testing.history.search import ABSENT, CREATE, DELETE, GET, NEVER, PUT, KeyHistory

_ILLEGAL = -2
_SPEND_EVERY = 256


def sweep(history: KeyHistory, meter: Meter, *, progress: list[int] | None = None) -> bool:
    """Whether the key's calls have a legal order (every determinate call in it; calls with
    unknown results may be left out). On False, ``progress`` (if given) receives how many
    calls, in order of return (``history.by_ret``), every configuration got past: the next
    one is where every order broke down. Raises
    :class:`~dw_testing.history.budget.OutOfBudget`."""
    n = history.n
    if n == 0:
        return True
    calls, rets = history.calls, history.rets
    optional = bytearray(n)
    for i in history.indeterminate:
        optional[i] = 1
    for i in history.bounded:
        optional[i] = 1
    # Values no get returned are alike to every call: they tell only present from absent.
    results = list(history.results)
    read = {results[i] for i in range(n) if history.kinds[i] == GET}
    unread = max(history.args + results + [1]) + 1
    args = [arg if arg == ABSENT or arg in read else unread for arg in history.args]
    kinds = list(history.kinds)
    for i in range(n):
        if optional[i] and kinds[i] == PUT and args[i] == unread:
            # Over a present state it only hides a value some get may want: never needed,
            # so it is a create of an unread value.
            kinds[i], results[i] = CREATE, -1
    # Calls with unknown results in flight, by effect, the latest to return first: of
    # those doing the same, placing the one that ends last is never worse (it could stand
    # wherever another could).
    alike: dict[tuple[int, int], list[tuple[int, int]]] = {}
    sure: dict[tuple[int, int], int] = {}  # writes that must apply in flight, by effect
    creates = 0  # slots of creates in flight that may write (told True, or not told)
    # Events in real-time order: an invocation before a return at the same stamp (touching
    # intervals overlap). Returns in the order of ``by_ret``.
    events = sorted([(calls[i], 0, i) for i in range(n)]
                    + [(rets[i], 1, i) for i in history.by_ret])
    # A configuration is an int key ``linearized << shift | (state + 1)`` mapped to the event
    # index at which a blind write was last linearized (the larger the better).
    shift = (unread + 2).bit_length()
    low = (1 << shift) - 1
    configs: dict[int, int] = {0 << shift | (ABSENT + 1): -1}
    slot_of = [0] * n
    free: list[int] = []
    slots = 0
    call_at: dict[int, int] = {}  # slot -> call in flight there
    reads_of: dict[int, int] = {}  # state -> slots of gets in flight that read it
    told_false = 0  # slots of creates told False in flight (they read "present")
    writes = 0  # slots of calls in flight that may change the state
    maybe = 0  # slots of calls in flight with unknown results (they may be left out)
    blinds: dict[int, int] = {}  # blind writes in flight (bit << shift) -> invoked at event
    invoked_at = [0] * n
    returned = 0
    spent = 0
    for index, (_, is_return, i) in enumerate(events):
        kind = kinds[i]
        if not is_return:
            if free:
                slot = free.pop()
            else:
                slot = slots
                slots += 1
            bit = 1 << slot
            slot_of[i] = slot
            call_at[slot] = i
            invoked_at[i] = index
            if kind == GET:
                wanted = results[i]
                reads_of[wanted] = reads_of.get(wanted, 0) | bit
                spent += len(configs)
                configs = {(key | (bit << shift) if (key & low) - 1 == wanted else key): last
                           for key, last in configs.items()}
            elif kind == CREATE and results[i] == 0:
                told_false |= bit
                spent += len(configs)
                configs = {(key | (bit << shift) if key & low else key): last
                           for key, last in configs.items()}
            else:
                writes |= bit
                if kind == CREATE:
                    creates |= bit
                elif not optional[i]:
                    blinds[bit << shift] = index
                if not optional[i]:
                    effect = (kind, args[i])
                    sure[effect] = sure.get(effect, 0) | bit
            if optional[i]:
                maybe |= bit
                insort(alike.setdefault((kind, args[i]), []), (-rets[i], slot))
            continue
        slot = slot_of[i]
        bit = 1 << slot
        clear = ~(bit << shift)
        blind = kind in (PUT, DELETE)
        may_skip = optional[i]
        started = invoked_at[i]
        after: dict[int, int] = {}
        seen: dict[tuple[int, int, bool], list[tuple[int, int]]] = {}
        for key, last in configs.items():
            spent += 1
            if key >> shift & bit:
                key &= clear
                if after.get(key, -2) < last:
                    after[key] = last
                continue
            # Left out (its result is unknown), or absorbed by a later blind write.
            if (may_skip or (blind and last > started)) and after.get(key, -2) < last:
                after[key] = last
            spent += _place(i, bit, key >> shift, (key & low) - 1, last, index, after,
                            shift, clear, kinds, args, results, call_at, writes, reads_of,
                            told_false, maybe, creates, alike, sure, rets, seen)
        if kind == GET:
            wanted = results[i]
            left = reads_of[wanted] & ~bit
            if left:
                reads_of[wanted] = left
            else:
                del reads_of[wanted]
        elif kind == CREATE and results[i] == 0:
            told_false &= ~bit
        else:
            writes &= ~bit
            creates &= ~bit
            if not optional[i]:
                effect = (kind, args[i])
                left = sure[effect] & ~bit
                if left:
                    sure[effect] = left
                else:
                    del sure[effect]
            blinds.pop(bit << shift, None)
        if optional[i]:
            maybe &= ~bit
            same = alike[kind, args[i]]
            same.remove((-rets[i], slot))
            if not same:
                del alike[kind, args[i]]
        if rets[i] != NEVER:
            del call_at[slot]
            free.append(slot)
        if not after:
            meter.spend(spent)
            if progress is not None:
                progress[:] = [returned]
            return False
        if len(after) > 1 and (maybe or blinds):
            after = _dominant(after, low, maybe << shift, blinds)
        configs = after
        returned += 1
        if spent >= _SPEND_EVERY:
            meter.spend(spent)
            spent = 0
    meter.spend(spent)
    return True


def _dominant(configs: dict[int, int], low: int, maybe: int,
              blinds: dict[int, int]) -> dict[int, int]:
    """``configs`` without those another one dominates. ``b`` dominates ``a`` when they
    have the same state, ``b`` placed a subset of what ``a`` placed, its last blind write is
    no earlier, and each call ``a`` placed beyond it is one ``b`` may still leave out (a
    call with an unknown result) or absorb at its return (a blind write invoked before
    ``b``'s last blind write): whatever ``a`` does next, ``b`` can do too."""
    groups: dict[int, list[tuple[int, int, int]]] = {}
    for key, last in configs.items():
        groups.setdefault(key & low, []).append(((key & ~low).bit_count(), key, last))
    kept: dict[int, int] = {}
    for members in groups.values():
        if len(members) == 1:
            kept[members[0][1]] = members[0][2]
            continue
        members.sort()
        best: list[tuple[int, int, int]] = []
        for _, key, last in members:
            if not any(other & ~key == 0 and key & ~other & ~spare == 0 and other_last >= last
                       for other, other_last, spare in best):
                spare = maybe
                for bit, invoked in blinds.items():
                    if invoked < last:
                        spare |= bit
                best.append((key, last, spare))
                kept[key] = last
    return kept


def _effect(kind: int, arg: int, result: int, state: int) -> int:
    """The state after a call that may change it, or ``_ILLEGAL``."""
    if kind == PUT:
        return arg
    if kind == DELETE:
        return ABSENT
    # A create told True, or with an unknown result: applied where it changes nothing is
    # the same as left out.
    return arg if state == ABSENT and result != 0 else _ILLEGAL


def _place(c: int, c_bit: int, linearized: int, state: int, last: int, index: int,
           after: dict[int, int], shift: int, clear: int, kinds: list[int], args: list[int],
           results: list[int], call_at: dict[int, int], writes: int,
           reads_of: dict[int, int], told_false: int, maybe: int, creates: int,
           alike: dict[tuple[int, int], list[tuple[int, int]]],
           sure: dict[tuple[int, int], int], rets: list[int],
           seen: dict[tuple[int, int, bool], list[tuple[int, int]]]) -> int:
    """Add to ``after`` every configuration reached by placing call ``c`` (on its return)
    after a sequence of other calls in flight; return the steps spent.

    ``seen`` holds the nodes met at this return, from every configuration, by what they
    placed that must be placed, their state and whether they are bare, each with the calls
    that may be left out they placed and their last blind write: a node that placed more of
    those, with no later blind write, is outdone and not searched."""
    c_kind = kinds[c]
    c_blind = c_kind in (PUT, DELETE)
    c_reads = c_kind == GET or (c_kind == CREATE and results[c] == 0)
    # (linearized, state, last blind, a blind write was just placed and nothing read it)
    todo = [(linearized, state, last, False)]
    extra = linearized & maybe
    known = seen.setdefault((linearized & ~maybe, state, False), [])
    if any(other & ~extra == 0 and other_last >= last for other, other_last in known):
        return 1  # a configuration placed before this one outdoes it
    known.append((extra, last))
    steps = 0
    while todo:
        lin, s, lb, bare = todo.pop()
        steps += 1
        # Place c here.
        if c_reads:
            legal = (results[c] == s) if c_kind == GET else s != ABSENT
            if legal:
                key = (lin << shift | (s + 1)) & clear
                if after.get(key, -2) < lb:
                    after[key] = lb
        elif not (bare and c_blind):
            s2 = _effect(c_kind, args[c], results[c], s)
            if s2 != _ILLEGAL:
                lin2 = lin | reads_of.get(s2, 0) | (told_false if s2 != ABSENT else 0)
                lb2 = index if c_blind else lb
                key = (lin2 << shift | (s2 + 1)) & clear
                if after.get(key, -2) < lb2:
                    after[key] = lb2
        # Or place another write in flight first.
        unplaced = ~lin & ~c_bit
        pending = writes & ~maybe & unplaced
        for (o_kind, value), same in alike.items():
            if (o_kind == CREATE and s != ABSENT) or (o_kind == PUT and value == s):
                continue
            for end, slot in same:
                o_bit = 1 << slot
                if o_bit & unplaced:
                    twin = sure.get((o_kind, value), 0) & unplaced
                    while twin:
                        d_bit = twin & -twin
                        twin ^= d_bit
                        if rets[call_at[d_bit.bit_length() - 1]] <= -end:
                            # A call that must apply does the same and ends no later:
                            # place it instead (they may swap in any legal order).
                            o_bit = 0
                            break
                    pending |= o_bit
                    break
        while pending:
            o_bit = pending & -pending
            pending ^= o_bit
            o = call_at[o_bit.bit_length() - 1]
            o_kind = kinds[o]
            o_blind = o_kind in (PUT, DELETE)
            if bare and o_blind:
                continue  # it would overwrite a write nobody saw: absorbed instead
            s3 = _effect(o_kind, args[o], results[o], s)
            if s3 == _ILLEGAL:
                continue
            if o_bit & maybe and not (
                    (reads_of.get(s3, 0) | (told_false if s3 != ABSENT else creates)) & unplaced
                    or (c_reads and s3 == results[c] if c_kind == GET else
                        (c_reads and s3 != ABSENT) or (c_kind == CREATE and s3 == ABSENT))):
                # A call that may be left out is placed only to let the next call go.
                continue
            seen_now = (reads_of.get(s3, 0) | (told_false if s3 != ABSENT else 0)) & ~c_bit
            lin3 = lin | o_bit | seen_now
            lb3 = index if o_blind else lb
            bare3 = o_blind and not (seen_now & ~lin)
            extra = lin3 & maybe
            known = seen.setdefault((lin3 & ~maybe, s3, bare3), [])
            if not any(other & ~extra == 0 and other_last >= lb3 for other, other_last in known):
                known.append((extra, lb3))
                todo.append((lin3, s3, lb3, bare3))
    return steps
