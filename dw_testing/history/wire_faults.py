"""Which recorded call met which fault on the wire, and what that leaves the checker to judge.

A :class:`~dw_testing.kit.fault_proxy.FaultProxy` stamps each fault it plays with
``time.monotonic_ns``, the clock the recorder stamps calls with. A call *met* a fault that
struck between its invocation and its return (or after its invocation, for a call that never
returned); with calls running at once, every call in flight at that moment met it, which can
only excuse a call, never accuse one.

A call that met a fault after which the server may have acted (a lost or cut reply) may
have been retried by its client, and a retried create may answer ``False`` to its own writer
(C-LOST-1): the checker takes such a call as indeterminate. A retried write may also have
applied once per attempt (a delete by another caller between two attempts lets a retried
create win twice), so the checker sees a write that met such faults once per attempt it
may have made: one more for each kind of lost or cut reply it met. A call that met only a reset
before its request was forwarded, or a blackhole, is held to the whole contract: the server
never saw that attempt.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Protocol

from dw_testing.history.events import Operation
from dw_testing.kit.fault_proxy import AMBIGUOUS_FAULTS


class StampedFault(Protocol):
    @property
    def kind(self) -> str: ...

    @property
    def stamp(self) -> int: ...


def attribute_faults(history: Iterable[Operation],
                     events: Sequence[StampedFault]) -> list[Operation]:
    """``history`` with each call's ``fault`` naming the kinds that struck while it ran."""
    stamped = sorted(events, key=lambda event: event.stamp)
    marked: list[Operation] = []
    for op in history:
        end = op.ret
        kinds = sorted({e.kind for e in stamped
                        if e.stamp >= op.call and (end is None or e.stamp <= end)})
        marked.append(replace(op, fault=",".join(kinds)) if kinds else op)
    return marked


def is_ambiguous(op: Operation) -> bool:
    """The call met a fault after which the server may have acted on it."""
    return op.fault is not None and any(kind in AMBIGUOUS_FAULTS
                                        for kind in op.fault.split(","))


def as_judged(op: Operation) -> Operation:
    """What the checker holds the call to: a call that met a lost or cut reply is
    indeterminate (it may have applied; its answer proves nothing), others as recorded."""
    if op.ret is None or not is_ambiguous(op):
        return op
    return replace(op, result=None, ret=None)


def judged(history: Iterable[Operation]) -> Iterator[Operation]:
    """The calls as the checker holds them: :func:`as_judged`, and a write that met a lost or
    cut reply once more per such kind it met (each retry may have applied again)."""
    for op in history:
        if op.fault is None:  # most calls met no fault
            yield op
            continue
        held = as_judged(op)
        yield held
        if held is not op and op.op != "get" and op.fault is not None:
            retries = sum(kind in AMBIGUOUS_FAULTS for kind in op.fault.split(","))
            for _ in range(retries):
                yield held
