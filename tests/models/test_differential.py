"""The differential model passes correct stores, catches stores broken in ways nobody
listed, and says which clause broke, what was expected and what came back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test

from dw_testing.kit.key_grammar import in_class
from dw_testing.models.differential import DifferentialStoreMachine
from dw_testing.models.verdicts import (
    created_problem,
    list_problem,
    value_problem,
    value_type_problem,
)
from dw_testing.selftest.mutants.base import MEMORY_CAPABILITIES, Backing, CorrectStore
from dw_testing.strategies import (
    CHARACTER_CLASSES,
    LOSSY_TREATMENTS,
    cut_prefix,
    is_valid_key,
    keys,
    lossy_twin,
    spectrum_keys,
    values,
)
from reference_engine.stores.keys import key_problem, validate_prefix
from reference_engine.stores.memory import MemoryStore

QUICK = settings(max_examples=10, stateful_step_count=10, deadline=None, database=None,
                 derandomize=True,
                 phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target))


def machine_for(open_handle: Callable[[], Any]) -> type[DifferentialStoreMachine]:
    return DifferentialStoreMachine.for_store(open_handle, capabilities=MEMORY_CAPABILITIES,
                                              namespace="t/model")


def failure_of(open_handle: Callable[[], Any]) -> str:
    with pytest.raises(AssertionError) as caught:
        run_state_machine_as_test(machine_for(open_handle), settings=QUICK)
    return str(caught.value)


def test_a_correct_store_and_the_memory_store_match_the_model() -> None:
    backing = Backing()
    run_state_machine_as_test(machine_for(lambda: CorrectStore(backing)), settings=QUICK)
    run_state_machine_as_test(machine_for(lambda: MemoryStore("differential-test")),
                              settings=QUICK)


class MemoryviewGet(CorrectStore):
    def get(self, key: str) -> Any:
        found = super().get(key)
        return None if found is None else memoryview(found)


class NoneCreate(CorrectStore):
    def put_if_absent(self, key: str, data: bytes) -> Any:
        created = super().put_if_absent(key, data)
        return True if created else None


@pytest.mark.parametrize(("kind", "expected"), [
    (MemoryviewGet, "C-GET-1: get("), (NoneCreate, "C-CREATE-1: put_if_absent("),
])
def test_a_result_of_the_wrong_type_is_caught_naming_the_required_type(
    kind: type[CorrectStore], expected: str,
) -> None:
    backing = Backing()
    text = failure_of(lambda: kind(backing))
    assert expected in text
    assert "bytes or None" in text or "must return a bool" in text


def test_messages_name_clause_expectation_and_answer() -> None:
    assert "NoneType None" in (created_problem(None, True, "put_if_absent('k')") or "")
    assert created_problem(True, True, "c") is None
    assert "memoryview" in (value_type_problem(memoryview(b"x"), "get('k')") or "")
    torn = value_problem(b"a\nb", b"a\r\nb", "get('k')", others={}, deleted=False,
                         other_handle=False, reopened=False) or ""
    assert torn.startswith("C-VAL-1") and "byte 1" in torn
    merged = value_problem(b"v", None, "get('K')", others={"k": b"v"}, deleted=False,
                           other_handle=False, reopened=False) or ""
    assert merged.startswith("C-KEY-2") and "'k'" in merged
    order = list_problem(["b", "a"], ["a", "b"], "list('')", ordered=True) or ""
    assert order.startswith("C-LIST-5") and "index 0" in order
    assert list_problem(["b", "a"], ["a", "b"], "list('')", ordered=False) is None
    twice = list_problem(["a", "a"], ["a"], "list('')", ordered=False) or ""
    assert "twice (at index 0 and 1)" in twice
    gap = list_problem(["a", "x"], ["a", "b"], "list('')", ordered=False) or ""
    assert "missing ['b']" in gap and "extra ['x']" in gap


@settings(max_examples=200, deadline=None, database=None)
@given(key=keys(max_bytes=900), treatment=st.sampled_from(sorted(LOSSY_TREATMENTS)),
       cut=st.integers(0, 1024), slash=st.booleans(), bare=st.booleans())
def test_drawn_keys_twins_and_prefixes_are_what_the_contract_allows(
    key: str, treatment: str, cut: int, slash: bool, bare: bool,
) -> None:
    # The engine's own key rules are the oracle here, never inside the model.
    assert key_problem(key) is None and is_valid_key(key)
    twin = lossy_twin(key, treatment)
    if twin is not None:
        collapse = LOSSY_TREATMENTS[treatment][0]
        assert twin != key and key_problem(twin) is None and collapse(twin) == collapse(key)
    prefix = cut_prefix(key, cut, slash=slash, bare=bare)
    validate_prefix(prefix)
    assert bare or prefix == "" or prefix.endswith("/")


@settings(max_examples=30, deadline=None, database=None)
@given(found=spectrum_keys(), value=values(max_size=4096))
def test_the_spectrum_holds_every_class_and_values_stay_bytes(
    found: list[str], value: bytes,
) -> None:
    assert all(key_problem(k) is None for k in found)
    for name in CHARACTER_CLASSES:
        first, _, last = next(k for k in found if in_class(k[0], name)).partition("/")
        assert all(in_class(ch, name) for ch in first + last) and len(first) == 3
        assert len(last) == 1 or (last == first == "..."), "alone in a segment where it may be"
    assert isinstance(value, bytes) and len(value) <= 4096


@pytest.mark.parametrize("phases", [
    pytest.param((Phase.explicit, Phase.generate), id="as-drawn"),
    # Shrinking the spectrum takes seconds per run: the shrunk replay is in the slow run.
    pytest.param((Phase.explicit, Phase.generate, Phase.shrink), id="shrunk",
                 marks=pytest.mark.slow),
])
def test_one_seed_replays_the_same_failure_on_a_deterministic_broken_store(
    phases: tuple[Phase, ...],
) -> None:
    from hypothesis import seed

    from dw_testing.selftest.mutants.generated import ALL_MEMBERS

    broken = ALL_MEMBERS["gen_list_missing_cjk"][3]
    shrinking = settings(QUICK, derandomize=False, phases=phases)
    seen = []
    for _ in range(2):
        backing = Backing()
        machine = seed(20261203)(machine_for(lambda b=backing: broken(b)))
        with pytest.raises(AssertionError) as caught:
            run_state_machine_as_test(machine, settings=shrinking)
        seen.append("\n".join([str(caught.value), *getattr(caught.value, "__notes__", [])]))
    assert seen[0] == seen[1]
    assert seen[0].startswith("C-LIST-3")
