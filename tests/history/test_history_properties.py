"""Properties: histories produced by the model are linearizable; a sequential history with
one read corrupted never is."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from dw_testing.history.checker import check_history
from dw_testing.history.events import Operation
from dw_testing.history.generate import simulated_history

KEYS = ("a", "a/b", "b")
steps = st.lists(
    st.tuples(st.sampled_from(["put", "put_if_absent", "get", "delete"]),
              st.sampled_from(KEYS), st.binary(max_size=3), st.sampled_from(["p0", "p1"])),
    max_size=30,
)


def sequential_run(program: list[tuple[str, str, bytes, str]]) -> list[Operation]:
    """Run ``program`` one call at a time against the dict model, recording as we go."""
    model: dict[str, bytes] = {}
    history = []
    for clock, (op, key, value, process) in enumerate(program):
        result: bool | bytes | None = None
        if op == "put":
            model[key] = value
        elif op == "put_if_absent":
            result = key not in model
            model.setdefault(key, value)
        elif op == "get":
            result = model.get(key)
        else:
            model.pop(key, None)
        history.append(Operation(process, op, key,  # type: ignore[arg-type]
                                 value if op in ("put", "put_if_absent") else None,
                                 result, 2 * clock, 2 * clock + 1))
    return history


@settings(max_examples=150, deadline=None)
@given(steps)
def test_a_sequential_run_of_the_model_is_linearizable(
        program: list[tuple[str, str, bytes, str]]) -> None:
    assert check_history(sequential_run(program)).verdict == "ok"


@settings(max_examples=150, deadline=None)
@given(steps, st.data())
def test_a_sequential_run_with_one_wrong_read_is_a_violation(
        program: list[tuple[str, str, bytes, str]], data: st.DataObject) -> None:
    history = sequential_run(program)
    reads = [i for i, op in enumerate(history) if op.op in ("get", "put_if_absent")]
    if not reads:
        return
    i = data.draw(st.sampled_from(reads), label="corrupted call")
    op = history[i]
    if op.op == "put_if_absent":
        wrong: bool | bytes | None = not op.result
    else:
        wrong = data.draw(st.sampled_from([None, b"never-written", *(
            o.value for o in history if o.value is not None)]).filter(lambda v: v != op.result),
            label="wrong read")
    history[i] = Operation(op.process, op.op, op.key, op.value, wrong, op.call, op.ret)
    assert check_history(history).verdict == "violation"


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 6), st.integers(1, 8),
       st.floats(0.0, 0.2))
def test_simulated_concurrent_histories_are_linearizable(
        seed: int, processes: int, overlap: int, indeterminate_rate: float) -> None:
    history = simulated_history(random.Random(seed), operations=120, keys=KEYS,
                                processes=processes, overlap=overlap,
                                indeterminate_rate=indeterminate_rate)
    assert check_history(history).verdict == "ok"
