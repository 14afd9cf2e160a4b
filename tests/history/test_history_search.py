"""The quick paths (a greedy pass, the pruning of reads nobody wrote) never change a verdict:
on larger random histories, some with one answer changed, they agree with the plain search."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from dw_testing.history.budget import Budget, Meter
from dw_testing.history.checker import check_history, partition_by_key
from dw_testing.history.events import Operation
from dw_testing.history.explain import window
from dw_testing.history.generate import simulated_history
from dw_testing.history.search import KeyHistory

UNLIMITED = Budget(max_steps=None, max_seconds=None)


def searched(history: list[Operation]) -> str:
    """The verdict of the plain search alone, key by key."""
    for ops in partition_by_key(history).values():
        if not KeyHistory(ops).place(Meter(UNLIMITED)):
            return "violation"
    return "ok"


def changed(history: list[Operation], rng: random.Random) -> list[Operation]:
    """One answer changed: a create's result flipped, or a read sees another value."""
    answered = [i for i, op in enumerate(history)
                if op.op in ("get", "put_if_absent") and op.ret is not None]
    if not answered:
        return history
    i = rng.choice(answered)
    op = history[i]
    if op.op == "put_if_absent":
        result: bool | bytes | None = not op.result
    else:
        written = [o.value for o in history if o.key == op.key and o.value is not None]
        result = rng.choice([None, b"never-written", *written])
    history = list(history)
    history[i] = Operation(op.process, op.op, op.key, op.value, result, op.call, op.ret)
    return history


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 8), st.integers(1, 10), st.floats(0.0, 0.2),
       st.booleans())
def test_quick_paths_agree_with_the_plain_search(seed: int, processes: int, overlap: int,
                                                 indeterminate: float, change: bool) -> None:
    rng = random.Random(seed)
    history = simulated_history(rng, operations=150, keys=("a", "b", "c"),
                                processes=processes, overlap=overlap,
                                indeterminate_rate=indeterminate)
    if change:
        history = changed(history, rng)
    assert check_history(history, budget=UNLIMITED).verdict == searched(history)


def test_a_read_of_a_value_written_only_later_needs_no_search() -> None:
    history = [Operation("A", "get", "k", None, b"v", 0, 1),
               Operation("B", "put", "k", b"v", None, 2, 3)]
    assert KeyHistory(history).unwritten_reads() == [0]
    touching = [Operation("A", "get", "k", None, b"v", 0, 2),
                Operation("B", "put", "k", b"v", None, 2, 3)]
    assert KeyHistory(touching).unwritten_reads() == [], "touching intervals overlap"
    losing = [Operation("A", "get", "k", None, b"v", 5, 6),
              Operation("B", "put_if_absent", "k", b"v", False, 0, 1)]
    # Indices follow invocation order: the create is call 0, the read call 1.
    assert KeyHistory(losing).unwritten_reads() == [1], "a losing create writes nothing"


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32), st.integers(2, 6), st.integers(1, 6), st.floats(0.0, 0.2),
       st.data())
def test_a_window_decides_as_the_whole_key_does(seed: int, processes: int, overlap: int,
                                                indeterminate: float,
                                                data: st.DataObject) -> None:
    """Deciding whether calls can be placed together on their window (later calls left
    out, earlier ones replaced by the states they can leave) agrees with the whole key."""
    rng = random.Random(seed)
    history = changed(simulated_history(rng, operations=40, keys=("k",), processes=processes,
                                        overlap=overlap, indeterminate_rate=indeterminate),
                      rng)
    calls = KeyHistory(history)
    determinate = [i for i in range(calls.n) if calls.determinate >> i & 1]
    if not determinate:
        return
    chosen = data.draw(st.lists(st.sampled_from(determinate), min_size=1, max_size=4,
                                unique=True), label="calls to place together")
    include, starts = window(calls, chosen)
    whole = calls.place(Meter(UNLIMITED), required=calls.mask(chosen))
    assert calls.place(Meter(UNLIMITED), required=calls.mask(chosen), include=include,
                       starts=starts) == whole
